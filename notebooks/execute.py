"""Runs notebooks top to bottom in a fresh Jupyter kernel and stores their outputs in place.

    python notebooks/execute.py                    # every notebook in this folder
    python notebooks/execute.py cluster.ipynb ...  # some of them

The stored outputs (tables, static dashboard snapshots, graph SVGs) are what GitHub and
nbconvert show, so a notebook is committed after this ran on it; tests/test_notebooks.py checks
that each stored notebook is one clean run (cells numbered 1, 2, ... in order, no error).

Each notebook runs in a fresh temporary working directory (what it writes there, such as
experiment records, is removed afterwards, so the stored outputs never depend on what an
earlier run left) with a temporary IPYTHONDIR, so the user's ipyparallel profiles are
untouched. A failing cell stops the run and leaves the file as it was.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def execute(path: str, timeout: float = 600) -> float:
    """Executes the notebook at ``path`` and writes it back with its outputs; returns seconds."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tfjupyter-nb-") as scratch:
        previous = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = os.path.join(scratch, "ipython")
        workdir = os.path.join(scratch, "notebooks")
        os.mkdir(workdir)
        try:
            client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                             resources={"metadata": {"path": workdir}})
            client.execute()
        finally:
            if previous is None:
                os.environ.pop("IPYTHONDIR", None)
            else:
                os.environ["IPYTHONDIR"] = previous
    nbformat.validate(notebook)
    tmp = path + ".tmp"
    nbformat.write(notebook, tmp)
    os.replace(tmp, path)
    return time.monotonic() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook files (default: all in notebooks/)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(os.path.join(HERE, name) for name in os.listdir(HERE)
                                     if name.endswith(".ipynb"))
    for path in paths:
        if not os.path.exists(path) and os.path.exists(os.path.join(HERE, path)):
            path = os.path.join(HERE, path)
        print(f"{os.path.basename(path)}: running ...", flush=True)
        seconds = execute(path, args.timeout)
        print(f"{os.path.basename(path)}: stored its outputs ({seconds:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

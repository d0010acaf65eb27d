"""Running the notebooks under notebooks/ in tests: in a real Jupyter kernel (nbclient +
ipykernel), as a user runs them, and finding what they left running."""
import glob
import os
import re
import time

import psutil
import pytest

NOTEBOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notebooks")
NOTEBOOKS = sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))


def read(name):
    """The stored notebook ``name`` (e.g. "cluster.ipynb"), validated."""
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4)
    nbformat.validate(notebook)
    return notebook


def code_outputs(notebook) -> dict:
    """{first line of a code cell: its text output}; a first line used twice keeps the last."""
    return {c.source.splitlines()[0]: text(c) for c in notebook.cells
            if c.cell_type == "code" and c.source.strip()}


def assert_no_errors(notebook) -> None:
    for cell in notebook.cells:
        if cell.cell_type == "code":
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"{cell.source}\n{errors[0].get('evalue') if errors else ''}"


def text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
            parts.append(output["data"].get("text/html", ""))
    return "".join(parts)


def processes_of(ipython_dir) -> list:
    """The processes (kernel, controller, engines, nannies) whose IPYTHONDIR is ours."""
    found = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            if p.pid != os.getpid() and \
                    (p.info["environ"] or {}).get("IPYTHONDIR") == str(ipython_dir):
                found.append(p)
        except psutil.Error:
            pass
    return found


def assert_nothing_left(ipython_dir, pids=(), timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p)]
        left = processes_of(ipython_dir)
        if not alive and not left:
            return
        time.sleep(0.2)
    described = []
    for p in left:
        try:
            described.append(f"{p.pid}: {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            pass
    assert not alive and not left, f"still running: pids {alive}; {described}"


def run_in_a_kernel(notebook, tmp_path, monkeypatch):
    """Executes the notebook in a fresh python3 kernel whose cwd and IPYTHONDIR are temp dirs;
    the kernel is shut down when it returns. Raises CellExecutionError naming a failing cell."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    ipython_dir = tmp_path / "ipython"
    # The kernel, the engines, and the ipyparallel profile (connection files, logs) live in
    # temp dirs, so the user's ~/.ipython is untouched.
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return ipython_dir


def run_cluster_notebook(name, tmp_path, monkeypatch):
    """Runs the stored notebook ``name``, which starts a cluster, without an error: (its
    IPYTHONDIR, [(each code cell's first line, its text output)], {task: pid} from its
    '%tf_cluster start')."""
    notebook = read(name)
    ipython_dir = run_in_a_kernel(notebook, tmp_path, monkeypatch)
    assert_no_errors(notebook)
    cells = [(c.source.splitlines()[0], text(c)) for c in notebook.cells if c.cell_type == "code"]
    pids = task_pids(next(out for first, out in cells if first.startswith("%tf_cluster start")))
    return ipython_dir, cells, pids


def task_pids(table_text) -> dict:
    """{task: pid} from the text status table ("task  engine  host  pid  address ...")."""
    return {task: int(pid) for task, pid in
            re.findall(r"^((?:ps|worker):\d+)\s+\d+\s+\S+\s+(\d+)\s", table_text, re.M)}


def without_outputs(notebook):
    """The notebook with its stored outputs cleared, so that what a test sees was made by its
    own run (in a browser, stored outputs show until a cell runs again)."""
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook

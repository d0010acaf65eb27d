"""Every notebook under notebooks/ runs top to bottom without an error.

Notebooks that start a cluster run in a real Jupyter kernel (nbclient + ipykernel), as a user
runs them; the others in an in-process IPython shell.
"""
import glob
import json
import os
import re
import time

import psutil
import pytest
from IPython.core.interactiveshell import InteractiveShell

NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "notebooks", "*.ipynb")))


def _starts_a_cluster(path) -> bool:
    with open(path, encoding="utf-8") as f:
        return "%tf_cluster start" in f.read()


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if not _starts_a_cluster(p)],
                         ids=os.path.basename)
def test_notebook_runs(path, capsys):
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    shell = InteractiveShell.instance()
    try:
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            result = shell.run_cell("".join(cell["source"]))
            assert result.success, f"cell failed: {''.join(cell['source'])}\n{result.error_in_exec!r}"
    finally:
        shell.run_line_magic("unload_ext", "tfjupyter")
        shell.reset()
        InteractiveShell.clear_instance()
    out = capsys.readouterr().out
    assert out.strip()


def _text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
            parts.append(output["data"].get("text/html", ""))
    return "".join(parts)


@pytest.mark.timeout(300)
def test_cluster_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = os.path.join(os.path.dirname(__file__), "..", "notebooks", "cluster.ipynb")
    notebook = nbformat.read(path, as_version=4)
    # The kernel, and the ipyparallel profile it writes, live in temp dirs.
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    client = nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the cell if any cell fails
    code = [c for c in notebook.cells if c.cell_type == "code"]
    cells = [(c.source.splitlines()[0], _text(c)) for c in code]
    outputs = dict(cells)  # by first line (the two training cells share theirs)

    started = next(text for first, text in cells if first.startswith("%tf_cluster start"))
    for task in ("ps:0", "worker:0", "worker:1"):
        assert task in started
    pids = [int(p) for p in re.findall(r"in process (\d+)", outputs["%%tf_ps"])]
    trainings = [text for first, text in cells if first == "%%tf_worker"]
    assert len(trainings) == 2
    for text in trainings:
        assert re.search(r"^\[worker:[01]\] step 300$", text, re.M), text
        accuracies = dict(re.findall(r"^\[(worker:\d)\] accuracy ([0-9.]+)$", text, re.M))
        assert set(accuracies) == {"worker:0", "worker:1"}, text
        assert min(float(a) for a in accuracies.values()) >= 0.9, text
    status = outputs["%tf_cluster"]
    assert re.search(r"<td[^>]*>worker:1</td>", status) and "global step" in status
    assert re.search(r"<td[^>]*>(idle|running)</td>", status)
    waited = outputs["%tf_cluster wait"]
    done = re.search(r"^\[worker:0\] worker 0 process (\d+) done$", waited, re.M)
    assert done, waited
    pids.append(int(done.group(1)))
    assert "Cluster stopped" in outputs["%tf_cluster stop"]
    deadline = time.monotonic() + 15
    while any(psutil.pid_exists(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if psutil.pid_exists(p)]
    # Nothing ipyparallel started for the notebook's kernel outlives it.
    leftovers = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            if "ipyparallel" in " ".join(p.info["cmdline"] or ()) and \
                    (p.info["environ"] or {}).get("IPYTHONDIR") == str(tmp_path / "ipython"):
                leftovers.append(p)
        except psutil.Error:
            pass
    assert not leftovers, leftovers

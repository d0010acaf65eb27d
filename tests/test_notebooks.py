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


def _processes_of(ipython_dir) -> list:
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


def _assert_nothing_left(ipython_dir, pids=(), timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p)]
        left = _processes_of(ipython_dir)
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


def _run_in_a_kernel(notebook, tmp_path, monkeypatch):
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


def _task_pids(table_text) -> dict:
    """{task: pid} from the text status table ("task  engine  host  pid  address ...")."""
    return {task: int(pid) for task, pid in
            re.findall(r"^((?:ps|worker):\d+)\s+\d+\s+\S+\s+(\d+)\s", table_text, re.M)}


@pytest.mark.timeout(400)
def test_cluster_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    path = os.path.join(os.path.dirname(__file__), "..", "notebooks", "cluster.ipynb")
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert not any(c.get("outputs") or c.get("execution_count")
                   for c in notebook.cells if c.cell_type == "code"), "save it without outputs"
    ipython_dir = _run_in_a_kernel(notebook, tmp_path, monkeypatch)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    assert not os.listdir(tmp_path / "cwd"), "the notebook writes nothing in its directory"
    cells = [(c.source.splitlines()[0], _text(c)) for c in code]
    outputs = dict(cells)  # by first line (the two training cells share theirs)

    started = next(text for first, text in cells if first.startswith("%tf_cluster start"))
    pids = _task_pids(started)
    assert set(pids) == {"ps:0", "worker:0", "worker:1"}, started
    ps = re.search(r"^\[ps:0\] ps 0 serves \S+ in process (\d+)$", outputs["%%tf_ps"], re.M)
    assert ps and int(ps.group(1)) == pids["ps:0"], outputs["%%tf_ps"]

    trainings = [text for first, text in cells if first == "%%tf_worker"]
    assert len(trainings) == 2  # asynchronous, then synchronous with a backup worker
    for text in trainings:
        steps = re.findall(r"^\[(worker:\d)\] step (\d+)$", text, re.M)
        assert {task for task, _ in steps} == {"worker:0", "worker:1"}, text
        assert max(int(step) for _, step in steps) >= 200, text
        accuracies = dict(re.findall(r"^\[(worker:\d)\] accuracy ([0-9.]+)$", text, re.M))
        assert set(accuracies) == {"worker:0", "worker:1"}, text
        assert min(float(a) for a in accuracies.values()) >= 0.9, text
        assert not re.search(r"^(?!\[worker:[01]\] )", text.rstrip("\n"), re.M), \
            f"every line is labelled with its task:\n{text}"

    status = outputs["%tf_cluster"]
    for task in ("ps:0", "worker:0", "worker:1"):
        assert re.search(rf"^{task}\s+\d+\s+\S+\s+{pids[task]}\s+127\.0\.0\.1:\d+\s", status,
                         re.M), status
        assert re.search(rf"<td[^>]*>{task}</td>", status), status
    assert "global step" in status and "dead" not in status, status

    assert "Running on worker:0;" in outputs["%%tf_worker --tasks 0 --no-block"]
    waited = outputs["%tf_cluster wait"]
    done = re.search(r"^\[worker:0\] worker 0 process (\d+) done$", waited, re.M)
    assert done and int(done.group(1)) == pids["worker:0"], waited
    assert "Cluster stopped" in outputs["%tf_cluster stop"]
    # The engines, the controller, the nannies and the kernel itself are gone.
    _assert_nothing_left(ipython_dir, list(pids.values()))


@pytest.mark.timeout(300)
def test_kernel_shutdown_stops_a_running_cluster(tmp_path, monkeypatch):
    """A notebook closed without '%tf_cluster stop' leaves no engine or controller behind."""
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "%load_ext tfjupyter",
        "%tf_cluster start --ps 1 --workers 1",
        "%%tf_worker\nimport os\nprint('pid', os.getpid())",
    )])
    ipython_dir = _run_in_a_kernel(notebook, tmp_path, monkeypatch)
    pids = _task_pids(_text(notebook.cells[1]))
    assert set(pids) == {"ps:0", "worker:0"}, _text(notebook.cells[1])
    assert f"[worker:0] pid {pids['worker:0']}" in _text(notebook.cells[2])
    _assert_nothing_left(ipython_dir, list(pids.values()))

"""Every notebook under notebooks/ is stored as one clean run with its outputs, and runs top to
bottom without an error.

Each runs in a real Jupyter kernel (nbclient + ipykernel), as a user runs it, with a temporary
working directory and IPYTHONDIR. Notebooks with checks of their own output have their test
here or in a file of their own.
"""
import os
import re

import pytest
from notebook_util import (NOTEBOOKS, assert_no_errors, assert_nothing_left, read,
                           run_cluster_notebook, run_in_a_kernel, task_pids, text)

# Notebooks run, with checks of their output, by a test of their own (dashboard.ipynb runs in
# JupyterLab in tests/test_dashboard_browser.py).
CHECKED = {"cluster.ipynb", "dashboard.ipynb", "estimator_cluster.ipynb", "input_pipeline.ipynb",
           "local_cluster.ipynb", "supervision.ipynb", "sync_vs_async.ipynb", "towers.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_stored_as_one_clean_run(path):
    """What GitHub shows is a top-to-bottom run of the current cells (notebooks/execute.py)."""
    notebook = read(os.path.basename(path))
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and "How long" in first.source, \
        "the notebook starts by saying what it shows and how long it takes"
    code = [c for c in notebook.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), \
        f"run notebooks/execute.py {os.path.basename(path)}: execution counts {counts}"
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    assert any(cell.outputs for cell in code)
    # A reader cannot follow the temporary folder that notebooks/execute.py ran it in.
    temporary = re.compile(r"(/tmp|/var/folders|/private/var)/\S*")
    shown = [m.group(0) for c in code for o in c.outputs
             for m in temporary.finditer(str(o.get("text", "")) + str(o.get("data", "")))]
    assert shown == [], f"outputs show temporary paths: {shown[:3]}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if os.path.basename(p) not in CHECKED],
                         ids=os.path.basename)
def test_notebook_runs(path, tmp_path, monkeypatch):
    notebook = read(os.path.basename(path))
    run_in_a_kernel(notebook, tmp_path, monkeypatch)
    assert_no_errors(notebook)
    assert any(text(c) for c in notebook.cells if c.cell_type == "code")


@pytest.mark.timeout(120)
def test_local_cluster_notebook_runs_ops_on_both_tasks(tmp_path, monkeypatch):
    notebook = read("local_cluster.ipynb")
    run_in_a_kernel(notebook, tmp_path, monkeypatch)
    assert_no_errors(notebook)
    out = "\n".join(text(c) for c in notebook.cells if c.cell_type == "code")
    assert re.search(r"^serving /job:local/task:1 at grpc://localhost:\d+$", out, re.M), out
    assert "b: (MatMul): /job:local/replica:0/task:1/device:CPU:0" in out
    assert "c: (Add): /job:local/replica:0/task:0/device:CPU:0" in out
    assert "[[ 8. 11.]\n [16. 23.]]" in out  # a @ a + 1, hand-computed
    assert re.search(r"8 ops, 2 devices; 7 edges \((\d+) cross-task", out), out
    assert int(re.search(r"edges \((\d+) cross-task", out).group(1)) > 0, out
    assert "counter = 3" in out  # a second session sees the first one's three increments
    assert "task 1 exited with 0" in out


@pytest.mark.timeout(400)
def test_cluster_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    notebook = read("cluster.ipynb")
    ipython_dir = run_in_a_kernel(notebook, tmp_path, monkeypatch)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    assert not os.listdir(tmp_path / "cwd"), "the notebook writes nothing in its directory"
    cells = [(c.source.splitlines()[0], text(c)) for c in code]
    outputs = dict(cells)  # by first line (the two training cells share theirs)

    started = next(out for first, out in cells if first.startswith("%tf_cluster start"))
    pids = task_pids(started)
    assert set(pids) == {"ps:0", "worker:0", "worker:1"}, started
    ps = re.search(r"^\[ps:0\] ps 0 serves \S+ in process (\d+)$", outputs["%%tf_ps"], re.M)
    assert ps and int(ps.group(1)) == pids["ps:0"], outputs["%%tf_ps"]

    trainings = [out for first, out in cells if first == "%%tf_worker"]
    assert len(trainings) == 1  # asynchronous (sync_vs_async.ipynb compares the others)
    for out in trainings:
        steps = re.findall(r"^\[(worker:\d)\] step (\d+)$", out, re.M)
        assert {task for task, _ in steps} == {"worker:0", "worker:1"}, out
        assert max(int(step) for _, step in steps) >= 200, out
        accuracies = dict(re.findall(r"^\[(worker:\d)\] accuracy ([0-9.]+)$", out, re.M))
        assert set(accuracies) == {"worker:0", "worker:1"}, out
        assert min(float(a) for a in accuracies.values()) >= 0.9, out
        assert not re.search(r"^(?!\[worker:[01]\] )", out.rstrip("\n"), re.M), \
            f"every line is labelled with its task:\n{out}"

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
    assert_nothing_left(ipython_dir, list(pids.values()))


@pytest.mark.timeout(400)
def test_supervision_notebook_diagnoses_recovers_and_scales(tmp_path, monkeypatch):
    ipython_dir, cells, pids = run_cluster_notebook("supervision.ipynb", tmp_path, monkeypatch)

    by_first = dict(cells)
    why = by_first["import time"]
    assert re.search(r"Root cause: worker:1 waits for the model to be initialized .*its chief "
                     r"worker:0 is not initializing it", why), why
    assert "uninitialized: w1, b1, w2, b2, global_step" in why, why

    recovery = by_first["import os"]
    for task in ("worker:1", "ps:0"):
        assert re.search(rf"^{task} killed at global step >= \d+; serving again after", recovery,
                         re.M), recovery
    outputs = "\n".join(out for _, out in cells)
    assert re.search(r"^\[worker:1\] restarted on a new engine \(pid \d+\) after its process "
                     r"\(pid \d+\) exited; running the cell again$", outputs, re.M), outputs
    assert "[worker:2] added by a scale to 3 workers; running the cell" in outputs, outputs
    assert "[worker:2] removed by a scale to 2 workers" in outputs, outputs
    final = re.findall(r"^\[(worker:[01])\] done at global step (\d+), test accuracy ([0-9.]+)$",
                       outputs, re.M)
    last = {task: (int(step), float(acc)) for task, step, acc in final}
    assert set(last) == {"worker:0", "worker:1"}, outputs
    assert all(step >= 6000 and acc >= 0.9 for step, acc in last.values()), last
    assert "Cluster stopped" in cells[-1][1]
    assert_nothing_left(ipython_dir, list(pids.values()))


@pytest.mark.timeout(240)
def test_estimator_cluster_notebook_trains_evaluates_records_and_serves(tmp_path, monkeypatch):
    """train_and_evaluate from TF_CONFIG: worker 0 is TF's chief, both workers train, the
    kernel evaluates every checkpoint to max_steps; the dashboard and the experiment record
    count the Estimator's steps with their batches' examples; the export serves the evaluated
    model."""
    ipython_dir, cells, pids = run_cluster_notebook("estimator_cluster.ipynb", tmp_path,
                                                    monkeypatch)
    outputs = "\n".join(out for _, out in cells)

    assert "[worker:0] TF_CONFIG task: {'type': 'chief', 'index': 0} | RunConfig: chief 0 " \
           "chief | 1 ps, 2 workers" in outputs, outputs
    assert "[worker:1] TF_CONFIG task: {'type': 'worker', 'index': 0} | RunConfig: worker 0 " \
           " | 1 ps, 2 workers" in outputs, outputs
    own = dict(re.findall(r"^\[(worker:[01])\] (\d+) of the 4000 steps were this task's$",
                          outputs, re.M))
    assert set(own) == {"worker:0", "worker:1"} and all(int(n) > 0 for n in own.values()), own
    assert sum(int(n) for n in own.values()) >= 4000, own

    evaluated = [int(step) for step in re.findall(
        r"^evaluated the checkpoint of global step (\d+): accuracy", outputs, re.M)]
    # As TF's evaluator: each new checkpoint it finds (a loaded machine may let it find only
    # the last), in order, up to max_steps.
    assert evaluated and evaluated == sorted(evaluated) and evaluated[-1] >= 4000, outputs
    final = re.search(r"^final evaluation: \{'accuracy': ([0-9.]+), .*'global_step': "
                      r"([0-9.]+),", outputs, re.M)
    assert final and float(final.group(1)) >= 0.9 and float(final.group(2)) >= 4000, outputs

    # The record: each worker's steps, 32 examples each (the batch's rows).
    recorded = {task: (int(steps), int(examples)) for task, steps, examples in re.findall(
        r"^(worker:[01]): (\d+) steps, (\d+) examples \(32 per step\)$", outputs, re.M)}
    assert set(recorded) == {"worker:0", "worker:1"}, outputs
    assert all(examples == 32 * steps > 0 for steps, examples in recorded.values()), recorded
    # The dashboard's snapshot: both workers trained at a mean examples/s above zero.
    for task in ("worker:0", "worker:1"):
        mean = re.search(rf"^{task}\s+alive\s+step \d+\s+\S+ ex/s now \(([\d,.]+) mean\)",
                         outputs, re.M)
        assert mean and float(mean.group(1).replace(",", "")) > 0, outputs

    served = re.search(r"^served accuracy ([0-9.]+), the evaluator's ([0-9.]+)$", outputs, re.M)
    assert served and served.group(1) == served.group(2), outputs
    assert float(served.group(1)) == pytest.approx(float(final.group(1)), abs=1e-4), outputs
    assert "serving_default: tensorflow/serving/classify" in outputs, outputs
    assert "Cluster stopped" in cells[-1][1]
    assert_nothing_left(ipython_dir, list(pids.values()))


@pytest.mark.timeout(300)
def test_kernel_shutdown_stops_a_running_cluster(tmp_path, monkeypatch):
    """A notebook closed without '%tf_cluster stop' leaves no engine or controller behind."""
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "%load_ext tfjupyter",
        "%tf_cluster start --ps 1 --workers 1",
        "%%tf_worker\nimport os\nprint('pid', os.getpid())",
    )])
    ipython_dir = run_in_a_kernel(notebook, tmp_path, monkeypatch)
    pids = task_pids(text(notebook.cells[1]))
    assert set(pids) == {"ps:0", "worker:0"}, text(notebook.cells[1])
    assert f"[worker:0] pid {pids['worker:0']}" in text(notebook.cells[2])
    assert_nothing_left(ipython_dir, list(pids.values()))


@pytest.mark.timeout(300)
def test_towers_notebook_matches_the_cpu_on_four_logical_gpus(tmp_path, monkeypatch):
    """One step of the four towers on four logical GPUs (the simulator's, without a GPU) gives
    the CPU's losses and update; each tower ran on its own GPU; the model then learns."""
    notebook = read("towers.ipynb")
    run_in_a_kernel(notebook, tmp_path, monkeypatch)
    out = "\n".join(text(c) for c in notebook.cells if c.cell_type == "code")
    losses = dict(re.findall(r"^(GPUs|CPU)\s+tower losses \[([^\]]+)\]", out, re.M))
    assert set(losses) == {"GPUs", "CPU"}, out
    gpu, cpu = ([float(v) for v in losses[k].split()] for k in ("GPUs", "CPU"))
    assert len(gpu) == 4 and gpu == pytest.approx(cpu, rel=1e-4), losses
    difference = float(re.search(r"largest difference in w1 after the step: (\S+)", out).group(1))
    assert difference < 1e-5, out
    for i in range(4):
        assert re.search(rf"^tower_{i}\s+\d+ ops on device:GPU:{i}$", out, re.M), out
    assert re.search(r"^average_gradients\s+\d+ ops on device:CPU:0$", out, re.M), out
    assert float(re.search(r"^test accuracy: (\S+)", out, re.M).group(1)) >= 0.9, out

"""Experiment records (tfjupyter.experiments): record, load, compare; TensorBoard reads them;
cells, magics, the MonitoredTrainingSession hook, a killed kernel. A cluster's records (three
runs on one cluster) are checked by tests/test_notebook_sync_vs_async.py."""
import json
import os
import signal
import sys
import time
import types

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import UsageError
from traitlets.config import Config

import tfjupyter as tf
from tfjupyter.experiments import (Experiment, ExperimentHook, NotARecord, compare, current,
                                   load)
from tfjupyter.experiments import store

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def build():
    """A graph whose summaries the test chooses: accuracy and loss are fed, the global step is
    fetched in the same run (so a point's step is known), the batch is 5 examples."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    accuracy = tf.placeholder(tf.float32, [], name="accuracy_in")
    loss = tf.placeholder(tf.float32, [], name="loss_in")
    with tf.device("/cpu:0"):
        w = tf.Variable(tf.ones([3, 1]), name="w")
        y = tf.reduce_sum(tf.matmul(x, w), name="y")
    global_step = tf.train.get_or_create_global_step()
    tf.summary.scalar("accuracy", accuracy)
    tf.summary.scalar("loss", loss)
    summaries = tf.summary.merge_all()
    increment = tf.assign_add(global_step, 1)
    return x, accuracy, loss, y, global_step, summaries, increment


def train(sess, graph_parts, steps=10, sleep=0.0):
    """Step k (k = 0..steps-1): accuracy k/10 and loss 1 - k/10 at global step k."""
    x, accuracy, loss, y, global_step, summaries, increment = graph_parts
    for k in range(steps):
        sess.run([y, summaries, global_step], {x: np.ones((5, 3)), accuracy: k / 10,
                                               loss: 1 - k / 10})
        sess.run(increment)   # no batch: bookkeeping, not a training step
        if sleep:
            time.sleep(sleep)


@pytest.fixture
def trained(tmp_path):
    """A finished record of 10 known steps."""
    parts = build()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with Experiment("known", dir=str(tmp_path), config={"lr": 0.1, "mode": "test"}) as e:
            train(sess, parts)
    return e.record


def test_record_and_load_round_trip(trained, tmp_path):
    r = load(trained.path)
    assert (r.name, r.id, r.status) == ("known", "known", "finished")
    assert r.path == str(tmp_path / "known")
    assert r.config == {"lr": 0.1, "mode": "test"}
    assert r.tasks == ["local"] and r.tags == ["accuracy", "loss"]
    acc = r.scalar("accuracy")
    assert acc["step"] == list(range(10))
    assert np.allclose(acc["value"], [k / 10 for k in range(10)])
    assert np.allclose(r.scalar("loss")["value"], [1 - k / 10 for k in range(10)])
    final = r.final
    assert final["steps"] == 10 and final["examples"] == 50 and final["global_step"] == 9
    assert final["accuracy"] == pytest.approx(0.9) and final["loss"] == pytest.approx(0.1)
    assert final["examples_per_sec"] > 0 and final["status"] == "finished"
    assert sum(r.throughput["examples_per_sec"]) > 0
    # Time to a target: accuracy >= 0.5 first at step 5; loss <= 0.35 (minimized) at step 7.
    assert r.step_to("accuracy", 0.5) == 5 and r.step_to("loss", 0.35) == 7
    assert 0 <= r.time_to("accuracy", 0.5) <= r.time_to("accuracy", 0.85) <= r.wall_time
    assert r.time_to("accuracy", 2.0) is None
    # Placement, graph with assigned devices, environment, metadata.
    placed = {row["op"]: row["assigned"] for row in r.placement.rows()}
    assert placed["w"] == CPU0 and placed["y"] == CPU0
    nodes = {n.name: n for n in r.graph("local").node}
    assert nodes["w"].device == CPU0 and nodes["y"].device == CPU0
    assert nodes["y"].input and nodes["y"].op == "Sum"   # the real graph, edges included
    env = r.environment
    assert env["packages"]["numpy"] == np.__version__
    assert env["python"] == sys.version.split()[0] and env["hostname"]
    assert "ConfigProto" in r.sessions["local"][0]["config"]
    assert r.sessions["local"][0]["devices"][0]["name"] == CPU0
    assert r.cluster is None and r.checkpoint is None and r.cells == []
    assert "finished" in repr(r) and "<table" in r._repr_html_()
    assert r.metrics.to_dict()["tag"].count("loss") == 10


def test_tensorboard_reads_the_graph_with_devices_and_the_scalars(trained):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(trained.run_dir("local"))
    acc.Reload()
    tags = acc.Tags()
    assert {"accuracy", "loss", "throughput/examples_per_sec",
            "throughput/steps_per_sec"} <= set(tags["scalars"])
    points = acc.Scalars("accuracy")
    assert [p.step for p in points] == list(range(10))
    assert np.allclose([p.value for p in points], [k / 10 for k in range(10)])
    assert all(p.wall_time >= trained.started for p in points)
    assert tags["graph"]
    devices = {n.name: n.device for n in acc.Graph().node}
    assert devices["w"] == CPU0 and devices["y"] == CPU0


def test_a_taken_name_gets_a_new_folder_and_names_are_checked(trained, tmp_path):
    before = open(os.path.join(trained.path, store.METADATA)).read()
    with Experiment("known", dir=str(tmp_path)) as e:
        pass
    assert e.path == str(tmp_path / "known-2") and e.record.id == "known-2"
    assert e.record.name == "known"
    assert open(os.path.join(trained.path, store.METADATA)).read() == before
    for bad in ("a/b", "../up", "", ".hidden", "x" * 200):
        with pytest.raises(ValueError):
            Experiment(bad, dir=str(tmp_path))
    with pytest.raises(ValueError, match="path separator"):
        Experiment("runs/one")


def test_a_name_means_its_newest_record(trained, tmp_path, monkeypatch):
    """Rerunning a notebook makes known-2, known-3...: its compare cells, which say "known",
    must compare the new runs; "known-2" or a path still picks one exactly."""
    for _ in range(2):
        with Experiment("known", dir=str(tmp_path)):
            pass
    assert load("known", dir=str(tmp_path)).path == str(tmp_path / "known-3")
    assert load("known-2", dir=str(tmp_path)).path == str(tmp_path / "known-2")
    assert load(trained.path).path == trained.path
    os.mkdir(tmp_path / "known-10x")  # not a rerun of "known"
    assert load("known", dir=str(tmp_path)).path == str(tmp_path / "known-3")
    # A folder of that name in the working directory does not hide the record in dir.
    (tmp_path / "cwd" / "known").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cwd")
    assert load("known", dir=str(tmp_path)).path == str(tmp_path / "known-3")


def test_compare_table_and_static_html(trained, tmp_path):
    with tf.Graph().as_default():
        parts = build()
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        with Experiment("slow", dir=str(tmp_path), config={"lr": 0.01}) as e:
            train(sess, parts, steps=6, sleep=0.05)
        sess.close()
    c = compare([trained, e.record.path], metric="accuracy", target=0.5)
    rows = {row["experiment"]: row for row in c.table.rows()}
    assert set(rows) == {"known", "slow"}
    assert rows["known"]["config.lr"] == 0.1 and rows["slow"]["config.lr"] == 0.01
    assert rows["slow"]["config.mode"] is None
    assert rows["known"]["final accuracy"] == pytest.approx(0.9)
    assert rows["slow"]["final accuracy"] == pytest.approx(0.5)
    assert rows["known"]["step to accuracy >= 0.5"] == 5
    assert rows["slow"]["step to accuracy >= 0.5"] == 5
    # 0.05 s per step: the slow one reaches 0.5 (step 5) after >= 0.25 s of training.
    assert rows["slow"]["time to accuracy >= 0.5"] >= 0.25
    assert rows["known"]["steps"] == 10 and rows["slow"]["steps"] == 6
    text = repr(c)
    assert "known" in text and "slow" in text and "lr" in text
    bundle = c._repr_mimebundle_()
    page = bundle["text/html"]
    assert "<table" in page and "time to accuracy &gt;= 0.5" in page
    assert "tfjupyter-dashboard-snapshot" in page and "application/json" in page
    assert "accuracy against time" in page and "examples/s against time" in page
    never = compare([trained, e.record], metric="accuracy", target=0.95)
    assert all(row["time to accuracy >= 0.95"] is None for row in never.table.rows())
    assert "never" in repr(never)


def test_rates_divide_by_the_time_that_passed_when_runs_overlap(tmp_path):
    """Runs of other threads overlap the training runs (a sync chief's queue runner waits in
    one all the time): the timeline's rates divide by the time that passed, not by the sum of
    the runs' durations."""
    import threading
    queue = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    dequeue, enqueue = queue.dequeue(), queue.enqueue_many([[1.0, 2.0]])
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.reduce_sum(x)
    with tf.Session() as sess:
        with Experiment("overlap", dir=str(tmp_path), flush_every=60) as e:
            waiters = [threading.Thread(target=sess.run, args=(dequeue,)) for _ in range(2)]
            for waiter in waiters:
                waiter.start()
            for _ in range(10):
                sess.run(y, {x: np.ones((5, 3))})
                time.sleep(0.05)
            sess.run(enqueue)
            for waiter in waiters:
                waiter.join(10)
    [line] = e.record.throughput.rows()   # one flush: the one at the end
    assert line["total_steps"] == 10 and line["total_examples"] == 50
    assert line["examples_per_sec"] == pytest.approx(50 / (line["wall_time"] - line["t0"]))


def test_bad_input_gives_clear_errors(trained, tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotARecord, match="not an experiment record"):
        compare([trained, str(tmp_path / "plain")])
    with pytest.raises(NotARecord, match="no experiment 'nowhere'"):
        load("nowhere", dir=str(tmp_path))
    (tmp_path / "plain" / store.METADATA).write_text("{not json")
    with pytest.raises(NotARecord, match="not valid JSON"):
        load(str(tmp_path / "plain"))
    with pytest.raises(ValueError, match="no record has a summary 'nope'"):
        compare([trained], metric="nope")
    with pytest.raises(ValueError, match="a target needs a metric"):
        compare([trained], target=0.5)
    with pytest.raises(TypeError):
        compare(trained.path)
    e = Experiment("never", dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="never started"):
        e.end()
    with pytest.raises(RuntimeError, match="no cluster is running"):
        Experiment("c", dir=str(tmp_path), cluster=True).start()


def test_a_crashed_record_reads_as_interrupted_with_a_torn_last_line(tmp_path):
    parts = build()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        e = Experiment("crash", dir=str(tmp_path), flush_every=0.1).start()
        try:
            train(sess, parts, steps=4)
            deadline = time.monotonic() + 10
            while len(load(e.path).metrics) < 8 and time.monotonic() < deadline:
                time.sleep(0.05)
            live = load(e.path)
            assert live.status == "running" and len(live.scalar("accuracy")) == 4
        finally:
            e.end()
    # As a killed writer leaves it: metadata still "running", writer gone, a torn last line.
    meta = store.read_json(os.path.join(e.path, store.METADATA))
    meta.update(status="running", ended=None, writer=dict(meta["writer"], pid=2 ** 22 + 17))
    store.write_json(os.path.join(e.path, store.METADATA), meta)
    with open(os.path.join(e.path, store.EVENTS), "a") as f:
        f.write('{"kind":"scalar","task":"local","tag":"accuracy","va')
    r = load(e.path)
    assert r.status == "interrupted"
    assert r.scalar("accuracy")["value"] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert r.ended == max(r.metrics["wall_time"] + r.throughput["wall_time"])


# -- IPython: cells and magics ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config,
                                     ipython_dir=str(tmp_path_factory.mktemp("ipython")))


@pytest.fixture
def ip(shell, tmp_path):
    assert shell.run_cell("%load_ext tfjupyter").success
    shell.user_ns.update(np=np, tf=tf, build=build, train=train, DIR=str(tmp_path))
    yield shell
    running = current()
    if running is not None:
        running.end()


def cell(ip, code, ok=True):
    result = ip.run_cell(code, store_history=True)
    assert result.success is ok, repr(result.error_before_exec or result.error_in_exec)
    return result.result


def test_magics_record_the_cells_that_ran(ip, tmp_path):
    cell(ip, f"%tf_experiment start cells --dir {tmp_path} --local --config lr=0.5 mode=sgd")
    assert current() is not None and current().name == "cells"
    cell(ip, "parts = build()\nsess = tf.Session()\nsess.run(tf.global_variables_initializer())")
    cell(ip, "train(sess, parts, steps=3)")
    cell(ip, "1 / 0", ok=False)
    record = cell(ip, "%tf_experiment end")
    assert current() is None
    assert record.status == "finished" and record.config == {"lr": 0.5, "mode": "sgd"}
    codes = [c["code"].strip() for c in record.cells]
    assert codes == [f"%tf_experiment start cells --dir {tmp_path} --local --config lr=0.5 "
                     "mode=sgd", "parts = build()\nsess = tf.Session()\n"
                     "sess.run(tf.global_variables_initializer())",
                     "train(sess, parts, steps=3)", "1 / 0", "%tf_experiment end"]
    assert [c["success"] for c in record.cells] == [True, True, True, False, None]
    assert "ZeroDivisionError" in record.cells[3]["error"]
    assert len(record.scalar("accuracy")) == 3
    notebook = json.load(open(os.path.join(record.path, "cells.ipynb")))
    assert [c["source"].strip() for c in notebook["cells"]] == codes
    # load and compare through the magics.
    shown = cell(ip, f"%tf_experiment load cells --dir {tmp_path}")
    assert shown.path == record.path
    comparison = cell(ip, f"%tf_experiment compare cells cells --dir {tmp_path} "
                          "--metric accuracy --target 0.2")
    assert [r["step to accuracy >= 0.2"] for r in comparison.table.rows()] == [2, 2]


def test_a_with_experiment_cell_records_its_own_code(ip):
    code = ("with tf.experiments.Experiment('inline', dir=DIR, cluster=False) as e:\n"
            "    parts = build()\n")
    cell(ip, code)
    record = ip.user_ns["e"].record
    assert [(c["code"], c["success"]) for c in record.cells] == [(code, None)]


def test_cells_come_from_the_cell_events_whatever_the_execution_counter_says(tmp_path):
    """pre_run_cell's info is the running cell; post_run_cell's result (same info) its end and
    number: the capture never reads the shell's counter or history (whose meaning differs
    between IPython 8 and 9)."""
    from IPython.core.events import EventManager, available_events
    from tfjupyter.experiments.cells import CellCapture, watch_cells
    from tfjupyter.experiments.record import read_cells
    class Shell:
        execution_count = "not a number"
    shell = Shell()
    shell.events = EventManager(shell, available_events)

    def begin(code):
        info = types.SimpleNamespace(raw_cell=code)
        shell.events.trigger("pre_run_cell", info)
        return info

    def finish(info, number, error=None):
        shell.events.trigger("post_run_cell", types.SimpleNamespace(
            info=info, execution_count=number, success=error is None, error_in_exec=error,
            error_before_exec=None))

    watch_cells(shell)
    finish(begin("import tfjupyter"), 1)
    start = begin("%tf_experiment start a")
    capture = CellCapture(shell, str(tmp_path))
    capture.start()
    assert [c["code"] for c in read_cells(str(tmp_path))] == ["%tf_experiment start a"]
    finish(start, 2)
    finish(types.SimpleNamespace(raw_cell=""), 3)            # an empty cell: no pre_run_cell
    outer = begin("run_inner()")
    finish(begin("inner"), 4)                                # a cell run by a cell
    finish(outer, 5, ZeroDivisionError("division by zero"))
    end = begin("%tf_experiment end")
    capture.stop()
    finish(end, 6)                                           # after the record stopped
    capture.close()
    cells = [(c["code"], c["execution_count"], c["success"], c["error"])
             for c in read_cells(str(tmp_path))]
    assert cells == [("%tf_experiment start a", 2, True, None), ("inner", 4, True, None),
                     ("run_inner()", 5, False, "ZeroDivisionError: division by zero"),
                     ("%tf_experiment end", None, None, None)]


def test_magic_errors_are_usage_errors(ip, tmp_path):
    for line, message in [("end", "no experiment is running"),
                          ("start a/b", "path separator"),
                          (f"compare {tmp_path} --dir {tmp_path}", "not an experiment record"),
                          ("compare nothing_here", "no experiment 'nothing_here'"),
                          ("start x --config novalue", "expected KEY=VALUE"),
                          ("bogus", "usage: %tf_experiment")]:
        with pytest.raises(UsageError, match=message):
            ip.run_line_magic("tf_experiment", line)
    ip.run_line_magic("tf_experiment", f"start one --dir {tmp_path}")
    with pytest.raises(UsageError, match="'one' is still running"):
        ip.run_line_magic("tf_experiment", f"start two --dir {tmp_path}")
    assert ip.run_line_magic("tf_experiment", "end").status == "finished"


# -- MonitoredTrainingSession ----------------------------------------------------------------------
def test_hook_records_a_monitored_training_session_and_its_checkpoint(tmp_path):
    x, accuracy, loss, y, global_step, summaries, increment = build()
    hook = ExperimentHook("hooked", dir=str(tmp_path / "records"), config={"hook": True},
                          checkpoint_dir=str(tmp_path / "ckpt"))
    hooks = [tf.train.StopAtStepHook(last_step=6), hook]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "ckpt"), hooks=hooks,
                                           save_summaries_steps=None,
                                           log_step_count_steps=0) as sess:
        while not sess.should_stop():
            sess.run([y, summaries, global_step, increment],
                     {x: np.ones((5, 3)), accuracy: 0.5, loss: 0.5})
    r = hook.record
    assert r is not None and r.status == "finished" and r.config == {"hook": True}
    assert r.final["steps"] >= 6 and r.final["accuracy"] == pytest.approx(0.5)
    assert r.checkpoint is not None and r.checkpoint.startswith(str(tmp_path / "ckpt"))
    assert os.path.exists(r.checkpoint + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")) == r.checkpoint
    nodes = {n.name: n.device for n in r.graph().node}
    assert nodes["w"] == CPU0
    assert current() is None


def test_hook_fails_the_record_when_training_raises(tmp_path):
    build()
    hook = ExperimentHook("broken", dir=str(tmp_path))
    with pytest.raises(ZeroDivisionError):
        with tf.train.MonitoredTrainingSession(hooks=[hook], log_step_count_steps=0,
                                               save_summaries_steps=None) as sess:
            sess.run(tf.train.get_global_step())
            try:
                1 / 0
            except ZeroDivisionError as e:
                hook.close(e)
                raise
    assert hook.record.status == "failed" and "ZeroDivisionError" in hook.record.error


# -- a real kernel, killed -------------------------------------------------------------------------
KERNEL_TRAIN = '''
import numpy as np, tfjupyter as tf
from tfjupyter.experiments import Experiment
x = tf.placeholder(tf.float32, [None, 3]); a = tf.placeholder(tf.float32, [])
y = tf.reduce_sum(x * a)
tf.summary.scalar("accuracy", a)
s = tf.summary.merge_all()
sess = tf.Session()
e = Experiment("killed", dir=DIR).start()
'''

KERNEL_LOOP = '''
k = 0
while True:   # until the kernel is killed
    sess.run([y, s], {x: np.ones((4, 3)), a: min(k / 1000, 1.0)})
    k += 1
'''


@pytest.mark.timeout(120)
def test_a_killed_kernel_leaves_an_interrupted_record(tmp_path):
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        kc.execute_interactive(f"DIR = {str(tmp_path)!r}\nimport os; PID = os.getpid()",
                               timeout=60)
        reply = kc.execute_interactive(KERNEL_TRAIN, timeout=60)
        assert reply["content"]["status"] == "ok"
        pids = []
        pid_reply = kc.execute_interactive("print(PID)", timeout=30,
                                           output_hook=lambda msg: pids.append(msg))
        assert pid_reply["content"]["status"] == "ok"
        pid = int("".join(m["content"].get("text", "") for m in pids
                          if m["msg_type"] == "stream"))
        kc.execute(KERNEL_LOOP)
        events_file = tmp_path / "killed" / store.EVENTS
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:   # wait for a few flushes of steps and summaries
            lines = list(store.read_jsonl(str(events_file)))
            if sum(line["kind"] == "steps" for line in lines) >= 3:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the experiment wrote no steps in 60 s")
        os.kill(pid, signal.SIGKILL)
        t_kill = time.time()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    r = load(str(tmp_path / "killed"))
    assert r.status == "interrupted"
    assert r.final["steps"] > 10 and len(r.metrics) > 10
    assert r.ended <= t_kill and r.wall_time > 0
    values = r.scalar("accuracy")["value"]
    assert values == sorted(values)   # the loop's accuracy only grows: points in order
    assert any("Experiment(\"killed\"" in c["code"] for c in r.cells)


def test_messages_show_a_record_below_the_working_directory_relative_to_it(tmp_path,
                                                                          monkeypatch):
    from tfjupyter.experiments.store import shown_path
    monkeypatch.chdir(tmp_path)
    assert shown_path(str(tmp_path / "experiments" / "run1")) == os.path.join("experiments",
                                                                              "run1")
    assert shown_path("experiments/run1") == os.path.join("experiments", "run1")
    elsewhere = str(tmp_path.parent / "other" / "run1")
    assert shown_path(elsewhere) == elsewhere
    assert shown_path(str(tmp_path) + "-sibling/run1") == str(tmp_path) + "-sibling/run1"

"""``--restart``: dead tasks of a notebook's cluster come back (tfjupyter/cluster/recovery.py).

Real ipyparallel engines on loopback, real SIGKILLs: a worker and then the ps die in the middle
of a ``%%tf_worker --no-block`` training; the restart limit; a port taken while a task was down.
"""
import os
import re
import signal
import socket
import sys
import time

import pytest

pytest.importorskip("ipyparallel")

from tfjupyter.cluster import Cluster, TaskError  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from cluster_util import ipyparallel_children, ipython_shell, isolated_ipython  # noqa: E402
from clusters.cells import train_cell  # noqa: E402
from test_cluster import _accuracies, _assert_no_processes_left  # noqa: E402

STEPS = 1500
FIGURES = {}   # measured recovery times, printed at the end of the module (pytest -s)


@pytest.fixture(scope="module")
def ipython_dir(tmp_path_factory):
    yield from isolated_ipython(tmp_path_factory.mktemp("recovery"))
    if FIGURES:
        print("\nrecovery times (s):", FIGURES)


@pytest.fixture
def ip(ipython_dir):
    yield from ipython_shell(ipython_dir / "ipython")


def _wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def _kill(cluster, name):
    """SIGKILLs the task's engine; (wall time of the kill, the killed Task)."""
    task = cluster.task(name)
    os.kill(task.pid, signal.SIGKILL)
    return time.time(), task


def _recovered(cluster, name, killed, old):
    """Waits for ``name`` to serve again after the kill at ``killed``; seconds it took."""
    _wait_until(lambda: cluster.task(name).pid != old.pid, 60, f"{name} to restart")
    record = [r for r in cluster.supervisor.history if r.task == name][-1]
    assert record.serving_s is not None, record
    return record.found + record.serving_s - killed


@pytest.mark.timeout(200)
def test_a_killed_worker_and_then_ps_come_back_and_training_ends_on_target(
        ip, ipython_dir, capsys):
    before = ipyparallel_children()
    ip.run_line_magic("tf_cluster", "start --ps 1 --workers 2 --restart")
    cluster = ip.magics_manager.registry["ClusterMagics"].cluster
    checkpoints = ipython_dir / "checkpoints"
    cell = train_cell("async", steps=STEPS, checkpoint_dir=str(checkpoints), save_steps=50,
                      pause=0.02)
    result = ip.run_cell("%%tf_worker --no-block\n" + cell)
    assert result.error_in_exec is None and result.error_before_exec is None

    def global_step():
        return cluster.status().row("ps:0").global_step or 0

    _wait_until(lambda: global_step() >= 100, 60, "the first 100 steps")
    killed, old = _kill(cluster, "worker:1")
    FIGURES["worker:1 serving again"] = _recovered(cluster, "worker:1", killed, old)
    # It runs the cell again: its steps show in its telemetry.
    _wait_until(lambda: cluster.status().row("worker:1").steps_per_sec > 0, 60,
                "worker:1 to step again")
    FIGURES["worker:1 stepping again"] = time.time() - killed
    step_at_ps_kill = global_step()
    assert step_at_ps_kill < STEPS - 300, "training ended too soon to kill the ps mid-training"

    killed, old = _kill(cluster, "ps:0")
    FIGURES["ps:0 serving again"] = _recovered(cluster, "ps:0", killed, old)
    # The new ps is empty; the chief restores the latest checkpoint (saved every 50 steps),
    # and the global step goes on from there.
    restored = _wait_until(lambda: cluster.status().row("ps:0").global_step, 60,
                           "the restored global step")
    assert step_at_ps_kill - 100 <= restored <= step_at_ps_kill + 50, (restored, step_at_ps_kill)
    _wait_until(lambda: global_step() > restored, 60, "the global step to move again")
    FIGURES["ps:0 global step moving again"] = time.time() - killed

    ip.run_line_magic("tf_cluster", "wait --timeout 120")
    out = capsys.readouterr().out
    assert re.search(r"^\[worker:1\] restarted on a new engine \(pid \d+\) after its process "
                     r"\(pid \d+\) exited; running the cell again$", out, re.M), out
    accuracies = _accuracies(out)
    assert set(accuracies) == {"worker:0", "worker:1"}, out
    assert min(accuracies.values()) >= 0.9, out
    # The ps holds the global step every worker stopped at (its status polls lag up to 0.5 s).
    _wait_until(lambda: global_step() >= STEPS, 5, f"the ps's global step {STEPS}")
    table = cluster.status()
    assert [r.restarts for r in table.rows] == [1, 0, 1], str(table)
    assert all(r.state in ("idle", "running") for r in table.rows), str(table)
    pids = [t.pid for t in cluster.tasks]
    controller = cluster.ipyparallel_cluster.controller.pid
    ip.run_line_magic("tf_cluster", "stop")
    _assert_no_processes_left(pids + [controller], before)


@pytest.mark.timeout(150)
def test_restart_limit_and_a_taken_port_leave_the_task_dead_with_a_reason(ipython_dir, capsys):
    from tfjupyter.experiments import Experiment
    before = ipyparallel_children()
    experiment = Experiment("restarts", dir=str(ipython_dir / "experiments"), cluster=False)
    with experiment, Cluster(ps=0, workers=2, restart=True, max_restarts=1) as cluster:
        run = cluster.run("import time\nprint('napping', task_index, flush=True)\n"
                          "time.sleep(120)", block=False)
        time.sleep(1.0)
        killed, old = _kill(cluster, "worker:1")
        _recovered(cluster, "worker:1", killed, old)
        killed, old = _kill(cluster, "worker:1")
        _wait_until(lambda: "restart limit" in cluster.task("worker:1").note, 30,
                    "the restart limit")
        row = cluster.status().row("worker:1")
        assert row.state == "dead" and row.restarts == 1, row
        assert row.error == "restart limit reached (1 in 10 min)", row

        # A port taken while its task is down: the restart fails, saying so.
        victim = cluster.task("worker:0")
        port = int(victim.address.rpartition(":")[2])
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            os.kill(victim.pid, signal.SIGKILL)
            _wait_until(lambda: _bind(squatter, port), 10, f"port {port} to be free")
            squatter.listen()
            _wait_until(lambda: "cannot restart" in cluster.task("worker:0").note, 60,
                        "the failed restart")
        finally:
            squatter.close()
        assert f"cannot restart worker:0 at 127.0.0.1:{port}: port {port} is taken" in \
            cluster.task("worker:0").note
        with pytest.raises(TaskError) as info:
            run.result(30)
        assert set(info.value.failures) == {"worker:0", "worker:1"}
        assert "stays dead: restart limit reached (1 in 10 min)" in \
            info.value.failures["worker:1"][1]
        assert "is taken" in info.value.failures["worker:0"][1]
        out = capsys.readouterr().out
        assert "[worker:1] restarted on a new engine" in out
        assert out.count("[worker:1] napping 1") == 2, out   # the first run and the rerun
        pids = [t.pid for t in cluster.tasks]
        controller = cluster.ipyparallel_cluster.controller.pid
    _assert_no_processes_left(pids + [controller], before)
    # Each restart, and each task left dead, is in the experiment's timeline.
    events = [(e["task"], e["state"]) for e in experiment.record.task_events]
    assert events == [("worker:1", "restarted"), ("worker:1", "restart failed"),
                      ("worker:0", "restart failed")], events
    errors = [e["error"] for e in experiment.record.task_events]
    assert "restart limit reached" in errors[1] and "is taken" in errors[2], errors


def _bind(sock, port):
    try:
        sock.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False


def test_without_restart_nothing_supervises():
    assert Cluster(ps=1, workers=1).supervisor is None


def test_the_dashboards_cluster_table_counts_each_tasks_restarts():
    pytest.importorskip("bokeh")
    from test_dashboard import RecordedWatcher, _status, make_feed
    from tfjupyter.distributed.telemetry import TelemetryEvent
    from tfjupyter.widgets.panels import Panels
    from tfjupyter.widgets.sources import ClusterSource

    w1 = "/job:worker/replica:0/task:1"
    watcher = RecordedWatcher({w1: _status(w1)})
    feed, _, _ = make_feed()
    restarts = {"worker:1": 0}
    ClusterSource(feed, watcher, restarts=lambda: dict(restarts))
    restarts["worker:1"] = 2   # the cluster restarted it twice; its new process answers
    watcher.play(TelemetryEvent(w1, "alive", time.time(), {"pid": 2}))
    panels = Panels()
    panels.apply(feed.drain(force_sample=True))
    assert dict(zip(panels.health.data["task"], panels.health.data["restarts"])) == \
        {"worker:1": 2}
    assert re.search(r"<th[^>]*>restarts</th>", panels.health_table.text)


# -- the runtime's side, in one process ----------------------------------------------------------
def test_a_ps_replaced_empty_is_noticed_and_the_chief_initializes_again(monkeypatch, tmp_path):
    """A ps that comes back on its address without its variables: the next step fails with
    AbortedError (the new ps does not know the session's graphs), MonitoredTrainingSession
    opens a new session, and the chief, with no checkpoint, initializes again (TF's
    SessionManager): the global step starts over."""
    import tfjupyter as tf
    from cluster_util import TOKEN, two_phase_cluster
    from tfjupyter.framework import errors

    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", TOKEN)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    servers_to_stop = []
    try:
        spec, servers = two_phase_cluster(servers_to_stop.append)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                global_step = tf.train.get_or_create_global_step()
            with tf.device("/job:worker/task:0"):
                step = tf.assign_add(global_step, 1)
            # A plain session on the worker sees the replaced ps as an error, not a hang.
            with tf.Session(servers["worker"].target) as plain:
                plain.run(global_step.initializer)
                assert plain.run(step) == 1   # its partitions are registered on the ps now
                with tf.train.MonitoredTrainingSession(master=servers["worker"].target,
                                                       is_chief=True) as sess:
                    # A chief without a checkpoint initializes (TF's prepare_session).
                    assert [sess.run(step) for _ in range(3)] == [1, 2, 3]
                    servers["ps"].stop(0)
                    address = spec.task_address("ps", 0)
                    new_ps = tf.train.Server(spec, job_name="ps", task_index=0, token=TOKEN)
                    servers_to_stop.append(new_ps)
                    assert new_ps.target.endswith(address)
                    with pytest.raises(errors.AbortedError, match="just restarted"):
                        plain.run(step)
                    assert sess.run(step) == 1   # initialized again, then one step
                    assert sess.run(step) == 2
    finally:
        for server in reversed(servers_to_stop):
            server.stop(0)

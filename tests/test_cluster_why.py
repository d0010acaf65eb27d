"""``%tf_cluster why`` on real hangs of a real ipyparallel cluster (1 ps + 2 workers).

One cluster serves every case, in this order (each cell is interrupted before the next case):
a non-chief whose chief never initializes, a dequeue from an empty queue nobody fills, a _Recv
from a SIGSTOPped ps (SIGCONT in cleanup), and last, since it kills a worker, sync replicas
without a backup worker after worker:1 is SIGKILLed. Each case asserts the task, op and cause
the diagnosis names, and that it answered within 5 s; the times are printed (``-s``).
"""
import html
import os
import signal
import sys
import time

import psutil
import pytest

pytest.importorskip("ipyparallel")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

from tfjupyter.cluster import ClusterError, TaskError  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from clusters.cells import train_cell  # noqa: E402
from test_cluster import cluster, ipython_dir  # noqa: E402,F401  (its module fixtures)

pytestmark = pytest.mark.timeout(120)

WHY_LIMIT_S = 5.0


@pytest.fixture(scope="module")
def magics(ipython_dir):
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config, ipython_dir=str(ipython_dir))
    shell.run_line_magic("load_ext", "tfjupyter")
    try:
        yield shell.magics_manager.registry["ClusterMagics"]
    finally:
        shell.run_line_magic("unload_ext", "tfjupyter")
        InteractiveShell.clear_instance()


def _why(cluster, task=None):
    t0 = time.monotonic()
    diagnosis = cluster.diagnose(task)
    took = time.monotonic() - t0
    print(f"\n%tf_cluster why{' --task ' + task if task else ''}: {took:.2f} s\n{diagnosis}")
    assert took < WHY_LIMIT_S
    return diagnosis


def _until_blocked(cluster, task, what, timeout=30.0):
    """Waits until ``task``'s steps have waited in ``what`` (an op type) for a second (the
    status table's "waiting in" column says so), so the hang is real, not a step's routine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.status().row(task).waiting.startswith(what):
            return
        time.sleep(0.3)
    raise AssertionError(f"{task} never waited in {what}:\n{cluster.status()}")


def _interrupt(cluster):
    cluster.interrupt()
    with pytest.raises(TaskError, match="KeyboardInterrupt"):
        cluster.wait(30)


def test_why_needs_a_cluster_and_a_known_task(cluster, magics):
    with pytest.raises(UsageError, match="no cluster: start one"):
        magics.tf_cluster("why")
    magics.cluster = cluster
    try:
        with pytest.raises(UsageError, match=r"no task 'worker:7' in this cluster; tasks are "
                                             r"ps:0, worker:0, worker:1"):
            magics.tf_cluster("why --task worker:7")
        idle = magics.tf_cluster("why")     # nothing runs: nothing waits
        assert idle.root_cause == "no task is blocked in a step."
        assert [t.state for t in idle.tasks] == ["alive"] * 3
    finally:
        magics.cluster = None
    with pytest.raises(ClusterError, match="no task 'ps:3'"):
        cluster.diagnose("ps:3")


def test_a_non_chief_whose_chief_never_initializes(cluster):
    cluster.run("""
tf.reset_default_graph()
with tf.device("/job:ps/task:0"):
    weights = tf.get_variable("never_initialized", [4], initializer=tf.zeros_initializer())
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=False,
                                       max_wait_secs=100) as sess:
    pass
""", tasks=[1], block=False)
    _until_blocked(cluster, "worker:1", "readiness")
    diagnosis = _why(cluster)
    assert diagnosis.root_task == "worker:0"
    assert "worker:1 waits for the model to be initialized" in diagnosis.root_cause
    assert "never_initialized" in diagnosis.root_cause
    assert "its chief worker:0 is not initializing it" in diagnosis.root_cause
    assert "is_chief" in diagnosis.fix
    report = diagnosis.task("worker:1")
    assert report.waiting_for == ["worker:0"]
    assert "SessionManager.wait_for_session" in report.waits[0]
    assert "never_initialized" in report.waits[0]
    assert cluster.status().row("worker:1").waiting.startswith("readiness model")
    _interrupt(cluster)


def test_a_dequeue_from_an_empty_queue_that_no_runner_fills(cluster):
    cluster.run("""
tf.reset_default_graph()
with tf.device("/job:ps/task:0"):
    inputs = tf.FIFOQueue(10, tf.float32, shapes=[], name="inputs_q", shared_name="inputs_q")
    batch = inputs.dequeue(name="next_input")
    inputs.enqueue(1.0, name="fill_input")   # its runner is never started
with tf.Session(server.target) as sess:
    sess.run(batch)
""", tasks=[0], block=False)
    _until_blocked(cluster, "worker:0", "QueueDequeueV2")
    diagnosis = _why(cluster, "worker:0")
    assert diagnosis.root_task == "ps:0"
    assert diagnosis.root_cause == (
        "worker:0 dequeues from FIFOQueue 'inputs_q' on ps:0, which is empty, and no step in "
        "flight enqueues to it.")
    assert "start_queue_runners" in diagnosis.fix
    assert diagnosis.chain[0].startswith(
        "worker:0 waits in QueueDequeueV2 'next_input' on ps:0, for FIFOQueue 'inputs_q' "
        "(size 0, capacity 10)")
    assert "holds blocked ops of worker:0's steps" in diagnosis.task("ps:0").waits
    _interrupt(cluster)


def test_a_recv_from_a_sigstopped_task(cluster, tmp_path):
    stepping = tmp_path / "stepping"
    cluster.run(f"""
import time
tf.reset_default_graph()
with tf.device("/job:ps/task:0"):
    source = tf.get_variable("recv_source", [], initializer=tf.ones_initializer())
    doubled = source * 2.0
with tf.device("/job:worker/task:1"):
    result = doubled + 1.0
config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:1"])
with tf.Session(server.target, config=config) as sess:
    sess.run(source.initializer)
    sess.run(result)
    open({str(stepping)!r}, "w").close()
    while True:
        sess.run(result)
        time.sleep(0.02)
""", tasks=[1], block=False)
    ps = cluster.task("ps:0")
    deadline = time.monotonic() + 30
    while not stepping.exists():   # its session is up: the next steps need the ps
        assert time.monotonic() < deadline, "worker:1 never stepped"
        time.sleep(0.1)
    os.kill(ps.pid, signal.SIGSTOP)
    try:
        _until_blocked(cluster, "worker:1", "_Recv")
        diagnosis = _why(cluster)
        assert psutil.Process(ps.pid).status() == psutil.STATUS_STOPPED
        assert diagnosis.task("ps:0").state == "frozen"
        assert diagnosis.root_task == "ps:0"
        assert diagnosis.root_cause.startswith("worker:1's _Recv '")
        assert diagnosis.root_cause.endswith(
            f"waits for a tensor from ps:0, and ps:0 is frozen: its process {ps.pid} is "
            "stopped (SIGSTOP): it runs nothing.")
        assert "kill -CONT" in diagnosis.fix and "operation_timeout_in_ms" in diagnosis.fix
        assert diagnosis.task("worker:1").waiting_for == ["ps:0"]
    finally:
        os.kill(ps.pid, signal.SIGCONT)
    _interrupt(cluster)


def test_sync_replicas_with_a_killed_worker_and_no_backup(cluster):
    """Last: it kills worker:1 (the module's cluster is stopped after it)."""
    cluster.run(train_cell("sync", backups=0, steps=100000), block=False)
    deadline = time.monotonic() + 60
    while (cluster.status().row("ps:0").global_step or 0) < 20:
        assert time.monotonic() < deadline, f"training did not start:\n{cluster.status()}"
        time.sleep(0.3)
    worker1 = cluster.task("worker:1")
    os.kill(worker1.pid, signal.SIGKILL)
    _until_blocked(cluster, "worker:0", "QueueDequeueV2 sync_token_q")
    diagnosis = _why(cluster)
    assert diagnosis.task("worker:1").state == "dead"
    assert diagnosis.root_task == "worker:1"
    chain = diagnosis.chain
    assert chain[0].startswith("worker:0 waits in QueueDequeueV2 'sync_token_q_Dequeue' on "
                               "ps:0, for FIFOQueue 'sync_token_q' (size 0")
    assert chain[1] == ("'sync_token_q' is filled by a step of worker:0 (its partition on ps:0 "
                        "enqueues with 'sync_token_q_EnqueueMany')")
    assert chain[2].startswith("worker:0 waits in AccumulatorTakeGradient")
    assert "(1 of 2 gradients)" in chain[2]
    assert chain[3].endswith("has 1 of 2 gradients this round; none yet from worker:1")
    assert chain[4] == f"worker:1 is dead: its process {worker1.pid} is gone"
    assert diagnosis.root_cause.startswith(f"worker:1 is dead: its process {worker1.pid} is "
                                           "gone; so accumulator '")
    assert "backup worker" in diagnosis.fix and "--restart" in diagnosis.fix
    assert "operation_timeout_in_ms" in diagnosis.fix
    text = str(diagnosis)
    assert f"Root cause: {diagnosis.root_cause}" in text and "  5. worker:1 is dead" in text
    assert html.escape(diagnosis.root_cause) in diagnosis._repr_html_()
    only = _why(cluster, "worker:1")   # asked about the dead task itself
    assert only.root_task == "worker:1" and only.chain == []
    assert only.root_cause == f"worker:1 is dead: its process {worker1.pid} is gone."
    cluster.interrupt(tasks=["worker:0"])
    with pytest.raises(TaskError):
        cluster.wait(30)

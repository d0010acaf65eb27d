"""What blocked threads wait in (runtime/waits.py) and how telemetry carries it.

In-process: real queues, accumulators, the SessionManager's readiness loop and a two-task
in-process gRPC cluster; every blocked thread is released and joined (bounded) by its test.
"""
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.runtime import waits

from cluster_util import TOKEN, two_phase_cluster
from test_telemetry import cleanup  # noqa: F401  (its fixture: stops servers and watchers)

pytestmark = pytest.mark.timeout(60)


def _until(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _in_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except Exception as e:   # reported by the test, not lost in the thread
            errors.append(e)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def _mine(kind, resource):
    return [w for w in waits.waits() if w["kind"] == kind and w["resource"] == resource]


def test_a_dequeue_on_an_empty_queue_is_recorded_live_and_only_while_it_blocks():
    q = tf.FIFOQueue(5, tf.float32, shapes=[], name="work_q", shared_name="work_q_shared")
    x = q.dequeue(name="take_one")
    put = q.enqueue_many([[1.0, 2.0]])
    with tf.Session() as sess:
        sess.run(put)
        assert sess.run(x) == 1.0           # a dequeue that finds an element never registers
        assert _mine("queue", "work_q_shared") == []
        sess.run(x)
        before = time.time()
        thread, errors = _in_thread(lambda: sess.run(x))
        (w,) = _until(lambda: _mine("queue", "work_q_shared"), what="the dequeue's wait")
        assert (w["op"], w["type"]) == ("take_one", "QueueDequeueV2")
        assert w["device"].endswith("/device:CPU:0")
        assert w["details"]["size"] == 0 and w["details"]["capacity"] == 5
        assert w["details"]["blocked_dequeues"] == 1 and not w["details"]["closed"]
        assert before - 1 <= w["since"] <= time.time()
        sess.run(put)                        # the wait ends: the record goes with it
        thread.join(10)
        assert not thread.is_alive() and errors == []
        assert _mine("queue", "work_q_shared") == []
        assert sess.run(q.size()) == 1


def test_a_take_grad_reports_gradients_received_needed_and_the_steps_that_applied_them():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="grad_acc")
    apply_one = acc.apply_grad([1.0, 3.0], local_step=0)
    take = acc.take_grad(2)
    with tf.Session() as sess:
        sess.run(apply_one)
        thread, errors = _in_thread(lambda: sess.run(take))
        (w,) = _until(lambda: _mine("accumulator", "grad_acc"), what="take_grad's wait")
        assert w["type"] == "AccumulatorTakeGradient"
        assert w["details"]["received"] == 1 and w["details"]["needed"] == 2
        assert len(w["details"]["applied_steps"]) == 1
        sess.run(apply_one)
        thread.join(10)
        assert not thread.is_alive() and errors == []
        assert _mine("accumulator", "grad_acc") == []


def test_the_readiness_loop_names_the_variables_still_uninitialized():
    v = tf.Variable(tf.zeros([3]), name="not_yet_initialized")
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                      recovery_wait_secs=0.2)
    failure = []

    def wait():
        try:
            manager.wait_for_session("", max_wait_secs=3)
        except tf.errors.DeadlineExceededError as e:
            failure.append(e)
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()

    def reported():
        found = [w for w in waits.waits() if w["kind"] == "readiness"]
        return found if found and found[0]["details"]["uninitialized"] else None
    (w,) = _until(reported, what="the readiness wait")
    assert w["details"]["uninitialized"] == ["not_yet_initialized"]
    assert w["op"] is None and w["device"] is None
    thread.join(10)
    assert failure and "not_yet_initialized" in str(failure[0])
    assert [w for w in waits.waits() if w["kind"] == "readiness"] == []
    del v


def test_telemetry_attributes_a_remote_partition_wait_and_its_origin_step(cleanup):
    spec, servers = two_phase_cluster(cleanup)
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(-1, tf.float32, shapes=[], name="tokens", shared_name="tokens")
        take = q.dequeue(name="take_token")
        put = q.enqueue(7.0)
    with tf.device("/job:worker/task:0"):
        doubled = take * 2
    watcher = tf.distributed.watch(spec, token=TOKEN, interval=0.2)
    cleanup(watcher)
    config = tf.ConfigProto(cluster_token=TOKEN)
    sess = tf.Session(servers["worker"].target, config=config)
    cleanup(sess)
    result = []
    thread, errors = _in_thread(lambda: result.append(sess.run(doubled)))
    ps_name, worker_name = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"

    def blocked():   # each task is polled on its own: both replies must be from the hang
        snap = watcher.snapshot()
        return snap if any(w["op"] == "take_token" for w in snap[ps_name].waits) \
            and snap[worker_name].steps_in_flight else None
    snap = _until(blocked, what="the ps's wait in telemetry")
    (w,) = [w for w in snap[ps_name].waits if w["op"] == "take_token"]
    assert w["task"] == ps_name and w["device"].startswith(ps_name)
    assert w["resource"] == "tokens" and w["details"]["size"] == 0
    assert w["details"]["capacity"] is None
    # One process serves both tasks: the wait goes to the ps only; the Session.run that made
    # the step is the worker's (its master), with the same step id.
    assert all(x["op"] != "take_token" for x in snap[worker_name].waits)
    sessions = [s for s in snap[worker_name].steps_in_flight if s["kind"] == "session"]
    assert w["step_id"] in {s["step_id"] for s in sessions}
    partitions = [s for s in snap[ps_name].steps_in_flight if s["step_id"] == w["step_id"]]
    assert partitions and partitions[0]["kind"] == "partition"
    with tf.Session(servers["worker"].target, config=config) as other:
        other.run(put)
    thread.join(10)
    assert errors == [] and result == [14.0]
    _until(lambda: not watcher.snapshot()[ps_name].waits, what="the wait to leave telemetry")


def test_a_step_in_flight_lists_the_queues_it_fills():
    spec_q = tf.FIFOQueue(1, tf.float32, shapes=[], name="full_q")
    fill = spec_q.enqueue(1.0, name="fill_it")
    with tf.Session() as sess:
        sess.run(fill)
        plan_ops = [fill]

        class Plan:   # what a worker's partition plan gives step_running: its ops
            ops = plan_ops
        with waits.step_running(42, "partition", "/job:ps/replica:0/task:0", Plan()):
            (step,) = [s for s in waits.steps_in_flight() if s["step_id"] == 42]
        assert step["fills"] == [{"kind": "queue", "resource": "full_q", "op": "fill_it",
                                  "device": ""}]
        assert [s for s in waits.steps_in_flight() if s["step_id"] == 42] == []


def test_waiting_costs_nothing_on_the_fast_path(monkeypatch):
    """A step whose queue ops never block registers nothing."""
    calls = []
    real = waits.blocking
    monkeypatch.setattr(waits, "blocking", lambda *a, **k: calls.append(a) or real(*a, **k))
    q = tf.FIFOQueue(100, tf.float32, shapes=[])
    put, take = q.enqueue_many([np.arange(10, dtype=np.float32)]), q.dequeue()
    with tf.Session() as sess:
        sess.run(put)
        for _ in range(10):
            sess.run(take)
    assert calls == []


def test_the_waiting_in_cell_names_the_wait_that_holds_a_tasks_step():
    from tfjupyter.cluster.diagnose import waiting_in
    from tfjupyter.distributed.telemetry import TaskStatus
    from tfjupyter.widgets.feed import TaskRow
    from tfjupyter.widgets.panels import _health_html
    now = time.time()
    ps, worker = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"

    def wait(kind, type_, resource, age, step, **details):
        return {"kind": kind, "op": type_.lower(), "type": type_, "resource": resource,
                "device": ps + "/device:CPU:0", "details": details, "since": now - age,
                "step_id": step}
    snapshot = {
        ps: TaskStatus(ps, "a:1", "alive", waits=[
            wait("queue", "QueueDequeueV2", "sync_token_q", 12.4, 7, size=0),
            wait("queue", "QueueEnqueueV2", "fresh_q", 0.2, 8)]),   # a routine, short wait
        worker: TaskStatus(worker, "a:2", "alive", waits=[
            wait("recv", "_Recv", "key", 12.5, 7, peer=ps)],
            steps_in_flight=[{"step_id": 7, "kind": "session", "fills": []}]),
    }
    # The dequeue on the ps is the worker's step's (step 7): it holds the worker, not the ps;
    # the worker's own _Recv only waits for that partition.
    assert waiting_in("worker:0", snapshot) == "QueueDequeueV2 sync_token_q 12s"
    assert waiting_in("ps:0", snapshot) == ""
    row = TaskRow(task="worker:0", waiting="QueueDequeueV2 sync_token_q 12s")
    html_text = _health_html([row])
    assert "<th" in html_text and "waiting in" in html_text
    assert "QueueDequeueV2 sync_token_q 12s" in html_text

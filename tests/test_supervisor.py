"""tf.train.Supervisor (TensorFlow 0.8): managed sessions, the chief's checkpoint and summary
threads, stopping, and non-chief waiting (local sessions; every wait bounded and short)."""
import glob
import logging
import os
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.summary import summary_iterator
from tfjupyter.train.supervisor import Supervisor


def _model(lr=0.1):
    """loss = (w - 3)^2 from w = 1 with SGD: after k steps w = 3 - 2 * (1 - 2 lr)^k."""
    gs = tf.Variable(0, name="global_step", trainable=False, dtype=tf.int64)
    w = tf.Variable(1.0, name="w")
    loss = tf.square(w - 3.0, name="loss")
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)
    return gs, w, loss, train


def _w_after(k, lr=0.1):
    return 3.0 - 2.0 * (1.0 - 2.0 * lr) ** k


def _events(logdir):
    events = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        events.extend(summary_iterator(path))
    return events


def _service_threads():
    return [t for t in threading.enumerate() if t.name.startswith("SV")]


def test_managed_session_trains_saves_and_a_new_supervisor_restores(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        gs, w, loss, train = _model()
        sv = Supervisor(logdir=logdir, save_summaries_secs=0)
        assert sv.global_step.name == "global_step:0" and sv.is_chief
        assert tf.get_default_graph().finalized
        with sv.managed_session() as sess:
            assert sess.run(w) == 1.0    # initialized by init_op
            # The checkpoint thread saves once at the start: let it finish that (step 0) first,
            # else its older checkpoint may be recorded after ours.
            first = os.path.join(logdir, "model.ckpt-0.meta")
            deadline = time.monotonic() + 5
            while not os.path.exists(first) and time.monotonic() < deadline:
                time.sleep(0.005)
            for _ in range(5):
                sess.run(train)
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
        assert sv.should_stop() and sv.coord.joined
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-5")
    assert os.path.exists(os.path.join(logdir, "graph.pbtxt"))
    assert os.path.exists(os.path.join(logdir, "model.ckpt-0.index"))
    with tf.Graph().as_default():
        gs, w, loss, train = _model()
        sv = Supervisor(logdir=logdir, save_summaries_secs=0, save_model_secs=0)
        with sv.managed_session() as sess:
            assert sess.run(gs) == 5
            np.testing.assert_allclose(sess.run(w), _w_after(5), rtol=1e-6)
            sess.run(train)
            np.testing.assert_allclose(sess.run(w), _w_after(6), rtol=1e-6)


def test_checkpoint_thread_saves_periodically_and_is_joined_on_stop(tmp_path):
    logdir = str(tmp_path)
    gs, w, loss, train = _model()
    sv = Supervisor(logdir=logdir, save_model_secs=0.1, save_summaries_secs=0)
    with sv.managed_session() as sess:
        assert [t.name for t in _service_threads()] == ["SVTimerCheckpointThread"]
        deadline = time.monotonic() + 5
        while len(sv.saver.last_checkpoints) < 3 and time.monotonic() < deadline:
            sess.run(train)
            time.sleep(0.01)
    assert len(sv.saver.last_checkpoints) >= 3
    assert _service_threads() == []   # stopped and joined by managed_session
    assert sv.should_stop()
    events = _events(logdir)
    checkpoints = [e for e in events if e.session_log.status == tf.SessionLog.CHECKPOINT]
    assert len(checkpoints) >= 3
    assert checkpoints[0].session_log.checkpoint_path == os.path.join(logdir, "model.ckpt")
    statuses = [e.session_log.status for e in events if e.HasField("session_log")]
    assert statuses[0] == tf.SessionLog.START and statuses[-1] == tf.SessionLog.STOP


def test_summary_and_step_counter_threads(tmp_path):
    logdir = str(tmp_path)
    gs, w, loss, train = _model()
    tf.summary.scalar("train_loss", loss)
    sv = Supervisor(logdir=logdir, save_summaries_secs=0.1, save_model_secs=0)
    assert sv.summary_op is not None
    with sv.managed_session() as sess:
        names = sorted(t.name for t in _service_threads())
        assert names == ["SVStepCounterThread", "SVSummaryThread"]
        deadline = time.monotonic() + 0.35
        while time.monotonic() < deadline:
            sess.run(train)
            time.sleep(0.005)
    tags = [v.tag for e in _events(logdir) for v in e.summary.value]
    assert tags.count("train_loss") >= 2 and tags.count("global_step/sec") >= 2
    rates = [v.simple_value for e in _events(logdir) for v in e.summary.value
             if v.tag == "global_step/sec"]
    assert max(rates) > 0


def test_summary_computed(tmp_path):
    logdir = str(tmp_path)
    gs, w, loss, train = _model()
    summary = tf.summary.scalar("my_loss", loss)
    sv = Supervisor(logdir=logdir, save_summaries_secs=0, save_model_secs=0, summary_op=None)
    with sv.managed_session() as sess:
        sess.run(train)
        sv.summary_computed(sess, sess.run(summary))
        sv.summary_computed(sess, sess.run(summary), global_step=42)
    values = [(e.step, v.simple_value) for e in _events(logdir) for v in e.summary.value]
    assert values == [(1, pytest.approx((_w_after(1) - 3) ** 2)),
                      (42, pytest.approx((_w_after(1) - 3) ** 2))]
    with tf.Graph().as_default():
        _model()
        sv = Supervisor(logdir=None)
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(None, b"")


def test_exception_in_managed_session_is_reraised_and_threads_stop(tmp_path):
    gs, w, loss, train = _model()
    sv = Supervisor(logdir=str(tmp_path), save_model_secs=0.05, save_summaries_secs=0)
    with pytest.raises(ValueError, match="bad batch"):
        with sv.managed_session() as sess:
            sess.run(train)
            raise ValueError("bad batch")
    assert _service_threads() == [] and sv.should_stop()


def test_out_of_range_ends_the_managed_session_quietly(tmp_path):
    gs, w, loss, train = _model()
    sv = Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
    with sv.managed_session() as sess:
        sess.run(train)
        raise errors.OutOfRangeError(None, None, "epochs done")
    assert sv.should_stop()


def test_stop_request_loop_and_stop_on_exception():
    gs, w, loss, train = _model()
    sv = Supervisor(logdir=None)
    calls = []
    with sv.managed_session() as sess:
        looper = sv.loop(0.01, lambda: calls.append(sess.run(gs)))
        while len(calls) < 3:
            time.sleep(0.01)
        with sv.stop_on_exception():
            raise errors.OutOfRangeError(None, None, "done")   # a clean stop
        assert sv.should_stop()
        sv.wait_for_stop()
    assert not looper.is_alive()
    # A Supervisor can manage a new session after stopping.
    with sv.managed_session() as sess:
        assert not sv.should_stop()
        sv.request_stop()
        assert sv.should_stop()


def test_thread_errors_are_reraised_by_stop():
    gs, w, loss, train = _model()
    sv = Supervisor(logdir=None)

    def fail():
        raise KeyError("service failed")

    with pytest.raises(KeyError, match="service failed"):
        with sv.managed_session():
            sv.loop(None, fail)
            sv.wait_for_stop()


def test_non_chief_needs_placed_variables_and_waits_boundedly(caplog):
    gs, w, loss, train = _model()
    with pytest.raises(ValueError, match="all Variables must have their device set"):
        Supervisor(is_chief=False)
    with tf.Graph().as_default():
        with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
            _model()
        sv = Supervisor(is_chief=False, logdir="/nonexistent", recovery_wait_secs=0.1)
        assert sv.summary_writer is None and sv.save_path is None   # only the chief writes
        start = time.monotonic()
        with caplog.at_level(logging.INFO, logger="tfjupyter"):
            with pytest.raises(errors.DeadlineExceededError,
                               match="still uninitialized: global_step, w"):
                sv.prepare_or_wait_for_session(max_wait_secs=0.3)
        assert time.monotonic() - start < 1.5
        assert "Waiting for model to be ready" in caplog.text
        with pytest.raises(RuntimeError, match="Only chief supervisor"):
            sv.start_standard_services(None)


def test_explicit_ops_init_fn_and_feed_dict(tmp_path):
    gs, w, loss, train = _model()
    start = tf.placeholder(tf.float32, [], name="start")
    v = tf.Variable(start, name="v")
    seen = []
    sv = Supervisor(logdir=None, init_feed_dict={start: 2.5},
                    init_fn=lambda sess: seen.append(sess.run(v)))
    with sv.managed_session() as sess:
        assert sess.run(v) == 2.5
    assert seen == [2.5]
    for ready_op in (None, Supervisor.USE_DEFAULT):
        with tf.Graph().as_default():
            a = tf.Variable(1.0, name="a")
            tf.Variable(2.0, name="b")
            sv = Supervisor(logdir=None, init_op=a.initializer, ready_op=ready_op)
            if ready_op is None:    # b's state is not checked
                with sv.managed_session() as sess:
                    assert sess.run(a) == 1.0
            else:
                with pytest.raises(RuntimeError, match="Variables not initialized: b"):
                    with sv.managed_session():
                        pass


def test_supervisor_defaults_come_from_collections():
    gs, w, loss, train = _model()
    init = tf.group(w.initializer, gs.initializer, name="my_init")
    tf.add_to_collection(tf.GraphKeys.INIT_OP, init)
    saver = tf.train.Saver([w, gs])
    tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
    sv = Supervisor(logdir=None)
    assert sv.init_op is init and sv.saver is saver
    assert tf.get_collection(tf.GraphKeys.READY_OP) == [sv.ready_op]
    assert sv.summary_op is None and sv.ready_for_local_init_op is None
    with tf.Graph().as_default():
        tf.constant(1.0)
        assert Supervisor(logdir=None).saver is None   # nothing to save


def test_tensorflow_0x_method_names():
    for name, method in [("PrepareSession", "prepare_or_wait_for_session"),
                         ("StartQueueRunners", "start_queue_runners"),
                         ("StartStandardServices", "start_standard_services"),
                         ("Stop", "stop"), ("RequestStop", "request_stop"), ("Loop", "loop"),
                         ("ShouldStop", "should_stop"), ("StopOnException", "stop_on_exception"),
                         ("WaitForStop", "wait_for_stop"), ("SummaryComputed", "summary_computed")]:
        assert getattr(Supervisor, name) is getattr(Supervisor, method)


def test_global_step_from_the_collection_drives_the_step_counter(tmp_path):
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(1.0, name="w")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w), global_step=gs)
    sv = Supervisor(logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0)
    assert sv.global_step is gs
    with sv.managed_session() as sess:
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            sess.run(train)
            time.sleep(0.005)
        steps = sess.run(gs)
    events = [e for e in _events(str(tmp_path)) for v in e.summary.value
              if v.tag == "global_step/sec"]
    assert len(events) >= 2 and 0 < events[-1].step <= steps


def test_managed_session_runs_and_stops_queue_runners():
    src = tf.FIFOQueue(10, [tf.float32], shapes=[[]], name="src")
    fill, close_src = src.enqueue_many([[1.0, 2.0]]), src.close()
    queue = tf.FIFOQueue(1, [tf.float32], shapes=[[]], name="q")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue([src.dequeue()])]))
    value = queue.dequeue()

    def init_fn(sess):
        sess.run(fill)
        sess.run(close_src)

    sv = Supervisor(logdir=None, init_fn=init_fn)
    got = []
    with sv.managed_session() as sess:
        while not sv.should_stop():
            got.append(sess.run(value))   # OutOfRangeError after 2 ends the session cleanly
    assert got == [1.0, 2.0]
    assert [t for t in threading.enumerate() if t.name.startswith("QueueRunnerThread")] == []


# -- on a cluster (in-process servers on loopback) -------------------------------------------------
@pytest.fixture
def cluster_servers(monkeypatch, tmp_path):
    from cluster_util import loopback_cluster
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", "test-token-" + "0" * 20)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    cluster = loopback_cluster(ps=1, worker=2)
    servers = [tf.train.Server(cluster, job_name=job, task_index=task)
               for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]]
    yield cluster, servers
    for server in servers:
        server.stop(0)


def test_supervisors_of_two_workers_train_one_model(cluster_servers, tmp_path):
    """The 0.8 distributed recipe: the non-chief's Supervisor waits for the chief's to
    initialize the variables on the ps, then both train them."""
    cluster, (ps, chief_server, worker_server) = cluster_servers

    def build(task):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster)):
            model = _model()
        return graph, model

    results, failures = {}, []

    def worker():
        try:
            graph, (gs, w, loss, train) = build(1)
            sv = Supervisor(graph=graph, is_chief=False, logdir=str(tmp_path),
                            recovery_wait_secs=0.05)
            with sv.managed_session(worker_server.target, config=None) as sess:
                results["worker_start"] = sess.run(gs)
                for _ in range(3):
                    sess.run(train)
        except Exception as e:  # reported to the main thread
            failures.append(e)

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(0.2)
    assert thread.is_alive() and "worker_start" not in results   # waiting for the chief
    graph, (gs, w, loss, train) = build(0)
    sv = Supervisor(graph=graph, is_chief=True, logdir=str(tmp_path), save_model_secs=0,
                    save_summaries_secs=0)
    with sv.managed_session(chief_server.target) as sess:
        thread.join(10)
        assert not thread.is_alive() and not failures
        sess.run(train)     # after the worker's steps: no concurrent (Hogwild) updates here
        assert results["worker_start"] == 0 and sess.run(gs) == 4
        np.testing.assert_allclose(sess.run(w), _w_after(4), rtol=1e-5)

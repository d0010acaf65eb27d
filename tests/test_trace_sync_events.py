"""Trace and sync runtime events: sampled tracing (events.request_traces), TraceRecords of
Session.run, SyncRecords of conditional accumulators, and both over cluster telemetry.

Every wait is bounded; every request, listener, server and watcher is released."""
import json
import re
import threading
import time

import grpc
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.client import session as session_module
from tfjupyter.distributed import telemetry
from tfjupyter.distributed.auth import TOKEN_METADATA_KEY
from tfjupyter.runtime import events

from cluster_util import TOKEN, listen  # noqa: F401 (a fixture)

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
WORKER_CPU = "/job:worker/replica:0/task:0/device:CPU:0"


@pytest.fixture
def traces():
    """traces(every) -> events.request_traces(every), released when the test ends."""
    assert events.trace_every == 0, "a trace request leaked from an earlier test"
    releases = []

    def request(every):
        releases.append(events.request_traces(every))
        return releases[-1]
    yield request
    for release in releases:
        release()


@pytest.fixture
def traced_runs(monkeypatch):
    """A list with one item per StepStats that Session.run made (i.e. per traced run)."""
    made = []

    class CountingStepStats(session_module.StepStats):
        def __init__(self):
            super().__init__()
            made.append(self)
    monkeypatch.setattr(session_module, "StepStats", CountingStepStats)
    return made


def _wait(condition, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _small_graph():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    c = tf.add(a, b, name="c")
    return tf.multiply(c, c, name="d")


def _ops(stats):
    return sorted((s["node_name"], s["op"]) for s in stats)


OPS = [("a", "Const"), ("b", "Const"), ("c", "Add"), ("d", "Mul")]


# -- request_traces --------------------------------------------------------------------------------
def test_request_traces_keeps_the_smallest_active_every(traces):
    release5 = traces(5)
    assert events.trace_every == 5
    release2 = traces(2)
    release3 = traces(3)
    assert events.trace_every == 2
    release2()
    assert events.trace_every == 3
    release2()   # idempotent: the other requests stay
    assert events.trace_every == 3
    release3()
    assert events.trace_every == 5
    release5()
    assert events.trace_every == 0


@pytest.mark.parametrize("every", [0, -1, 1.5, True, "3", None])
def test_request_traces_wants_a_positive_int(every):
    with pytest.raises(ValueError, match="positive int"):
        events.request_traces(every)
    assert events.trace_every == 0


def test_request_traces_from_many_threads():
    def churn():
        for every in range(1, 200):
            events.request_traces(every)()
    threads = [threading.Thread(target=churn) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert events.trace_every == 0


# -- TraceRecord from Session.run ------------------------------------------------------------------
def test_sampled_tracing_traces_every_nth_run(listen, traces, traced_runs):
    got = listen("trace")
    d = _small_graph()
    traces(3)
    t0 = time.time()
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        for _ in range(10):
            assert sess.run(d, run_metadata=meta) == 9.0
    assert len(traced_runs) == 3
    assert [r.step for r in got] == [3, 6, 9]
    assert meta.step_stats is None   # a sampled run leaves the caller's run_metadata alone
    for record in got:
        assert isinstance(record, events.TraceRecord)
        assert record.session_id == sess.id and record.global_step is None
        assert t0 <= record.wall_time <= time.time() and record.duration >= 0
        assert list(record.dev_stats) == [CPU]
        assert _ops(record.dev_stats[CPU]) == OPS
        for s in record.dev_stats[CPU]:
            assert s["all_start_micros"] > 0 and s["op_end_rel_micros"] >= 0


def test_sampled_trace_carries_the_fetched_global_step(listen, traces):
    got = listen("trace")
    gs = tf.train.get_or_create_global_step()
    inc = tf.assign_add(gs, 1)
    traces(2)
    with tf.Session() as sess:
        sess.run(gs.initializer)        # run 1
        sess.run(gs)                    # run 2, traced: 0
        sess.run(inc)                   # run 3
        sess.run(gs)                    # run 4, traced: 1
    assert [(r.step, r.global_step) for r in got] == [(2, 0), (4, 1)]


def test_caller_traced_run_publishes_a_trace_and_fills_run_metadata(listen, traced_runs):
    got = listen("trace")
    d = _small_graph()
    with tf.Session() as sess:
        sess.run(d)
        meta = tf.RunMetadata()
        sess.run(d, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
        sess.run(d)
    assert len(traced_runs) == 1 and len(got) == 1
    assert got[0].step == 2 and got[0].session_id == sess.id
    assert _ops(got[0].dev_stats[CPU]) == OPS
    assert _ops(meta.step_stats.dev_stats[CPU]) == OPS


@pytest.fixture
def no_other_listeners(monkeypatch):
    """Hides listeners left by other tests of the process (a Server's telemetry collector
    listens to every kind for as long as the process lives)."""
    for kind in events.listeners:
        monkeypatch.setitem(events.listeners, kind, [])


def test_nothing_is_traced_without_a_trace_listener(no_other_listeners, listen, traces,
                                                    traced_runs):
    d = _small_graph()
    traces(1)                           # asked, but nobody listens
    with tf.Session() as sess:
        for _ in range(5):
            sess.run(d)
    assert traced_runs == []
    got = listen("trace")
    with tf.Session() as sess:
        sess.run(d)
    assert len(traced_runs) == 1 and len(got) == 1


def test_a_listener_without_a_request_traces_nothing(no_other_listeners, listen, traced_runs):
    got = listen("trace")
    d = _small_graph()
    with tf.Session() as sess:
        for _ in range(5):
            sess.run(d)
    assert traced_runs == [] and got == []


# -- SyncRecord from conditional accumulators ------------------------------------------------------
def test_accumulator_publishes_takes_and_stale_drops(listen):
    got = listen("sync")
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    grad = tf.placeholder(tf.float32, [2])
    local_step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(grad, local_step=local_step)
    take = acc.take_grad(2)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 2.0], local_step: 0})
        sess.run(apply, {grad: [3.0, 4.0], local_step: 0})
        assert got == []
        t0 = time.time()
        np.testing.assert_allclose(sess.run(take), [2.0, 3.0])
        assert len(got) == 1
        name = got[0].accumulator
        # A private accumulator is named "_<n>_<op name>" (data_flow_kernels).
        assert re.fullmatch(r"_\d+_conditional_accumulator", name)
        assert (got[0].step, got[0].applied, got[0].dropped) == (0, 2, 0)
        assert t0 <= got[0].wall_time <= time.time()

        sess.run(apply, {grad: [5.0, 6.0], local_step: 0})   # stale: the global step is 1 now
        sess.run(apply, {grad: [7.0, 8.0], local_step: 1})   # current: accumulated, no record
        assert [(r.accumulator, r.step, r.applied, r.dropped) for r in got[1:]] == [
            (name, 0, 0, 1)]
        assert sess.run(acc.num_accumulated()) == 1


def test_sync_listeners_run_outside_the_accumulator_lock(listen):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="grads")
    apply = acc.apply_grad(tf.constant([1.0, 1.0]), local_step=0)
    take = acc.take_grad(1)
    count = acc.num_accumulated()
    seen = []
    with tf.Session() as sess:
        def read_back(record):
            # num_accumulated takes the accumulator's lock: from another thread, it finishes
            # only if the lock is free while listeners run.
            reader = threading.Thread(target=lambda: seen.append(sess.run(count)), daemon=True)
            reader.start()
            reader.join(10)
            seen.append(record)
        events.subscribe("sync", read_back)
        try:
            sess.run(apply)
            sess.run(take)
            sess.run(apply)                 # stale now: dropped
        finally:
            events.unsubscribe("sync", read_back)
    assert [isinstance(x, events.SyncRecord) for x in seen] == [False, True] * 2
    assert seen[0::2] == [0, 0]   # read while the listeners ran: after the take, after the drop
    assert [(r.accumulator, r.step, r.applied, r.dropped) for r in seen[1::2]] == [
        ("grads", 0, 1, 0), ("grads", 0, 0, 1)]


# -- over cluster telemetry ------------------------------------------------------------------------
@pytest.fixture
def server():
    s = tf.train.Server({"worker": ["localhost:0"]}, job_name="worker", task_index=0,
                        token=TOKEN)
    yield s
    s.stop(0)


@pytest.fixture
def short_ttl(monkeypatch):
    """Trace requests of pollers lapse after 0.5 s; none is left held after the test."""
    monkeypatch.setattr(telemetry, "TRACE_REQUEST_TTL", 0.5)
    yield
    _wait(lambda: events.trace_every == 0, what="the trace requests to lapse")


def _poller(server):
    channel = grpc.insecure_channel(f"localhost:{server.port}")
    poll = channel.unary_unary(telemetry.POLL_METHOD)

    def call(args):
        return json.loads(poll(json.dumps(args).encode(), timeout=5,
                               metadata=((TOKEN_METADATA_KEY, TOKEN),)))
    return channel, call


def test_poll_trace_every_holds_a_request_until_it_lapses(server, short_ttl):
    channel, poll = _poller(server)
    try:
        for bad in (0, -2, 1.5, "3", True, [2]):
            with pytest.raises(grpc.RpcError) as info:
                poll({"trace_every": bad})
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "trace_every" in info.value.details()
        assert events.trace_every == 0
        poll({"trace_every": 4})
        poll({"trace_every": 2})
        assert events.trace_every == 2
        start = time.monotonic()
        for _ in range(4):   # renewed by each poll that asks: 4 stays, 2 lapses
            time.sleep(0.25)
            poll({"trace_every": 4})
        assert events.trace_every == 4
        _wait(lambda: events.trace_every == 0, timeout=5, what="the request to lapse")
        assert time.monotonic() - start < 3
    finally:
        channel.close()


def test_collector_encodes_and_caps_traces_and_sync_records(server):
    c = telemetry.collector()
    since = c.seq
    big = {"/device:A": [{"node_name": f"a{i}", "op": "Add", "all_start_micros": i,
                          "op_end_rel_micros": 1} for i in range(3000)],
           "/device:B": [{"node_name": f"b{i}", "op": "Mul", "all_start_micros": i,
                          "op_end_rel_micros": 1} for i in range(3000)]}
    small = {"/device:A": big["/device:A"][:2]}
    events.publish("trace", events.TraceRecord(7, 3, 100.0, 0.5, 12, big))
    events.publish("trace", events.TraceRecord(7, 6, 101.0, 0.25, None, small))
    events.publish("sync", events.SyncRecord("grads", 5, 2, 0, 102.0))
    records, more, _, _, _ = c.records_after(since, 10)
    assert [r[1:3] for r in records] == [["trace", 100.0], ["trace", 101.0], ["sync", 102.0]]
    capped = records[0][3]
    assert capped["truncated"] is True
    assert (capped["session"], capped["step"], capped["duration"], capped["global_step"]) == (
        7, 3, 0.5, 12)
    assert len(capped["dev_stats"]["/device:A"]) == 3000
    assert [s["node_name"] for s in capped["dev_stats"]["/device:B"]] == [
        f"b{i}" for i in range(2000)]
    assert records[1][3] == {"session": 7, "step": 6, "duration": 0.25, "global_step": None,
                             "dev_stats": small}
    assert records[2][3] == {"accumulator": "grads", "step": 5, "applied": 2, "dropped": 0}

    # A reply carries at most _REPLY_TRACE_ENTRIES trace entries (but always one record).
    since = c.seq
    for step in range(3):
        events.publish("trace", events.TraceRecord(7, step, 100.0, 0.5, None, big))
    records, more, _, _, _ = c.records_after(since, 10)
    assert len(records) == 2 and more
    records, more, _, _, _ = c.records_after(since + 2, 10)
    assert len(records) == 1 and not more


def test_watch_with_trace_every_samples_a_cluster_session(server, short_ttl):
    spec = tf.train.ClusterSpec({"worker": [f"localhost:{server.port}"]})
    watcher = tf.distributed.watch(spec, token=TOKEN, interval=0.1, trace_every=2)
    try:
        _wait(lambda: events.trace_every == 2, what="the watcher's trace request")
        with tf.device("/job:worker/task:0"):
            d = _small_graph()
        with tf.Session(server.target, config=tf.ConfigProto(cluster_token=TOKEN)) as sess:
            for _ in range(5):
                assert sess.run(d) == 9.0
        seen = []

        def done():
            seen.extend(e for e in watcher.events(timeout=0.1)
                        if e.kind == "trace" and e.data["session"] == sess.id)
            return len(seen) >= 2
        _wait(done, what="the trace events")
    finally:
        watcher.close()
    assert [e.data["step"] for e in seen] == [2, 4]
    for event in seen:
        assert event.task == "/job:worker/replica:0/task:0"
        assert set(event.data) == {"session", "step", "duration", "global_step", "dev_stats",
                                   "seq"}
        assert list(event.data["dev_stats"]) == [WORKER_CPU]
        assert _ops(event.data["dev_stats"][WORKER_CPU]) == OPS
    # short_ttl then waits for the request to lapse now that nobody polls.


def test_watcher_wants_a_non_negative_int_trace_every():
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="trace_every"):
            tf.distributed.watch(["localhost:1"], token=TOKEN, trace_every=bad)

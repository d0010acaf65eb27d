"""Step telemetry (examples, global step, summaries) and per-task telemetry over gRPC (watch()).

Real grpc servers on loopback; every wait is bounded, every server, watcher and process is
stopped."""
import json
import signal
import time

import grpc
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import telemetry
from tfjupyter.distributed.auth import TOKEN_METADATA_KEY

from cluster_util import (TOKEN, TaskProcesses, listen, loopback_cluster,  # noqa: F401
                          token_env, two_phase_cluster)


@pytest.fixture
def cleanup():
    things = []
    yield things.append
    for thing in reversed(things):
        if isinstance(thing, tf.train.Server):
            thing.stop(0)
        else:
            thing.close()


def _wait_events(watcher, done, timeout=20.0):
    """Drains the watcher's events until ``done(events so far)`` holds (bounded)."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.extend(watcher.events(timeout=0.2))
        if done(seen):
            return seen
    raise AssertionError(f"timed out; saw {[(e.task, e.kind) for e in seen][-30:]}")


# -- StepRecord: examples and global step ----------------------------------------------------------
def test_examples_follow_the_batch_and_global_step_is_recorded_when_fetched(listen):
    steps = listen("step")
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    keep = tf.placeholder(tf.float32, [], name="keep")
    labels = tf.placeholder(tf.float32, [None], name="labels")
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(tf.zeros([64, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x, w), 1) * keep - labels))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=gs)
    fixed = tf.placeholder(tf.float32, [8, 3], name="fixed")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {keep: 1.0, x: np.ones((50, 64)), labels: np.zeros(50)}
        sess.run(train, feed)
        sess.run([train, gs], feed)
        sess.run([train, gs.value()], feed)
        sess.run(gs)
        sess.run(tf.reduce_sum(fixed), {fixed: np.ones((8, 3))})  # static leading dim
        sess.run(tf.constant(1.0))
    records = steps[-7:]
    assert [r.examples for r in records] == [0, 50, 50, 50, 0, 8, 0]
    assert [r.global_step for r in records] == [None, None, 2, 3, 3, None, None]


def test_examples_per_step_override_and_dequeued_batches(listen):
    steps = listen("step")
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    total = tf.reduce_sum(x)
    queue = tf.FIFOQueue(100, [tf.float32], shapes=[[3]])
    enqueue = queue.enqueue_many([np.ones((20, 3), np.float32)])
    batch = queue.dequeue_up_to(8)
    with tf.Session() as sess:
        sess.run(enqueue)
        sess.run(batch)                                  # (c): the dequeued batch
        tf.train.set_examples_per_step(32)
        sess.run(total, {x: np.ones((5, 4))})            # (a) int beats the feed
        size = tf.placeholder(tf.int32, [], name="size")
        tf.train.set_examples_per_step(size)
        assert tf.train.get_examples_per_step() == "size:0"
        sess.run(total, {x: np.ones((5, 4)), size: 17})  # (a) a fed tensor
        n = tf.shape(x)[0]
        tf.train.set_examples_per_step(n)
        sess.run(total * 1.0 + tf.cast(n, tf.float32), {x: np.ones((6, 4))})  # computed anyway
        sess.run(total, {x: np.ones((7, 4))})            # not computed: falls back to (b)
        tf.train.set_examples_per_step(None)
        sess.run(total, {x: np.ones((9, 4))})
        with pytest.raises(ValueError, match="scalar integer"):
            tf.train.set_examples_per_step(x)
    assert [r.examples for r in steps[-7:]] == [0, 8, 32, 17, 6, 7, 9]


def test_dataset_elements_count_a_batch_or_one_example(listen):
    """(c) for tf.data: get_next() of a batched dataset takes its batch's rows (the last batch
    smaller), of an unbatched one a single example, whatever the element's shape."""
    steps = listen("step")
    rows = np.ones((20, 3), np.float32)
    batched = tf.data.Dataset.from_tensor_slices(rows).batch(8).prefetch(1)
    one_by_one = tf.data.Dataset.from_tensor_slices(rows)          # elements of shape [3]
    batched_next = tf.reduce_sum(batched.make_one_shot_iterator().get_next())
    single_next = tf.reduce_sum(one_by_one.make_one_shot_iterator().get_next())
    size = tf.placeholder(tf.int64, [], name="size")
    initializable = tf.data.Dataset.from_tensor_slices(rows).map(lambda r: r * 2.0) \
        .batch(size).make_initializable_iterator()
    initializable_next = tf.reduce_sum(initializable.get_next())
    with tf.Session() as sess:
        for _ in range(3):
            sess.run(batched_next)
        sess.run(single_next)
        sess.run(initializable.initializer, {size: 15})
        sess.run(initializable_next)
        sess.run(initializable_next)
    assert [r.examples for r in steps[-7:]] == [8, 8, 4, 1, 0, 15, 5]


def test_dataset_batches_count_in_a_distributed_session_on_this_process_task(listen, cleanup):
    """A session on an in-process task (a notebook cluster's worker training through its own
    server) counts the batches its partition on that task took."""
    spec, servers = two_phase_cluster(cleanup, ("ps", "worker"))
    steps = listen("step")
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([3]), name="w")
    with tf.device("/job:worker/task:0"):
        batch = tf.data.Dataset.from_tensor_slices(np.ones((10, 3), np.float32)).batch(4) \
            .make_one_shot_iterator().get_next()
        train = tf.assign_add(w, tf.reduce_sum(batch, 0))
    with tf.Session(servers["worker"].target) as sess:
        sess.run(w.initializer)
        for _ in range(3):
            sess.run(train)
        final = sess.run(w)
    assert [r.examples for r in steps[-5:-1]] == [0, 4, 4, 2]
    np.testing.assert_array_equal(final, [10.0, 10.0, 10.0])


def test_scalar_summaries_are_published_when_they_run(listen):
    loss = tf.placeholder(tf.float32, [], name="value")
    s1 = tf.summary.scalar("loss", loss)
    s2 = tf.summary.scalar("twice", loss * 2.0)
    merged = tf.summary.merge([s1, s2])
    with tf.Session() as sess:
        sess.run(merged, {loss: 1.0})     # nobody listens: nothing to publish
        summaries = listen("summary")
        sess.run(merged, {loss: 1.5})
    assert sorted((s.tag, s.value) for s in summaries) == [("loss", 1.5), ("twice", 3.0)]
    assert all(abs(s.wall_time - time.time()) < 60 for s in summaries)


# -- the Poll RPC ----------------------------------------------------------------------------------
def test_poll_needs_the_token_and_pages_records(cleanup):
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    address = spec.task_address("ps", 0)
    channel = grpc.insecure_channel(address)
    cleanup(channel)
    poll = channel.unary_unary(telemetry.POLL_METHOD)
    for metadata in ((), ((TOKEN_METADATA_KEY, "wrong"),)):
        with pytest.raises(grpc.RpcError) as info:
            poll(b"{}", metadata=metadata, timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    good = ((TOKEN_METADATA_KEY, TOKEN),)
    with pytest.raises(grpc.RpcError) as info:
        poll(b"[not json", metadata=good, timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    with tf.device("/job:ps/task:0"):
        step = tf.Variable(tf.constant(41, tf.int64), name="global_step")
        c = tf.constant(2.0) * 3.0
    with tf.Session(servers["ps"].target) as sess:
        sess.run(step.initializer)
        sess.run(c)
        sess.run(c)
    reply = json.loads(poll(json.dumps({"since": 0, "max": 1}).encode(), metadata=good, timeout=5))
    assert reply["task"] == "/job:ps/replica:0/task:0" and reply["address"] == address
    assert reply["global_step"] == 41
    assert len(reply["records"]) == 1 and reply["more"] is True
    assert reply["devices"][0]["name"] == "/job:ps/replica:0/task:0/device:CPU:0"
    health = reply["health"]
    assert health["pid"] == reply["pid"] and health["rss_bytes"] > 0 and health["threads"] >= 1
    assert reply["process_tasks"] == ["/job:ps/replica:0/task:0"]
    last = reply["last_seq"]
    tail = json.loads(poll(json.dumps({"since": last - 2}).encode(), metadata=good, timeout=5))
    assert [r[0] for r in tail["records"]] == [last - 1, last] and tail["more"] is False
    assert tail["records"][-1][1] == "step"
    assert set(tail["records"][-1][3]) >= {"session", "step", "duration", "examples",
                                           "global_step", "ops_run"}


# -- watch() ---------------------------------------------------------------------------------------
def test_watch_an_in_process_cluster_while_it_trains(cleanup):
    spec, servers = two_phase_cluster(cleanup)
    watcher = tf.distributed.watch(spec, token=TOKEN, interval=0.2, window=60)
    cleanup(watcher)
    _wait_events(watcher, lambda seen: sum(e.kind == "alive" for e in seen) == 2)

    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        gs = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(tf.zeros([64, 1]), name="w")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        tf.summary.scalar("loss", loss)
        train = tf.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=gs)
        summary = tf.summary.merge_all()
    rng = np.random.RandomState(0)
    config = tf.ConfigProto(cluster_token=TOKEN)
    t0 = time.time()
    with tf.Session(servers["worker"].target, config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run([train, summary], {x: rng.rand(50, 64), y: rng.rand(50, 1)})
        fetched = int(sess.run([train, gs], {x: rng.rand(50, 64), y: rng.rand(50, 1)})[1])

    ps_name, worker_name = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
    # The ring may also hold earlier tests' records, paged in first: wait for this test's last.
    seen = _wait_events(watcher, lambda seen: any(
        e.kind == "step" and e.time >= t0 and e.data["global_step"] == fetched
        for e in seen) and any(
        e.kind == "health" and e.task == ps_name and e.data["global_step"] == 6 for e in seen))
    snap = watcher.snapshot()
    # The process's ring may hold records of earlier tests: look at this test's only.
    seen = [e for e in seen if e.kind not in ("step", "placement", "summary") or e.time >= t0]
    steps = [e for e in seen if e.kind == "step"]
    # One process serves both tasks: its records go to one of them, the non-ps one.
    assert {e.task for e in seen if e.kind in ("step", "placement", "summary")} == {worker_name}
    assert [e.data["examples"] for e in steps[-6:]] == [50] * 6
    assert [e.data["step"] for e in steps] == sorted(e.data["step"] for e in steps)
    placement = {e.data["op"]: e.data["assigned"] for e in seen if e.kind == "placement"}
    assert placement["w/read"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert placement["MatMul"] == "/job:worker/replica:0/task:0/device:CPU:0"
    losses = [e.data["value"] for e in seen if e.kind == "summary" and e.data["tag"] == "loss"]
    assert len(losses) == 5 and all(np.isfinite(losses))
    assert snap[ps_name].state == "alive" and snap[ps_name].global_step == 6
    assert snap[worker_name].global_step == fetched in (5, 6)
    assert snap[worker_name].steps_per_sec > 0 and snap[worker_name].examples_per_sec > 0
    assert snap[worker_name].pid == snap[ps_name].pid
    assert snap[worker_name].devices[0]["name"] == worker_name + "/device:CPU:0"
    assert sorted(snap[ps_name].process_tasks) == [ps_name, worker_name]
    assert watcher.global_step == 6

    watcher.close()
    start = time.monotonic()
    for _ in watcher:   # iteration ends after close()
        pass
    assert time.monotonic() - start < 5


def test_flush_brings_the_last_records_before_the_next_poll_is_due(cleanup):
    """A recorder that stops listening right after a training cell calls flush(): with polls
    30 s apart, the step and summary that just ran arrive at once."""
    spec, servers = two_phase_cluster(cleanup, ("worker",))
    watcher = tf.distributed.watch(spec, token=TOKEN, interval=30)
    cleanup(watcher)
    _wait_events(watcher, lambda seen: any(e.kind == "alive" for e in seen))
    x = tf.placeholder(tf.float32, [None])
    summary = tf.summary.scalar("flushed", tf.reduce_mean(x))
    t0 = time.time()
    with tf.Session(servers["worker"].target, config=tf.ConfigProto(cluster_token=TOKEN)) as sess:
        sess.run(summary, {x: [41.0, 43.0]})
    started = time.monotonic()
    assert watcher.flush(timeout=10)
    assert time.monotonic() - started < 5   # not the 30 s poll interval
    seen = [e for e in watcher.events() if e.time >= t0]
    assert [e.data["value"] for e in seen if e.kind == "summary"] == [42.0]
    assert [e.data["examples"] for e in seen if e.kind == "step"] == [2]
    watcher.close()
    assert watcher.flush(timeout=1) is False   # a closed watcher polls nothing


def test_watcher_with_a_wrong_token_names_the_task(cleanup):
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    address = spec.task_address("ps", 0)
    called = []
    watcher = telemetry.watch([address], token="not-the-token", interval=0.2)
    cleanup(watcher)
    watcher.add_callback(called.append)
    seen = _wait_events(watcher, lambda seen: any(e.kind == "error" for e in seen))
    error = next(e for e in seen if e.kind == "error")
    assert address in error.task and address in error.data["error"]
    assert "UNAUTHENTICATED" in error.data["error"]
    status = watcher.snapshot()[error.task]
    assert status.state == "unknown" and "token" in status.error
    assert not any(e.kind == "dead" for e in seen + watcher.events(timeout=1.0))
    assert any(e.kind == "error" for e in called)


def test_watch_task_processes_and_see_one_die(token_env, cleanup):
    cluster = loopback_cluster(ps=1, worker=1)
    procs = TaskProcesses(token_env)
    cleanup(procs)
    procs.start(cluster, "ps", 0)
    procs.start(cluster, "worker", 0)
    watcher = tf.distributed.watch(cluster, interval=0.25)   # token from the environment
    cleanup(watcher)
    ps_name, worker_name = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
    _wait_events(watcher, lambda seen: {e.task for e in seen if e.kind == "alive"}
                 == {ps_name, worker_name})

    with tf.device("/job:ps/task:0"):
        gs = tf.train.get_or_create_global_step()
        bump = tf.assign_add(gs, 7)
    with tf.Session("grpc://" + cluster["worker"][0]) as sess:
        sess.run(gs.initializer)
        sess.run(bump)
    _wait_events(watcher, lambda seen: any(
        e.kind == "health" and e.task == ps_name and e.data["global_step"] == 7 for e in seen))
    snap = watcher.snapshot()
    assert snap[ps_name].global_step == 7
    assert snap[worker_name].pid == procs.procs[("worker", 0)].pid
    assert snap[ps_name].pid != snap[worker_name].pid

    # A frozen task is dead for the watcher, and does not hold up the others.
    worker = procs.procs[("worker", 0)]
    worker.send_signal(signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        seen = _wait_events(watcher, lambda seen: any(e.kind == "dead" for e in seen), timeout=10)
        assert time.monotonic() - stopped < 5
        assert [e.task for e in seen if e.kind == "dead"] == [worker_name]
        assert "DEADLINE_EXCEEDED" in watcher.snapshot()[worker_name].error
        assert any(e.kind == "health" and e.task == ps_name for e in seen)
    finally:
        worker.send_signal(signal.SIGCONT)
    seen = _wait_events(watcher, lambda seen: any(e.kind == "alive" for e in seen))
    alive = next(e for e in seen if e.kind == "alive")
    assert alive.task == worker_name and alive.data["restarted"] is False
    assert watcher.snapshot()[worker_name].state == "alive"

    procs.kill("worker", 0)
    killed = time.monotonic()
    seen = _wait_events(watcher, lambda seen: any(e.kind == "dead" for e in seen), timeout=10)
    dead = [e for e in seen if e.kind == "dead"]
    assert time.monotonic() - killed < 5
    assert [e.task for e in dead] == [worker_name]
    assert worker_name in dead[0].data["error"]
    snap = watcher.snapshot()
    assert snap[worker_name].state == "dead" and snap[worker_name].error
    assert snap[ps_name].state == "alive"

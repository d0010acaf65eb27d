"""No step waits forever: blocked steps never starve others, deadlines, frozen peers, tokens.

Regression tests of issue 13's findings 1-3, 6 and 7, on loopback with bounded waits.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import auth
from tfjupyter.runtime.elastic_pool import ElasticThreadPool

from cluster_util import TaskProcesses, free_ports, loopback_cluster, token_env  # noqa: F401


@pytest.fixture
def tasks(token_env):
    procs = TaskProcesses(token_env)
    try:
        yield procs
    finally:
        procs.close()


def _in_thread(fn, timeout: float):
    """Runs fn in a thread; returns its result, or fails the test if it is not done in time."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: B036 — handed to the test's thread
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} did not finish in {timeout} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# -- the pool that never queues behind blocked work ------------------------------------------
def test_elastic_pool_starts_every_task_at_once_and_retires_idle_threads():
    pool = ElasticThreadPool("test", idle_timeout_s=0.2)
    release = threading.Event()
    blocked = [pool.submit(release.wait, 10) for _ in range(100)]
    # 100 blocked tasks hold 100 threads; one more still runs at once.
    assert pool.submit(lambda: 42).result(timeout=5) == 42
    assert pool.thread_count >= 101
    release.set()
    assert all(f.result(timeout=5) for f in blocked)
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=5)
    deadline = time.monotonic() + 5
    while pool.thread_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.thread_count == 0
    assert pool.submit(lambda: "again").result(timeout=5) == "again"
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


# -- finding 1: queue runners on a server target --------------------------------------------
def _queue_runner_pattern(target: str, runners: int, n: int = 200):
    """TensorFlow's pattern: runner threads fill a small queue, the loop dequeues."""
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
        counter = tf.Variable(0.0)
        enqueue = q.enqueue(tf.assign_add(counter, 1.0))
        dequeue = q.dequeue()
        runner = tf.train.QueueRunner(q, [enqueue] * runners)
        with tf.Session(target) as sess:
            sess.run(counter.initializer)
            coord = tf.train.Coordinator()
            threads = runner.create_threads(sess, coord=coord, start=True)
            try:
                values = _in_thread(lambda: [sess.run(dequeue) for _ in range(n)], 30)
            finally:
                coord.request_stop()
                sess.run(q.close(cancel_pending_enqueues=True))
                coord.join(threads, stop_grace_period_secs=10)
    assert len(values) == n and len(set(values)) == n   # every element once, none lost


@pytest.mark.parametrize("runners", [4, 16])
def test_queue_runners_on_a_server_target_in_this_process(runners):
    server = tf.train.Server.create_local_server()
    try:
        _queue_runner_pattern(server.target, runners)
    finally:
        server.stop()


def test_queue_runners_on_a_task_in_another_process(tasks):
    cluster = loopback_cluster(ps=1)
    tasks.start(cluster, "ps", 0)
    _queue_runner_pattern("grpc://" + cluster["ps"][0], runners=8)


def test_many_blocked_steps_never_stop_another_step_or_session(tasks):
    """More blocked steps than any fixed pool had threads (64 on a task, 4 per session)."""
    cluster = loopback_cluster(ps=1)
    tasks.start(cluster, "ps", 0)
    target = "grpc://" + cluster["ps"][0]
    blocked = 70
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1000, tf.int32, shapes=[[]], shared_name="reliability_q")
        dequeue = q.dequeue()
        fill = q.enqueue_many(tf.range(blocked))
        with tf.Session(target) as sess:
            results = []
            lock = threading.Lock()

            def take():
                value = sess.run(dequeue)
                with lock:
                    results.append(int(value))
            threads = [threading.Thread(target=take, daemon=True) for _ in range(blocked)]
            for t in threads:
                t.start()
            time.sleep(1.0)   # let them all block on the empty queue
            assert not results
            # A new session on the same task connects and runs while they wait ...
            def other_session():
                with tf.Session(target) as other:
                    return other.run(tf.constant(7) * 6)
            assert _in_thread(other_session, 15) == 42
            # ... and a step of the same session releases them all.
            _in_thread(lambda: sess.run(fill), 15)
            for t in threads:
                t.join(15)
            assert sorted(results) == list(range(blocked))


# -- finding 2: operation_timeout_in_ms bounds every step -------------------------------------
@pytest.mark.parametrize("where", ["local", "in-process server", "task process"])
def test_operation_timeout_is_every_steps_deadline(where, tasks):
    target = ""
    server = None
    if where == "in-process server":
        server = tf.train.Server.create_local_server()
        target = server.target
    elif where == "task process":
        cluster = loopback_cluster(ps=1)
        tasks.start(cluster, "ps", 0)
        target = "grpc://" + cluster["ps"][0]
    try:
        with tf.Graph().as_default():
            q = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="inputs")
            dequeue = q.dequeue(name="next_example")
            enqueue = q.enqueue(3.0)
            config = tf.ConfigProto(operation_timeout_in_ms=400)
            with tf.Session(target, config=config) as sess:
                start = time.monotonic()
                with pytest.raises(tf.errors.DeadlineExceededError, match="dequeue") as info:
                    _in_thread(lambda: sess.run(dequeue), 10)
                assert 0.35 <= time.monotonic() - start < 5
                assert info.value.op is not None and info.value.op.name == "next_example"
                # A run's own timeout overrides the session's: shorter ...
                start = time.monotonic()
                with pytest.raises(tf.errors.DeadlineExceededError):
                    sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=100))
                assert time.monotonic() - start < 0.38
                # ... or longer, long enough for the value to come.
                timer = threading.Timer(0.8, lambda: sess.run(enqueue))
                timer.start()
                try:
                    assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=8000)) == 3.0
                finally:
                    timer.join()
    finally:
        if server is not None:
            server.stop()


# -- finding 3: a frozen peer is found within 15 s --------------------------------------------
def _freeze(proc, timeout: float = 10.0) -> None:
    """SIGSTOP, then wait until every thread of ``proc`` is stopped: the signal stops them one
    after another, and a thread not stopped yet may still answer a step sent meanwhile."""
    proc.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{proc.pid}/task"):
            try:
                with open(f"/proc/{proc.pid}/task/{tid}/stat") as f:
                    states.append(f.read().rpartition(")")[2].split()[0])
            except OSError:   # a thread that just ended
                pass
        if all(state in ("T", "t") for state in states):
            return
        time.sleep(0.005)
    raise AssertionError(f"process {proc.pid} did not stop within {timeout} s")


@pytest.mark.parametrize("step", ["registered after the freeze", "registered before"])
def test_a_frozen_ps_fails_the_steps_that_need_it_within_15_s(tasks, step):
    """A step new to the session registers its partition by gRPC; one run before is started
    by RunGraph, over the ps's Unix socket (same host): both must find the frozen ps."""
    from tfjupyter.distributed.telemetry import watch
    cluster = loopback_cluster(ps=1, worker=1)
    ps = tasks.start(cluster, "ps", 0)
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0)
                doubled = v * 2.0
            with tf.Session(worker.target) as sess, watch(cluster, interval=0.2) as watcher:
                sess.run(v.initializer)
                assert sess.run(v) == 1.0
                if step == "registered before":
                    assert sess.run(doubled) == 2.0
                _freeze(ps)
                try:
                    start = time.monotonic()
                    with pytest.raises(tf.errors.UnavailableError,
                                       match=r"/job:ps/replica:0/task:0.*(ping|frozen)"):
                        _in_thread(lambda: sess.run(doubled), 20)
                    assert time.monotonic() - start < 15
                    deadline = time.monotonic() + 10
                    while (watcher.snapshot()["/job:ps/replica:0/task:0"].state != "dead"
                           and time.monotonic() < deadline):
                        time.sleep(0.1)
                    assert watcher.snapshot()["/job:ps/replica:0/task:0"].state == "dead"
                finally:
                    ps.send_signal(signal.SIGCONT)
    finally:
        worker.stop()


# -- finding 6: tokens belong to a cluster incarnation ----------------------------------------
@pytest.fixture
def token_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("TFJUPYTER_CLUSTER_TOKEN", raising=False)
    folder = tmp_path / "tokens"
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(folder))
    return folder


def _server_process(cluster, job, task, env):
    return subprocess.Popen(
        [sys.executable, "-m", "tfjupyter.cli", "server", "--cluster", json.dumps(cluster),
         "--job", job, "--task", str(task), "--max-seconds", "120"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _token_files(folder):
    return sorted(p.name for p in folder.glob("*.token")) if folder.exists() else []


def test_tasks_started_at_once_on_reused_ports_always_agree_on_the_token(token_dir):
    """Rounds of three tasks started at the same instant on the same ports; the previous
    round's tasks were SIGKILLed (stale files) or stopped. Every step must be let in."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TFJUPYTER_TOKEN_DIR=str(token_dir))
    cluster = loopback_cluster(ps=1, worker=2)
    tokens = []
    for round_ in range(4):
        procs = [_server_process(cluster, job, i, env)
                 for job, n in (("ps", 1), ("worker", 2)) for i in range(n)]
        try:
            for p in procs:
                line = p.stdout.readline()
                assert line.startswith("serving"), (line, p.stderr.read() if p.poll() else "")
            assert len(_token_files(token_dir)) == 3
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(float(round_))
                reads = []
                for i in range(2):
                    with tf.device(f"/job:worker/task:{i}"):
                        reads.append(v + 1.0)
                with tf.Session("grpc://" + cluster["worker"][1],
                                config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
                    sess.run(v.initializer)
                    assert sess.run(reads) == [round_ + 1.0] * 2
            tokens.append(auth.token_for_target(cluster["ps"][0]))
        finally:
            for p in procs:
                p.send_signal(signal.SIGKILL if round_ % 2 == 0 else signal.SIGTERM)
            for p in procs:
                p.wait(15)
                p.stdout.close()
                p.stderr.close()
        if round_ % 2 == 1:   # stopped: each task took its file with it
            assert _token_files(token_dir) == []
    assert len(set(tokens)) == len(tokens)   # a new incarnation, a new token
    assert auth.token_for_target(cluster["ps"][0]) is None   # the killed ones' files are stale


def test_a_stale_token_file_is_never_read_and_is_swept(token_dir):
    cluster = loopback_cluster(ps=1, worker=1)
    # A task that died without removing its file: a dead process's pid.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)
    token_dir.mkdir(parents=True)
    stale = auth._token_path(cluster["worker"][0])
    with open(stale, "w") as f:
        json.dump({"token": "stale" * 8, "pid": dead.pid, "start": None,
                   "host": __import__("socket").gethostname()}, f)
    old_format = auth._token_path(cluster["ps"][0])
    with open(old_format, "w") as f:
        f.write("0123456789abcdef" * 4)   # an older release's plain token file
    assert auth.token_for_target(cluster["worker"][0]) is None
    server = tf.train.Server(cluster, job_name="ps", task_index=0)
    try:
        assert server.token not in ("stale" * 8, "0123456789abcdef" * 4)
        assert not os.path.exists(stale)
        assert auth.token_for_target(cluster["ps"][0]) == server.token
        # A second task of the cluster in this process joins it.
        worker = tf.train.Server(cluster, job_name="worker", task_index=0)
        assert worker.token == server.token
        worker.stop()
        assert auth.token_for_target(cluster["worker"][0]) is None
    finally:
        server.stop()
    assert _token_files(token_dir) == []


def test_a_server_that_cannot_bind_leaves_the_holders_token_file(token_dir):
    cluster = loopback_cluster(ps=1)
    holder = tf.train.Server(cluster, job_name="ps", task_index=0)
    try:
        with pytest.raises(tf.errors.UnavailableError, match="could not bind"):
            tf.train.Server(cluster, job_name="ps", task_index=0)
        assert auth.token_for_target(cluster["ps"][0]) == holder.token
    finally:
        holder.stop()


def test_a_client_waits_for_a_local_task_that_is_still_starting(token_dir):
    cluster = loopback_cluster(ps=1)
    started = []
    timer = threading.Timer(0.7, lambda: started.append(
        tf.train.Server(cluster, job_name="ps", task_index=0)))
    timer.start()
    try:
        with tf.Graph().as_default(), tf.Session("grpc://" + cluster["ps"][0]) as sess:
            assert sess.run(tf.constant(5.0)) == 5.0
    finally:
        timer.join()
        for s in started:
            s.stop()
    with pytest.raises(tf.errors.UnavailableError, match="no tfjupyter server of this host"):
        tf.Session("grpc://" + cluster["ps"][0],
                   config=tf.ConfigProto(operation_timeout_in_ms=300))


# -- finding 7: errors that name the right thing --------------------------------------------
def test_a_wrong_token_names_the_target_not_a_made_up_task(token_dir):
    server = tf.train.Server.create_local_server()
    try:
        with pytest.raises(tf.errors.UnauthenticatedError) as info:
            tf.Session(server.target, config=tf.ConfigProto(cluster_token="wrong",
                                                            operation_timeout_in_ms=2000))
        message = str(info.value)
        assert "task:-1" not in message and "/job:master" not in message
        assert f"the target at {server.target[len('grpc://'):]}" in message
    finally:
        server.stop()


def test_feeding_a_string_to_a_float_placeholder_is_a_value_error():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="'x:0'"):
                sess.run(x, {x: ["a", "b"]})
            np.testing.assert_array_equal(sess.run(x, {x: ["1", "2.5"]}), [1.0, 2.5])


# -- a queue without a shared_name is its session's, also on a task --------------------------
def test_private_queues_on_a_task_are_per_session_and_go_with_it():
    """A task's devices outlive sessions; a rerun cell building the same graph must not get the
    queue the last session closed (TensorFlow's kernels make unshared resources private)."""
    server = tf.train.Server.create_local_server()
    try:
        for attempt in range(2):
            with tf.Graph().as_default():
                q = tf.FIFOQueue(10, tf.float32, shapes=[[]])   # same op name both times
                with tf.Session(server.target) as sess:
                    sess.run(q.enqueue(float(attempt)))
                    assert sess.run(q.size()) == 1
                    assert sess.run(q.dequeue()) == float(attempt)
                    sess.run(q.close())
        # ... while a shared_name shares the queue across sessions, as in TensorFlow.
        for attempt in range(2):
            with tf.Graph().as_default():
                q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="shared_q")
                with tf.Session(server.target) as sess:
                    sess.run(q.enqueue(1.0))
                    assert sess.run(q.size()) == attempt + 1
        resources = server._worker.devices[0].resources._resources
        assert not any(name.startswith("_session_") for _, name in resources), resources
    finally:
        server.stop()


# -- a kernel that fails unexpectedly fails its step, everywhere, naming the node -------------
@pytest.fixture
def two_servers_here(token_env):
    cluster = tf.train.ClusterSpec(loopback_cluster(ps=1, worker=1))
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    yield servers
    for server in servers:
        server.stop(0)


def _ps_and_worker_step():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.nn.relu(tf.matmul(x, w) - 4.0, name="y")
        step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y))
    return w, x, y, step


@pytest.fixture
def failing_relu_grad(monkeypatch):
    """ReluGrad's CPU kernel raising what no kernel means to raise (as a CUDA driver error)."""
    from tfjupyter.kernels.cpu import KERNELS

    def factory(op, ctx):
        def run(*inputs):
            raise RuntimeError("CUDA_ERROR_INVALID_CONTEXT: invalid device context")
        return run
    monkeypatch.setitem(KERNELS._factories, "ReluGrad", factory)


def test_an_unexpected_kernel_error_fails_the_distributed_step_naming_the_node(
        two_servers_here, failing_relu_grad):
    """Both tasks are in this process, so the master runs both partitions itself; the ps's
    waited forever for the gradient of a worker partition that raised a non-OpError."""
    ps, worker = two_servers_here
    w, x, y, step = _ps_and_worker_step()
    feed = {x: np.ones((2, 2), np.float32)}
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InternalError) as info:
            _in_thread(lambda: sess.run(step, feed), timeout=20)
        message = str(info.value)
        assert "RuntimeError: CUDA_ERROR_INVALID_CONTEXT" in message
        assert "gradients/y_grad/ReluGrad (ReluGrad) on /job:worker/replica:0/task:0" in message
        assert info.value.op.name == "gradients/y_grad/ReluGrad"
        # The step ended on the ps too: the session goes on, the variable untouched.
        np.testing.assert_array_equal(_in_thread(lambda: sess.run(w), 20),
                                      np.arange(6).reshape(2, 3))


def test_an_unexpected_kernel_error_in_a_local_session_names_the_node(failing_relu_grad):
    x = tf.placeholder(tf.float32, [2], name="x")
    grad = tf.gradients(tf.nn.relu(x, name="r"), x)[0]
    unsupported = tf.nn.relu(x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InternalError, match=r"RuntimeError: CUDA_ERROR.*\n.*"
                           r"\[\[node gradients/r_grad/ReluGrad \(ReluGrad\) on "):
            sess.run(grad, {x: [1.0, -1.0]})
        np.testing.assert_array_equal(sess.run(unsupported, {x: [1.0, -1.0]}), [1.0, 0.0])


def test_a_partition_that_fails_outside_its_kernels_ends_the_step_on_every_task(
        two_servers_here, monkeypatch):
    from tfjupyter.distributed import master
    ps, worker = two_servers_here
    w, x, y, step = _ps_and_worker_step()
    feed = {x: np.ones((2, 2), np.float32)}
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        plan_class = master.DistributedPlan
        real = plan_class._run_local

        def broken(self, part, *args, **kwargs):
            if part.task.name.startswith("/job:worker"):
                raise KeyError("a bug in the master")
            return real(self, part, *args, **kwargs)
        monkeypatch.setattr(plan_class, "_run_local", broken)
        with pytest.raises(tf.errors.InternalError,
                           match=r"partition on /job:worker/replica:0/task:0 failed: KeyError"):
            _in_thread(lambda: sess.run(step, feed), timeout=20)
        monkeypatch.setattr(plan_class, "_run_local", real)
        np.testing.assert_array_equal(_in_thread(lambda: sess.run(w), 20),
                                      np.arange(6).reshape(2, 3))

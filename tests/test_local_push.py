"""Pushes between tasks of one host by a Unix socket (tfjupyter/distributed/local_push.py)."""
import os
import secrets
import threading

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import local_push

from cluster_util import loopback_cluster, token_env  # noqa: F401

pytestmark = pytest.mark.skipif(not local_push.enabled(), reason="needs Linux and shared memory")


def _name():
    return local_push.socket_name(secrets.token_hex(8), "localhost:%d" % secrets.randbelow(60000))


@pytest.fixture
def listener():
    started = []

    def start(token, deliver, limit=1 << 20, name=None):
        name = name or _name()
        started.append(local_push.Listener(name, token, deliver, limit))
        return name
    yield start
    for each in started:
        each.close()


def test_messages_arrive_whole_and_in_order(listener):
    got = []
    name = listener("token-1", got.append)
    sender = local_push.Sender("token-1")
    messages = [b"", b"x", bytes(range(256)) * 1000, os.urandom(300_000)]
    try:
        for message in messages:
            assert sender.push(name, message, "/job:ps/replica:0/task:0")
    finally:
        sender.close()
    assert got == messages


def test_concurrent_pushes_use_their_own_connections(listener):
    got, lock = [], threading.Lock()

    def deliver(message):
        with lock:
            got.append(message)
    name = listener("token-2", deliver)
    sender = local_push.Sender("token-2")
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        all(sender.push(name, b"%d-%d" % (i, k), "peer") for k in range(50)))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    sender.close()
    assert results == [True] * 4
    assert sorted(got) == sorted(b"%d-%d" % (i, k) for i in range(4) for k in range(50))


def test_a_wrong_token_is_refused_and_the_sender_falls_back(listener):
    got = []
    name = listener("the-right-token", got.append)
    before = local_push.stats()["fallbacks"]
    intruder = local_push.Sender("a-wrong-token")
    assert intruder.push(name, b"forged", "peer") is False
    assert intruder.push(name, b"forged again", "peer") is False  # not retried at once
    intruder.close()
    assert got == [] and local_push.stats()["fallbacks"] == before + 2


def test_a_refused_message_raises_naming_the_peer_and_the_connection_goes_on(listener):
    def deliver(message):
        if message == b"bad":
            raise ValueError("malformed PushTensors message")
    name = listener("token-3", deliver)
    sender = local_push.Sender("token-3")
    try:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"/job:ps/replica:0/task:1 refused pushed tensors: malformed"):
            sender.push(name, b"bad", "/job:ps/replica:0/task:1")
        assert sender.push(name, b"good", "/job:ps/replica:0/task:1")
    finally:
        sender.close()


def test_a_gone_or_taken_listener_means_gRPC(listener):
    name = listener("token-4", lambda m: None)
    with pytest.raises(OSError):   # a second task cannot take the name
        local_push.Listener(name, "token-4", lambda m: None, 1 << 20)
    assert local_push.Sender("token-4").push(_name(), b"nobody listens", "peer") is False
    assert local_push.socket_name("a", "h:1") != local_push.socket_name("b", "h:1") != \
        local_push.socket_name("a", "h:2")


def _train(cluster, target, steps=3):
    """A few steps of a tiny model, its variables on the ps when ``cluster`` is given: the
    final weights."""
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    x_value = rng.rand(32, 300).astype(np.float32)   # the gradient: 300x20 floats, by shm
    setter = (tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)
              if cluster else None)
    with tf.device(setter):
        w = tf.Variable(rng.rand(300, 20).astype(np.float32))
        b = tf.Variable(np.zeros(20, np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x_value, w) + b - 1.0))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(target) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        return sess.run([w, b])


@pytest.mark.parametrize("local", ["1", "0"])
def test_steps_between_tasks_push_by_socket_with_the_same_values(token_env, monkeypatch, local):
    monkeypatch.setenv("TFJUPYTER_LOCAL_PUSH", local)
    cluster = loopback_cluster(ps=1, worker=1)
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        before = local_push.stats()
        w, b = _train(cluster, servers[1].target)
        after = local_push.stats()
    finally:
        for server in servers:
            server.stop(0)
    expected_w, expected_b = _train(None, "")   # the same steps in one process
    np.testing.assert_allclose(w, expected_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b, expected_b, rtol=1e-6, atol=1e-7)
    rng = np.random.RandomState(0)
    rng.rand(32, 300)
    assert not np.allclose(w, rng.rand(300, 20))   # it did train
    sent = after["pushes"] - before["pushes"]
    if local == "1":
        # Each step pushes the variables to the worker and the gradients back; the first
        # steps may go by gRPC while the tasks learn that they share the host.
        assert sent >= 3 and after["received"] - before["received"] == sent
        assert after["fallbacks"] == before["fallbacks"]
    else:
        assert sent == 0


# -- RunGraph calls by socket: a master and a task in two processes of this host --------------
@pytest.fixture
def task_processes(token_env):
    from cluster_util import TaskProcesses
    procs = TaskProcesses(token_env)
    try:
        yield procs
    finally:
        procs.close()


@pytest.mark.parametrize("local", ["1", "0"])
def test_run_graph_calls_to_a_task_of_this_host_go_by_socket(task_processes, monkeypatch, local):
    monkeypatch.setenv("TFJUPYTER_LOCAL_PUSH", local)
    cluster = loopback_cluster(ps=1, worker=1)
    task_processes.start(cluster, "ps", 0)
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    try:
        before = local_push.stats()
        w, b = _train(cluster, worker.target, steps=5)
        after = local_push.stats()
    finally:
        worker.stop(0)
    expected_w, expected_b = _train(None, "", steps=5)
    np.testing.assert_allclose(w, expected_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b, expected_b, rtol=1e-6, atol=1e-7)
    calls = after["calls"] - before["calls"]
    if local == "1":
        # The ps runs a partition of every step, of the initializer and of the last fetch.
        assert calls >= 7 and after["fallbacks"] == before["fallbacks"]
    else:
        assert calls == 0


def test_a_malformed_call_by_socket_gets_the_status_grpc_would_give(token_env):
    from tfjupyter.distributed import protocol_pb2 as pb
    from tfjupyter.distributed import wire
    cluster = loopback_cluster(ps=1)
    ps = tf.train.Server(cluster, job_name="ps", task_index=0)
    sender = local_push.Sender(token_env["TFJUPYTER_CLUSTER_TOKEN"])
    try:
        name = local_push.socket_name(token_env["TFJUPYTER_CLUSTER_TOKEN"], cluster["ps"][0])
        for garbage in (b"", b"\x07not frames", os.urandom(64)):
            reply = sender.call(name, garbage, "/job:ps/replica:0/task:0", timeout=10)
            frames = list(wire.unpack(reply))
            status = pb.StepStatus.FromString(bytes(frames[-1][1:]))
            assert status.code == tf.errors.InvalidArgumentError.error_code, status
            assert status.message.startswith("RunGraphUnary on /job:ps/replica:0/task:0: ")
        # ... and the connection, and the task, still serve well-formed calls.
        request = pb.RunGraphRequest(graph_handle="no-such-graph", step_id=1)
        reply = sender.call(name, wire.pack([wire.control_frame(request)]), "ps", timeout=10)
        status = pb.StepStatus.FromString(bytes(list(wire.unpack(reply))[-1][1:]))
        # As TensorFlow's GraphMgr: an unknown handle means the task restarted (ABORTED, which
        # MonitoredTrainingSession recovers from).
        assert status.code == tf.errors.AbortedError.error_code
        assert "no-such-graph" in status.message and "/job:ps/replica:0/task:0" in status.message
    finally:
        sender.close()
        ps.stop(0)


_BLOCKED_CLIENT = r'''
import sys, tfjupyter as tf
with tf.device("/job:ps/task:0"):
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="handoff")
with tf.Session(sys.argv[1]) as sess:
    print("blocking", flush=True)
    sess.run(q.dequeue())          # nothing comes: this process is killed meanwhile
'''


def test_a_step_whose_master_dies_is_cancelled_on_the_task(task_processes):
    """As gRPC cancels a call whose client went away: the master's dequeue must not stay
    pending on the ps, taking the next element from whoever enqueues it."""
    import subprocess
    import sys
    import time
    cluster = loopback_cluster(ps=1)
    task_processes.start(cluster, "ps", 0)
    target = "grpc://" + cluster["ps"][0]
    client = subprocess.Popen([sys.executable, "-c", _BLOCKED_CLIENT, target],
                              env=task_processes.env, stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline().strip() == "blocking"
        time.sleep(1.5)                # its RunGraph reaches the ps and blocks in the dequeue
        client.kill()
        client.wait(10)
    finally:
        if client.poll() is None:
            client.kill()
        client.stdout.close()
    tf.reset_default_graph()
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="handoff")
    with tf.Session(target) as sess:
        sess.run(q.enqueue(7.0))
        options = tf.RunOptions(timeout_in_ms=5000)
        assert sess.run(q.dequeue(), options=options) == 7.0

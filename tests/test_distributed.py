"""The gRPC runtime on loopback: in-process servers for the runtime's logic, task processes for
failures. Every wait is bounded and every process and server is stopped."""
import os
import time

import grpc
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import protocol_pb2 as pb
from tfjupyter.distributed.auth import TOKEN_METADATA_KEY

from cluster_util import TOKEN, TaskProcesses, loopback_cluster, token_env  # noqa: F401
from system_programs import need_executables


@pytest.fixture
def servers():
    started = []

    def start(cluster, job, task):
        server = tf.train.Server(cluster, job_name=job, task_index=task)
        started.append(server)
        return server
    yield start
    for server in started:
        server.stop(0)


@pytest.fixture
def processes(token_env):
    procs = TaskProcesses(token_env)
    yield procs
    procs.close()


def test_cluster_spec():
    spec = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {1: "p1:2222"}})
    assert spec.jobs == ["worker", "ps"]
    assert spec.num_tasks("worker") == 2 and spec.task_indices("ps") == [1]
    assert spec.task_address("ps", 1) == "p1:2222"
    assert spec.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": {1: "p1:2222"}}
    assert spec.job_tasks("ps") == [None, "p1:2222"]
    assert tf.train.ClusterSpec(spec) == spec
    for bad in ({"worker": ["nohost"]}, {"1job": ["a:1"]}, {"w": ["a:1", "a:1"]}, {"w": {-1: "a:1"}}):
        with pytest.raises(ValueError):
            tf.train.ClusterSpec(bad)
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("chief")


def test_create_local_server_hello():
    c = tf.constant("Hello, distributed TensorFlow!")
    server = tf.train.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        with tf.Session(server.target) as sess:
            assert sess.run(c) == b"Hello, distributed TensorFlow!"
    finally:
        server.stop(0)


def test_variables_live_on_the_task_and_outlive_sessions(token_env, servers):
    cluster = loopback_cluster(ps=1, worker=1)
    ps = servers(cluster, "ps", 0)
    worker = servers(cluster, "worker", 0)
    with tf.device("/job:ps/task:0"):
        w = tf.Variable([1.0, 2.0], name="w")
    with tf.device("/job:worker/task:0"):
        doubled = w * 2.0
        inc = w.assign_add([1.0, 1.0])
    with tf.Session(worker.target) as sess:
        sess.run(w.initializer)
        assert sess.run(doubled).tolist() == [2.0, 4.0]
        sess.run(inc)
        placement = {r.op: r.assigned for r in sess.placement}
    assert placement["w"] == "/job:ps/replica:0/task:0/device:CPU:0"
    assert placement["mul"] == "/job:worker/replica:0/task:0/device:CPU:0"
    with tf.Session(ps.target) as other:
        assert other.run(w).tolist() == [2.0, 3.0]


def test_feeds_fetches_and_errors_across_tasks(token_env, servers):
    cluster = loopback_cluster(ps=1, worker=1)
    servers(cluster, "ps", 0)
    worker = servers(cluster, "worker", 0)
    with tf.device("/job:ps/task:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.reduce_sum(x, 1)
    with tf.device("/job:worker/task:0"):
        z = tf.matmul(x, tf.ones([3, 2])) + tf.expand_dims(y, 1)
        bad = tf.placeholder(tf.int32, [], name="bad")
        checked = tf.gather(tf.constant([1, 2]), bad)
    with tf.Session(worker.target) as sess:
        out = sess.run([z, y, x], {x: np.ones((2, 3))})
        assert out[0].tolist() == [[6.0, 6.0], [6.0, 6.0]] and out[1].tolist() == [3.0, 3.0]
        assert out[2].shape == (2, 3)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(checked, {bad: 5})
        assert sess.run(checked, {bad: 1}) == 2


def test_a_round_trip_through_another_task_from_the_task_the_client_serves(token_env, servers):
    """Task 0's partition sends `a` to task 1 and waits for `b` back; its send must run before
    its receive (steps run their ops one after another), or both tasks wait for each other."""
    cluster = loopback_cluster(local=2)
    local = servers(cluster, "local", 0)
    servers(cluster, "local", 1)
    with tf.device("/job:local/task:0"):
        # Not a bare constant: a partition that needs one gets its own copy, with no transfer.
        a = tf.multiply(tf.constant([[1.0, 2.0], [3.0, 4.0]]), 1.0, name="a")
    with tf.device("/job:local/task:1"):
        b = tf.matmul(a, a, name="b")
    with tf.device("/job:local/task:0"):
        c = tf.add(b, 1.0, name="c")
    with tf.Session(local.target) as sess:
        out = sess.run(c, options=tf.RunOptions(timeout_in_ms=10000))
    assert out.tolist() == [[8.0, 11.0], [16.0, 23.0]]


def _cross_task_tensors(sess, target):
    """The tensor names the session's distributed plan for ``target`` sends between tasks."""
    return sorted(op.get_attr("tensor_name") for _, plan, _, _ in sess._plans.values()
                  if target in plan.targets
                  for part in plan._partitions for op in part.graph.get_operations()
                  if op.type == "_Send")


def test_groups_and_constants_cost_no_transfer_between_tasks(token_env, servers):
    """replica_device_setter leaves an optimizer's update group (a NoOp) and its learning rate (a
    Const) on the worker, between the updates on the ps and the global step's increment there.
    Neither may cost a leg between tasks per step; the increment still follows the updates."""
    cluster = loopback_cluster(ps=1, worker=1)
    servers(cluster, "ps", 0)
    worker = servers(cluster, "worker", 0)
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                            cluster=cluster)
    with tf.device(setter):
        w = tf.Variable([1.0, 2.0], name="w")
        loss = tf.reduce_sum(w * w)
        global_step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.25).minimize(loss, global_step=global_step)
        counter = tf.Variable(0, name="counter")
        bump = tf.group(counter.assign_add(1), name="bump")     # a group on the worker
    with tf.device("/job:ps/task:0"), tf.control_dependencies([bump]):
        seen = tf.identity(counter.read_value(), name="seen")  # must wait for the increment
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(w).tolist() == [0.5, 1.0]     # w - 0.25 * 2w
        assert sess.run(global_step) == 1
        assert [sess.run(seen) for _ in range(3)] == [1, 2, 3]
        placement = {r.op: r.assigned for r in sess.placement}
        sent = _cross_task_tensors(sess, train) + _cross_task_tensors(sess, seen.op)
    assert placement["GradientDescent/update"].startswith("/job:worker/")
    assert placement["GradientDescent/learning_rate"].startswith("/job:worker/")
    assert placement["bump"].startswith("/job:worker/")
    # Only data crosses: w to the worker and its gradient back (fetches go in the replies).
    assert sent == ["gradients/AddN:0", "w/read:0"], sent


def test_pushed_tensors_past_one_message_go_in_several(token_env, servers, monkeypatch):
    """Tensors of up to 2 MiB are pushed, batched per destination. Across hosts (no shared
    memory) three of them are more than one gRPC message may carry: several messages."""
    monkeypatch.setenv("TFJUPYTER_SHM", "0")
    cluster = loopback_cluster(ps=1, worker=1)
    servers(cluster, "ps", 0)
    worker = servers(cluster, "worker", 0)
    with tf.device("/job:ps/task:0"):
        parts = [tf.Variable(tf.fill([700, 700], float(i + 1))) for i in range(3)]  # 1.9 MiB each
    with tf.device("/job:worker/task:0"):
        total = tf.add_n([p * 1.0 for p in parts])
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(total, options=tf.RunOptions(timeout_in_ms=30000))
    assert out.shape == (700, 700) and (out == 6.0).all()


def test_a_variable_initialized_from_a_big_array_lives_on_a_ps(token_env, servers):
    """The array is a constant of the ps's partition: an 18 MB GraphDef, registered in chunks
    (one gRPC message carries 5 MiB)."""
    cluster = loopback_cluster(ps=1, worker=1)
    servers(cluster, "ps", 0)
    worker = servers(cluster, "worker", 0)
    init = np.random.RandomState(0).rand(1500, 1500)   # float64
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(init, name="embeddings")
    with tf.device("/job:worker/task:0"):
        row = tf.gather(v, [7])
    with tf.Session(worker.target) as sess:
        sess.run(v.initializer)
        assert sess.run(row).tolist() == [init[7].tolist()]


def test_big_tensor_is_streamed_in_chunks(token_env, servers):
    cluster = loopback_cluster(ps=1)
    ps = servers(cluster, "ps", 0)
    with tf.device("/job:ps/task:0"):
        big = tf.Variable(tf.random_uniform([3, 1 << 20], seed=1), name="big")  # 12 MiB
    client = tf.Session(ps.target)
    try:
        client.run(big.initializer)
        value = client.run(big)
        assert value.shape == (3, 1 << 20) and value.dtype == np.float32
        assert 0.45 < value.mean() < 0.55
    finally:
        client.close()


def test_log_device_placement_names_tasks(token_env, servers, capsys):
    cluster = loopback_cluster(local=2)
    s0 = servers(cluster, "local", 0)
    servers(cluster, "local", 1)
    c = tf.constant("Hello from server2!", name="c")
    with tf.device("/job:local/task:1"):
        d = tf.constant("on one", name="d")
    with tf.Session(s0.target, config=tf.ConfigProto(log_device_placement=True)) as sess:
        assert sess.run([c, d]) == [b"Hello from server2!", b"on one"]
    out = capsys.readouterr().out
    assert "c: (Const): /job:local/replica:0/task:0/device:CPU:0" in out
    assert "d: (Const): /job:local/replica:0/task:1/device:CPU:0" in out


def test_unauthenticated_and_malformed_calls_are_refused(token_env, servers):
    cluster = loopback_cluster(ps=1)
    ps = servers(cluster, "ps", 0)
    address = ps.target[len("grpc://"):]
    channel = grpc.insecure_channel(address)
    status = channel.unary_unary("/tfjupyter.Worker/GetStatus",
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=pb.GetStatusResponse.FromString)
    register = channel.unary_unary("/tfjupyter.Worker/RegisterGraph",
                                   request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=pb.RegisterGraphResponse.FromString)
    try:
        for metadata in ((), ((TOKEN_METADATA_KEY, "wrong"),)):
            with pytest.raises(grpc.RpcError) as info:
                status(pb.GetStatusRequest(), metadata=metadata, timeout=5)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        good = ((TOKEN_METADATA_KEY, TOKEN),)
        assert status(pb.GetStatusRequest(), metadata=good, timeout=5).job == "ps"
        with pytest.raises(grpc.RpcError) as info:
            register(pb.RegisterGraphRequest(graph_def=b"\x00garbage"), metadata=good, timeout=5)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        raw_status = channel.unary_unary("/tfjupyter.Worker/GetStatus")
        with pytest.raises(grpc.RpcError) as info:
            raw_status(b"\x01" * (8 << 20), metadata=good, timeout=5)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        channel.close()
    # The task still works.
    with tf.device("/job:ps/task:0"):
        c = tf.constant(3.0)
    with tf.Session(ps.target) as sess:
        assert sess.run(c) == 3.0


def test_session_to_a_cluster_with_a_down_task_fails_naming_it(token_env, servers):
    cluster = loopback_cluster(ps=1, worker=1)
    worker = servers(cluster, "worker", 0)
    start = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match=r"/job:ps/replica:0/task:0"):
        tf.Session(worker.target, config=tf.ConfigProto(operation_timeout_in_ms=1500))
    assert time.monotonic() - start < 10


def test_killed_ps_fails_the_step_fast(processes):
    cluster = loopback_cluster(ps=1, worker=1)
    processes.start(cluster, "ps", 0)
    processes.start(cluster, "worker", 0)
    with tf.device("/job:ps/task:0"):
        queue_like = tf.Variable(tf.zeros([1000]), name="v")
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(queue_like * 2.0)
    target = "grpc://" + cluster["worker"][0]
    with tf.Session(target) as sess:
        sess.run(queue_like.initializer)
        assert sess.run(total) == 0.0
        processes.kill("ps", 0)
        start = time.monotonic()
        with pytest.raises(tf.errors.UnavailableError, match="/job:ps/replica:0/task:0"):
            sess.run(total)
        assert time.monotonic() - start < 15


# -- between-graph training in separate processes -------------------------------------------------
TRAINER = os.path.join(os.path.dirname(__file__), "dist", "between_graph_trainer.py")


def _trainer(cluster, job, task, env, *args):
    import json
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, TRAINER, "--cluster", json.dumps(cluster), "--job", job,
                             "--task", str(task), *args], env=dict(os.environ, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_step(worker, step, timeout):
    """Reads ``worker``'s progress lines ("step N", every 50 of its steps) until N >= ``step``,
    for at most ``timeout`` seconds."""
    import threading
    reached = threading.Event()

    def read():
        for line in worker.stdout:
            if line.startswith("step") and int(line.split()[1]) >= step:
                reached.set()
                return
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    assert reached.is_set(), f"the worker did not reach step {step} in {timeout} s"


def _train(token_env, n_workers, *args, straggler=None, kill_worker=None, timeout=150):
    """Runs 1 ps + n workers; returns the workers' JSON reports (None for a killed one). A
    ``kill_worker`` is killed at its first progress line (its 50th step), mid-training."""
    import json
    import signal
    cluster = loopback_cluster(ps=1, worker=n_workers)
    env = dict(token_env, PYTHONUNBUFFERED="1")
    procs = [_trainer(cluster, "ps", 0, env)]
    try:
        workers = []
        for i in range(n_workers):
            extra = ["--straggle", "1.0"] if i == straggler else []
            workers.append(_trainer(cluster, "worker", i, env, *args, *extra))
        procs += workers
        deadline = time.monotonic() + timeout
        if kill_worker is not None:
            _wait_for_step(workers[kill_worker], 50, timeout=timeout)
            workers[kill_worker].send_signal(signal.SIGKILL)
        reports = []
        for i, w in enumerate(workers):
            try:
                out, err = w.communicate(timeout=max(1, deadline - time.monotonic()))
            except Exception:
                w.kill()
                out, err = w.communicate()
                raise AssertionError(f"worker {i} did not finish:\n{err[-3000:]}")
            if i == kill_worker:
                reports.append(None)
                continue
            assert w.returncode == 0, err[-3000:]
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()


@pytest.mark.parametrize("mode, backups", [("async", 0), ("sync", 0), ("sync", 1)],
                         ids=["async", "sync", "sync-with-backup"])
def test_ps_worker_training_reaches_accuracy(token_env, mode, backups):
    reports = _train(token_env, 3 if backups else 2, "--mode", mode, "--backups", str(backups),
                     "--steps", "200")
    for r in reports:
        assert r["accuracy"] >= 0.9, reports
        assert r["global_step"] >= 200
    if mode == "sync" and not backups:
        # Each global step aggregates one gradient from each of the 2 workers.
        assert sum(r["local_steps"] for r in reports) >= 2 * 200


def test_straggler_does_not_slow_sync_training_with_a_backup(token_env):
    """One worker sleeps 1 s per step. With one backup the other two carry the training: 60
    global steps take far less than the 60 s the straggler alone would need."""
    reports = _train(token_env, 3, "--mode", "sync", "--backups", "1", "--steps", "60",
                     straggler=2)
    fast = [r for r in reports if r["task"] != 2]
    assert all(r["seconds"] < 30 for r in fast), reports
    assert reports[2]["local_steps"] < 30


def test_sync_training_with_a_backup_survives_a_killed_worker(token_env):
    reports = _train(token_env, 3, "--mode", "sync", "--backups", "1", "--steps", "300",
                     kill_worker=2)
    assert reports[2] is None
    for r in reports[:2]:  # 200 steps or more after the kill, by the two left
        assert r["global_step"] >= 300 and r["accuracy"] >= 0.9


def test_tls_when_certificates_are_given(tmp_path, monkeypatch):
    import subprocess
    need_executables("the TLS test", ["openssl"], "apt-get install openssl")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    monkeypatch.setenv("TFJUPYTER_TLS_CERT", str(cert))
    monkeypatch.setenv("TFJUPYTER_TLS_KEY", str(key))
    server = tf.train.Server.create_local_server()
    try:
        c = tf.constant(5.0)
        with tf.Session(server.target) as sess:
            assert sess.run(c) == 5.0
        plain = grpc.insecure_channel(server.target[len("grpc://"):])
        call = plain.unary_unary("/tfjupyter.Worker/GetStatus",
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=pb.GetStatusResponse.FromString)
        with pytest.raises(grpc.RpcError):
            call(pb.GetStatusRequest(), metadata=((TOKEN_METADATA_KEY, server.token),), timeout=3)
        plain.close()
    finally:
        server.stop(0)


def test_restarted_ps_gets_its_variables_back_from_the_checkpoint(token_env, tmp_path):
    """The ps dies mid-training and comes back empty; the chief's MonitoredTrainingSession
    recovers: it restores the last checkpoint onto the new ps and trains on to the last step."""
    import json
    import signal
    cluster = loopback_cluster(ps=1, worker=1)
    env = dict(token_env, PYTHONUNBUFFERED="1")
    ps = _trainer(cluster, "ps", 0, env)
    procs = [ps]
    try:
        assert ps.stdout.readline().strip() == "ps ready"
        # 200 steps reach the accuracy asked; 700 leave room to train on after the restart.
        worker = _trainer(cluster, "worker", 0, env, "--mode", "async", "--steps", "700",
                          "--logdir", str(tmp_path), "--save-steps", "100")
        procs.append(worker)
        for line in worker.stdout:  # train past a few checkpoints
            if line.startswith("step") and int(line.split()[1]) >= 400:
                break
        ps.send_signal(signal.SIGKILL)
        ps.wait(10)
        time.sleep(1.0)
        ps = _trainer(cluster, "ps", 0, env)
        procs.append(ps)
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err[-3000:]
        report = json.loads(out.strip().splitlines()[-1])
        assert report["global_step"] >= 700 and report["accuracy"] >= 0.9
        # It resumed from a checkpoint (at least step 300), not from scratch.
        assert report["local_steps"] < 700 + 250, report  # from scratch: >= 400 + 700
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()


def test_string_fetches_cross_the_wire(token_env):
    """A merged summary is a numpy bytes scalar (not an object array): it must travel too."""
    server = tf.train.Server.create_local_server()
    try:
        x = tf.placeholder(tf.float32, [None])
        tf.summary.scalar("mean", tf.reduce_mean(x))
        merged = tf.summary.merge_all()
        strings = tf.constant([b"ab", b"c\x00d", b""])
        with tf.Session(server.target) as sess:
            serialized, values = sess.run([merged, strings], {x: [1.0, 2.0]})
        assert list(values) == [b"ab", b"c\x00d", b""]
        from tensorboard.compat.proto import summary_pb2
        summary = summary_pb2.Summary.FromString(serialized)
        assert summary.value[0].simple_value == 1.5
    finally:
        server.stop(0)

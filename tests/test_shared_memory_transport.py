"""Tensors between tasks of one host go by shared-memory segments (tfjupyter/distributed/shm.py):
values bit-exact, actually used, falling back to gRPC bytes when off or full, swept when a task
is killed, and only reachable through calls that carry the cluster token."""
from __future__ import annotations

import gc
import os
import re

import grpc
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import protocol_pb2 as pb
from tfjupyter.distributed import shm, wire
from tfjupyter.distributed.auth import TOKEN_METADATA_KEY

from cluster_util import TOKEN, TaskProcesses, loopback_cluster, token_env  # noqa: F401

pytestmark = pytest.mark.skipif(not shm.enabled(), reason="no /dev/shm or OFD locks here")


def _segments_of(pid: int):
    return [n for n in os.listdir(shm.SHM_DIR) if n.startswith(f"{shm.PREFIX}{pid}-")]


@pytest.fixture(autouse=True)
def own_segments_unlinked():
    yield
    gc.collect()
    shm._pool.close()
    assert _segments_of(os.getpid()) == []


def _round_trip(values, pool):
    """values -> frames (by ``pool`` where it applies) -> arrays, as a peer decodes them."""
    frames = [f for i, v in enumerate(values) for f in wire.tensor_frames(i, v, pool)]
    assembler = wire.TensorAssembler(len(values), "test", wire.frames_size(frames))
    for frame in frames:
        assembler.add(frame)
    return frames, assembler.finish()


def _data_bytes(frames) -> int:
    return sum(len(f) - 1 for f in frames if bytes(f[:1]) == wire.DATA)


def test_values_are_bit_exact_and_go_by_segment_not_by_frames():
    rng = np.random.RandomState(0)
    base = rng.randn(300, 400)
    values = [base.astype(np.float32), base, (base * 100).astype(np.int8), base > 0,
              (base + 1j * base).astype(np.complex64), base.astype(np.float16),
              (base * 1000).astype(np.int64),
              base.astype(np.float32)[::2, ::3],            # not contiguous
              np.asfortranarray(base.astype(np.float32)),   # column-major
              np.array([[np.nan, np.inf, -0.0]] * 20000, np.float64)]
    pool = shm.pool_for(shm.host_id())
    assert pool is not None
    before = shm.stats()
    frames, got = _round_trip(values, pool)
    assert _data_bytes(frames) == 0 and len(frames) == len(values)
    for want, have in zip(values, got):
        assert have.dtype == want.dtype and have.shape == want.shape
        assert have.tobytes() == np.ascontiguousarray(want).tobytes()
        assert have.flags.writeable
    after = shm.stats()
    assert after["received_tensors"] - before["received_tensors"] == len(values)
    assert after["sent_bytes"] - before["sent_bytes"] == sum(v.nbytes for v in values)


def test_strings_small_and_empty_tensors_travel_as_bytes():
    pool = shm.pool_for(shm.host_id())
    values = [np.array([b"a" * 100000, b"", b"xyz"], dtype=object), np.zeros((0, 70000), np.float32),
              np.arange(10, dtype=np.float32), np.float64(3.5)]
    before = shm.stats()["sent_tensors"]
    frames, got = _round_trip(values, pool)
    assert shm.stats()["sent_tensors"] == before
    assert list(got[0]) == [b"a" * 100000, b"", b"xyz"]
    assert got[1].shape == (0, 70000) and got[1].dtype == np.float32
    np.testing.assert_array_equal(got[2], np.arange(10, dtype=np.float32))
    assert got[3] == 3.5 and got[3].shape == ()


def test_another_host_disabled_or_over_the_bound_falls_back_to_bytes(monkeypatch):
    value = np.arange(1 << 18, dtype=np.float32)   # 1 MiB
    assert shm.pool_for("some-other-host") is None
    assert shm.pool_for("") is None
    monkeypatch.setenv("TFJUPYTER_SHM", "0")
    assert shm.pool_for(shm.host_id()) is None and shm.host_id() == ""
    monkeypatch.delenv("TFJUPYTER_SHM")
    monkeypatch.setenv("TFJUPYTER_SHM_BYTES", str(600 << 10))   # less than the tensor
    pool = shm.pool_for(shm.host_id())
    fallbacks = shm.stats()["fallbacks"]
    frames, (got,) = _round_trip([value], pool)
    assert _data_bytes(frames) == value.nbytes
    assert shm.stats()["fallbacks"] == fallbacks + 1
    np.testing.assert_array_equal(got, value)


def test_a_segment_is_reused_once_its_tensor_dies_and_held_while_it_lives():
    pool = shm.pool_for(shm.host_id())
    value = np.ones(1 << 18, np.float32)
    for _ in range(5):
        _, (got,) = _round_trip([value], pool)
        del got
    assert len(_segments_of(os.getpid())) == 1        # one segment, lent five times
    _, (held,) = _round_trip([value], pool)
    _, (other,) = _round_trip([value * 2], pool)       # `held` still maps the first one
    assert len(_segments_of(os.getpid())) == 2
    np.testing.assert_array_equal(held, value)
    np.testing.assert_array_equal(other, value * 2)


def test_an_unclaimed_segment_is_reclaimed_and_a_late_reader_fails(monkeypatch):
    pool = shm.pool_for(shm.host_id())
    frames = list(wire.tensor_frames(0, np.ones(1 << 17, np.float32), pool))   # never read
    monkeypatch.setattr(shm, "UNCLAIMED_TTL_S", 0.0)
    _, (fresh,) = _round_trip([np.full(1 << 17, 7, np.float32)], pool)        # takes it back
    assert len(_segments_of(os.getpid())) == 1 and fresh[0] == 7
    del fresh
    assembler = wire.TensorAssembler(1, "late reader")
    with pytest.raises(tf.errors.UnavailableError, match="reclaimed"):
        assembler.add(frames[0])


@pytest.mark.parametrize("segment", ["../../etc/passwd", "tfjupyter-shm-1-2-" + "0" * 32])
def test_a_header_naming_a_foreign_or_missing_segment_is_refused(segment):
    header = pb.TensorHeader(index=0, dtype="float32", shape=[4], nbytes=16, shm_segment=segment,
                             shm_generation=1)
    assembler = wire.TensorAssembler(1, "RecvTensor from x")
    with pytest.raises((tf.errors.InvalidArgumentError, tf.errors.UnavailableError),
                       match="RecvTensor from x"):
        assembler.add(wire.HEADER + header.SerializeToString())


# -- between task processes -------------------------------------------------------------------
@pytest.fixture
def tasks(token_env):
    procs = TaskProcesses(token_env)
    try:
        yield procs
    finally:
        procs.close()
        shm.sweep_dead()
        for proc in procs.procs.values():
            assert _segments_of(proc.pid) == []


def _ps_and_worker_graph(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(512 * 512, dtype=np.float32).reshape(512, 512) / 7, name="w")
        fed = tf.placeholder(tf.float32, [512, 512])
        sum_on_ps = tf.reduce_sum(fed * 2.0)
    with tf.device("/job:worker/task:0"):
        doubled = w * 2.0     # w crosses ps -> worker (1 MiB), doubled comes back to the client
    return w, fed, sum_on_ps, doubled


@pytest.mark.parametrize("enabled", [True, False])
def test_fetches_feeds_and_task_to_task_tensors_are_exact_by_shm_or_not(tasks, monkeypatch, enabled):
    if not enabled:
        monkeypatch.setenv("TFJUPYTER_SHM", "0")
        tasks.env["TFJUPYTER_SHM"] = "0"
    cluster = loopback_cluster(ps=1, worker=1)
    tasks.start(cluster, "ps", 0)
    tasks.start(cluster, "worker", 0)
    feed = np.random.RandomState(1).randn(512, 512).astype(np.float32)
    with tf.Graph().as_default():
        w, fed, sum_on_ps, doubled = _ps_and_worker_graph(cluster)
        with tf.Session("grpc://" + cluster["ps"][0]) as sess:
            sess.run(w.initializer)
            before = shm.stats()
            w_value, s, d = sess.run([w, sum_on_ps, doubled], {fed: feed})
            after = shm.stats()
    want = np.arange(512 * 512, dtype=np.float32).reshape(512, 512) / 7
    assert w_value.tobytes() == want.tobytes()
    assert d.tobytes() == (want * 2.0).tobytes()
    np.testing.assert_allclose(s, (feed * 2.0).sum(dtype=np.float64), rtol=1e-5)
    received = after["received_tensors"] - before["received_tensors"]
    sent = after["sent_tensors"] - before["sent_tensors"]
    assert (received, sent) == ((2, 1) if enabled else (0, 0))   # w and doubled in; the feed out


def test_a_killed_tasks_segments_are_swept_by_the_next_task_of_the_host(tasks):
    cluster = loopback_cluster(ps=1)
    ps = tasks.start(cluster, "ps", 0)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.ones([1 << 18]))
        with tf.Session("grpc://" + cluster["ps"][0]) as sess:
            sess.run(v.initializer)
            value = sess.run(v)
    assert len(_segments_of(ps.pid)) == 1
    tasks.kill("ps", 0)
    assert len(_segments_of(ps.pid)) == 1        # a killed task cannot clean up after itself
    np.testing.assert_array_equal(value, 1.0)      # what was received stays valid
    del value
    server = tf.train.Server.create_local_server()
    try:
        assert _segments_of(ps.pid) == []
    finally:
        server.stop()


def test_a_call_without_the_token_gets_no_segment(tasks):
    cluster = loopback_cluster(ps=1)
    ps = tasks.start(cluster, "ps", 0)
    address = cluster["ps"][0]
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.ones([1 << 18]))
        with tf.Session("grpc://" + address) as sess:
            sess.run(v.initializer)
            sess.run(v)
    segments = _segments_of(ps.pid)
    assert all(os.stat(os.path.join(shm.SHM_DIR, n)).st_mode & 0o077 == 0 for n in segments)
    channel = grpc.insecure_channel(address)
    try:
        for method, request in [("RecvTensor", pb.RecvTensorRequest(step_id=1, key="k",
                                                                    shm_host=shm.host_id())),
                                ("FetchParked", pb.FetchParkedRequest(step_id=1))]:
            call = channel.unary_stream(f"/tfjupyter.Worker/{method}")
            with pytest.raises(grpc.RpcError) as info:
                list(call(request.SerializeToString(), timeout=5,
                          metadata=((TOKEN_METADATA_KEY, "not-" + TOKEN),)))
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert not re.search(shm.PREFIX, info.value.details() or "")
    finally:
        channel.close()
    assert _segments_of(ps.pid) == segments


def test_pushed_and_pulled_tensors_between_two_tasks_go_by_shm(request):
    from cluster_util import two_phase_cluster
    spec, servers = two_phase_cluster(lambda server: request.addfinalizer(server.stop))
    small = np.arange(512 * 512, dtype=np.float32).reshape(512, 512) / np.float32(7)  # pushed
    big = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024) / np.float32(3)     # pulled
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(tf.reshape(tf.range(512 * 512, dtype=tf.float32), [512, 512]) / 7.0)
            b = tf.Variable(tf.reshape(tf.range(1 << 20, dtype=tf.float32), [1024, 1024]) / 3.0)
        with tf.device("/job:worker/task:0"):
            out = tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * 2.0)
            a2 = tf.identity(a)
        with tf.Session(servers["ps"].target) as sess:
            sess.run(tf.global_variables_initializer())
            deltas = []
            for _ in range(50):   # the first pushes go as bytes, until the peer's host is known
                before = shm.stats()
                total, got = sess.run([out, a2])
                after = shm.stats()
                deltas.append((after["sent_tensors"] - before["sent_tensors"],
                               after["received_bytes"] - before["received_bytes"]))
                if deltas[-1][0] == 2:
                    break
    assert deltas[0] == (1, big.nbytes)                     # pulled by shm from the first step
    assert deltas[-1] == (2, big.nbytes + small.nbytes)     # then pushed by shm too
    assert got.tobytes() == small.tobytes()
    np.testing.assert_allclose(total, (small.astype(np.float64) * 2).sum()
                               + (big.astype(np.float64) * 2).sum(), rtol=1e-4)

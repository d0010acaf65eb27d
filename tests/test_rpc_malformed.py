"""Malformed and oversized RPCs to a task (issue 13, item 5).

Every method of the worker and telemetry services answers a malformed call with
INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a tensor above wire.MAX_TENSOR_BYTES), names the method
and the task, allocates nothing for sizes the call does not carry, changes nothing on the task,
and keeps serving. A real tf.train.Server on loopback, in this process (so its memory is ours
to measure); raw grpc calls with bytes; every call has a timeout; every server is stopped.
"""
import json

import grpc
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import protocol_pb2 as pb
from tfjupyter.distributed import telemetry, wire
from tfjupyter.distributed.auth import TOKEN_METADATA_KEY
from tfjupyter.framework import errors

TASK = "/job:ps/replica:0/task:0"
TIMEOUT_S = 10
TIB = 1 << 40

# Method -> how it is called: request and response cardinality.
WORKER_METHODS = {
    "GetStatus": "unary_unary", "RegisterGraph": "unary_unary",
    "RegisterGraphStream": "stream_unary",
    "DeregisterGraph": "unary_unary", "CleanupStep": "unary_unary",
    "RunGraphUnary": "unary_unary", "PushTensors": "unary_unary",
    "FetchParked": "unary_stream", "RecvTensor": "unary_stream", "RunGraph": "stream_stream",
}
# Undecodable as any request protobuf (a 16-byte varint; a field number 0), as packed frames
# (a length beyond the message) and as a frame stream (no request frame first).
GARBAGE = (b"\xff" * 16, b"\x00garbage")


@pytest.fixture
def server():
    s = tf.train.Server({"ps": ["localhost:0"]}, job_name="ps", task_index=0)
    try:
        yield s
    finally:
        s.stop(0)


@pytest.fixture
def call(server):
    """call(method, payload) -> the reply (a list of messages for streamed replies); payload is
    bytes, or a list of messages for RunGraph. Raises grpc.RpcError."""
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    metadata = ((TOKEN_METADATA_KEY, server.token),)

    def invoke(method, payload, service="tfjupyter.Worker"):
        kind = WORKER_METHODS.get(method, "unary_unary")
        stub = getattr(channel, kind)(f"/{service}/{method}")
        if kind == "stream_stream":
            return list(stub(iter(payload), metadata=metadata, timeout=TIMEOUT_S))
        if kind == "stream_unary":
            return stub(iter(payload), metadata=metadata, timeout=TIMEOUT_S)
        if kind == "unary_stream":
            return list(stub(payload, metadata=metadata, timeout=TIMEOUT_S))
        return stub(payload, metadata=metadata, timeout=TIMEOUT_S)
    try:
        yield invoke
    finally:
        channel.close()


def refused(call, method, payload, codes=(grpc.StatusCode.INVALID_ARGUMENT,), **kwargs) -> str:
    """The details of the call's failure, after checking its code and that they name the
    method and the task."""
    with pytest.raises(grpc.RpcError) as info:
        call(method, payload, **kwargs)
    assert info.value.code() in codes, (info.value.code(), info.value.details())
    details = info.value.details()
    assert details.startswith(f"{method} on {TASK}: "), details
    return details


def header_frame(nbytes, shape, dtype="float32", index=0) -> bytes:
    return wire.HEADER + pb.TensorHeader(index=index, dtype=dtype, shape=shape,
                                         nbytes=nbytes).SerializeToString()


def push_message(*frames, keys=("k",), step_id=7) -> bytes:
    request = pb.PushTensorsRequest(step_id=step_id, keys=list(keys))
    return wire.pack([wire.control_frame(request), *frames])


def run_graph_frames(*frames, feeds=("x:0",)):
    request = pb.RunGraphRequest(graph_handle="none", step_id=7, feeds=list(feeds))
    return [wire.control_frame(request), *frames]


def assert_task_unchanged(server):
    worker = server._worker
    assert worker.rendezvous.pending_steps() == []
    assert worker._graphs == {}
    assert worker._steps == {}
    assert worker._parked == {}


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def peak_memory_growth(fn) -> int:
    """How many bytes this process's resident memory rose above its level before ``fn()``, at
    its peak while ``fn`` ran (the server runs in this process)."""
    before = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")   # resets VmHWM (the peak) to the current RSS
        peak_field = "VmHWM"
    except OSError:
        peak_field = "VmRSS"   # no peak to reset: the level after will do
    fn()
    return (_status_kib(peak_field) - before) * 1024


# -- garbage to every method -----------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(WORKER_METHODS))
def test_garbage_to_every_worker_method_is_invalid_argument(server, call, method):
    for garbage in GARBAGE:
        payload = [garbage] if WORKER_METHODS[method].startswith("stream") else garbage
        refused(call, method, payload)
    assert_task_unchanged(server)
    assert call("GetStatus", b"")   # still serving


def test_framed_methods_refuse_a_missing_or_undecodable_request_frame(server, call):
    no_request = [header_frame(4, [1]), wire.DATA + b"\0" * 4]
    bad_request = [wire.CONTROL + b"\xff" * 16]
    for frames in (no_request, bad_request):
        for method in ("RunGraphUnary", "PushTensors"):
            refused(call, method, wire.pack(frames))
        refused(call, "RunGraph", frames)
    for method in ("RunGraphUnary", "PushTensors"):
        refused(call, method, b"")   # no frame at all
    refused(call, "RunGraph", [])   # a stream without any message
    refused(call, "RunGraph", [b""])   # an empty frame
    assert_task_unchanged(server)


def test_garbage_to_telemetry_poll_is_invalid_argument_naming_the_task(server, call):
    for body in (b"\xff\xfe", b"[not json", b'{"since": 1e400}', b"[" * 100_000,
                 json.dumps({"max": [1]}).encode()):
        with pytest.raises(grpc.RpcError) as info:
            call("Poll", body, service=telemetry.SERVICE)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
        details = info.value.details()
        assert details.startswith(f"Telemetry.Poll on {TASK}: bad request"), details
    reply = json.loads(call("Poll", b"{}", service=telemetry.SERVICE))
    assert reply["task"] == TASK


# -- sizes the call does not carry ---------------------------------------------------------------
def test_a_tib_header_in_a_packed_message_is_refused_before_allocating(server, call):
    one_tib = header_frame(TIB, [TIB // 4])
    data = wire.DATA + b"\0" * 1024

    def send_both():
        details = refused(call, "PushTensors", push_message(one_tib, data),
                          codes=(grpc.StatusCode.INVALID_ARGUMENT,
                                 grpc.StatusCode.RESOURCE_EXHAUSTED))
        assert "announces 1099511627776 bytes" in details
        details = refused(call, "RunGraphUnary", wire.pack(run_graph_frames(one_tib, data)),
                          codes=(grpc.StatusCode.INVALID_ARGUMENT,
                                 grpc.StatusCode.RESOURCE_EXHAUSTED))
        assert "announces 1099511627776 bytes" in details
    assert peak_memory_growth(send_both) < 64 << 20
    assert_task_unchanged(server)


def test_a_header_announcing_more_than_the_message_carries_is_invalid_argument(server, call):
    # 1 MiB announced (well under any cap), 1 KiB sent.
    lying = header_frame(1 << 20, [1 << 18])
    data = wire.DATA + b"\0" * 1024
    for method, message in (("PushTensors", push_message(lying, data)),
                            ("RunGraphUnary", wire.pack(run_graph_frames(lying, data)))):
        details = refused(call, method, message)
        assert "but the message carries at most" in details
    assert_task_unchanged(server)


def test_a_streamed_header_above_the_cap_is_resource_exhausted(server, call, monkeypatch):
    monkeypatch.setattr(wire, "MAX_TENSOR_BYTES", 1 << 20)
    details = refused(call, "RunGraph", run_graph_frames(header_frame(2 << 20, [1 << 19])),
                      codes=(grpc.StatusCode.RESOURCE_EXHAUSTED,))
    assert "announces 2097152 bytes, more than the 1048576" in details
    assert wire.MAX_TENSOR_BYTES_ENV in details
    # The same in a packed message that carries it all: the cap holds there too.
    big = header_frame(2 << 20, [1 << 19])
    chunks = [wire.DATA + b"\0" * (1 << 20)] * 2
    refused(call, "PushTensors", push_message(big, *chunks),
            codes=(grpc.StatusCode.RESOURCE_EXHAUSTED,))
    assert_task_unchanged(server)


def test_a_lying_streamed_header_costs_only_the_data_sent(server, call):
    announced = min(1 << 30, wire.MAX_TENSOR_BYTES)   # 1 GiB, or the cap of a small machine
    lying = header_frame(announced, [announced // 4])
    sent = [wire.DATA + b"\1" * (1 << 20)] * 2

    def send():
        details = refused(call, "RunGraph", run_graph_frames(lying, *sent),
                          codes=(grpc.StatusCode.INVALID_ARGUMENT,
                                 grpc.StatusCode.RESOURCE_EXHAUSTED))
        assert "ended after 2097152 of" in details or "no memory" in details
    assert peak_memory_growth(send) < 256 << 20
    assert_task_unchanged(server)


# -- inconsistent headers and partial messages change nothing ----------------------------------------
def test_inconsistent_tensor_headers_are_invalid_argument(server, call):
    good = [header_frame(4, [1]), wire.DATA + b"\0" * 4]
    cases = {
        "out of range": [header_frame(4, [1], index=5), wire.DATA + b"\0" * 4],
        "negative dimension": [header_frame(0, [-1, 0])],
        "do not hold": [header_frame(0, [1 << 32, 1 << 32])],   # an int64 product would wrap to 0
        "unknown dtype": [header_frame(4, [1], dtype="float32_ref"), wire.DATA + b"\0" * 4],
        "undecodable tensor header": [wire.HEADER + b"\xff" * 16],
        "sent twice": good + good,
        "more data than": [header_frame(4, [1]), wire.DATA + b"\0" * 8],
        "before any tensor header": [wire.DATA + b"\0" * 4],
        "unexpected frame kind": [b"Z" + b"\0" * 4],
        "were not sent": [],
    }
    for why, frames in cases.items():
        for method, message in (("PushTensors", push_message(*frames)),
                                ("RunGraphUnary", wire.pack(run_graph_frames(*frames)))):
            assert why in refused(call, method, message), (method, why)
        assert why in refused(call, "RunGraph", run_graph_frames(*frames)), ("RunGraph", why)
    # Two tensors, the second malformed: the first does not reach the rendezvous either.
    message = push_message(*good, header_frame(8, [1], index=1), keys=("a", "b"))
    refused(call, "PushTensors", message)
    assert_task_unchanged(server)


def test_a_malformed_partition_registers_nothing(server, call):
    request = pb.RegisterGraphRequest(graph_def=b"\x00garbage").SerializeToString()
    assert "bad partition" in refused(call, "RegisterGraph", request)
    head = pb.RegisterGraphRequest().SerializeToString()
    assert "bad partition" in refused(call, "RegisterGraphStream", [head, b"\x00gar", b"bage"])
    assert "no RegisterGraphRequest" in refused(call, "RegisterGraphStream", [])
    assert_task_unchanged(server)


def test_an_unexpected_failure_is_internal_naming_the_task(server, call, monkeypatch):
    class BrokenCluster:
        def tasks(self):
            raise RuntimeError("boom")
    monkeypatch.setattr(server._worker, "cluster", BrokenCluster())
    details = refused(call, "GetStatus", b"", codes=(grpc.StatusCode.INTERNAL,))
    assert "RuntimeError: boom" in details


# -- and afterwards the task still works ---------------------------------------------------------
def test_after_every_kind_of_malformed_call_a_session_still_runs_a_step(server, call):
    one_tib = header_frame(TIB, [TIB // 4])
    for method in sorted(WORKER_METHODS):
        refused(call, method, [GARBAGE[0]] if WORKER_METHODS[method].startswith("stream")
                else GARBAGE[0])
    refused(call, "PushTensors", push_message(one_tib), codes=(
        grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED))
    refused(call, "RunGraphUnary", wire.pack(run_graph_frames(one_tib)), codes=(
        grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED))
    refused(call, "RunGraph", run_graph_frames(one_tib), codes=(
        grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED))
    assert_task_unchanged(server)

    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
        assign = v.assign(5.0)
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        sess.run(assign)
        assert sess.run(v) == 5.0
    assert server._worker.rendezvous.pending_steps() == []


# -- the assembler alone ---------------------------------------------------------------------------
def test_assembler_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv(wire.MAX_TENSOR_BYTES_ENV, "12345")
    assert wire._max_tensor_bytes() == 12345
    for bad in ("lots", "-1", "0"):
        monkeypatch.setenv(wire.MAX_TENSOR_BYTES_ENV, bad)
        assert wire._max_tensor_bytes() == wire._default_max_tensor_bytes()
    monkeypatch.delenv(wire.MAX_TENSOR_BYTES_ENV)
    assert wire._max_tensor_bytes() == wire._default_max_tensor_bytes() > 0


def test_assembler_refuses_string_lengths_that_wrap_around():
    # Three int64 lengths whose sum wraps around to the 1 byte that follows them.
    lengths = np.array([2 ** 63 - 1, 2 ** 63 - 1, 3], dtype=np.int64)
    assert int(lengths.sum()) == 1
    body = lengths.tobytes() + b"x"
    assembler = wire.TensorAssembler(1, "test")
    with pytest.raises(errors.InvalidArgumentError, match="string lengths"):
        assembler.add(header_frame(len(body), [3], dtype="string"))
        assembler.add(wire.DATA + body)
        assembler.finish()


def test_assembler_still_assembles_honest_tensors():
    values = [np.arange(3 * (wire.CHUNK_BYTES // 8) + 5, dtype=np.float64),   # several chunks
              np.array([[b"ab", b""], [b"c", b"def"]], dtype=object), np.zeros((0, 3), np.int32)]
    frames = [f for i, v in enumerate(values) for f in wire.tensor_frames(i, v)]
    for carried in (None, wire.frames_size(frames)):
        assembler = wire.TensorAssembler(len(values), "test", carried)
        for frame in frames:
            assembler.add(frame)
        for got, want in zip(assembler.finish(), values):
            assert got.shape == want.shape and (got == want).all()

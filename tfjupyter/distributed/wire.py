"""Frames of the gRPC streams: control protobufs and tensors as raw bytes; and the guard every
RPC handler of a task runs under.

Every stream message is ``kind byte + body``:

- ``C`` + a protobuf (the request or the final StepStatus),
- ``H`` + a TensorHeader protobuf (index, dtype, shape, nbytes), followed by
- ``D`` + up to CHUNK_BYTES of the tensor's buffer, as many as its nbytes need.

Tensors are never encoded element by element: the sender slices its buffer (memoryview, no
copy); the receiver decodes a one-chunk tensor with ``numpy.frombuffer`` on the message (no copy)
and assembles a larger one into a single preallocated array (one copy). String tensors travel
as their elements' lengths (int64) followed by their bytes.

Between tasks of one host a header may instead name a shared-memory segment (shm.py) that
holds the tensor: no data frames follow, and the receiver maps it without a copy.

A peer's header is checked before anything is allocated for it: a tensor larger than
MAX_TENSOR_BYTES (env TFJUPYTER_MAX_TENSOR_BYTES) is refused with ResourceExhaustedError, one
larger than what its packed message still carries, or whose dtype and shape do not match its
size, with InvalidArgumentError.

``rpc_method_handler`` makes a task's handlers take their requests as bytes and decode them
themselves, so that a malformed call fails with INVALID_ARGUMENT (RESOURCE_EXHAUSTED for sizes
above the cap) and a message naming the method and the task, never with grpc's own INTERNAL
"Exception deserializing request!" or UNKNOWN "Exception calling application".
"""
from __future__ import annotations

import logging
import math
import os
from typing import Callable, Iterable, Iterator, List, Optional, Tuple

import grpc
import numpy as np
from google.protobuf.message import DecodeError

from ..framework import dtypes, errors
from . import protocol_pb2 as pb
from . import shm

__all__ = ["CHUNK_BYTES", "MAX_MESSAGE_BYTES", "MAX_TENSOR_BYTES", "tensor_frames",
           "TensorAssembler", "control_frame", "decode_request", "pack", "unpack", "PACK_LIMIT",
           "rpc_method_handler"]

_log = logging.getLogger("tfjupyter.distributed")

CHUNK_BYTES = 4 << 20
# gRPC's limit per message: one chunk plus its frame byte, with room for control messages.
MAX_MESSAGE_BYTES = CHUNK_BYTES + (1 << 20)

MAX_TENSOR_BYTES_ENV = "TFJUPYTER_MAX_TENSOR_BYTES"


def _default_max_tensor_bytes() -> int:
    """Half of the physical memory (8 GiB where the platform does not tell)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (AttributeError, ValueError, OSError):
        return 8 << 30


def _max_tensor_bytes() -> int:
    configured = os.environ.get(MAX_TENSOR_BYTES_ENV, "").strip()
    if configured:
        try:
            value = int(configured)
        except ValueError:
            value = 0
        if value > 0:
            return value
        _log.warning("%s=%r is not a positive number of bytes; using the default",
                     MAX_TENSOR_BYTES_ENV, configured)
    return _default_max_tensor_bytes()


# The largest tensor a peer may announce: a header above it is refused before anything is
# allocated, so that one bad (or buggy) peer cannot make a task try to allocate a TiB.
MAX_TENSOR_BYTES = _max_tensor_bytes()

CONTROL, HEADER, DATA = b"C", b"H", b"D"
# In a RunGraph reply: a PushTensors message for a task of the master's process (carry_to).
CARRIED = b"P"
# Up to this many bytes, a request or reply is one unary message of packed frames: a unary
# call costs a fraction of a streaming one in grpc's Python API. Beyond, frames are streamed.
PACK_LIMIT = CHUNK_BYTES


def pack(frames: Iterable[bytes]) -> bytes:
    """Frames as one message: each one preceded by its length (4 bytes, little-endian)."""
    parts = []
    for frame in frames:
        parts.append(len(frame).to_bytes(4, "little"))
        parts.append(frame)
    return b"".join(parts)


def unpack(message: bytes) -> Iterator[memoryview]:
    """The frames of a packed message, as views into it (no copies)."""
    view = memoryview(message)
    pos, end = 0, len(view)
    while pos < end:
        if pos + 4 > end:
            raise errors.InvalidArgumentError(None, None, "Malformed message: truncated frame length")
        size = int.from_bytes(view[pos:pos + 4], "little")
        pos += 4
        if size == 0 or pos + size > end:
            raise errors.InvalidArgumentError(None, None, "Malformed message: bad frame length")
        yield view[pos:pos + size]
        pos += size


def frames_size(frames) -> int:
    return sum(len(f) + 4 for f in frames)


def control_frame(message) -> bytes:
    return CONTROL + message.SerializeToString()


def decode_message(data: bytes, message_type):
    """``message_type`` decoded from a peer's bytes; undecodable ones are InvalidArgumentError."""
    try:
        return message_type.FromString(data)
    except DecodeError as e:
        # protobuf's message names the type again: keep only why it failed
        why = str(e).rpartition(": ")[2] or "corrupt"
        raise errors.InvalidArgumentError(
            None, None, f"undecodable {message_type.DESCRIPTOR.name} ({why})") from None


def decode_request(frame, request_type):
    """The request of a framed call: its first frame, ``C`` + the ``request_type`` protobuf."""
    if bytes(frame[:1]) != CONTROL:
        raise errors.InvalidArgumentError(
            None, None, f"the first frame must be the {request_type.DESCRIPTOR.name}")
    return decode_message(bytes(frame[1:]), request_type)


def _to_bytes_view(value: np.ndarray) -> Tuple[np.ndarray, memoryview]:
    if value.dtype.kind in "OSU":  # numpy's fixed-width bytes/str too (a summary's b"...")
        items = [v if isinstance(v, bytes) else str(v).encode() for v in value.reshape(-1)]
        lengths = np.array([len(v) for v in items], dtype=np.int64)
        return value, memoryview(lengths.tobytes() + b"".join(items))
    contiguous = value if value.flags.c_contiguous else value.copy()  # keeps 0-d arrays 0-d
    # Flat bytes through numpy: memoryview.cast refuses shapes with a 0 in them.
    return contiguous, memoryview(contiguous.reshape(-1).view(np.uint8))


def tensor_frames(index: int, value, shm_pool=None) -> Iterator[bytes]:
    """The frames of one tensor: a header, then its buffer in chunks. With ``shm_pool`` (the
    peer shares this host, see shm.py), a numeric tensor of at least shm.min_bytes() goes in a
    shared-memory segment instead, and the header alone names it."""
    value = np.asarray(value)
    dtype = dtypes.as_dtype(value.dtype)
    if shm_pool is not None and value.dtype.kind not in "OSU" and value.nbytes >= shm.min_bytes():
        lent = shm_pool.lend(value)
        if lent is not None:
            yield HEADER + pb.TensorHeader(index=index, dtype=dtype.name, shape=list(value.shape),
                                           nbytes=value.nbytes, shm_segment=lent[0],
                                           shm_generation=lent[1]).SerializeToString()
            return
    value, view = _to_bytes_view(value)
    header = pb.TensorHeader(index=index, dtype=dtype.name, shape=list(value.shape),
                             nbytes=view.nbytes)
    yield HEADER + header.SerializeToString()
    for start in range(0, view.nbytes, CHUNK_BYTES):
        yield _data_frame(view, start)


def renumbered(frames: List[bytes], index: int) -> List[bytes]:
    """The frames of one tensor_frames(...) as the ``index``-th tensor of a message (without
    making them again: their data may already be in a shared-memory segment)."""
    header = pb.TensorHeader.FromString(bytes(frames[0][1:]))
    header.index = index
    return [HEADER + header.SerializeToString()] + frames[1:]


def _data_frame(view: memoryview, start: int) -> bytes:
    # One copy into the message: gRPC needs a bytes object per message.
    return b"".join((DATA, view[start:start + CHUNK_BYTES]))


# The largest index numpy can address: a shape whose non-zero dimensions multiply past it is
# refused by numpy even when another dimension is 0.
_MAX_INDEX = int(np.iinfo(np.intp).max)


class TensorAssembler:
    """Turns a sequence of H/D frames back into arrays, checking everything a peer sent.

    ``carried_bytes``: for the frames of one packed message, that message's length. The frames
    still to come hold no more than what is left of it, so a header announcing more is refused
    before anything is allocated. None for a stream, whose length nobody knows in advance:
    there MAX_TENSOR_BYTES bounds a header (see ``_allocate`` for what a lying one costs).
    """

    def __init__(self, expected: int, what: str, carried_bytes: Optional[int] = None):
        self.values: List[Optional[np.ndarray]] = [None] * expected
        self.what = what
        self._carried_left = carried_bytes
        self._header: Optional[pb.TensorHeader] = None
        self._buffer: Optional[np.ndarray] = None
        self._filled = 0
        self._chunks: List[bytes] = []

    def add(self, frame: bytes) -> None:
        if self._carried_left is not None:
            self._carried_left -= len(frame)
        kind = bytes(frame[:1])
        if kind == HEADER:
            self._finish_pending()
            header = self._checked_header(frame)
            if header.shm_segment:
                self._claim_shared(header)
                return
            self._header, self._filled, self._chunks, self._buffer = header, 0, [], None
            if header.nbytes == 0:
                self._finish_pending()
        elif kind == DATA:
            header = self._header
            if header is None:
                raise self._malformed("data frame before any tensor header")
            size = len(frame) - 1
            if self._filled + size > header.nbytes:
                raise self._malformed("more data than the tensor header announced")
            if self._filled == 0 and size == header.nbytes:  # all in one frame: no copy
                self._chunks = [frame]
                self._filled = size
            else:
                if self._buffer is None:
                    self._buffer = self._allocate(header)
                self._buffer[self._filled:self._filled + size] = np.frombuffer(frame, np.uint8, offset=1)
                self._filled += size
            if self._filled == header.nbytes:
                self._finish_pending()
        else:
            raise self._malformed(f"unexpected frame kind {kind!r}")

    def _checked_header(self, frame) -> pb.TensorHeader:
        """The header of ``frame``, once everything it announces is known to be possible."""
        try:
            header = pb.TensorHeader.FromString(bytes(frame[1:]))
        except DecodeError:
            raise self._malformed("undecodable tensor header") from None
        index, nbytes, shape = header.index, header.nbytes, list(header.shape)
        if not 0 <= index < len(self.values):
            raise self._malformed(f"tensor index {index} out of range")
        if self.values[index] is not None:
            raise self._malformed(f"tensor {index} was sent twice")
        if nbytes < 0:
            raise self._malformed(f"tensor {index} announces {nbytes} bytes")
        if self._carried_left is not None and nbytes > self._carried_left and not header.shm_segment:
            raise self._malformed(f"tensor {index} announces {nbytes} bytes, but the message "
                                  f"carries at most {max(0, self._carried_left)} more")
        if nbytes > MAX_TENSOR_BYTES:
            raise errors.ResourceExhaustedError(
                None, None, f"{self.what}: tensor {index} announces {nbytes} bytes, more than "
                f"the {MAX_TENSOR_BYTES} a tensor may have (set {MAX_TENSOR_BYTES_ENV})")
        try:
            dtype = dtypes.as_dtype(header.dtype)
        except TypeError:
            raise self._malformed(f"unknown dtype {header.dtype[:40]!r}") from None
        if any(d < 0 for d in shape):
            raise self._malformed(f"negative dimension in shape {_shape_text(shape)}")
        elements = math.prod(shape)   # Python ints: a product of int64 dims cannot wrap around
        if dtype is dtypes.string:    # each element's length (int64), then their bytes
            consistent = 8 * elements <= nbytes
        else:
            consistent = elements * dtype.size == nbytes
        if not consistent or math.prod(d for d in shape if d) * dtype.size > _MAX_INDEX:
            raise self._malformed(f"{nbytes} bytes do not hold {dtype.name} of shape "
                                  f"{_shape_text(shape)}")
        return header

    def _claim_shared(self, header: pb.TensorHeader) -> None:
        """A tensor the peer left in a shared-memory segment: mapped, not copied."""
        dtype = dtypes.as_dtype(header.dtype)
        if dtype is dtypes.string:
            raise self._malformed(f"tensor {header.index}: strings never travel by shared memory")
        raw = shm.claim(header.shm_segment, header.shm_generation, header.nbytes,
                        f"{self.what}, tensor {header.index}")
        self.values[header.index] = raw.view(dtype.as_numpy_dtype).reshape(tuple(header.shape))

    def _allocate(self, header: pb.TensorHeader) -> np.ndarray:
        # One buffer of the announced size: at most what a packed message carries, and in a
        # stream at most MAX_TENSOR_BYTES. numpy leaves a large buffer's pages untouched until
        # they are written, and the OS backs them with memory only then, so a stream whose
        # header lies costs the data it actually sent, not the size it announced, while an
        # honest large tensor keeps its single copy (growing the buffer as data arrives would
        # not rely on the OS, for a second copy of every large tensor).
        try:
            return np.empty(header.nbytes, dtype=np.uint8)
        except MemoryError:
            raise errors.ResourceExhaustedError(
                None, None, f"{self.what}: no memory for the {header.nbytes} bytes of tensor "
                f"{header.index}") from None

    def _finish_pending(self) -> None:
        header = self._header
        if header is None:
            return
        if self._filled != header.nbytes:
            raise self._malformed(f"tensor {header.index} ended after {self._filled} of "
                                  f"{header.nbytes} bytes")
        dtype = dtypes.as_dtype(header.dtype)
        shape = tuple(header.shape)
        if self._buffer is not None:
            raw = self._buffer
        elif self._chunks:
            raw = np.frombuffer(self._chunks[0], dtype=np.uint8, offset=1)
        else:
            raw = np.empty(0, dtype=np.uint8)
        try:
            if dtype is dtypes.string:
                value = _decode_strings(raw, shape, self._malformed)
            else:
                value = raw.view(dtype.as_numpy_dtype).reshape(shape)
        except ValueError as e:  # a shape numpy cannot make (too many dimensions)
            raise self._malformed(f"tensor {header.index} of shape {_shape_text(shape)}: {e}") from None
        self.values[header.index] = value
        self._header, self._buffer, self._chunks, self._filled = None, None, [], 0

    def finish(self) -> List[np.ndarray]:
        self._finish_pending()
        missing = [i for i, v in enumerate(self.values) if v is None]
        if missing:
            raise self._malformed(f"tensors {_shape_text(missing)} were not sent")
        return self.values

    def _malformed(self, why: str) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(None, None, f"Malformed tensor data in {self.what}: {why}")


def _shape_text(dims, most: int = 8) -> str:
    """A list of numbers for a message, cut short: a peer's list may be millions long."""
    dims = list(dims)
    if len(dims) <= most:
        return str(dims)
    return f"[{', '.join(map(str, dims[:most]))}, ... ({len(dims)} in all)]"


def _decode_strings(raw: np.ndarray, shape, malformed) -> np.ndarray:
    count = math.prod(shape)
    if raw.nbytes < 8 * count:
        raise malformed("string tensor shorter than its length table")
    lengths = raw[:8 * count].view(np.int64).tolist()  # Python ints: their sum cannot wrap
    if any(n < 0 for n in lengths) or 8 * count + sum(lengths) != raw.nbytes:
        raise malformed("string lengths do not match the data")
    data = raw[8 * count:].tobytes()
    out = np.empty(count, dtype=object)
    pos = 0
    for i, n in enumerate(lengths):
        out[i] = data[pos:pos + n]
        pos += n
    return out.reshape(shape)


def split_frames(frames: Iterable[bytes]):
    """Yields (kind, frame) for each frame, rejecting empty ones."""
    for frame in frames:
        if not frame:
            raise errors.InvalidArgumentError(None, None, "Malformed stream: empty frame")
        yield frame[:1], frame


# -- the guard of a task's RPC handlers -----------------------------------------------------------
# tf.errors codes are gRPC's status codes.
_STATUS_BY_ERROR_CODE = {code.value[0]: code for code in grpc.StatusCode}
# grpc sends the details in a trailer, which clients refuse beyond a few KiB.
_MAX_DETAILS_CHARS = 2000

_HANDLER_FACTORIES = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def rpc_method_handler(method: str, task: Callable[[], str], behavior, request_type=None,
                       request_streaming: bool = False,
                       response_streaming: bool = False) -> grpc.RpcMethodHandler:
    """A grpc handler that calls ``behavior(request, context)`` and turns its errors into the
    call's status, with the details ``"<method> on <task()>: <message>"``.

    ``request_type``: the protobuf the request bytes are decoded to, here rather than by grpc
    (whose failure would be INTERNAL "Exception deserializing request!"): undecodable bytes are
    INVALID_ARGUMENT. None: ``behavior`` gets the bytes (or, ``request_streaming``, an iterator
    over the messages). Responses are bytes or protobufs (serialized here).

    An OpError fails the call with its code (InvalidArgumentError: INVALID_ARGUMENT,
    ResourceExhaustedError: RESOURCE_EXHAUSTED, ...), a MemoryError with RESOURCE_EXHAUSTED,
    anything else with INTERNAL, logged: that is a bug of the task, not of the call. A call the
    behavior aborted itself keeps the status it gave.
    """
    def decoded(request):
        return request if request_type is None else decode_message(request, request_type)

    if response_streaming:
        def handler(request, context):
            try:
                yield from behavior(decoded(request), context)
            except Exception as e:
                _abort(context, method, task, e)
                raise
    else:
        def handler(request, context):
            try:
                return behavior(decoded(request), context)
            except Exception as e:
                _abort(context, method, task, e)
                raise
    factory = _HANDLER_FACTORIES[(request_streaming, response_streaming)]
    return factory(handler, response_serializer=_serialize)


def _serialize(response) -> bytes:
    return response if isinstance(response, bytes) else response.SerializeToString()


def call_status(method: str, task: str, error: Exception) -> Tuple[int, str]:
    """(TensorFlow error code, message) of a call whose handler raised ``error``: an OpError's
    own, RESOURCE_EXHAUSTED for a MemoryError, INTERNAL (logged: a bug of the task, not of the
    call) for anything else."""
    if isinstance(error, errors.OpError):
        return error.error_code, error.message or type(error).__name__
    if isinstance(error, MemoryError):
        return errors.ResourceExhaustedError.error_code, f"out of memory ({error})"
    _log.error("%s on %s failed", method, task, exc_info=error)
    return errors.InternalError.error_code, f"internal error: {type(error).__name__}: {error}"


def _abort(context, method: str, task: Callable[[], str], error: Exception) -> None:
    """Fails the call for ``error`` (context.abort raises); returns when there is nothing to
    fail: the call already ended (the client went away) or the behavior aborted it itself."""
    if context.code() is not None or not context.is_active():
        return
    error_code, message = call_status(method, task(), error)
    code = _STATUS_BY_ERROR_CODE.get(error_code, grpc.StatusCode.INTERNAL)
    if code is grpc.StatusCode.OK:
        code = grpc.StatusCode.INTERNAL
    details = f"{method} on {task()}: {message}"
    if len(details) > _MAX_DETAILS_CHARS:
        details = details[:_MAX_DETAILS_CHARS - 3] + "..."
    context.abort(code, details)

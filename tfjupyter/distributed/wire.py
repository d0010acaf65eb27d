"""Frames of the gRPC streams: control protobufs and tensors as raw bytes.

Every stream message is ``kind byte + body``:

- ``C`` + a protobuf (the request or the final StepStatus),
- ``H`` + a TensorHeader protobuf (index, dtype, shape, nbytes), followed by
- ``D`` + up to CHUNK_BYTES of the tensor's buffer, as many as its nbytes need.

Tensors are never encoded element by element: the sender slices its buffer (memoryview, no
copy); the receiver decodes a one-chunk tensor with ``numpy.frombuffer`` on the message (no copy)
and assembles a larger one into a single preallocated array (one copy). String tensors travel
as their elements' lengths (int64) followed by their bytes.
"""
from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Tuple

import numpy as np

from ..framework import dtypes, errors
from . import protocol_pb2 as pb

__all__ = ["CHUNK_BYTES", "MAX_MESSAGE_BYTES", "tensor_frames", "TensorAssembler", "control_frame",
           "pack", "unpack", "PACK_LIMIT"]

CHUNK_BYTES = 4 << 20
# gRPC's limit per message: one chunk plus its frame byte, with room for control messages.
MAX_MESSAGE_BYTES = CHUNK_BYTES + (1 << 20)
# The largest tensor a peer may announce (a sanity bound, not a limit of the format).
MAX_TENSOR_BYTES = 1 << 40

CONTROL, HEADER, DATA = b"C", b"H", b"D"
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


def _to_bytes_view(value: np.ndarray) -> Tuple[np.ndarray, memoryview]:
    if value.dtype.kind in "OSU":  # numpy's fixed-width bytes/str too (a summary's b"...")
        items = [v if isinstance(v, bytes) else str(v).encode() for v in value.reshape(-1)]
        lengths = np.array([len(v) for v in items], dtype=np.int64)
        return value, memoryview(lengths.tobytes() + b"".join(items))
    contiguous = value if value.flags.c_contiguous else value.copy()  # keeps 0-d arrays 0-d
    return contiguous, memoryview(contiguous).cast("B")


def tensor_frames(index: int, value) -> Iterator[bytes]:
    """The frames of one tensor: a header, then its buffer in chunks."""
    value = np.asarray(value)
    dtype = dtypes.as_dtype(value.dtype)
    value, view = _to_bytes_view(value)
    header = pb.TensorHeader(index=index, dtype=dtype.name, shape=list(value.shape),
                             nbytes=view.nbytes)
    yield HEADER + header.SerializeToString()
    for start in range(0, view.nbytes, CHUNK_BYTES):
        yield _data_frame(view, start)


def _data_frame(view: memoryview, start: int) -> bytes:
    # One copy into the message: gRPC needs a bytes object per message.
    return b"".join((DATA, view[start:start + CHUNK_BYTES]))


class TensorAssembler:
    """Turns a sequence of H/D frames back into arrays, checking everything a peer sent."""

    def __init__(self, expected: int, what: str):
        self.values: List[Optional[np.ndarray]] = [None] * expected
        self.what = what
        self._header: Optional[pb.TensorHeader] = None
        self._buffer: Optional[np.ndarray] = None
        self._filled = 0
        self._chunks: List[bytes] = []

    def add(self, frame: bytes) -> None:
        kind = bytes(frame[:1])
        if kind == HEADER:
            self._finish_pending()
            header = pb.TensorHeader.FromString(bytes(frame[1:]))
            if not 0 <= header.index < len(self.values):
                raise self._malformed(f"tensor index {header.index} out of range")
            if not 0 <= header.nbytes <= MAX_TENSOR_BYTES:
                raise self._malformed(f"tensor size {header.nbytes} out of range")
            try:
                dtype = dtypes.as_dtype(header.dtype)
            except TypeError:
                raise self._malformed(f"unknown dtype {header.dtype!r}") from None
            if any(d < 0 for d in header.shape):
                raise self._malformed(f"negative dimension in shape {list(header.shape)}")
            count = int(np.prod(header.shape, dtype=np.int64))
            if dtype is not dtypes.string and count * dtype.size != header.nbytes:
                raise self._malformed(f"{header.nbytes} bytes do not hold {dtype.name} of shape "
                                      f"{list(header.shape)}")
            self._header, self._filled, self._chunks, self._buffer = header, 0, [], None
            if header.nbytes == 0:
                self._finish_pending()
        elif kind == DATA:
            if self._header is None:
                raise self._malformed("data frame before any tensor header")
            size = len(frame) - 1
            if self._filled + size > self._header.nbytes:
                raise self._malformed("more data than the tensor header announced")
            if self._filled == 0 and size == self._header.nbytes:
                self._chunks = [frame]
                self._filled = size
            else:
                if self._buffer is None:
                    self._buffer = np.empty(self._header.nbytes, dtype=np.uint8)
                    for previous in self._chunks:  # the first chunk, kept in case it was all
                        self._buffer[:len(previous) - 1] = np.frombuffer(previous, np.uint8, offset=1)
                    self._chunks = []
                self._buffer[self._filled:self._filled + size] = np.frombuffer(frame, np.uint8, offset=1)
                self._filled += size
            if self._filled == self._header.nbytes:
                self._finish_pending()
        else:
            raise self._malformed(f"unexpected frame kind {kind!r}")

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
        if dtype is dtypes.string:
            value = _decode_strings(raw, shape, self._malformed)
        else:
            value = raw.view(dtype.as_numpy_dtype).reshape(shape)
        self.values[header.index] = value
        self._header, self._buffer, self._chunks, self._filled = None, None, [], 0

    def finish(self) -> List[np.ndarray]:
        self._finish_pending()
        missing = [i for i, v in enumerate(self.values) if v is None]
        if missing:
            raise self._malformed(f"tensors {missing} were not sent")
        return self.values

    def _malformed(self, why: str) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(None, None, f"Malformed tensor data in {self.what}: {why}")


def _decode_strings(raw: np.ndarray, shape, malformed) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if raw.nbytes < 8 * count:
        raise malformed("string tensor shorter than its length table")
    lengths = raw[:8 * count].view(np.int64)
    if (lengths < 0).any() or 8 * count + int(lengths.sum()) != raw.nbytes:
        raise malformed("string lengths do not match the data")
    data = raw[8 * count:].tobytes()
    out = np.empty(count, dtype=object)
    pos = 0
    for i, n in enumerate(lengths.tolist()):
        out[i] = data[pos:pos + n]
        pos += n
    return out.reshape(shape)


def split_frames(frames: Iterable[bytes]):
    """Yields (kind, frame) for each frame, rejecting empty ones."""
    for frame in frames:
        if not frame:
            raise errors.InvalidArgumentError(None, None, "Malformed stream: empty frame")
        yield frame[:1], frame

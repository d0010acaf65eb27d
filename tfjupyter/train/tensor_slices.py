"""Slices of checkpoint tensors, as TensorFlow stores a partitioned variable.

A partitioned variable's parts are saved under the full variable's name with a slice spec
(``"10 4 4,3:0,4"``: full shape 10x4, rows 4..6, all 4 columns). In a V2 checkpoint the full
name's ``BundleEntryProto`` then holds only the dtype, the full shape and the list of stored
slices (``TensorSliceProto``s); each slice's bytes are an entry of their own whose key is
TensorFlow's ``checkpoint::EncodeTensorNameSlice``: the name and the slice in "ordered code"
(tensorflow/core/lib/strings/ordered_code.cc), so the keys of slices sort before every name.
A slice that covers the whole tensor is stored as the plain tensor, as TensorFlow does.

An extent is ``(start, length)``; ``length == -1`` is TensorFlow's kFullExtent (``-`` in a spec).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from ..summary._encoding import field_bytes, field_varint, parse_fields

__all__: List[str] = []

Extents = Tuple[Tuple[int, int], ...]
FULL_EXTENT = -1
_INT64 = 1 << 64


def extents_from_spec_dims(dims) -> Extents:
    """``parse_shape_and_slice``'s dims (None: the whole dimension) as extents."""
    return tuple((0, FULL_EXTENT) if d is None else (int(d[0]), int(d[1])) for d in dims)


def bounds(extents: Extents, full_shape: Sequence[int]) -> Tuple[Tuple[int, int], ...]:
    """(start, stop) per dimension, with full extents resolved against ``full_shape``."""
    return tuple((0, n) if length == FULL_EXTENT else (start, start + length)
                 for (start, length), n in zip(extents, full_shape))


def slice_shape(extents: Extents, full_shape: Sequence[int]) -> Tuple[int, ...]:
    return tuple(stop - start for start, stop in bounds(extents, full_shape))


def is_full(extents: Extents, full_shape: Sequence[int]) -> bool:
    return slice_shape(extents, full_shape) == tuple(full_shape)


def check_within(extents: Extents, full_shape: Sequence[int], what: str) -> None:
    if len(extents) != len(full_shape):
        raise ValueError(f"{what}: a slice of {len(extents)} dimensions of a tensor of shape "
                         f"{list(full_shape)}")
    for (start, stop), n in zip(bounds(extents, full_shape), full_shape):
        if start < 0 or stop > n or stop < start:
            raise ValueError(f"{what}: slice {format_extents(extents)} is outside the tensor's "
                             f"shape {list(full_shape)}")


def format_extents(extents: Extents) -> str:
    return ":".join("-" if length == FULL_EXTENT else f"{start},{length}"
                    for start, length in extents)


# -- TensorSliceProto ------------------------------------------------------------------------------
def encode_slice_proto(extents: Extents) -> bytes:
    """TensorSliceProto: one Extent (start = 1, length = 2, absent for a full extent) per dim."""
    out = b""
    for start, length in extents:
        extent = field_varint(1, start)
        if length != FULL_EXTENT:
            extent += field_varint(2, length)
        out += field_bytes(1, extent)
    return out


def _int64(value: int) -> int:
    return value - _INT64 if value >= 1 << 63 else value


def decode_slice_proto(payload: bytes) -> Extents:
    extents = []
    for extent in parse_fields(payload).get(1, []):
        fields = parse_fields(extent)
        length = _int64(fields[2][-1]) if 2 in fields else FULL_EXTENT
        extents.append((_int64(fields.get(1, [0])[-1]), length))
    return tuple(extents)


# -- keys of stored slices (TensorFlow's ordered code) ---------------------------------------------
def _num_increasing(value: int) -> bytes:
    """OrderedCode::WriteNumIncreasing: a length byte, then the value's big-endian bytes."""
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return bytes([len(raw)]) + raw


def _string(value: bytes) -> bytes:
    """OrderedCode::WriteString: 0x00 and 0xff escaped, then the 0x00 0x01 terminator."""
    escapes = {0x00: b"\x00\xff", 0xFF: b"\xff\x00"}
    return b"".join(escapes.get(b, bytes([b])) for b in value) + b"\x00\x01"


def _signed_num_increasing(value: int) -> bytes:
    """OrderedCode::WriteSignedNumIncreasing: the two's complement bytes, as few as hold the
    value and its sign, with the length in the leading bits (1 bits, then a 0 bit)."""
    magnitude = ~value if value < 0 else value
    length = magnitude.bit_length() // 7 + 1          # TensorFlow's kBitsToLength
    raw = bytearray((value % (1 << 80)).to_bytes(10, "big")[-length:])
    header = (0xFFFF << (16 - length)) & 0xFFFF
    raw[0] ^= header >> 8
    if length > 1:
        raw[1] ^= header & 0xFF
    return bytes(raw)


def slice_key(name: str, extents: Extents) -> bytes:
    """checkpoint::EncodeTensorNameSlice: the key of one stored slice of tensor ``name``."""
    key = _num_increasing(0) + _string(name.encode("utf-8", "surrogateescape"))
    key += _num_increasing(len(extents))
    for start, length in extents:
        key += _signed_num_increasing(start) + _signed_num_increasing(length)
    return key


# -- assembling ------------------------------------------------------------------------------------
def copy_overlap(dst: np.ndarray, dst_bounds, src: np.ndarray, src_bounds) -> int:
    """Copies the part of ``src`` (the slice ``src_bounds`` of the full tensor) that lies in
    ``dst`` (the slice ``dst_bounds``); returns how many elements it copied."""
    lo = [max(a[0], b[0]) for a, b in zip(dst_bounds, src_bounds)]
    hi = [min(a[1], b[1]) for a, b in zip(dst_bounds, src_bounds)]
    if any(h <= low for low, h in zip(lo, hi)):
        return 0
    dst[tuple(slice(low - d[0], h - d[0]) for low, h, d in zip(lo, hi, dst_bounds))] = \
        src[tuple(slice(low - s[0], h - s[0]) for low, h, s in zip(lo, hi, src_bounds))]
    return int(np.prod([h - low for low, h in zip(lo, hi)], dtype=np.int64))

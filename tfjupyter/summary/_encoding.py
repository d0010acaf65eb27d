"""Byte-level encodings shared by checkpoints and summaries.

- CRC-32C (Castagnoli), masked as TensorFlow/LevelDB store it;
- the protobuf wire format, for the few small messages we write by hand on hot paths
  (summary values, tensor-bundle entries) and for reading them back;
- TensorFlow's ``DataType`` enum numbers.
"""
from __future__ import annotations

import struct
from typing import Dict, List, Tuple, Union

import google_crc32c
import numpy as np

from ..framework import dtypes

__all__: List[str] = []

# -- CRC-32C ---------------------------------------------------------------------------------------
# google-crc32c is Google's maintained binding of its C library (hardware CRC32C instructions where
# the CPU has them). Its C functions take only read-only buffers without a release hook (bytes,
# numpy arrays), so other buffers are viewed as a uint8 array first (no copy).


def _as_crc_input(data):
    if isinstance(data, bytes):
        return data
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)  # bytearray, memoryview, ...


def crc32c_extend(crc: int, data: Union[bytes, bytearray, memoryview, np.ndarray]) -> int:
    """CRC-32C of ``data`` continuing from the CRC of what came before (``crc32c::Extend``)."""
    return google_crc32c.extend(crc, _as_crc_input(data))


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of ``data``, unmasked."""
    return google_crc32c.value(_as_crc_input(data))


_MASK_DELTA = 0xA282EAD8


def mask_crc(crc: int) -> int:
    """The stored form of a CRC (rotated and offset, so CRCs of CRCs stay well-mixed)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def unmask_crc(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data) -> int:
    return mask_crc(crc32c(data))


# -- protobuf wire format --------------------------------------------------------------------------
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 fields encode negatives as 10-byte two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def field_varint(number: int, value: int) -> bytes:
    """A varint field; proto3 leaves zero values out."""
    return varint(number << 3) + varint(value) if value else b""


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint((number << 3) | LENGTH) + varint(len(payload)) + payload


def field_double(number: int, value: float) -> bytes:
    return varint((number << 3) | FIXED64) + struct.pack("<d", value)


def field_float(number: int, value: float) -> bytes:
    return varint((number << 3) | FIXED32) + struct.pack("<f", value)


def field_fixed32(number: int, value: int) -> bytes:
    return varint((number << 3) | FIXED32) + struct.pack("<I", value)


def parse_fields(buf: bytes) -> Dict[int, list]:
    """Decodes one message: field number -> values (ints for varint/fixed, bytes for length)."""
    fields: Dict[int, list] = {}
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire == LENGTH:
            n, pos = read_varint(buf, pos)
            if pos + n > end:
                raise ValueError("truncated length-delimited field")
            value, pos = buf[pos:pos + n], pos + n
        elif wire == FIXED32:
            if pos + 4 > end:
                raise ValueError("truncated fixed32 field")
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        elif wire == FIXED64:
            if pos + 8 > end:
                raise ValueError("truncated fixed64 field")
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


# -- TensorFlow's DataType enum --------------------------------------------------------------------
DATATYPE_ENUM: Dict[dtypes.DType, int] = {d: d.as_datatype_enum
                                           for d in dtypes.ALL_DTYPES + (dtypes.variant,)}
ENUM_DATATYPE: Dict[int, dtypes.DType] = {v: k for k, v in DATATYPE_ENUM.items()}
# DataType names TensorFlow may have written that we can read but not represent as our dtypes.
ENUM_NAMES = {1: "float", 2: "double", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
              7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16",
              17: "uint16", 18: "complex128", 19: "half", 20: "resource", 21: "variant",
              22: "uint32", 23: "uint64"}


def datatype_enum(dtype: dtypes.DType) -> int:
    try:
        return DATATYPE_ENUM[dtypes.as_dtype(dtype)]
    except KeyError:
        raise TypeError(f"dtype {dtype!r} has no TensorFlow DataType number") from None


def tf_type_name(dtype: dtypes.DType) -> str:
    """TensorFlow's short name of a dtype, as its error messages print it ('float', 'double')."""
    return ENUM_NAMES.get(DATATYPE_ENUM.get(dtype, -1), dtype.name)

"""CPU kernels for summary ops: each returns the serialized ``Summary`` protocol buffer (bytes).

The few fields involved are encoded directly in the protobuf wire format (proto3: zero scalars
left out), which is byte-for-byte what TensorFlow's kernels produce.
"""
from __future__ import annotations

import struct
import sys
import time
import zlib

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.runtime import events
from tfjupyter.summary._encoding import (field_bytes, field_double, field_varint, parse_fields,
                                          varint)

from . import KERNELS

_DBL_MAX = sys.float_info.max


def _default_bucket_limits() -> np.ndarray:
    """TensorFlow's histogram buckets: +-1e-12 growing by 10% up to 1e20, 0, and +-DBL_MAX."""
    pos = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(_DBL_MAX)
    neg = [-x for x in reversed(pos)]
    return np.array(neg + [0.0] + pos, dtype=np.float64)


BUCKET_LIMITS = _default_bucket_limits()


def _tags_array(tags) -> np.ndarray:
    if isinstance(tags, bytes):
        return np.array(tags, dtype=object)
    return np.asarray(tags, dtype=object)


def _scalar_tag(tag, op, message: str) -> bytes:
    if isinstance(tag, bytes):
        return tag
    arr = np.asarray(tag, dtype=object)
    if arr.ndim != 0:
        raise errors.InvalidArgumentError(None, op, message)
    item = arr.item()
    return item if isinstance(item, bytes) else str(item).encode()


def _summary(values) -> bytes:
    return b"".join(field_bytes(1, v) for v in values)


def _value(tag: bytes, payload: bytes) -> bytes:
    return field_bytes(1, tag) + payload


_summary_listeners = events.listeners["summary"]  # the list itself: subscribe() appends to it


def _publish_scalars(tags, values) -> None:
    """A SummaryRecord per (tag, value) of a ScalarSummary that ran (only when listened to)."""
    now = time.time()
    try:
        if isinstance(tags, bytes) and np.ndim(values) == 0:
            pairs = [(tags, values)]
        else:
            pairs = zip(_tags_array(tags).reshape(-1), np.asarray(values).reshape(-1))
        records = [events.SummaryRecord(t.decode(errors="replace") if isinstance(t, bytes)
                                        else str(t), float(v), now) for t, v in pairs]
    except (TypeError, ValueError):
        return  # the kernel itself reports malformed inputs
    for record in records:
        events.publish("summary", record)


@KERNELS.register("ScalarSummary")
def scalar_summary(op, ctx):
    heads = {}  # tag -> encoded bytes up to the float, for the common scalar-tag case

    def head(tag: bytes) -> bytes:
        h = heads.get(tag)
        if h is None:
            tag_field = field_bytes(1, tag)
            h = heads[tag] = b"\x0a" + varint(len(tag_field) + 5) + tag_field + b"\x15"
        return h

    def run(tags, values):
        if _summary_listeners:
            _publish_scalars(tags, values)
        if isinstance(tags, bytes) and np.ndim(values) == 0:
            try:
                return head(tags) + struct.pack("<f", values)
            except OverflowError:  # beyond float32: TensorFlow's cast gives +-inf
                pass
        t = _tags_array(tags)
        v = np.asarray(values)
        if t.shape != v.shape:
            single = f" (tag '{t.item().decode(errors='replace')}')" if t.ndim == 0 else ""
            raise errors.InvalidArgumentError(
                None, op, f"tags and values not the same shape: {list(t.shape)} != "
                f"{list(v.shape)}{single}")
        out = []
        with np.errstate(over="ignore"):
            floats = v.reshape(-1).astype(np.float32)
        for tag, x in zip(t.reshape(-1), floats):
            tag = tag if isinstance(tag, bytes) else str(tag).encode()
            out.append(head(tag) + struct.pack("<f", x))
        return b"".join(out)
    return run


def histogram_proto(values: np.ndarray) -> bytes:
    """A HistogramProto of finite float64 values, as TensorFlow's histogram::Histogram encodes
    it (runs of empty buckets collapsed into one)."""
    n = values.size
    if n:
        index = np.searchsorted(BUCKET_LIMITS, values, side="right")
        np.minimum(index, len(BUCKET_LIMITS) - 1, out=index)
        counts = np.bincount(index, minlength=len(BUCKET_LIMITS)).astype(np.float64)
        lo, hi = float(values.min()), float(values.max())
        total, squares = float(values.sum()), float(np.dot(values, values))
    else:
        counts = np.zeros(len(BUCKET_LIMITS))
        lo, hi, total, squares = _DBL_MAX, -_DBL_MAX, 0.0, 0.0
    # Keep non-empty buckets, and the last bucket of each run of empty ones.
    nonzero = counts > 0
    keep = nonzero.copy()
    keep[:-1] |= ~nonzero[:-1] & nonzero[1:]
    keep[-1] = True
    limits, kept = BUCKET_LIMITS[keep], counts[keep]
    out = b""
    for number, x in ((1, lo), (2, hi), (3, float(n)), (4, total), (5, squares)):
        if x != 0.0:
            out += field_double(number, x)
    out += field_bytes(6, limits.astype("<f8").tobytes())
    out += field_bytes(7, kept.astype("<f8").tobytes())
    return out


@KERNELS.register("HistogramSummary")
def histogram_summary(op, ctx):
    name = op.name

    def run(tag, values):
        tag = _scalar_tag(tag, op, "tags must be scalar")
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        finite = np.isfinite(arr)
        if not finite.all():
            bad = arr[np.argmin(finite)]
            what = "Nan" if np.isnan(bad) else "Infinity"
            raise errors.InvalidArgumentError(None, op, f"{what} in summary histogram for: {name}")
        return field_bytes(1, _value(tag, field_bytes(5, histogram_proto(arr))))
    return run


def _png(image: np.ndarray) -> bytes:
    """A PNG (8-bit grey, grey+alpha, RGB or RGBA) of an [h, w, c] uint8 array."""
    h, w, c = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = np.zeros((h, 1 + w * c), dtype=np.uint8)  # filter byte 0 (None) per row
    rows[:, 1:] = image.reshape(h, w * c)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def _to_uint8(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """TensorFlow's image summary scaling: non-negative images scale so the max is 255; with
    negatives, scale by the largest magnitude and centre on 128. Non-finite pixels get
    bad_color."""
    h, w, c = image.shape
    flat = image.reshape(h * w, c).astype(np.float32)
    finite = np.isfinite(flat).all(axis=1)
    good = flat[finite]
    lo = float(good.min()) if good.size else np.inf
    hi = float(good.max()) if good.size else -np.inf
    if lo < 0:
        biggest = max(abs(lo), abs(hi))
        scale, offset = (0.0 if biggest < 1e-6 else 127.0 / biggest), 128.0
    else:
        scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
    out = np.empty((h * w, c), dtype=np.uint8)
    out[finite] = (good * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = bad_color[:c]
    return out.reshape(h, w, c)


@KERNELS.register("ImageSummary")
def image_summary(op, ctx):
    max_images = int(op.get_attr("max_images"))
    bad_color = np.asarray(op._attrs.get("bad_color", [255, 0, 0, 255]), dtype=np.uint8)

    def run(tag, tensor):
        tag = _scalar_tag(tag, op, "Tags must be a scalar")
        arr = np.asarray(tensor)
        if arr.ndim != 4 or arr.shape[3] not in (1, 3, 4):
            raise errors.InvalidArgumentError(
                None, op, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                f"{list(arr.shape)}")
        batch = min(arr.shape[0], max_images)
        values = []
        for i in range(batch):
            img = arr[i] if arr.dtype == np.uint8 else _to_uint8(arr[i], bad_color)
            h, w, c = img.shape
            image = (field_varint(1, h) + field_varint(2, w) + field_varint(3, c)
                     + field_bytes(4, _png(img)))
            # The tag depends on the number of images asked for, not the number produced.
            name = tag + (b"/image/%d" % i if max_images > 1 else b"/image")
            values.append(_value(name, field_bytes(4, image)))
        return _summary(values)
    return run


@KERNELS.register("MergeSummary")
def merge_summary(op, ctx):
    def run(*inputs):
        parts, tags = [], set()
        for x in inputs:
            items = (x,) if isinstance(x, bytes) else np.asarray(x, dtype=object).reshape(-1)
            for s in items:
                if not isinstance(s, bytes):
                    raise errors.InvalidArgumentError(
                        None, op, "Could not parse one of the summary inputs")
                try:
                    for value in parse_fields(s).get(1, ()):
                        tag = parse_fields(value).get(1, [b""])[-1]
                        if tag and tag in tags:
                            raise errors.InvalidArgumentError(
                                None, op, f"Duplicate tag {tag.decode(errors='replace')} found "
                                "in summary inputs")
                        tags.add(tag)
                except (ValueError, TypeError):
                    raise errors.InvalidArgumentError(
                        None, op, "Could not parse one of the summary inputs") from None
                parts.append(s)
        return b"".join(parts)
    return run

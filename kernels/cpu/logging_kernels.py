"""CPU kernels for Assert and Print (tfjupyter/ops/logging_ops.py), with TensorFlow's way of
summarizing a tensor as text (``summarize_value``)."""
from __future__ import annotations

import sys
import threading

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS

__all__ = ["summarize_value"]


def _element(x) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if isinstance(x, (np.bool_, bool)):
        return "1" if x else "0"
    if isinstance(x, np.floating):
        # The shortest of FLT_DIG/DBL_DIG significant digits that reads back as the same value,
        # else enough digits to round-trip (TensorFlow's SimpleFtoa).
        short, full = (6, 9) if x.dtype.itemsize <= 4 else (15, 17)
        text = "%.*g" % (short, x)
        return text if x.dtype.type(text) == x or np.isnan(x) else "%.*g" % (full, x)
    return str(x)


def summarize_value(array: np.ndarray, limit: int) -> str:
    """The first ``limit`` elements of ``array`` (all for limit < 0), brackets per dimension
    after the first, "..." after what was left out."""
    array = np.asarray(array)
    if array.dtype.kind in "US":
        array = array.astype(object)
    flat = array.reshape(-1)
    limit = flat.size if limit < 0 else min(limit, flat.size)
    if array.ndim == 0:
        text = _element(flat[0]) if limit else ""
    else:
        parts, index = [], [0]
        _one_dim(array.shape, 0, flat, limit, index, parts)
        text = "".join(parts)
    return text + ("..." if flat.size > limit else "")


def _one_dim(shape, dim: int, flat, limit: int, index: list, out: list) -> None:
    if index[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if index[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(_element(flat[index[0]]))
            index[0] += 1
        return
    for _ in range(shape[dim]):
        opened = index[0] < limit
        if opened:
            out.append("[")
        _one_dim(shape, dim + 1, flat, limit, index, out)
        if index[0] < limit or opened:
            out.append("]")


@KERNELS.register("Assert")
def assert_kernel(op, ctx):
    summarize = int(op.get_attr("summarize"))

    def run(condition, *data):
        if np.size(condition) != 1:
            raise errors.InvalidArgumentError(
                None, None, f"In[0] of Assert '{op.name}' must be a scalar, got shape "
                            f"{np.shape(condition)}")
        if not bool(np.reshape(condition, ())):
            shown = " ".join(f"[{summarize_value(d, summarize)}]" for d in data)
            raise errors.InvalidArgumentError(None, None, f"assertion failed: {shown}")
    return run


@KERNELS.register("Print")
def print_kernel(op, ctx):
    message, summarize = op.get_attr("message"), int(op.get_attr("summarize"))
    first_n = int(op.get_attr("first_n"))
    count, lock = [0], threading.Lock()

    def run(x, *data):
        with lock:
            if first_n >= 0 and count[0] >= first_n:
                return x
            count[0] += 1
        text = message + "".join(f"[{summarize_value(d, summarize)}]" for d in data)
        print(text, file=sys.stderr, flush=True)
        return x
    return run

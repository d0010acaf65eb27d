"""CPU kernels of tfjupyter/ops/string_transform_ops.py, with TensorFlow's rules and messages.
String tensors are numpy object arrays of bytes (or bytes scalars)."""
from __future__ import annotations

import re
from typing import Callable, List

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS


def _strings(value) -> np.ndarray:
    return np.asarray(value, dtype=object)


def _map(fn: Callable, strings, otype=object) -> np.ndarray:
    """``fn`` on every string of ``strings``, as an array of its shape."""
    array = _strings(strings)
    out = np.empty(array.size, dtype=otype)
    out[:] = [fn(s) for s in array.reshape(-1).tolist()]
    return out.reshape(array.shape)


@KERNELS.register("AsString")
def as_string(op, ctx):
    dtype = op.inputs[0].dtype
    width, fill = op.get_attr("width"), op.get_attr("fill")
    precision = op.get_attr("precision")
    spec = "%" + (f"{fill}{width}" if width > -1 else "") + \
        (f".{precision}" if precision > -1 else "")
    if dtype.is_floating:
        spec += "g" if op.get_attr("shortest") else "e" if op.get_attr("scientific") else "f"
    elif dtype.name != "bool":
        spec += "d"

    def text(value) -> bytes:
        if dtype.name == "bool":
            word = "true" if value else "false"
            return (("%" + (f"{width}" if width > -1 else "") + "s") % word).encode()
        return (spec % value).encode()

    return lambda values: _map(text, np.asarray(values).astype(object))


_INT_LIMITS = {"int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


@KERNELS.register("StringToNumber")
def string_to_number(op, ctx):
    out = op.get_attr("out_type")
    floating = out.is_floating

    def number(s: bytes):
        text = s.decode("utf-8", "replace").strip()
        try:
            if "_" in text:           # Python accepts 1_000; strtod does not
                raise ValueError
            value = float(text) if floating else int(text, 10)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, op, f"StringToNumberOp could not correctly convert string: "
                          f"{s.decode('utf-8', 'replace')}") from None
        if not floating:
            lo, hi = _INT_LIMITS[out.name]
            if not lo <= value <= hi:
                raise errors.InvalidArgumentError(
                    None, op, f"StringToNumberOp could not correctly convert string: "
                              f"{s.decode('utf-8', 'replace')}")
        return value
    return lambda strings: _map(number, strings).astype(out.as_numpy_dtype)


@KERNELS.register("StringLength")
def string_length(op, ctx):
    if op.get_attr("unit") == "UTF8_CHAR":
        # Characters: the bytes that do not continue a UTF-8 sequence (TF counts them so).
        count = (lambda s: sum(1 for b in s if b & 0xC0 != 0x80))
    else:
        count = len
    return lambda strings: _map(count, strings).astype(np.int32)


def _case(op, ascii_fn, unicode_fn):
    if op.get_attr("encoding"):
        return lambda strings: _map(lambda s: unicode_fn(s.decode("utf-8")).encode("utf-8"),
                                    strings)
    return lambda strings: _map(ascii_fn, strings)


@KERNELS.register("StringLower")
def string_lower(op, ctx):
    return _case(op, bytes.lower, str.lower)


@KERNELS.register("StringUpper")
def string_upper(op, ctx):
    return _case(op, bytes.upper, str.upper)


@KERNELS.register("StringStrip")
def string_strip(op, ctx):
    return lambda strings: _map(bytes.strip, strings)


def _replacer(op, pattern, rewrite, replace_global: bool) -> Callable:
    pattern = pattern.decode() if isinstance(pattern, bytes) else pattern
    rewrite = rewrite.decode() if isinstance(rewrite, bytes) else rewrite
    try:
        regex = re.compile(pattern.encode())
    except re.error as e:
        raise errors.InvalidArgumentError(None, op, f"Invalid pattern: {pattern}, error: {e}") \
            from None
    # RE2's \0 is the whole match; Python's template spells it \g<0>.
    template = re.sub(r"\\0", r"\\g<0>", rewrite).encode()
    count = 0 if replace_global else 1
    return lambda s: regex.sub(template, s, count=count)


@KERNELS.register("StaticRegexReplace")
def static_regex_replace(op, ctx):
    replace = _replacer(op, op.get_attr("pattern"), op.get_attr("rewrite"),
                        op.get_attr("replace_global"))
    return lambda strings: _map(replace, strings)


@KERNELS.register("RegexReplace")
def regex_replace(op, ctx):
    replace_global = op.get_attr("replace_global")

    def run(strings, pattern, rewrite):
        replace = _replacer(op, _strings(pattern)[()], _strings(rewrite)[()], replace_global)
        return _map(replace, strings)
    return run


@KERNELS.register("Substr")
def substr(op, ctx):
    def run(strings, pos, length):
        strings = _strings(strings)
        shape = np.broadcast_shapes(strings.shape, np.shape(pos), np.shape(length))
        items = np.broadcast_to(strings, shape).reshape(-1).tolist()
        starts = np.broadcast_to(pos, shape).reshape(-1).tolist()
        sizes = np.broadcast_to(length, shape).reshape(-1).tolist()
        out = np.empty(len(items), dtype=object)
        for i, (s, p, n) in enumerate(zip(items, starts, sizes)):
            start = p + len(s) if p < 0 else p
            if not 0 <= start <= len(s):
                raise errors.InvalidArgumentError(
                    None, op, f"pos {p} out of range for string b'{s.decode('utf-8', 'replace')}"
                              f"' at index {i}")
            out[i] = s[start:start + max(n, 0)]
        return out.reshape(shape)
    return run


def _sparse_tokens(rows: List[List[bytes]]):
    """(indices [N, 2], values [N], dense_shape [2]) of a list of token lists."""
    indices = [(r, c) for r, tokens in enumerate(rows) for c in range(len(tokens))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [t for tokens in rows for t in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return (np.array(indices, dtype=np.int64).reshape(-1, 2), values,
            np.array([len(rows), width], dtype=np.int64))


@KERNELS.register("StringSplit")
def string_split(op, ctx):
    skip_empty = op.get_attr("skip_empty")

    def run(strings, delimiter):
        delimiter = _strings(delimiter)[()]
        if delimiter:
            # Every byte of the delimiter separates tokens.
            cut = re.compile(b"[" + re.escape(delimiter) + b"]")
            rows = [cut.split(s) for s in _strings(strings).tolist()]
        else:
            rows = [[s[i:i + 1] for i in range(len(s))] for s in _strings(strings).tolist()]
        if skip_empty:
            rows = [[t for t in tokens if t] for tokens in rows]
        return _sparse_tokens(rows)
    return run


@KERNELS.register("StringSplitV2")
def string_split_v2(op, ctx):
    maxsplit = op.get_attr("maxsplit")

    def run(strings, sep):
        sep = _strings(sep)[()] or None
        rows = [s.split(sep, maxsplit) for s in _strings(strings).tolist()]
        return _sparse_tokens(rows)
    return run


@KERNELS.register("ReduceJoin")
def reduce_join(op, ctx):
    keep_dims = op.get_attr("keep_dims")
    separator = op.get_attr("separator").encode()

    def run(strings, axes):
        array = _strings(strings)
        rank = array.ndim
        axes = sorted({int(a) + rank if a < 0 else int(a) for a in np.reshape(axes, -1)})
        if any(not 0 <= a < max(rank, 1) for a in axes):
            raise errors.InvalidArgumentError(
                None, op, f"Invalid reduction dimension {axes} for input with {rank} "
                          f"dimension(s)")
        if rank == 0:
            return array
        kept = [a for a in range(rank) if a not in axes]
        moved = np.transpose(array, kept + axes)
        outer = moved.shape[:len(kept)]
        flat = moved.reshape((int(np.prod(outer, dtype=np.int64)), -1))
        out = np.empty(flat.shape[0], dtype=object)
        out[:] = [separator.join(row) for row in flat.tolist()]
        out = out.reshape(outer)
        if keep_dims:
            out = out.reshape([1 if a in axes else array.shape[a] for a in range(rank)])
        return out[()] if out.ndim == 0 else out
    return run

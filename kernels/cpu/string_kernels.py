"""CPU kernels of tfjupyter/ops/string_ops.py. String tensors are bytes scalars or numpy
object arrays of bytes."""
from __future__ import annotations

import re

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS


def _as_bytes_array(value) -> np.ndarray:
    array = np.asarray(value, dtype=object)
    return np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode(),
                        otypes=[object])(array) if array.size else array


def _compile(op, pattern) -> "re.Pattern":
    if isinstance(pattern, bytes):
        pattern = pattern.decode("utf-8", "surrogateescape")
    try:
        return re.compile(pattern.encode("utf-8", "surrogateescape"))
    except re.error as e:
        raise errors.InvalidArgumentError(
            None, op, f"{op.type} '{op.name}': Invalid pattern: {pattern}, error: {e}") from None


def _full_match(regex: "re.Pattern", strings: np.ndarray):
    matches = np.vectorize(lambda s: regex.fullmatch(s) is not None, otypes=[bool])
    return matches(strings) if strings.size else np.zeros(strings.shape, bool)


@KERNELS.register("StringJoin")
def string_join(op, ctx):
    separator = op.get_attr("separator")
    separator = separator.encode() if isinstance(separator, str) else separator

    def run(*inputs):
        arrays = [_as_bytes_array(x) for x in inputs]
        shapes = {a.shape for a in arrays if a.ndim}
        if len(shapes) > 1:
            raise errors.InvalidArgumentError(
                None, op, f"StringJoin '{op.name}': inputs must be scalars or of the same "
                f"shape, got shapes {sorted(shapes)}")
        shape = shapes.pop() if shapes else ()
        parts = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
        joined = np.empty(len(parts[0]), dtype=object)
        joined[:] = [separator.join(items) for items in zip(*parts)]
        return joined.reshape(shape)[()]          # a scalar's [()] is its bytes
    return run


@KERNELS.register("StaticRegexFullMatch")
def static_regex_full_match(op, ctx):
    regex = _compile(op, op.get_attr("pattern"))

    def run(strings):
        return _full_match(regex, _as_bytes_array(strings))
    return run


@KERNELS.register("RegexFullMatch")
def regex_full_match(op, ctx):
    def run(strings, pattern):
        return _full_match(_compile(op, np.asarray(pattern, dtype=object)[()]),
                           _as_bytes_array(strings))
    return run

"""String ops: ``StringJoin`` and the regular-expression matches (``tf.strings.join``,
``tf.strings.regex_full_match``).

TensorFlow's own graphs hold them: since TF 1.14 a sharded Saver builds its temporary shard
prefix with ``StringJoin`` and ``StaticRegexFullMatch`` (an ``s3://`` test), so every
SavedModel TensorFlow writes, and every Estimator export, needs both to import. Kernels in
``kernels/cpu/string_kernels.py``; patterns are RE2 syntax in TensorFlow, Python's ``re``
here (the same for the patterns TF 1.x programs write: no backreferences either way).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from ._shapes import check_dtype_in

__all__ = ["string_join", "regex_full_match"]


@register_op("StringJoin")
def _string_join_shape(op):
    # Inputs are scalars or of one shape; scalars repeat over the others' elements.
    shape = TensorShape(())
    for t in op.inputs:
        check_dtype_in(op, t, (dtypes.string,))
        if t.shape.ndims == 0:
            continue
        if shape.ndims == 0:
            shape = t.shape
        elif not shape.is_compatible_with(t.shape):
            raise ValueError(f"StringJoin '{op.name}': inputs must be scalars or of the same "
                             f"shape, got {shape} and {t.shape}")
        else:
            shape = shape.merge_with(t.shape)
    return [(dtypes.string, shape)]


@register_op("StaticRegexFullMatch")
def _static_regex_full_match_shape(op):
    check_dtype_in(op, op.inputs[0], (dtypes.string,))
    return [(dtypes.bool, op.inputs[0].shape)]


@register_op("RegexFullMatch")
def _regex_full_match_shape(op):
    check_dtype_in(op, op.inputs[0], (dtypes.string,))
    check_dtype_in(op, op.inputs[1], (dtypes.string,))
    if op.inputs[1].shape.ndims not in (None, 0):
        raise ValueError(f"RegexFullMatch '{op.name}': the pattern must be a scalar, got "
                         f"shape {op.inputs[1].shape}")
    return [(dtypes.bool, op.inputs[0].shape)]


for _t in ("StringJoin", "StaticRegexFullMatch", "RegexFullMatch"):
    NotDifferentiable(_t)


def string_join(inputs: Sequence, separator: str = "", name: Optional[str] = None) -> Tensor:
    """The elementwise concatenation of string tensors (scalars or of one shape), with
    ``separator`` between them."""
    tensors = [convert_to_tensor(x, dtype=dtypes.string) for x in inputs]
    if not tensors:
        raise ValueError("string_join needs at least one input")
    return _new_op("StringJoin", tensors, {"separator": separator, "N": len(tensors)},
                   name=name or "StringJoin").outputs[0]


def regex_full_match(input, pattern, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Whether each string of ``input`` matches ``pattern`` entirely. A Python string pattern
    builds ``StaticRegexFullMatch`` (compiled once), a tensor ``RegexFullMatch``, as in TF."""
    x = convert_to_tensor(input, dtype=dtypes.string)
    if isinstance(pattern, (str, bytes)):
        if isinstance(pattern, bytes):
            pattern = pattern.decode()
        return _new_op("StaticRegexFullMatch", [x], {"pattern": pattern},
                       name=name or "StaticRegexFullMatch").outputs[0]
    return _new_op("RegexFullMatch", [x, convert_to_tensor(pattern, dtype=dtypes.string)], {},
                   name=name or "RegexFullMatch").outputs[0]

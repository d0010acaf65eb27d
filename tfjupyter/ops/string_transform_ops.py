"""The common string ops of TF 1.x programs that read text: ``tf.as_string``,
``tf.string_to_number``, ``tf.string_split`` (``tf.strings.split``), ``tf.substr``,
``tf.strings.length``/``lower``/``upper``/``strip``, ``tf.regex_replace`` and
``tf.reduce_join``, with TensorFlow's op types and attrs (so that GraphDefs carry them) and
kernels in ``kernels/cpu/string_transform_kernels.py``."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.sparse_tensor import SparseTensor
from ..framework.tensor_shape import TensorShape
from ._shapes import check_dtype_in, constant_value, scalar_input

__all__ = ["as_string", "string_to_number", "string_split", "strings_split", "substr",
           "string_length", "string_lower", "string_upper", "string_strip", "regex_replace",
           "reduce_join"]

_AS_STRING_TYPES = (dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16, dtypes.int32,
                    dtypes.int64, dtypes.bool, dtypes.uint8, dtypes.float16)
_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)
_STRING = (dtypes.string,)


# -- shape rules -----------------------------------------------------------------------------------
@register_op("AsString")
def _as_string_shape(op):
    check_dtype_in(op, op.inputs[0], _AS_STRING_TYPES)
    return [(dtypes.string, op.inputs[0].shape)]


@register_op("StringToNumber")
def _to_number_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    if op.get_attr("out_type") not in _NUMBER_TYPES:
        raise TypeError(f"StringToNumber '{op.name}': out_type must be one of "
                        f"{', '.join(t.name for t in _NUMBER_TYPES)}")
    return [(op.get_attr("out_type"), op.inputs[0].shape)]


@register_op("StringLength")
@register_op("StringLower")
@register_op("StringUpper")
@register_op("StringStrip")
@register_op("StaticRegexReplace")
def _elementwise_string_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    out = dtypes.int32 if op.type == "StringLength" else dtypes.string
    return [(out, op.inputs[0].shape)]


@register_op("RegexReplace")
def _regex_replace_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    scalar_input(op, 1, _STRING, "pattern")
    scalar_input(op, 2, _STRING, "rewrite")
    return [(dtypes.string, op.inputs[0].shape)]


@register_op("Substr")
def _substr_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    pos, length = op.inputs[1], op.inputs[2]
    for t in (pos, length):
        check_dtype_in(op, t, (dtypes.int32, dtypes.int64))
    if not pos.shape.is_compatible_with(length.shape):
        raise ValueError(f"Substr '{op.name}': pos and len must have the same shape, got "
                         f"{pos.shape} and {length.shape}")
    shape = op.inputs[0].shape
    if pos.shape.ndims not in (None, 0) and shape.ndims is not None:
        shape = shape if shape.ndims >= pos.shape.ndims else pos.shape
    return [(dtypes.string, shape)]


@register_op("StringSplit")
@register_op("StringSplitV2")
def _split_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    scalar_input(op, 1, _STRING, "delimiter" if op.type == "StringSplit" else "sep")
    if op.inputs[0].shape.ndims not in (None, 1):
        raise ValueError(f"{op.type} '{op.name}': input must be a vector, got shape "
                         f"{op.inputs[0].shape}")
    return [(dtypes.int64, TensorShape([None, 2])), (dtypes.string, TensorShape([None])),
            (dtypes.int64, TensorShape([2]))]


@register_op("ReduceJoin")
def _reduce_join_shape(op):
    check_dtype_in(op, op.inputs[0], _STRING)
    shape, axes = op.inputs[0].shape, constant_value(op.inputs[1])
    if shape.ndims is None or axes is None:
        return [(dtypes.string, TensorShape(None))]
    rank = shape.ndims
    axes = {int(a) % rank if rank else int(a) for a in np.reshape(axes, -1)}
    if any(not 0 <= a < max(rank, 1) for a in axes):
        raise ValueError(f"ReduceJoin '{op.name}': axis out of range for rank {rank}")
    dims = shape.as_list()
    keep = op.get_attr("keep_dims")
    kept = [1 if i in axes else d for i, d in enumerate(dims)] if keep else \
        [d for i, d in enumerate(dims) if i not in axes]
    return [(dtypes.string, TensorShape(kept))]


for _t in ("AsString", "StringToNumber", "StringLength", "StringLower", "StringUpper",
           "StringStrip", "StaticRegexReplace", "RegexReplace", "Substr", "StringSplit",
           "StringSplitV2", "ReduceJoin"):
    NotDifferentiable(_t)


# -- API -------------------------------------------------------------------------------------------
def _strings(x, name: str = "input") -> Tensor:
    return convert_to_tensor(x, dtype=dtypes.string, name=name)


def _unary(op_type: str, x, attrs: dict, name: Optional[str]) -> Tensor:
    return _new_op(op_type, [_strings(x)], attrs, name=name or op_type).outputs[0]


def as_string(input, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: Optional[str] = None) -> Tensor:
    """Each number (or bool) as text, printf-style: ``%<fill><width>.<precision>f`` for floats
    (``e`` with ``scientific``, ``g`` with ``shortest``), ``%d`` for integers."""
    x = convert_to_tensor(input)
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    if len(fill) > 1:
        raise ValueError(f"Fill string must be one or fewer characters: {fill!r}")
    if not x.dtype.is_floating and (scientific or shortest or precision > -1):
        raise ValueError(f"scientific, shortest and precision apply to floating point types, "
                         f"not {x.dtype.name}")
    return _new_op("AsString", [x], {"precision": precision, "scientific": scientific,
                                     "shortest": shortest, "width": width, "fill": fill},
                   name=name or "AsString").outputs[0]


def string_to_number(string_tensor, out_type=dtypes.float32,
                     name: Optional[str] = None) -> Tensor:
    """Each string parsed as a number of ``out_type``; InvalidArgumentError for one that is
    not."""
    return _unary("StringToNumber", string_tensor, {"out_type": dtypes.as_dtype(out_type)}, name)


def string_length(input, name: Optional[str] = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """The length of each string, in bytes or (``unit='UTF8_CHAR'``) characters."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit must be BYTE or UTF8_CHAR, got {unit!r}")
    return _unary("StringLength", input, {"unit": unit}, name)


def string_lower(input, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Lower case: ASCII letters (``encoding='utf-8'``: every letter)."""
    return _unary("StringLower", input, {"encoding": encoding}, name)


def string_upper(input, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Upper case: ASCII letters (``encoding='utf-8'``: every letter)."""
    return _unary("StringUpper", input, {"encoding": encoding}, name)


def string_strip(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Each string without its leading and trailing whitespace."""
    return _unary("StringStrip", input, {}, name)


def regex_replace(input, pattern, rewrite, replace_global: bool = True,  # noqa: A002
                  name: Optional[str] = None) -> Tensor:
    """Matches of ``pattern`` replaced by ``rewrite`` (``\\1``: a group, ``\\0``: the match);
    only the first match of each string unless ``replace_global``."""
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        text = (lambda v: v.decode() if isinstance(v, bytes) else v)
        return _unary("StaticRegexReplace", input,
                      {"pattern": text(pattern), "rewrite": text(rewrite),
                       "replace_global": replace_global}, name)
    return _new_op("RegexReplace", [_strings(input), _strings(pattern, "pattern"),
                                    _strings(rewrite, "rewrite")],
                   {"replace_global": replace_global}, name=name or "RegexReplace").outputs[0]


def substr(input, pos, len, name: Optional[str] = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """``len`` bytes of each string from ``pos`` (negative: from the end); ``pos`` and ``len``
    are scalars or of the strings' shape."""
    if unit != "BYTE":
        raise ValueError(f"substr supports unit='BYTE' only, got {unit!r}")
    pos = convert_to_tensor(pos, name="pos")
    length = convert_to_tensor(len, dtype=pos.dtype, name="len")
    return _new_op("Substr", [_strings(input), pos, length], {"unit": unit},
                   name=name or "Substr").outputs[0]


def _sparse(op_type: str, source, sep, attrs: dict, name: Optional[str]) -> SparseTensor:
    with name_scope(name, op_type, [source]):
        outputs = _new_op(op_type, [_strings(source), _strings(sep, "sep")], attrs,
                          name=op_type).outputs
        return SparseTensor(outputs[0], outputs[1], outputs[2])


def string_split(source, sep=None, skip_empty: bool = True, delimiter=None,
                 result_type: str = "SparseTensor", name: Optional[str] = None) -> SparseTensor:
    """TF 1.x's ``tf.string_split``: each string of the vector ``source`` cut at every
    character of ``delimiter`` (default ``' '``; empty: into single bytes), empty tokens
    dropped unless not ``skip_empty``; a SparseTensor [len(source), most tokens]."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'SparseTensor' (RaggedTensor is not available)")
    delimiter = sep if sep is not None else (" " if delimiter is None else delimiter)
    return _sparse("StringSplit", source, delimiter, {"skip_empty": bool(skip_empty)}, name)


def strings_split(input=None, sep=None, maxsplit: int = -1,  # noqa: A002
                  result_type: str = "SparseTensor", source=None,
                  name: Optional[str] = None) -> SparseTensor:
    """``tf.strings.split`` (TF 1.15, v1): Python's ``str.split(sep, maxsplit)`` on each
    string of a vector (``sep=None``: runs of whitespace); a SparseTensor."""
    if input is not None and source is not None:
        raise ValueError("Cannot specify both 'input' and 'source'")
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'SparseTensor' (RaggedTensor is not available)")
    return _sparse("StringSplitV2", input if source is None else source, sep or "",
                   {"maxsplit": int(maxsplit)}, name)


def reduce_join(inputs, axis=None, keep_dims: bool = False, separator: str = "",
                name: Optional[str] = None, reduction_indices=None, keepdims=None) -> Tensor:
    """The strings along ``axis`` (all of them when None) joined with ``separator``."""
    if axis is not None and reduction_indices is not None:
        raise ValueError("Can't specify both 'axis' and 'reduction_indices'.")
    axis = reduction_indices if axis is None else axis
    keep = bool(keep_dims if keepdims is None else keepdims)
    x = _strings(inputs, "inputs")
    if axis is None:
        if x.shape.ndims is None:
            raise ValueError("reduce_join over every axis needs the input's rank")
        axis = list(range(x.shape.ndims))
    axes = convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")
    return _new_op("ReduceJoin", [x, axes], {"keep_dims": keep, "separator": separator},
                   name=name or "ReduceJoin").outputs[0]

"""Random ops with TensorFlow 1.x seed semantics: random_uniform, random_normal,
truncated_normal, random_shuffle, multinomial; set_random_seed and get_seed.

An op's seeds are (graph seed, op seed), fixed when the op is built (``get_seed``): with a graph
seed and no op seed, the op seed is the graph's op count at that moment, so a program that
builds the same graph draws the same numbers. Each session keeps one generator per op, seeded
from the pair: repeated runs continue the sequence, a new session starts it again. With no seed
at all, the numbers differ from session to session.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, get_default_graph, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from .array_ops import (_check_index_dtype, _check_rank, _const, _const_int, _is_tensorlike,
                        _shape_from_tensor, _to_int_tensor)

__all__ = ["random_uniform", "random_normal", "truncated_normal", "random_shuffle", "multinomial",
           "set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_INTS = (dtypes.int32, dtypes.int64)


# -- seeds -------------------------------------------------------------------------------------------
def set_random_seed(seed: Optional[int]) -> None:
    """Sets the graph-level seed of the default graph (None clears it)."""
    get_default_graph().seed = None if seed is None else int(seed)


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32


def get_seed(op_seed: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    """The (graph seed, op seed) pair an op built now uses, as TensorFlow 1.x computes it."""
    graph = get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            op_seed = graph._last_id
        seeds = _truncate_seed(graph.seed), _truncate_seed(op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    # (0, 0) would mean "nondeterministic" to the kernels.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _seed_attrs(seed: Optional[int]) -> dict:
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


# -- op definitions ------------------------------------------------------------------------------------
def _random_shape(op, dtype: dtypes.DType):
    shape_t = op.inputs[0]
    _check_index_dtype(op, shape_t, "shape")
    _check_rank(op, shape_t, (1,), "shape")
    static = _const(shape_t)
    if static is not None and np.any(static < 0):
        raise ValueError(f"Dimension {int(static[static < 0][0])} must be >= 0 for '{op.name}' "
                         f"(op: '{op.type}')")
    return [(dtype, _shape_from_tensor(shape_t))]


@register_op("RandomUniform", stateful=True)
@register_op("RandomStandardNormal", stateful=True)
@register_op("TruncatedNormal", stateful=True)
def _random_float_shape(op):
    dtype = op.get_attr("dtype")
    if dtype not in _FLOATS:
        raise TypeError(f"Value passed to parameter 'dtype' of '{op.type}' Op '{op.name}' has "
                        f"DataType {dtype.name} not in list of allowed values: float16, float32, "
                        "float64")
    return _random_shape(op, dtype)


@register_op("RandomUniformInt", stateful=True)
def _random_uniform_int_shape(op):
    _, lo_t, hi_t = op.inputs
    for t, what in ((lo_t, "minval"), (hi_t, "maxval")):
        _check_rank(op, t, (0,), what)
        if t.dtype is not op.get_attr("Tout"):
            raise TypeError(f"{what} of '{op.name}' (op: 'RandomUniformInt') has dtype "
                            f"{t.dtype.name}, expected {op.get_attr('Tout').name}")
    lo, hi = _const_int(lo_t), _const_int(hi_t)
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi} for '{op.name}' "
                         f"(op: 'RandomUniformInt')")
    return _random_shape(op, op.get_attr("Tout"))


@register_op("RandomShuffle", stateful=True)
def _random_shuffle_shape(op):
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


@register_op("Multinomial", stateful=True)
def _multinomial_shape(op):
    logits, num_t = op.inputs
    if not logits.dtype.is_floating:
        raise TypeError(f"logits of '{op.name}' (op: 'Multinomial') must be floating point, got "
                        f"{logits.dtype.name}")
    _check_rank(op, logits, (2,), "logits")
    _check_rank(op, num_t, (0,), "num_samples")
    num = _const_int(num_t)
    if num is not None and num < 0:
        raise ValueError(f"num_samples should be nonnegative, got {num} for '{op.name}' "
                         f"(op: 'Multinomial')")
    batch = logits.shape.as_list()[0] if logits.shape.ndims == 2 else None
    return [(op.get_attr("output_dtype"), TensorShape([batch, num]))]


for _t in ("RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
           "RandomShuffle", "Multinomial"):
    NotDifferentiable(_t)


# -- public API ------------------------------------------------------------------------------------------
def _static_number(v) -> Optional[float]:
    if _is_tensorlike(v):
        return None
    arr = np.asarray(v)
    return arr.item() if arr.ndim == 0 and arr.dtype.kind in "iuf" else None


def _scale_and_shift(rnd: Tensor, scale, shift, dtype: dtypes.DType, name: str,
                     scale_name: str, shift_name: str) -> Tensor:
    """``rnd * scale + shift`` named ``name`` (ops for a factor 1 or offset 0 are left out)."""
    from . import math_ops
    s, b = _static_number(scale), _static_number(shift)
    if s != 1:
        scale_t = convert_to_tensor(scale, dtype=dtype, name=scale_name)
        if b == 0:
            return math_ops.multiply(rnd, scale_t, name=name)
        rnd = math_ops.multiply(rnd, scale_t, name="mul")
    if b == 0:
        return _new_op("Identity", [rnd], name=name).outputs[0]
    return math_ops.add(rnd, convert_to_tensor(shift, dtype=dtype, name=shift_name), name=name)


def _float_dtype(dtype, what: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS:
        raise ValueError(f"Invalid dtype {dtype.name} for {what}: expected float16, float32 or "
                         "float64")
    return dtype


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed: Optional[int] = None,
                   name: Optional[str] = None) -> Tensor:
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats; integer dtypes
    need it)."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS + _INTS:
        raise ValueError(f"Invalid dtype {dtype.name} for random_uniform")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with name_scope(name, "random_uniform", [v for v in (shape, minval, maxval)
                                             if _is_tensorlike(v)]) as scope:
        shape_t = _to_int_tensor(shape, "shape")
        if dtype.is_integer:
            lo = convert_to_tensor(minval, dtype=dtype, name="min")
            hi = convert_to_tensor(maxval, dtype=dtype, name="max")
            attrs = dict(_seed_attrs(seed), Tout=dtype)
            return _new_op("RandomUniformInt", [shape_t, lo, hi], attrs, name=scope).outputs[0]
        lo, hi = _static_number(minval), _static_number(maxval)
        if lo is not None and hi is not None:
            scale, shift = hi - lo, lo
        else:
            from .math_ops import subtract
            lo_t = convert_to_tensor(minval, dtype=dtype, name="min")
            hi_t = convert_to_tensor(maxval, dtype=dtype, name="max")
            scale, shift = subtract(hi_t, lo_t), lo_t
        attrs = dict(_seed_attrs(seed), dtype=dtype)
        if _static_number(scale) == 1 and _static_number(shift) == 0:
            return _new_op("RandomUniform", [shape_t], attrs, name=scope).outputs[0]
        rnd = _new_op("RandomUniform", [shape_t], attrs, name="RandomUniform").outputs[0]
        return _scale_and_shift(rnd, scale, shift, dtype, scope, "range", "min")


def _normal(op_type: str, default_name: str, shape, mean, stddev, dtype, seed, name) -> Tensor:
    dtype = _float_dtype(dtype, default_name)
    with name_scope(name, default_name, [v for v in (shape, mean, stddev)
                                         if _is_tensorlike(v)]) as scope:
        shape_t = _to_int_tensor(shape, "shape")
        attrs = dict(_seed_attrs(seed), dtype=dtype)
        if _static_number(stddev) == 1 and _static_number(mean) == 0:
            return _new_op(op_type, [shape_t], attrs, name=scope).outputs[0]
        rnd = _new_op(op_type, [shape_t], attrs, name=op_type).outputs[0]
        return _scale_and_shift(rnd, stddev, mean, dtype, scope, "stddev", "mean")


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed: Optional[int] = None,
                  name: Optional[str] = None) -> Tensor:
    """Normally distributed values with the given mean and standard deviation."""
    return _normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                     seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Normal values, re-drawn while more than 2 standard deviations from the mean."""
    return _normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed, name)


def random_shuffle(value, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """``value`` with its slices along dimension 0 in a random order."""
    x = convert_to_tensor(value)
    return _new_op("RandomShuffle", [x], _seed_attrs(seed), name=name or "RandomShuffle").outputs[0]


def multinomial(logits, num_samples, seed: Optional[int] = None, name: Optional[str] = None,
                output_dtype=None) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` [batch, classes], drawn with
    probabilities softmax(logits); an int64 tensor [batch, num_samples]."""
    with name_scope(name, "multinomial", [logits]) as scope:
        logits_t = convert_to_tensor(logits, name="logits")
        num_t = _to_int_tensor(num_samples, "num_samples", "num_samples")
        if num_t.dtype is not dtypes.int32:
            from .math_ops import cast
            num_t = cast(num_t, dtypes.int32)
        out = dtypes.int64 if output_dtype is None else dtypes.as_dtype(output_dtype)
        if out not in _INTS:
            raise TypeError(f"output_dtype must be int32 or int64, got {out.name}")
        attrs = dict(_seed_attrs(seed), output_dtype=out)
        return _new_op("Multinomial", [logits_t, num_t], attrs, name=scope).outputs[0]

"""Math ops: elementwise arithmetic with broadcasting, comparisons, casts, matmul and add_n.

Reductions (``reduction_ops``) and clipping (``clip_ops``) are defined in their own modules and
re-exported here, so ``math_ops`` is the module to import. Importing it also installs Tensor's
Python operators (``a + b``, ``a @ b``, ``-a``, ``a < b``, ...) with TensorFlow 1.x's op names.
"""
from __future__ import annotations

import numbers
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import TensorShape, broadcast_shapes, list_str
from . import _shapes, array_ops

__all__ = [
    "add", "subtract", "sub", "multiply", "mul", "scalar_mul", "divide", "truediv", "realdiv",
    "div", "floordiv", "mod", "floormod", "pow", "maximum", "minimum", "squared_difference",
    "negative", "neg", "abs", "square", "sqrt", "rsqrt", "exp", "log", "log1p", "sigmoid", "tanh",
    "sign", "reciprocal", "floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "atan",
    "expm1", "is_nan", "is_inf", "is_finite",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor",
    "cast", "to_float", "to_double", "to_int32", "to_int64",
    "matmul", "batch_matmul", "add_n", "accumulate_n",
]

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
SIGNED_INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
INTS = SIGNED_INTS + (dtypes.uint8,)
SIGNED = FLOATS + SIGNED_INTS
NUMERIC = FLOATS + INTS
_EVERYTHING = NUMERIC + (dtypes.bool, dtypes.string)


# -- conversion and naming helpers --------------------------------------------------------------------
def _is_tensorlike(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_element")


def _convert_pair(x, y) -> Tuple[Tensor, Tensor]:
    """Converts two operands; a Python/numpy operand takes the dtype of the Tensor one."""
    if _is_tensorlike(x):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y) if _is_tensorlike(y) else convert_to_tensor(y, x.dtype, name="y")
    elif _is_tensorlike(y):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype=y.dtype, name="x")
    else:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
    return x, y


def _binary(op_type: str, x, y, name: Optional[str], default_name: Optional[str] = None) -> Tensor:
    """An op of two broadcast operands, named ``name`` (or the default) as TensorFlow does."""
    with name_scope(name, default_name or op_type, [x, y]) as scope:
        x, y = _convert_pair(x, y)
        return _new_op(op_type, [x, y], name=scope).outputs[0]


def _unary(op_type: str, x, name: Optional[str]) -> Tensor:
    with name_scope(name, op_type, [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return _new_op(op_type, [x], name=scope).outputs[0]


# -- undoing broadcasting in gradients ------------------------------------------------------------------
def _may_be_broadcast(x: TensorShape, other: TensorShape) -> bool:
    """Whether broadcasting ``x`` against ``other`` may expand ``x`` (its gradient must then be
    summed back). False only when the static shapes prove it cannot: a [None, 10] matmul output
    plus a [10] bias keeps the output's shape whatever the batch size."""
    if x.ndims is None or other.ndims is None or other.ndims > x.ndims:
        return True
    for xd, od in zip(reversed(x.as_list()), reversed(other.as_list())):
        if od == 1:
            continue
        if xd is None or xd == 1:
            return True
    return False


def _sum_to_shape(grad: Tensor, x: Tensor) -> Tensor:
    """Undoes broadcasting: sums ``grad`` over the axes along which ``x`` was broadcast."""
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined() and gs.as_list() == xs.as_list():
        return grad
    return _new_op("SumToShape", [grad, array_ops.shape(x)], name="SumToShape").outputs[0]


def _grad_for(grad: Tensor, x: Tensor, other: Tensor) -> Tensor:
    """The part of a broadcast op's output gradient that belongs to input ``x``."""
    return _sum_to_shape(grad, x) if _may_be_broadcast(x.shape, other.shape) else grad


@register_op("SumToShape")
def _sum_to_shape_shape(op):
    grad, target = op.inputs
    shape = array_ops._shape_from_tensor(target)
    if grad.shape.ndims is not None and shape.ndims is not None and shape.ndims > grad.shape.ndims:
        raise ValueError(f"SumToShape '{op.name}': cannot sum a gradient of shape "
                         f"{list_str(grad.shape)} to the larger rank shape {list_str(shape)}")
    return [(grad.dtype, shape)]


@register_gradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [array_ops.broadcast_to(grad, array_ops.shape(op.inputs[0])), None]


# TensorFlow's broadcast gradients use BroadcastGradientArgs (SumToShape's parts); graphs written
# for TensorFlow (framework/tf_layout.py) and TensorFlow's own training graphs hold it.
@register_op("BroadcastGradientArgs")
def _broadcast_gradient_args_shape(op):
    s0, s1 = op.inputs
    for s in (s0, s1):
        if s.dtype not in (dtypes.int32, dtypes.int64) or not s.shape.is_compatible_with([None]):
            raise ValueError(f"BroadcastGradientArgs '{op.name}': shapes must be int32 or int64 "
                             f"vectors, got {s.dtype.name} {list_str(s.shape)} ({s.name})")
    return [(s0.dtype, TensorShape([None])), (s0.dtype, TensorShape([None]))]


NotDifferentiable("BroadcastGradientArgs")


# -- binary elementwise ops ---------------------------------------------------------------------------------
def _broadcast_shape_fn(allowed: Sequence[dtypes.DType], out_dtype: Optional[dtypes.DType] = None):
    def shape_fn(op):
        x, y = op.inputs
        _shapes.check_same_dtype(op, x, y)
        _shapes.check_dtype_in(op, x, allowed)
        return [(out_dtype or x.dtype, broadcast_shapes(x.shape, y.shape, op.name))]
    return shape_fn


register_op("Add")(_broadcast_shape_fn(NUMERIC + (dtypes.string,)))
register_op("AddV2")(_broadcast_shape_fn(NUMERIC))
register_op("Sub")(_broadcast_shape_fn(NUMERIC))
register_op("Mul")(_broadcast_shape_fn(NUMERIC))
register_op("RealDiv")(_broadcast_shape_fn(FLOATS))
register_op("Div")(_broadcast_shape_fn(NUMERIC))
register_op("FloorDiv")(_broadcast_shape_fn(NUMERIC))
register_op("FloorMod")(_broadcast_shape_fn(NUMERIC))
register_op("Pow")(_broadcast_shape_fn(FLOATS + (dtypes.int32, dtypes.int64)))
register_op("Maximum")(_broadcast_shape_fn(NUMERIC))
register_op("Minimum")(_broadcast_shape_fn(NUMERIC))
register_op("SquaredDifference")(_broadcast_shape_fn(FLOATS + (dtypes.int32, dtypes.int64)))
NotDifferentiable("FloorDiv")


@register_gradient("Add")
@register_gradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    return [_grad_for(grad, x, y), _grad_for(grad, y, x)]


@register_gradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    return [_grad_for(grad, x, y), negative(_grad_for(grad, y, x))]


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [_grad_for(multiply(grad, y), x, y), _grad_for(multiply(x, grad), y, x)]


@register_gradient("RealDiv")
@register_gradient("Div")
def _div_grad(op, grad):
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    z = op.outputs[0]  # d(x/y)/dy = -x/y^2 = -z/y
    return [_grad_for(realdiv(grad, y), x, y),
            negative(_grad_for(realdiv(multiply(grad, z), y), y, x))]


@register_gradient("FloorMod")
def _floor_mod_grad(op, grad):
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    return [_grad_for(grad, x, y),
            _grad_for(multiply(grad, negative(floordiv(x, y))), y, x)]


@register_gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    if not x.dtype.is_floating:
        return [None, None]
    z = op.outputs[0]
    gx = multiply(grad, multiply(y, pow(x, subtract(y, 1))))
    # d(x^y)/dy = z*log(x), taken as 0 where x <= 0 (as TensorFlow does).
    log_x = log(add(maximum(x, 0), cast(less_equal(x, 0), x.dtype)))
    gy = multiply(grad, multiply(z, log_x))
    return [_grad_for(gx, x, y), _grad_for(gy, y, x)]


def _min_max_grad(op, grad, x_wins: Callable) -> list:
    # Ties go to x, as in TensorFlow.
    x, y = op.inputs
    x_mask = x_wins(x, y)
    gx = multiply(grad, cast(x_mask, grad.dtype))
    gy = multiply(grad, cast(logical_not(x_mask), grad.dtype))
    return [_grad_for(gx, x, y), _grad_for(gy, y, x)]


@register_gradient("Maximum")
def _maximum_grad(op, grad):
    return _min_max_grad(op, grad, greater_equal)


@register_gradient("Minimum")
def _minimum_grad(op, grad):
    return _min_max_grad(op, grad, less_equal)


@register_gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    x_grad = multiply(multiply(grad, 2), subtract(x, y))
    return [_grad_for(x_grad, x, y), negative(_grad_for(x_grad, y, x))]


def add(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Add", x, y, name)


def subtract(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Sub", x, y, name)


def multiply(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Mul", x, y, name)


sub = subtract
mul = multiply


def scalar_mul(scalar, x, name: Optional[str] = None) -> Tensor:
    """``scalar * x`` for a scalar (Python number or 0-D tensor)."""
    with name_scope(name, "Mul", [scalar, x]) as scope:
        scalar, x = _convert_pair(scalar, x)
        if scalar.shape.ndims != 0:
            raise ValueError(f"Only scalar multiply works, got shape {scalar.shape}")
        return _new_op("Mul", [scalar, x], name=scope).outputs[0]


def realdiv(x, y, name: Optional[str] = None) -> Tensor:
    """``x / y`` for floats (op RealDiv)."""
    return _binary("RealDiv", x, y, name)


# truediv casts integer operands to a float type first (TensorFlow's _TRUEDIV_TABLE).
_TRUEDIV_TYPES = {dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32,
                  dtypes.int16: dtypes.float32, dtypes.int32: dtypes.float64,
                  dtypes.int64: dtypes.float64, dtypes.float16: None, dtypes.float32: None,
                  dtypes.float64: None}


def truediv(x, y, name: Optional[str] = None) -> Tensor:
    """Python 3 division: integers are cast to float (int32 -> float64) before dividing."""
    with name_scope(name, "truediv", [x, y]) as scope:
        x, y = _convert_pair(x, y)
        if x.dtype is not y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
        if x.dtype not in _TRUEDIV_TYPES:
            raise TypeError(f"Invalid dtype {x.dtype!r} in __truediv__")
        target = _TRUEDIV_TYPES[x.dtype]
        if target is not None:
            x, y = cast(x, target), cast(y, target)
        return _new_op("RealDiv", [x, y], name=scope).outputs[0]


def divide(x, y, name: Optional[str] = None) -> Tensor:
    """``x / y`` with Python 3 semantics (as tf.truediv)."""
    return truediv(x, y, name)


def div(x, y, name: Optional[str] = None) -> Tensor:
    """Python 2 division: floor division for integers, real division for floats."""
    with name_scope(name, "div", [x, y]) as scope:
        x, y = _convert_pair(x, y)
        if x.dtype is not y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
        op_type = "RealDiv" if x.dtype.is_floating else "FloorDiv"
        return _new_op(op_type, [x, y], name=scope).outputs[0]


def floordiv(x, y, name: Optional[str] = None) -> Tensor:
    """Division rounded toward -inf (also for floats: floor(x / y))."""
    return _binary("FloorDiv", x, y, name, "floordiv")


def floormod(x, y, name: Optional[str] = None) -> Tensor:
    """Remainder of floor division: the result has the sign of ``y``."""
    return _binary("FloorMod", x, y, name)


mod = floormod


def pow(x, y, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    return _binary("Pow", x, y, name)


def maximum(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Maximum", x, y, name)


def minimum(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Minimum", x, y, name)


def squared_difference(x, y, name: Optional[str] = None) -> Tensor:
    """``(x - y) * (x - y)`` in one op."""
    return _binary("SquaredDifference", x, y, name)


# -- unary elementwise ops -------------------------------------------------------------------------
def _unary_shape_fn(allowed: Sequence[dtypes.DType], out_dtype: Optional[dtypes.DType] = None):
    def shape_fn(op):
        _shapes.check_dtype_in(op, op.inputs[0], allowed)
        return [(out_dtype or op.inputs[0].dtype, op.inputs[0].shape)]
    return shape_fn


for _op_type, _allowed in (("Neg", SIGNED), ("Abs", SIGNED), ("Square", SIGNED), ("Sqrt", FLOATS),
                           ("Rsqrt", FLOATS), ("Exp", FLOATS), ("Log", FLOATS), ("Log1p", FLOATS),
                           ("Sigmoid", FLOATS), ("Tanh", FLOATS), ("Sign", SIGNED),
                           ("Reciprocal", SIGNED), ("Floor", FLOATS), ("Ceil", FLOATS),
                           ("Round", SIGNED), ("Sin", FLOATS), ("Cos", FLOATS),
                           ("Tan", FLOATS), ("Asin", FLOATS), ("Acos", FLOATS), ("Atan", FLOATS),
                           ("Expm1", FLOATS)):
    register_op(_op_type)(_unary_shape_fn(_allowed))
for _op_type in ("IsNan", "IsInf", "IsFinite"):
    register_op(_op_type)(_unary_shape_fn(FLOATS, dtypes.bool))
    NotDifferentiable(_op_type)



def _fused_grad_shape(op):
    """Fused backward ops: (y, dy) -> dx, from the forward op's output y; no broadcasting."""
    y, dy = op.inputs
    _shapes.check_same_dtype(op, y, dy)
    _shapes.check_dtype_in(op, y, FLOATS)
    if not y.shape.is_compatible_with(dy.shape):
        raise ValueError(f"{op.type} '{op.name}': y and dy must have the same shape, got "
                         f"{list_str(y.shape)} and {list_str(dy.shape)}")
    return [(y.dtype, y.shape.merge_with(dy.shape))]


for _op_type in ("SqrtGrad", "RsqrtGrad", "SigmoidGrad", "TanhGrad", "ReciprocalGrad"):
    register_op(_op_type)(_fused_grad_shape)

for _op_type in ("Sign", "Floor", "Ceil", "Round"):
    NotDifferentiable(_op_type)


def _output_grad(op_type: str, y: Tensor, dy: Tensor) -> Tensor:
    return _new_op(op_type, [y, dy], name=op_type).outputs[0]


@register_gradient("Neg")
def _neg_grad(op, grad):
    return [negative(grad)]


@register_gradient("Abs")
def _abs_grad(op, grad):
    return [multiply(grad, sign(op.inputs[0]))]


@register_gradient("Square")
def _square_grad(op, grad):
    return [multiply(grad, multiply(op.inputs[0], 2))]


@register_gradient("Sqrt")
def _sqrt_grad(op, grad):
    return [_output_grad("SqrtGrad", op.outputs[0], grad)]


@register_gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return [_output_grad("RsqrtGrad", op.outputs[0], grad)]


@register_gradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return [_output_grad("ReciprocalGrad", op.outputs[0], grad)]


@register_gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return [_output_grad("SigmoidGrad", op.outputs[0], grad)]


@register_gradient("Tanh")
def _tanh_grad(op, grad):
    return [_output_grad("TanhGrad", op.outputs[0], grad)]


@register_gradient("Exp")
def _exp_grad(op, grad):
    return [multiply(grad, op.outputs[0])]


@register_gradient("Log")
def _log_grad(op, grad):
    return [realdiv(grad, op.inputs[0])]


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return [realdiv(grad, add(op.inputs[0], 1))]


@register_gradient("Sin")
def _sin_grad(op, grad):
    return [multiply(grad, cos(op.inputs[0]))]


@register_gradient("Cos")
def _cos_grad(op, grad):
    return [multiply(grad, negative(sin(op.inputs[0])))]


@register_gradient("Tan")
def _tan_grad(op, grad):
    return [multiply(grad, square(reciprocal(cos(op.inputs[0]))))]


@register_gradient("Asin")
def _asin_grad(op, grad):
    x = op.inputs[0]
    return [multiply(grad, rsqrt(subtract(1, square(x))))]


@register_gradient("Acos")
def _acos_grad(op, grad):
    x = op.inputs[0]
    return [negative(multiply(grad, rsqrt(subtract(1, square(x)))))]


@register_gradient("Atan")
def _atan_grad(op, grad):
    return [realdiv(grad, add(1, square(op.inputs[0])))]


@register_gradient("Expm1")
def _expm1_grad(op, grad):
    return [multiply(grad, exp(op.inputs[0]))]


# Second derivatives, through the fused backward ops (a = y, b = dy; as TensorFlow).
@register_gradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    a, y = op.inputs[0], op.outputs[0]  # y = 0.5 * b / a
    ga = realdiv(grad, a)
    return [negative(multiply(ga, y)), multiply(ga, 0.5)]


@register_gradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    a, b = op.inputs  # output = -0.5 * b * a^3
    grad_a = multiply(multiply(multiply(grad, -1.5), b), square(a))
    return [grad_a, _output_grad("RsqrtGrad", a, grad)]


@register_gradient("ReciprocalGrad")
def _reciprocal_grad_grad(op, grad):
    a, b = op.inputs  # output = -b * a^2
    return [multiply(multiply(grad, -2), multiply(b, a)), _output_grad("ReciprocalGrad", a, grad)]


@register_gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    a, b = op.inputs  # output = b * a * (1 - a)
    gb = multiply(grad, b)
    return [subtract(gb, multiply(multiply(gb, 2), a)), _output_grad("SigmoidGrad", a, grad)]


@register_gradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    a, b = op.inputs  # output = b * (1 - a^2)
    return [multiply(multiply(grad, -2), multiply(b, a)), _output_grad("TanhGrad", a, grad)]


def negative(x, name: Optional[str] = None) -> Tensor:
    return _unary("Neg", x, name)


neg = negative


def abs(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    return _unary("Abs", x, name)


def square(x, name: Optional[str] = None) -> Tensor:
    return _unary("Square", x, name)


def sqrt(x, name: Optional[str] = None) -> Tensor:
    return _unary("Sqrt", x, name)


def rsqrt(x, name: Optional[str] = None) -> Tensor:
    """``1 / sqrt(x)``."""
    return _unary("Rsqrt", x, name)


def exp(x, name: Optional[str] = None) -> Tensor:
    return _unary("Exp", x, name)


def log(x, name: Optional[str] = None) -> Tensor:
    """Natural logarithm."""
    return _unary("Log", x, name)


def log1p(x, name: Optional[str] = None) -> Tensor:
    """``log(1 + x)``, accurate for small x."""
    return _unary("Log1p", x, name)


def sigmoid(x, name: Optional[str] = None) -> Tensor:
    """``1 / (1 + exp(-x))``."""
    return _unary("Sigmoid", x, name)


def tanh(x, name: Optional[str] = None) -> Tensor:
    return _unary("Tanh", x, name)


def sign(x, name: Optional[str] = None) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN)."""
    return _unary("Sign", x, name)


def reciprocal(x, name: Optional[str] = None) -> Tensor:
    return _unary("Reciprocal", x, name)


def floor(x, name: Optional[str] = None) -> Tensor:
    return _unary("Floor", x, name)


def ceil(x, name: Optional[str] = None) -> Tensor:
    return _unary("Ceil", x, name)


def round(x, name: Optional[str] = None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """Rounds half to even (banker's rounding); integers are returned unchanged."""
    with name_scope(name, "Round", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_integer:
            return x
        return _new_op("Round", [x], name=scope).outputs[0]


def sin(x, name: Optional[str] = None) -> Tensor:
    return _unary("Sin", x, name)


def cos(x, name: Optional[str] = None) -> Tensor:
    return _unary("Cos", x, name)


def tan(x, name: Optional[str] = None) -> Tensor:
    return _unary("Tan", x, name)


def asin(x, name: Optional[str] = None) -> Tensor:
    return _unary("Asin", x, name)


def acos(x, name: Optional[str] = None) -> Tensor:
    return _unary("Acos", x, name)


def atan(x, name: Optional[str] = None) -> Tensor:
    return _unary("Atan", x, name)


def expm1(x, name: Optional[str] = None) -> Tensor:
    """``exp(x) - 1``, accurate for small x."""
    return _unary("Expm1", x, name)


def is_nan(x, name: Optional[str] = None) -> Tensor:
    return _unary("IsNan", x, name)


def is_inf(x, name: Optional[str] = None) -> Tensor:
    return _unary("IsInf", x, name)


def is_finite(x, name: Optional[str] = None) -> Tensor:
    return _unary("IsFinite", x, name)


# -- comparisons and logical ops ---------------------------------------------------------------------------
for _op_type in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    register_op(_op_type)(_broadcast_shape_fn(NUMERIC, dtypes.bool))
    NotDifferentiable(_op_type)
for _op_type in ("Equal", "NotEqual"):
    register_op(_op_type)(_broadcast_shape_fn(_EVERYTHING, dtypes.bool))
    NotDifferentiable(_op_type)
for _op_type in ("LogicalAnd", "LogicalOr"):
    register_op(_op_type)(_broadcast_shape_fn((dtypes.bool,)))
    NotDifferentiable(_op_type)
register_op("LogicalNot")(_unary_shape_fn((dtypes.bool,)))
NotDifferentiable("LogicalNot")


def less(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Less", x, y, name)


def less_equal(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("LessEqual", x, y, name)


def greater(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("GreaterEqual", x, y, name)


def equal(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("Equal", x, y, name)


def not_equal(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("NotEqual", x, y, name)


def logical_and(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("LogicalAnd", x, y, name)


def logical_or(x, y, name: Optional[str] = None) -> Tensor:
    return _binary("LogicalOr", x, y, name)


def logical_not(x, name: Optional[str] = None) -> Tensor:
    return _unary("LogicalNot", x, name)


def logical_xor(x, y, name: str = "LogicalXor") -> Tensor:
    """``(x | y) & ~(x & y)``, composed as in TensorFlow."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


# -- Cast ----------------------------------------------------------------------------------------------
@register_op("Cast")
def _cast_shape(op):
    x = op.inputs[0]
    src, dst = op.get_attr("SrcT"), op.get_attr("DstT")
    if (src is dtypes.string) != (dst is dtypes.string):
        raise TypeError(f"Cast {src.name} to {dst.name} is not supported (op '{op.name}')")
    return [(dst, x.shape)]


@register_gradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype
    if src.is_floating and grad.dtype.is_floating:
        return [cast(grad, src)]
    return [None]


def cast(x, dtype, name: Optional[str] = None) -> Tensor:
    """``x`` as ``dtype`` (float -> int truncates toward zero; nonzero -> True). A tensor that
    already has the dtype is returned as is."""
    dtype = dtypes.as_dtype(dtype)
    if isinstance(x, Tensor) and x.dtype is dtype:
        return x
    with name_scope(name, "Cast", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype is dtype:
            return x
        return _new_op("Cast", [x], {"SrcT": x.dtype, "DstT": dtype, "Truncate": False},
                       name=scope).outputs[0]


def to_float(x, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


def to_double(x, name: str = "ToDouble") -> Tensor:
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name: str = "ToInt32") -> Tensor:
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name: str = "ToInt64") -> Tensor:
    return cast(x, dtypes.int64, name=name)


# -- AddN ----------------------------------------------------------------------------------------------
@register_op("AddN")
def _add_n_shape(op):
    inputs = op.inputs
    _shapes.check_same_dtype(op, *inputs)
    _shapes.check_dtype_in(op, inputs[0], NUMERIC)
    shape = TensorShape(None)
    for i, t in enumerate(inputs):
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"Shapes must be equal rank and compatible for '{op.name}' (op: "
                             f"'AddN'): input {i} has shape {list_str(t.shape)}, the inputs "
                             f"before it {list_str(shape)}.")
        shape = shape.merge_with(t.shape)
    return [(inputs[0].dtype, shape)]


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


def _convert_list(inputs, what: str) -> List[Tensor]:
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(f"{what} must be a list of at least one Tensor with the same dtype "
                         "and shape")
    first = next((t for t in inputs if _is_tensorlike(t)), None)
    dtype = convert_to_tensor(first).dtype if first is not None else None
    return [convert_to_tensor(t) if _is_tensorlike(t) else convert_to_tensor(t, dtype)
            for t in inputs]


def add_n(inputs, name: Optional[str] = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and shape."""
    inputs = _convert_list(inputs, "inputs")
    if len(inputs) == 1:
        return array_ops.identity(inputs[0], name=name) if name else inputs[0]
    return _new_op("AddN", inputs, {"N": len(inputs)}, name=name or "AddN").outputs[0]


def accumulate_n(inputs, shape=None, tensor_dtype=None, name: Optional[str] = None) -> Tensor:
    """As add_n; ``shape`` and ``tensor_dtype``, when given, are checked against the inputs."""
    inputs = _convert_list(inputs, "inputs")
    if any(t.dtype is not inputs[0].dtype for t in inputs):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    merged = TensorShape(None) if shape is None else TensorShape(shape)
    for t in inputs:
        merged = merged.merge_with(t.shape)
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) is not inputs[0].dtype:
        raise TypeError(f"tensor_dtype is {dtypes.as_dtype(tensor_dtype)!r}, but input is of "
                        f"type {inputs[0].dtype!r}")
    return add_n(inputs, name=name)


# -- MatMul and BatchMatMul --------------------------------------------------------------------------------
_MATMUL_TYPES = FLOATS + (dtypes.int32, dtypes.int64)


def _inner_dims_must_match(op, k1, k2, sa: TensorShape, sb: TensorShape) -> None:
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"Dimensions must be equal, but are {k1} and {k2} for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: {list_str(sa)}, {list_str(sb)}.")


@register_op("MatMul")
def _matmul_shape(op):
    a, b = op.inputs
    _shapes.check_same_dtype(op, a, b)
    _shapes.check_dtype_in(op, a, _MATMUL_TYPES)
    for t in (a, b):
        if t.shape.ndims is not None and t.shape.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for "
                             f"'{op.name}' (op: 'MatMul') with input shapes: "
                             f"{list_str(a.shape)}, {list_str(b.shape)}.")
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    sa, sb = a.shape.with_rank(2).as_list(), b.shape.with_rank(2).as_list()
    m, ka = (sa[1], sa[0]) if ta else (sa[0], sa[1])
    kb, n = (sb[1], sb[0]) if tb else (sb[0], sb[1])
    _inner_dims_must_match(op, ka, kb, a.shape, b.shape)
    return [(a.dtype, TensorShape([m, n]))]


def _matmul_grads(a, b, grad, ta: bool, tb: bool, mm: Callable) -> list:
    """Gradients of ``mm(a, b, ta, tb)``; ``mm(x, y, tx, ty)`` builds the same kind of product."""
    if not ta and not tb:
        return [mm(grad, b, False, True), mm(a, grad, True, False)]
    if not ta and tb:
        return [mm(grad, b, False, False), mm(grad, a, True, False)]
    if ta and not tb:
        return [mm(b, grad, False, True), mm(a, grad, False, False)]
    return [mm(b, grad, True, True), mm(grad, a, True, True)]


def _matmul_2d(a, b, ta, tb, name=None) -> Tensor:
    return _new_op("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb},
                   name=name or "MatMul").outputs[0]


@register_gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    return _matmul_grads(a, b, grad, op.get_attr("transpose_a"), op.get_attr("transpose_b"),
                         _matmul_2d)


def _batch_matmul_shape(op, broadcast: bool):
    x, y = op.inputs
    _shapes.check_same_dtype(op, x, y)
    _shapes.check_dtype_in(op, x, _MATMUL_TYPES)
    sx, sy = x.shape, y.shape
    for t in (sx, sy):
        if t.ndims is not None and t.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {t.ndims} for "
                             f"'{op.name}' (op: '{op.type}') with input shapes: "
                             f"{list_str(sx)}, {list_str(sy)}.")
    if sx.ndims is None or sy.ndims is None:
        return [(x.dtype, TensorShape(None))]
    if not broadcast and sx.ndims != sy.ndims:
        raise ValueError(f"Shape must be rank {sx.ndims} but is rank {sy.ndims} for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: {list_str(sx)}, {list_str(sy)}.")
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    dx, dy = sx.as_list(), sy.as_list()
    m, kx = (dx[-1], dx[-2]) if adj_x else (dx[-2], dx[-1])
    ky, n = (dy[-1], dy[-2]) if adj_y else (dy[-2], dy[-1])
    _inner_dims_must_match(op, kx, ky, sx, sy)
    bx, by = TensorShape(dx[:-2]), TensorShape(dy[:-2])
    if broadcast:
        batch = broadcast_shapes(bx, by, op.name)
    elif not bx.is_compatible_with(by):
        raise ValueError(f"Batch dimensions must be equal for '{op.name}' (op: '{op.type}') "
                         f"with input shapes: {list_str(sx)}, {list_str(sy)}.")
    else:
        batch = bx.merge_with(by)
    return [(x.dtype, batch.concatenate([m, n]))]


register_op("BatchMatMul")(lambda op: _batch_matmul_shape(op, broadcast=False))
register_op("BatchMatMulV2")(lambda op: _batch_matmul_shape(op, broadcast=True))


def _batch_mm(op_type: str):
    def mm(x, y, adj_x, adj_y, name=None):
        return _new_op(op_type, [x, y], {"adj_x": adj_x, "adj_y": adj_y},
                       name=name or op_type).outputs[0]
    return mm


@register_gradient("BatchMatMul")
def _batch_matmul_grad(op, grad):
    x, y = op.inputs
    return _matmul_grads(x, y, grad, op.get_attr("adj_x"), op.get_attr("adj_y"),
                         _batch_mm("BatchMatMul"))


@register_gradient("BatchMatMulV2")
def _batch_matmul_v2_grad(op, grad):
    x, y = op.inputs
    gx, gy = _matmul_grads(x, y, grad, op.get_attr("adj_x"), op.get_attr("adj_y"),
                           _batch_mm("BatchMatMulV2"))
    return [_sum_to_shape(gx, x), _sum_to_shape(gy, y)]


def _needs_batch_broadcast(a: TensorShape, b: TensorShape) -> bool:
    """Whether a batch product needs BatchMatMulV2 (broadcasting batch dimensions): when the
    ranks differ, batch dimensions differ, or a rank is unknown (V2 accepts every case)."""
    if a.ndims is None or b.ndims is None:
        return True
    if a.ndims != b.ndims:
        return True
    return not TensorShape(a.as_list()[:-2]).is_compatible_with(b.as_list()[:-2])


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: Optional[str] = None) -> Tensor:
    """The matrix product ``a @ b``. Inputs of rank > 2 are batches of matrices (BatchMatMul,
    with broadcasting batch dimensions when needed). ``*_is_sparse`` are hints, ignored."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    with name_scope(name, "MatMul", [a, b]) as scope:
        a, b = _convert_pair(a, b)
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or rb is None or ra > 2 or rb > 2:
            op_type = "BatchMatMulV2" if _needs_batch_broadcast(a.shape, b.shape) else "BatchMatMul"
            return _batch_mm(op_type)(a, b, ta, tb, name=scope)
        return _matmul_2d(a, b, ta, tb, name=scope)


def batch_matmul(x, y, adj_x: bool = False, adj_y: bool = False, name: Optional[str] = None
                 ) -> Tensor:
    """Matrix products of two batches of matrices with equal batch dimensions (0.x name)."""
    with name_scope(name, "BatchMatMul", [x, y]) as scope:
        x, y = _convert_pair(x, y)
        return _batch_mm("BatchMatMul")(x, y, bool(adj_x), bool(adj_y), name=scope)


# -- Tensor operators --------------------------------------------------------------------------------------
_PLAIN_OPERANDS = (numbers.Number, str, bytes, list, tuple, np.ndarray, np.generic)


def _binary_operator(fn: Callable, scope_name: str, reflected: str):
    """Tensor's ``__op__`` and ``__rop__`` for ``fn(x, y, name)``, as TF's binary_op_wrapper:
    the op is named after the operator ("add", "mul"...) and a non-tensor operand becomes a
    constant of the tensor's dtype, named "<op>/y" (or "<op>/x" for a reflected operator)."""
    def forward(self, other):
        with name_scope(None, scope_name, [self, other]) as scope:
            if not _is_tensorlike(other):
                try:
                    other = convert_to_tensor(other, dtype=self.dtype, name="y")
                except TypeError:
                    # An object that knows how to combine itself with a tensor gets its turn.
                    if not isinstance(other, _PLAIN_OPERANDS) and hasattr(type(other), reflected):
                        return NotImplemented
                    raise
            return fn(self, other, name=scope)

    def reverse(self, other):
        with name_scope(None, scope_name, [self, other]) as scope:
            other = convert_to_tensor(other, dtype=self.dtype, name="x")
            return fn(other, self, name=scope)

    return forward, reverse


def _install_operators() -> None:
    binary = {"add": (add, "add"), "sub": (subtract, "sub"), "mul": (multiply, "mul"),
              "truediv": (truediv, "truediv"), "div": (div, "div"),
              "floordiv": (floordiv, "floordiv"), "mod": (floormod, "mod"), "pow": (pow, "pow"),
              "matmul": (matmul, "matmul"), "and": (logical_and, "and"),
              "or": (logical_or, "or"), "xor": (logical_xor, "xor")}
    for dunder, (fn, scope_name) in binary.items():
        forward, reverse = _binary_operator(fn, scope_name, f"__r{dunder}__")
        forward.__name__, reverse.__name__ = f"__{dunder}__", f"__r{dunder}__"
        setattr(Tensor, f"__{dunder}__", forward)
        setattr(Tensor, f"__r{dunder}__", reverse)
    # Comparisons have no reflected forms: Python turns `1 < x` into `x > 1` itself.
    for dunder, fn, mirror in (("lt", less, "gt"), ("le", less_equal, "ge"),
                               ("gt", greater, "lt"), ("ge", greater_equal, "le")):
        forward, _ = _binary_operator(fn, fn.__name__.title().replace("_", ""), f"__{mirror}__")
        forward.__name__ = f"__{dunder}__"
        setattr(Tensor, f"__{dunder}__", forward)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__invert__ = lambda self: logical_not(self)


_install_operators()

# -- the rest of the family (these modules import this one: keep these imports last) -----------------------
from . import clip_ops as _clip_ops  # noqa: E402
from . import reduction_ops as _reduction_ops  # noqa: E402
from .clip_ops import *  # noqa: E402,F401,F403
from .reduction_ops import *  # noqa: E402,F401,F403

__all__ += _reduction_ops.__all__ + _clip_ops.__all__

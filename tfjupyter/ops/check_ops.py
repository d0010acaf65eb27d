"""tf.assert_*: Assert ops that check a relation element-wise when the step runs, with
TensorFlow 1.x's messages ("Condition x < y did not hold element-wise:", the tensors' names and
values); rank/type checks decided while building the graph raise at once, as in TensorFlow."""
from __future__ import annotations

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops, math_ops
from .control_flow_ops import no_op
from .logging_ops import Assert

__all__ = ["assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_rank", "assert_rank_at_least",
           "assert_type", "assert_integer", "assert_scalar", "is_numeric_tensor",
           "is_non_decreasing", "is_strictly_increasing"]


def _binary_assert(relation, symbol: str, default_name: str, x, y, data, summarize, message,
                   name):
    with name_scope(name, default_name, [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        if data is None:
            data = [message or "", f"Condition x {symbol} y did not hold element-wise:",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        condition = math_ops.reduce_all(relation(x, y))
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(math_ops.equal, "==", "assert_equal", x, y, data, summarize, message,
                          name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    with name_scope(name, "assert_none_equal", [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        if data is None:
            data = [message or "", "Condition x != y did not hold for every single element:",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        return Assert(math_ops.reduce_all(math_ops.not_equal(x, y)), data, summarize=summarize)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(math_ops.less, "<", "assert_less", x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(math_ops.less_equal, "<=", "assert_less_equal", x, y, data, summarize,
                          message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(math_ops.greater, ">", "assert_greater", x, y, data, summarize,
                          message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(math_ops.greater_equal, ">=", "assert_greater_equal", x, y, data,
                          summarize, message, name)


def _sign_assert(default_name: str, condition: str, compare, x, data, summarize, message, name):
    """x compared with zero: ``compare(x, zero)`` builds the binary assert."""
    with name_scope(name, default_name, [x]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [message or "", f"Condition x {condition} did not hold element-wise:",
                    f"x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        return compare(x, zero, data=data, summarize=summarize)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_positive", "> 0", lambda x, z, **kw: assert_less(z, x, **kw),
                        x, data, summarize, message, name)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_negative", "< 0", assert_less, x, data, summarize, message, name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_non_negative", ">= 0",
                        lambda x, z, **kw: assert_less_equal(z, x, **kw),
                        x, data, summarize, message, name)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    return _sign_assert("assert_non_positive", "<= 0", assert_less_equal, x, data, summarize,
                        message, name)


def _rank_assert(default_name: str, x, rank, ok, relation: str, data, summarize, message, name):
    with name_scope(name, default_name, [x]):
        x = convert_to_tensor(x, name="x")
        rank_t = convert_to_tensor(rank, dtype=dtypes.int32, name="rank")
        static_rank = array_ops._const(rank_t)
        if static_rank is not None and x.shape.ndims is not None:
            if not ok(x.shape.ndims, int(static_rank)):
                raise ValueError(f"{message or ''}.  Tensor {x.name} must have rank "
                                 f"{relation}{int(static_rank)}.  Received rank "
                                 f"{x.shape.ndims}, shape {x.shape}")
            return no_op()
        if data is None:
            data = [message or "", f"Tensor {x.name} must have rank {relation}", rank_t,
                    "Received shape: ", array_ops.shape(x)]
        holds = ok(array_ops.rank(x), rank_t)
        return Assert(holds, data, summarize=summarize)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    return _rank_assert("assert_rank", x, rank,
                        lambda a, b: (a == b) if isinstance(a, int) else math_ops.equal(a, b),
                        "", data, summarize, message, name)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    return _rank_assert("assert_rank_at_least", x, rank,
                        lambda a, b: (a >= b) if isinstance(a, int)
                        else math_ops.greater_equal(a, b),
                        "at least ", data, summarize, message, name)


def assert_type(tensor, tf_type, message=None, name=None):
    """TypeError now unless ``tensor`` has dtype ``tf_type``; a no-op to depend on otherwise."""
    tensor = convert_to_tensor(tensor)
    if tensor.dtype is not dtypes.as_dtype(tf_type):
        raise TypeError(f"{message or ''}  {tensor.name} must be of type "
                        f"{dtypes.as_dtype(tf_type).name}")
    return no_op(name=name or "assert_type")


def assert_integer(x, message=None, name=None):
    x = convert_to_tensor(x)
    if not x.dtype.is_integer:
        raise TypeError(f"{message or ''}  Expected \"x\" to be integer type.  Found: {x.name} "
                        f"of dtype {x.dtype.name}")
    return no_op(name=name or "assert_integer")


def assert_scalar(tensor, name=None) -> Tensor:
    tensor = convert_to_tensor(tensor, name=name)
    if tensor.shape.ndims != 0:
        raise ValueError(f"Expected scalar shape for {tensor.name}, saw shape: {tensor.shape}.")
    return tensor


def is_numeric_tensor(tensor) -> bool:
    return isinstance(tensor, Tensor) and (tensor.dtype.is_floating or tensor.dtype.is_integer
                                           or tensor.dtype.is_complex)


def _pairwise(x, relation, name, default_name):
    with name_scope(name, default_name, [x]):
        flat = array_ops.reshape(convert_to_tensor(x, name="x"), [-1])
        return math_ops.reduce_all(relation(flat[:-1], flat[1:]))


def is_non_decreasing(x, name=None) -> Tensor:
    return _pairwise(x, math_ops.less_equal, name, "is_non_decreasing")


def is_strictly_increasing(x, name=None) -> Tensor:
    return _pairwise(x, math_ops.less, name, "is_strictly_increasing")

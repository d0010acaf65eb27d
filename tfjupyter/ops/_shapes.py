"""Shape rules shared by many op types."""
from __future__ import annotations

from ..framework.tensor_shape import TensorShape, broadcast_shapes


def unchanged(op):
    """One output with the dtype and shape of input 0 (unary elementwise ops)."""
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


def broadcast(op):
    """Binary elementwise op: the inputs' dtypes must match; the shape broadcasts."""
    x, y = op.inputs[0], op.inputs[1]
    check_same_dtype(op, x, y)
    return [(x.dtype, broadcast_shapes(x.shape, y.shape, op.name))]


def check_same_dtype(op, *tensors) -> None:
    first = tensors[0]
    for t in tensors[1:]:
        if t.dtype is not first.dtype:
            raise TypeError(f"Input '{t.name}' of '{op.type}' Op '{op.name}' has type "
                            f"{t.dtype.name} that does not match type {first.dtype.name} of "
                            f"argument '{first.name}'.")


def check_dtype_in(op, tensor, allowed) -> None:
    if tensor.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to '{op.type}' Op '{op.name}' has DataType "
                        f"{tensor.dtype.name} not in list of allowed values: {names}")


def constant_value(tensor):
    """The value of a tensor when it is known while building the graph (a Const), else None."""
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        import numpy as np
        return np.array(op.inputs[0].shape.as_list(), dtype=op.outputs[0].dtype.as_numpy_dtype)
    return None


def scalar_shape() -> TensorShape:
    return TensorShape(())


def scalar_input(op, index: int, allowed, what: str):
    """Input ``index`` of ``op``, checked to be a scalar of one of the ``allowed`` dtypes."""
    t = op.inputs[index]
    if t.dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise TypeError(f"Input '{what}' of '{op.type}' Op '{op.name}' has type {t.dtype.name} "
                        f"that does not match expected type of {names}.")
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {t.shape.ndims} for '{op.name}' "
                         f"(op: '{op.type}') input '{what}'")
    return t

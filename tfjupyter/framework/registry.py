"""The op registry: each op type is registered once, by name, beside its definition.

An op type has a shape function (run when an op is added to a graph, giving each output's dtype
and static shape), a gradient function (``register_gradient``), and one kernel per device type
in the backends under ``tfjupyter.kernels``.  A second registration of a name is an error that
names both places; looking up something missing is an error that names the op.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple

__all__ = ["OpDef", "register_op", "get_op_def", "register_gradient", "get_gradient",
           "NotDifferentiable", "RegisterGradient", "registered_ops"]


def _place(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else repr(fn)


class OpDef:
    """What the framework knows about an op type besides its kernels.

    ``ref_inputs``: indices of inputs taken by reference (the variable an Assign writes);
    the executor orders them but passes no value. ``stateful``: reads or writes state, or is
    random, so two such ops are never merged and their outputs never cached.
    """

    __slots__ = ("type", "shape_fn", "ref_inputs", "stateful", "where")

    def __init__(self, op_type: str, shape_fn: Callable, ref_inputs: Sequence[int],
                 stateful: bool, where: str):
        self.type = op_type
        self.shape_fn = shape_fn
        self.ref_inputs = tuple(ref_inputs)
        self.stateful = stateful
        self.where = where


_OPS: Dict[str, OpDef] = {}
_GRADIENTS: Dict[str, Tuple[Optional[Callable], str]] = {}


def register_op(op_type: str, *, ref_inputs: Sequence[int] = (), stateful: bool = False
                ) -> Callable[[Callable], Callable]:
    """Decorates an op type's shape function: ``shape_fn(op) -> [(dtype, shape), ...]``."""
    def decorate(shape_fn: Callable) -> Callable:
        where = _place(shape_fn)
        if op_type in _OPS:
            raise KeyError(f"Op type {op_type!r} registered twice: at {_OPS[op_type].where} "
                           f"and at {where}")
        _OPS[op_type] = OpDef(op_type, shape_fn, ref_inputs, stateful, where)
        return shape_fn
    return decorate


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OPS[op_type]
    except KeyError:
        raise KeyError(f"Op type not registered: {op_type!r}") from None


def registered_ops() -> Dict[str, OpDef]:
    return dict(_OPS)


def register_gradient(op_type: str) -> Callable[[Callable], Callable]:
    """Decorates ``grad_fn(op, *output_grads) -> [input_grad or None, ...]``."""
    def decorate(grad_fn: Callable) -> Callable:
        _add_gradient(op_type, grad_fn, _place(grad_fn))
        return grad_fn
    return decorate


class RegisterGradient:
    """TensorFlow's decorator form: ``@tf.RegisterGradient("MyOp")``."""

    def __init__(self, op_type: str):
        self._op_type = op_type

    def __call__(self, grad_fn: Callable) -> Callable:
        return register_gradient(self._op_type)(grad_fn)


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 - TensorFlow's name
    """Declares that an op type has no gradient: its inputs get None, which is not an error."""
    import sys
    caller = sys._getframe(1)
    _add_gradient(op_type, None, f"{caller.f_code.co_filename}:{caller.f_lineno}")


def _add_gradient(op_type: str, grad_fn: Optional[Callable], where: str) -> None:
    if op_type in _GRADIENTS:
        raise KeyError(f"Gradient for op type {op_type!r} registered twice: at "
                       f"{_GRADIENTS[op_type][1]} and at {where}")
    _GRADIENTS[op_type] = (grad_fn, where)


def get_gradient(op_type: str, op_name: str = "") -> Optional[Callable]:
    """The gradient function, None for a NotDifferentiable op; LookupError if never registered."""
    try:
        return _GRADIENTS[op_type][0]
    except KeyError:
        raise LookupError(f"No gradient defined for operation '{op_name or op_type}' "
                          f"(op type: {op_type})") from None

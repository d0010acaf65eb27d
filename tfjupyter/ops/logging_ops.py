"""Assert and Print: ops that check or show values while a step runs.

``tf.Assert(condition, data)`` fails the step with InvalidArgumentError "assertion failed:
[d0] [d1] ..." when the condition is false; ``tf.Print(input_, data)`` passes ``input_`` through
and writes "message[d0][d1]..." to stderr. Each datum is summarized as TensorFlow does: its first
``summarize`` elements, nested brackets per dimension, "..." where elements were left out
(kernels/cpu/logging_kernels.py).
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Operation, Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ._shapes import scalar_input

__all__ = ["Assert", "Print"]


@register_op("Assert", stateful=True)
def _assert_shape(op):
    scalar_input(op, 0, (dtypes.bool,), "condition")
    return []


NotDifferentiable("Assert")


@register_op("Print", stateful=True)
def _print_shape(op):
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


@register_gradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


def _data_tensors(data, what: str):
    if isinstance(data, (Tensor, str, bytes)) or not hasattr(data, "__iter__"):
        raise TypeError(f"{what}: data must be a list of tensors, got {type(data).__name__}")
    return [convert_to_tensor(d) for d in data]


def Assert(condition, data, summarize: Optional[int] = None,  # noqa: N802 (TensorFlow's name)
           name: Optional[str] = None) -> Operation:
    """An op that fails the step with InvalidArgumentError when ``condition`` (a scalar bool) is
    false, printing the first ``summarize`` (default 3) entries of each tensor in ``data``."""
    with name_scope(name, "Assert", [condition]):
        condition = convert_to_tensor(condition, dtype=dtypes.bool, name="Condition")
        tensors = _data_tensors(data, "tf.Assert")
        return _new_op("Assert", [condition] + tensors,
                       {"summarize": 3 if summarize is None else int(summarize)}, name="Assert")


def Print(input_, data, message: Optional[str] = None, first_n: Optional[int] = None,  # noqa: N802
          summarize: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """``input_`` unchanged; each time it is computed (the first ``first_n`` times, if given),
    ``message`` and the first ``summarize`` (default 3) entries of each tensor in ``data`` go to
    stderr."""
    input_ = convert_to_tensor(input_, name="input")
    tensors = _data_tensors(data, "tf.Print")
    attrs = {"message": message or "", "first_n": -1 if first_n is None else int(first_n),
             "summarize": 3 if summarize is None else int(summarize)}
    return _new_op("Print", [input_] + tensors, attrs, name=name or "Print").outputs[0]

"""Fusing short chains of ops into one kernel call, as TensorFlow's grappler remapper does.

A convolution or matrix product followed by its bias and activation is three passes over
memory when each op runs on its own: the product writes its output, BiasAdd reads it and
writes a copy, Relu reads that and writes another.  Fused, one kernel adds the bias and
applies the activation to each part of the product while that part is still in cache.  On the
way back, ReluGrad and the BiasAddGrad that sums its output become one pass.

The groups found here (TensorFlow's names where it has them):

    _FusedConv2D   Conv2D -> [BiasAdd | Add of a 1-D bias] -> [Relu | Relu6]
    _FusedMatMul   MatMul -> [BiasAdd | Add of a 1-D bias] -> [Relu | Relu6]
                   (at least one of the two after the product)
    _FusedReluGradBiasAddGrad   ReluGrad -> BiasAddGrad, or the SumToShape of an Add's
                                gradient to a 1-D bias (both outputs kept)

A group forms only where nothing else can tell: the intermediate tensors have no reader but
the next op of the chain, are neither fetched nor fed, every member is on one device, and
that device's backend has a kernel for the group (the CPU's does; a backend without one runs
the ops one by one).  The plan then runs the group at one member's place (``anchor``), and
its timings and errors are reported under one of its ops, as TensorFlow reports a fused node.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

import numpy as np

from ..framework.ops import Operation, Tensor

__all__ = ["FusedGroup", "find_groups"]

_CONTRACTIONS = {"Conv2D": "_FusedConv2D", "MatMul": "_FusedMatMul"}
_ACTIVATIONS = ("Relu", "Relu6")
_FLOAT_TYPES = (np.float32, np.float64)


class FusedGroup:
    """Ops run as one kernel: ``inputs`` are its arguments, ``outputs`` what it returns."""

    def __init__(self, type: str, ops: Sequence[Operation], fused_ops: Sequence[str],
                 inputs: Sequence[Tensor], outputs: Sequence[Tensor], anchor: Operation,
                 reported_as: Operation, timed_as: Operation):
        self.type = type
        self.ops = list(ops)
        self.fused_ops = tuple(fused_ops)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.anchor = anchor
        # Errors name the op whose inputs a bad shape breaks (the convolution); timings go
        # under the op whose output the group makes, as TF's traces show a fused node.
        self.reported_as = reported_as
        self.timed_as = timed_as
        self.name = ops[0].name

    def __repr__(self) -> str:
        return f"<FusedGroup {self.type} {'+'.join(op.name for op in self.ops)}>"


def find_groups(ops: Sequence[Operation], device_of: Callable[[Operation], object],
                has_kernel: Callable[[object, str], bool], fetched: Iterable[Tensor],
                fed: Iterable[Tensor]) -> Dict[Operation, FusedGroup]:
    """The fusible groups among a plan's ``ops`` (in plan order), by member op."""
    position = {op: i for i, op in enumerate(ops)}
    readers: Dict[Tensor, List[Operation]] = {}
    control_dependents: Dict[Operation, List[Operation]] = {}
    for op in ops:
        for t in op.inputs:
            readers.setdefault(t, []).append(op)
        for dep in op.control_inputs:
            control_dependents.setdefault(dep, []).append(op)
    pinned: Set[Tensor] = set(fetched) | set(fed)

    def sole_reader(t: Tensor) -> Optional[Operation]:
        found = readers.get(t, [])
        if t in pinned or len(found) != 1:
            return None
        return found[0]

    def same_device(a: Operation, b: Operation) -> bool:
        return device_of(a) is device_of(b)

    groups: Dict[Operation, FusedGroup] = {}
    for op in ops:
        if op in groups or device_of(op) is None:
            continue
        group = None
        if op.type in _CONTRACTIONS:
            group = _contraction_chain(op, sole_reader, same_device)
        elif op.type == "ReluGrad":
            group = _relu_grad_bias_grad(op, readers, pinned, same_device)
        if group is None or not has_kernel(device_of(op), group.type):
            continue
        if any(m in groups for m in group.ops) or not _runs_in_place(
                group, position, readers, control_dependents):
            continue
        for member in group.ops:
            groups[member] = group
    return groups


def _is_float(t: Tensor) -> bool:
    return t.dtype.as_numpy_dtype in _FLOAT_TYPES


def _contraction_chain(root: Operation, sole_reader, same_device) -> Optional[FusedGroup]:
    if not _is_float(root.outputs[0]):
        return None
    if root.type == "Conv2D" and _data_format(root) != "NHWC":
        return None
    members, fused, inputs = [root], [], list(root.inputs)
    last = root
    nxt = sole_reader(last.outputs[0])
    if nxt is not None and same_device(root, nxt):
        bias = _bias_of(root, nxt)
        if bias is not None:
            members.append(nxt)
            fused.append("BiasAdd")
            inputs.append(bias)
            last = nxt
            nxt = sole_reader(last.outputs[0])
    if nxt is not None and nxt.type in _ACTIVATIONS and same_device(root, nxt):
        members.append(nxt)
        fused.append(nxt.type)
        last = nxt
    if not fused:
        return None
    return FusedGroup(_CONTRACTIONS[root.type], members, fused, inputs, [last.outputs[0]],
                      anchor=last, reported_as=root, timed_as=last)


def _bias_of(root: Operation, op: Operation) -> Optional[Tensor]:
    """The bias ``op`` adds to ``root``'s output, if it is a bias add: BiasAdd, or an Add of a
    1-D tensor as long as the product's last axis (``conv2d(x, w) + b``, ``matmul(x, w) + b``
    as the tutorials write them), which leaves the product's shape."""
    product = root.outputs[0]
    if op.type == "BiasAdd":
        return op.inputs[1] if op.inputs[0] is product and _data_format(op) == "NHWC" else None
    if op.type not in ("Add", "AddV2"):
        return None
    a, b = op.inputs
    bias = b if a is product else a if b is product else None
    if bias is None or bias is product or bias.dtype != product.dtype:
        return None
    channels = product.shape.as_list()[-1] if product.shape.ndims else None
    if bias.shape.ndims != 1 or channels is None or bias.shape.as_list()[0] != channels:
        return None
    return bias


def _relu_grad_bias_grad(op: Operation, readers, pinned, same_device) -> Optional[FusedGroup]:
    """ReluGrad and the op that sums its output over all axes but the last: the bias's
    gradient (BiasAddGrad, or the SumToShape of an Add's gradient to a 1-D bias)."""
    if not _is_float(op.outputs[0]) or op.outputs[0].shape.ndims is None:
        return None
    sums = [r for r in readers.get(op.outputs[0], ())
            if same_device(op, r) and not r.control_inputs and _sums_columns(r, op.outputs[0])]
    if len(sums) != 1:
        return None
    return FusedGroup("_FusedReluGradBiasAddGrad", [op, sums[0]], ["ReluGrad", "BiasAddGrad"],
                      list(op.inputs), [op.outputs[0], sums[0].outputs[0]], anchor=op,
                      reported_as=op, timed_as=op)


def _sums_columns(op: Operation, t: Tensor) -> bool:
    if op.type == "BiasAddGrad":
        return _data_format(op) == "NHWC"
    if op.type != "SumToShape" or op.inputs[0] is not t:
        return False
    from ..ops import _shapes
    target = _shapes.constant_value(op.inputs[1])
    channels = t.shape.as_list()[-1]
    return (target is not None and len(target) == 1 and channels is not None
            and int(target[0]) == channels and t.shape.ndims >= 2)


def _runs_in_place(group: FusedGroup, position: Dict[Operation, int],
                   readers: Dict[Tensor, List[Operation]],
                   control_dependents: Dict[Operation, List[Operation]]) -> bool:
    """Whether running the whole group at its anchor's place keeps the plan's order: every
    input is made before it, every reader of its outputs (and every op ordered after a member)
    runs after it."""
    at = position[group.anchor]
    members = set(group.ops)
    for t in group.inputs:
        maker = t.op
        if maker in position and maker not in members and position[maker] >= at:
            return False
    for member in group.ops:
        if any(position[dep] >= at for dep in member.control_inputs if dep in position):
            return False
        later = control_dependents.get(member, [])
        for t in member.outputs:
            later = later + [r for r in readers.get(t, ()) if r not in members]
        if any(position[r] <= at for r in later):
            return False
    return True


def _data_format(op: Operation) -> str:
    try:
        value = op.get_attr("data_format")
    except ValueError:
        return "NHWC"
    return value.decode() if isinstance(value, bytes) else value

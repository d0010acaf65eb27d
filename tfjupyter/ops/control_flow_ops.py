"""Ops that order execution: no_op, group, tuple, with_dependencies."""
from __future__ import annotations

from typing import Optional, Sequence

from ..framework.ops import Operation, Tensor, convert_to_tensor, get_default_graph, name_scope
from ..framework.registry import NotDifferentiable, register_op
from . import array_ops


@register_op("NoOp")
def _no_op_shape(op):
    return []


NotDifferentiable("NoOp")


def no_op(name: Optional[str] = None) -> Operation:
    return get_default_graph().create_op("NoOp", [], name=name or "NoOp")


def _as_op(x) -> Operation:
    x = x._as_graph_element() if hasattr(x, "_as_graph_element") else x
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Expected a Tensor or Operation, got {x!r}")


def group(*inputs, name: Optional[str] = None) -> Operation:
    """An op that runs all ``inputs`` (ops or tensors) and produces nothing."""
    ops = [_as_op(x) for x in inputs if x is not None]
    graph = ops[0].graph if ops else get_default_graph()
    with graph.as_default(), graph.control_dependencies(ops):
        return no_op(name=name or "group_deps")


def tuple(tensors: Sequence, name: Optional[str] = None, control_inputs=None):  # noqa: A001
    """Each tensor (or IndexedSlices) again, gated so that none is available until all are
    computed."""
    from ..framework.indexed_slices import IndexedSlices
    # An IndexedSlices is gated through its values, as in TensorFlow: its indices are often a
    # fed placeholder, which must not become a control input (it would have to run unfed).
    computed = [t.values if isinstance(t, IndexedSlices) else t for t in tensors if t is not None]
    gate = group(*computed, *(control_inputs or ()))
    with name_scope(name, "tuple"):
        return [None if t is None else with_dependencies([gate], t) for t in tensors]


def with_dependencies(dependencies, output_tensor, name: Optional[str] = None):
    """output_tensor, available only once ``dependencies`` have run; for an IndexedSlices, its
    values are gated (its indices come with them), as in TensorFlow."""
    from ..framework.indexed_slices import IndexedSlices
    if isinstance(output_tensor, IndexedSlices):
        values = with_dependencies(dependencies, output_tensor.values, name=name)
        return IndexedSlices(values, output_tensor.indices, output_tensor.dense_shape)
    output_tensor = convert_to_tensor(output_tensor)
    with output_tensor.graph.control_dependencies(dependencies):
        return array_ops.identity(output_tensor, name=name)


# Functional control flow (TensorFlow's control-flow v2): the If and While ops live in their
# own modules, with their gradients; tf.map_fn and friends in functional_ops.
from .cond_ops import case, cond  # noqa: E402,F401
from .while_ops import while_loop  # noqa: E402,F401

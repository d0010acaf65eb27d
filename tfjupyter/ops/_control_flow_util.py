"""What the functional control-flow ops (``If``, ``While``) share: tracing a Python function into
a function graph, giving several functions one list of captured inputs, and creating the op,
whose captured variables are reference inputs (so the op runs where they live)."""
from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

from ..framework import nest
from ..framework.func_graph import FuncGraph, Function
from ..framework.indexed_slices import IndexedSlices
from ..framework.ops import Graph, Operation, Tensor, convert_to_tensor
from ..framework.registry import OpDef, get_op_def
from ..framework.tensor_shape import TensorShape


def trace(fn: Callable, name: str, graph: Graph, arg_specs: Sequence[Tuple] = (),
          arg_structure=None):
    """(function graph, fn's result) of ``fn`` called on placeholders for ``arg_specs``
    ((dtype, shape, name) each), packed as ``arg_structure`` when given."""
    g = FuncGraph(name, graph)
    with g.as_default():
        args = [g.add_argument(dtype, shape, arg_name) for dtype, shape, arg_name in arg_specs]
        if arg_structure is not None:
            result = fn(*_as_args(nest.pack_sequence_as(arg_structure, args)))
        else:
            result = fn(*args)
    return g, result


def _as_args(packed) -> list:
    return list(packed) if isinstance(packed, (list, tuple)) else [packed]


def as_output(g: FuncGraph, value, what: str) -> Tensor:
    """A function's result as a tensor of its graph (outer tensors are captured)."""
    if value is None:
        raise ValueError(f"{what} returned None; it must return tensors.")
    with g.as_default():
        if isinstance(value, IndexedSlices):
            value = convert_to_tensor(value)
        t = convert_to_tensor(value)
        return g.capture(t) if t.graph is not g else t


def unify_captures(graphs: Sequence[FuncGraph], n_args: Sequence[int]
                   ) -> Tuple[List[Tensor], List[Tensor], List[List[Tensor]]]:
    """The outer tensors all the functions captured (values, variables), and each function's
    inputs: its arguments, then a placeholder for every captured value, in one order."""
    values: List[Tensor] = []
    variables: List[Tensor] = []
    for g in graphs:
        values.extend(t for t in g.captures if t not in values)
        variables.extend(t for t in g.variable_captures if t not in variables)
    inputs = []
    for g, n in zip(graphs, n_args):
        for t in values:
            g.capture(t)
        inputs.append(g.inputs[:n] + [g.captures[t] for t in values])
    return values, variables, inputs


def outer_controls(graphs: Sequence[FuncGraph]) -> List[Operation]:
    out: List[Operation] = []
    for g in graphs:
        out.extend(c for c in g.outer_control_inputs if c not in out)
    return out


def create(graph: Graph, op_type: str, values: Sequence[Tensor], variables: Sequence[Tensor],
           attrs: dict, name: str, control_inputs: Sequence[Operation] = ()) -> Operation:
    """A control-flow op: its value inputs, then its captured variables (reference inputs)."""
    attrs = dict(attrs, Nrefs=len(variables))
    return graph.create_op(op_type, list(values) + list(variables), attrs, name=name,
                           control_inputs=control_inputs)


def bind_ref_inputs(op: Operation) -> None:
    """From a shape function: the op's last ``Nrefs`` inputs are variables taken by reference
    (an attr, so an op rebuilt from a GraphDef gets them too)."""
    n = op.get_attr("Nrefs")
    if n:
        base = get_op_def(op.type)
        total = len(op.inputs)
        op._op_def = OpDef(base.type, base.shape_fn, range(total - n, total), base.stateful,
                           base.where)


def check_function(op: Operation, key: str, n_inputs: int) -> Function:
    f = op.get_attr(key)
    if not isinstance(f, Function):
        raise TypeError(f"attr '{key}' must be a function, got {f!r}")
    if len(f.inputs) != n_inputs:
        raise ValueError(f"function '{f.name}' ({key}) takes {len(f.inputs)} inputs, but the op "
                         f"passes {n_inputs}")
    return f


def most_specific_compatible_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def function_gradient(f: Function, wrt: Sequence[Tensor], ys: Sequence[int], name: str
                      ) -> Function:
    """The vector-Jacobian product of ``f``: fed f's inputs and one gradient per output in
    ``ys`` (indices), it returns the gradient of each tensor of ``wrt`` (zeros where none
    flows). Built in f's own graph, so the forward ops are shared."""
    from ..gradients_impl import gradients
    from . import array_ops
    g = f.graph
    with g.as_default():
        grad_ys = [g._placeholder(f.outputs[i].dtype, f.outputs[i].shape, "grad_y") for i in ys]
        grads = gradients([f.outputs[i] for i in ys], list(wrt), grad_ys=grad_ys, name=name)
        outs = []
        with g.name_scope(name + "_zeros"):
            for x, dx in zip(wrt, grads):
                if dx is None:
                    dx = array_ops.zeros_like(x)
                elif isinstance(dx, IndexedSlices):
                    # A row of a captured tensor (scan's elems[i]): dense, with x's shape.
                    from .array_scatter_ops import unsorted_segment_sum
                    dx = unsorted_segment_sum(dx.values, dx.indices, dx.dense_shape[0])
                outs.append(dx)
    return Function(f.name + "_grad", g, list(f.inputs) + grad_ys, outs)


def reached_inputs(f: Function) -> set:
    """The inputs of ``f`` that its outputs (and targets) depend on."""
    fed = set(f.inputs)
    seen, reached = set(), set()
    pending = [t.op for t in f.outputs if t not in fed] + list(f.targets)
    reached.update(t for t in f.outputs if t in fed)
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        for t in op.inputs:
            if t in fed:
                reached.add(t)
            else:
                pending.append(t.op)
        pending.extend(op.control_inputs)
    return reached

"""Reverse-mode autodiff over the graph: ``tf.gradients(ys, xs, grad_ys)``.

Each op type's gradient is registered beside its definition (``register_gradient``); this
module only walks the graph backwards from ``ys``, sums the contributions a tensor receives
along several paths, and asks each op for the gradients of its inputs.

A gradient may be an ``IndexedSlices`` (a gather's gradient with respect to its params): it
passes through Identity ops unchanged, several of them for one tensor are concatenated, and it
is densified where it meets a dense gradient or an op whose gradient function needs a tensor.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .framework import dtypes, errors
from .framework.indexed_slices import IndexedSlices
from .framework.ops import Operation, Tensor, convert_to_tensor, get_default_graph
from .framework.registry import get_gradient

__all__ = ["gradients"]


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _to_tensor(x, as_ref: bool) -> Tensor:
    if hasattr(x, "_as_graph_element") and as_ref:
        return x._as_graph_element()
    return convert_to_tensor(x)


def _differentiable(t: Tensor) -> bool:
    return t.dtype.is_floating


# Op types whose gradient function takes an IndexedSlices gradient (TensorFlow's _IdGrad hands
# it on: a variable's read is an Identity, so a gather of a variable gets a sparse gradient;
# ConcatV2 cuts it by input: a gather of a partitioned variable's parts gets sparse ones).
# Every other gradient function receives dense gradients.
_PASS_INDEXED_SLICES = frozenset({"Identity", "ConcatV2"})


def gradients(ys, xs, grad_ys=None, name: str = "gradients", colocate_gradients_with_ops: bool = False,
              gate_gradients: bool = False, aggregation_method=None, stop_gradients=None
              ) -> list:
    """Symbolic d(sum ys)/d(x) for each x in xs; None where x does not affect ys; an
    IndexedSlices where x reaches ys only through gathers (and Identity ops)."""
    from .ops import array_ops, math_ops  # noqa: F401 - gradient functions register on import

    ys = [_to_tensor(y, as_ref=False) for y in _as_list(ys)]
    xs = [_to_tensor(x, as_ref=True) for x in _as_list(xs)]
    graph = ys[0].graph if ys else get_default_graph()
    for t in ys + xs:
        if t.graph is not graph:
            raise ValueError(f"{t.name} is from a different graph than the other tensors "
                             "passed to tf.gradients.")
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    grad_ys = _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop = {_to_tensor(s, as_ref=False).op for s in _as_list(stop_gradients or [])}

    with graph.as_default(), graph.name_scope(name):
        between = _ops_between(ys, xs, stop)
        grads: Dict[Tensor, List[Tensor]] = {}
        for y, gy in zip(ys, grad_ys):
            if gy is None:
                with graph.name_scope("grad_ys_0" if len(ys) == 1 else None):
                    gy = array_ops.ones_like(y, name="grad_ys")
            else:
                gy = convert_to_tensor(gy, dtype=y.dtype)
            grads.setdefault(y, []).append(gy)

        # Ops are created after their inputs, so descending id is a reverse topological order.
        for op in sorted(between, key=lambda o: o._id, reverse=True):
            out_grads = [_aggregate(grads.get(t), t) for t in op.outputs]
            if all(g is None for g in out_grads):
                continue
            if op in stop:
                continue
            op_type = graph._gradient_override_map.get(op.type, op.type)
            grad_fn = get_gradient(op_type, op.name)
            if grad_fn is None:
                continue
            if len(out_grads) > 1:
                out_grads = [g if g is not None else array_ops.zeros_like(t)
                             for g, t in zip(out_grads, op.outputs)]
            with graph.name_scope(op.name + "_grad"), _maybe_colocate(graph, op, colocate_gradients_with_ops):
                if op_type not in _PASS_INDEXED_SLICES:
                    out_grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g
                                 for g in out_grads]
                in_grads = _as_list(grad_fn(op, *out_grads))
            if len(in_grads) != len(op.inputs):
                raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.node_def} "
                                 f"do not match num inputs {len(op.inputs)}")
            for t, g in zip(op.inputs, in_grads):
                if g is None or not _differentiable(t) or t.op not in between:
                    continue
                g = _checked_indexed_slices(g, op, t) if isinstance(g, IndexedSlices) \
                    else convert_to_tensor(g)
                if g.dtype is not t.dtype:
                    raise TypeError(f"Gradient of {op.type} op '{op.name}' for input {t.name} has "
                                    f"dtype {g.dtype.name}, expected {t.dtype.name}")
                if not g.shape.is_compatible_with(t.shape):
                    raise ValueError(f"Gradient of {op.type} op '{op.name}' for input {t.name} has "
                                     f"shape {g.shape}, expected {t.shape}")
                grads.setdefault(t, []).append(g)
        return [_aggregate(grads.get(x), x) for x in xs]


def _maybe_colocate(graph, op: Operation, enabled: bool):
    import contextlib
    return graph.colocate_with(op) if enabled else contextlib.nullcontext()


def _checked_indexed_slices(g: IndexedSlices, op: Operation, t: Tensor) -> IndexedSlices:
    """A sparse gradient for ``t`` must have t's rows as slices (the dense shape is checked as
    a dense gradient's shape is, through g.shape)."""
    if t.shape.ndims == 0 or not g.values.shape[1:].is_compatible_with(t.shape[1:]):
        raise ValueError(f"Gradient of {op.type} op '{op.name}' for input {t.name} is "
                         f"IndexedSlices with values of shape {g.values.shape}, which are not "
                         f"rows of {t.shape}")
    return g


def _aggregate(contributions: Optional[list], t: Tensor):
    """The sum of the gradients ``t`` receives: add_n of dense ones; the concatenation of
    sparse ones (TensorFlow's _AggregateIndexedSlicesGradients); densified when mixed."""
    if not contributions:
        return None
    if len(contributions) == 1:
        return contributions[0]
    from .ops.math_ops import add_n
    if not all(isinstance(g, IndexedSlices) for g in contributions):
        return add_n([convert_to_tensor(g) for g in contributions])
    from .ops.array_ops import concat
    from .ops.math_ops import cast
    index_dtypes = {g.indices.dtype for g in contributions}
    # Mixed int32 and int64 indices concatenate as int64, as TensorFlow's _as_indexed_slices_list.
    indices = [g.indices if len(index_dtypes) == 1 else cast(g.indices, dtypes.int64)
               for g in contributions]
    return IndexedSlices(concat([g.values for g in contributions], 0), concat(indices, 0),
                         contributions[0].dense_shape)


def _ops_between(ys: Sequence[Tensor], xs: Sequence[Tensor], stop) -> set:
    """Ops on a data path from some x to some y."""
    from_xs = set()
    pending = [x.op for x in xs]
    while pending:
        op = pending.pop()
        if op in from_xs:
            continue
        from_xs.add(op)
        if op in stop:
            continue
        for t in op.outputs:
            pending.extend(t._consumers)
    between = set()
    pending = [y.op for y in ys]
    while pending:
        op = pending.pop()
        if op in between or op not in from_xs:
            continue
        between.add(op)
        pending.extend(t.op for t in op.inputs)
    return between

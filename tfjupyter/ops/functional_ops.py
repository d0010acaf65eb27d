"""``tf.map_fn``, ``tf.scan``, ``tf.foldl``, ``tf.foldr``: loops over the first dimension of
``elems``, built on the ``While`` op (``while_ops.py``), so they run in one op and their
gradients come from the While gradient.

TF 1.x writes each iteration's result into a TensorArray; here the loop carries, per output, a
``[n, ...]`` accumulator that ``SetRow`` fills one row per iteration. The accumulator needs the
static shape of ``fn``'s results (the number of elements may be dynamic).
"""
from __future__ import annotations

from typing import Callable, List, Optional

from ..framework import dtypes, nest
from ..framework.ops import Tensor, convert_to_tensor, get_default_graph, name_scope
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape
from . import _control_flow_util as util
from . import array_ops
from .while_ops import check_body_outputs, create_while

__all__ = ["map_fn", "scan", "foldl", "foldr"]


@register_op("SetRow")
def _set_row_shape(op):
    acc, index, value = op.inputs
    if acc.dtype is not value.dtype:
        raise TypeError(f"SetRow: the accumulator is {acc.dtype.name}, the row {value.dtype.name}")
    if index.dtype not in (dtypes.int32, dtypes.int64) or not index.shape.is_compatible_with(()):
        raise ValueError("SetRow: the index must be an integer scalar")
    if acc.shape.ndims is not None and not acc.shape[1:].is_compatible_with(value.shape):
        raise ValueError(f"SetRow: a row of {acc.shape} cannot be {value.shape}")
    return [(acc.dtype, acc.shape)]


@register_gradient("SetRow")
def _set_row_grad(op, grad):
    from .array_index_ops import gather
    _, index, value = op.inputs
    return [set_row(grad, index, array_ops.zeros_like(value)), None, gather(grad, index)]


def set_row(acc, index, value, name: Optional[str] = None) -> Tensor:
    """``acc`` with row ``index`` replaced by ``value`` (a new tensor: acc is not written)."""
    from ..framework.ops import op as _op
    return _op("SetRow", [acc, index, value], {}, name=name or "SetRow").outputs[0]


def _loop(fn: Callable, elems, initializer, collect: bool, reverse: bool, back_prop: bool,
          parallel_iterations: int, swap_memory: bool, scope: str, what: str):
    """The loop behind the four: ``carry, out = fn(carry, x)`` over elems' rows (in reverse
    with ``reverse``); returns (final carry, stacked outs when ``collect``). Without an
    initializer (and with a carry), the carry starts as the first row, which is collected."""
    graph = get_default_graph()
    flat_elems = [convert_to_tensor(e, name="elems") for e in nest.flatten(elems)]
    if not flat_elems:
        raise ValueError(f"{what}: elems must not be empty")
    for e in flat_elems:
        if e.shape.ndims == 0:
            raise ValueError(f"{what}: elems must be tensors of rank >= 1, got {e.name} of shape "
                             f"{e.shape}")
    n_static = flat_elems[0].shape.as_list()[0] if flat_elems[0].shape.ndims else None
    for e in flat_elems[1:]:
        other = e.shape.as_list()[0] if e.shape.ndims else None
        if n_static is not None and other is not None and other != n_static:
            raise ValueError(f"{what}: the elems have different lengths: {flat_elems[0].shape} "
                             f"and {e.shape}")
    n = array_ops.shape(flat_elems[0], name="n")[0]
    from .array_index_ops import gather

    def row(i):
        k = (n - 1 - i) if reverse else i
        return k, nest.pack_sequence_as(elems, [gather(e, k) for e in flat_elems])

    carry_structure, start = initializer, 0
    flat_carry: List[Tensor] = []
    if initializer is not None:
        flat_carry = [convert_to_tensor(c, name="initializer") for c in nest.flatten(initializer)]
    elif what != "map_fn":
        # scan / foldl / foldr without an initializer: the first row starts the carry.
        first = (n - 1) if reverse else 0
        carry_structure = elems
        flat_carry = [gather(e, first) for e in flat_elems]
        start = 1
    n_carry = len(flat_carry)
    i0 = convert_to_tensor(start, dtype=dtypes.int32, name="i")
    specs = [(dtypes.int32, TensorShape(()), "i")] + \
        [(c.dtype, c.shape, "carry") for c in flat_carry]

    # The body, traced first: the accumulators' shapes are those of fn's results.
    bg, _ = util.trace(lambda *args: None, scope + "body", graph, specs)
    with bg.as_default():
        i_ph, carry_phs = bg.inputs[0], bg.inputs[1:1 + n_carry]
        k, x = row(i_ph)
        if n_carry:
            result = fn(nest.pack_sequence_as(carry_structure, carry_phs), x)
            new_carry = [util.as_output(bg, t, f"{what}'s fn") for t in nest.flatten(result)]
            if len(new_carry) != n_carry:
                nest.assert_same_structure(carry_structure, result,
                                           f"{what}: fn must return the structure of its "
                                           "accumulator. ")
            outs = new_carry
        else:
            result = fn(x)
            outs = [util.as_output(bg, t, f"{what}'s fn") for t in nest.flatten(result)]
            new_carry = []
        for c, new in zip(flat_carry, new_carry):
            if new.dtype is not c.dtype:
                raise TypeError(f"{what}: fn returned {new.dtype.name} for an accumulator of "
                                f"{c.dtype.name}")
        acc_phs, new_accs = [], []
        if collect:
            for t in outs:
                if not n_carry and not t.shape.is_fully_defined():
                    raise ValueError(f"{what}: fn's result {t.name} has shape {t.shape}; "
                                     "tfjupyter needs its static shape to stack the results")
                row_shape = flat_carry[len(acc_phs)].shape if n_carry else t.shape
                acc = bg.add_argument(t.dtype, TensorShape([n_static]).concatenate(row_shape),
                                      "acc")
                acc_phs.append(acc)
                new_accs.append(set_row(acc, k, t))
        one = array_ops.constant(1, dtypes.int32)
        b_out = [i_ph + one] + [new for new in new_carry] + new_accs
    args = [i_ph] + list(carry_phs) + acc_phs
    bg.inputs = args + [t for t in bg.inputs if t not in args]

    # The accumulators' initial values, outside the loop.
    flat_accs = []
    for j, (t, acc_ph) in enumerate(zip(outs if collect else [], acc_phs)):
        # A carried result has its carry's shape, known at run time; map_fn's is static.
        dims = array_ops.shape(flat_carry[j]) if n_carry else \
            array_ops.constant(t.shape.as_list(), dtypes.int32)
        acc = array_ops.zeros(array_ops.concat([array_ops.reshape(n, [1]), dims], 0),
                              dtype=t.dtype)
        if start:  # the first row (the initial carry) is the first result
            acc = set_row(acc, (n - 1) if reverse else 0, flat_carry[len(flat_accs)])
        flat_accs.append(acc)
    flat = [i0] + flat_carry + flat_accs
    invariants = [TensorShape(())] + [c.shape for c in flat_carry] + [p.shape for p in acc_phs]
    cg, c_res = util.trace(lambda i, *rest: i < n, scope + "cond", graph,
                           [(t.dtype, s, "loop_var") for t, s in zip(flat, invariants)])
    c_out = util.as_output(cg, c_res, f"{what}'s condition")
    check_body_outputs(flat, b_out, invariants)
    op = create_while(graph, scope, flat, [], invariants, cg, c_out, bg, b_out,
                      {"parallel_iterations": parallel_iterations, "back_prop": bool(back_prop),
                       "swap_memory": bool(swap_memory)})
    final_carry = op.outputs[1:1 + n_carry]
    stacked = op.outputs[1 + n_carry:1 + n_carry + len(flat_accs)]
    return final_carry, stacked, result


def _check_dtype(dtype, results: List[Tensor], what: str) -> None:
    if dtype is None:
        return
    want = [dtypes.as_dtype(d) for d in nest.flatten(dtype)]
    got = [t.dtype for t in results]
    if want != got:
        raise TypeError(f"{what}: fn returned {[d.name for d in got]}, but dtype says "
                        f"{[d.name for d in want]}")


def map_fn(fn: Callable, elems, dtype=None, parallel_iterations: Optional[int] = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: Optional[str] = None):
    """``[fn(x) for x in elems]`` stacked (elems and results may be nested structures; dtype
    gives the results' structure and dtypes when they differ from elems')."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(name, "map", nest.flatten(elems)) as scope:
        _, stacked, result = _loop(fn, elems, None, True, False, back_prop,
                                   parallel_iterations or 10, swap_memory, scope, "map_fn")
        _check_dtype(dtype, stacked, "map_fn")
        return nest.pack_sequence_as(result, stacked)


def scan(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: Optional[str] = None):
    """The accumulators ``a = fn(a, x)`` for each row ``x`` of elems, stacked (``a`` starts as
    ``initializer``, else as the first row, which is then the first result)."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(name, "scan", nest.flatten(elems)) as scope:
        _, stacked, result = _loop(fn, elems, initializer, True, reverse, back_prop,
                                   parallel_iterations, swap_memory, scope, "scan")
        return nest.pack_sequence_as(initializer if initializer is not None else elems, stacked)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, reverse,
          what):
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with name_scope(name, what, nest.flatten(elems)) as scope:
        carry, _, _ = _loop(fn, elems, initializer, False, reverse, back_prop,
                            parallel_iterations, swap_memory, scope, what)
        return nest.pack_sequence_as(initializer if initializer is not None else elems, carry)


def foldl(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None):
    """``a = fn(a, x)`` over elems' rows from the first; the last ``a``."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 False, "foldl")


def foldr(fn: Callable, elems, initializer=None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None):
    """``a = fn(a, x)`` over elems' rows from the last; the last ``a``."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 True, "foldr")

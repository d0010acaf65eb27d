"""``tf.while_loop`` as functional control flow (TensorFlow's control-flow v2 ``While``).

The condition and body are traced into function graphs over the loop variables (with their
shape invariants); the ``While`` op takes the loop variables, ``maximum_iterations`` when given,
the captured tensors and, as reference inputs, the variables the functions write. Besides the
final loop values it outputs, per loop variable, its value entering each iteration (stacked;
filled only when a gradient reads it) and the number of iterations. The gradient (``WhileGrad``)
runs the body's vector-Jacobian product backwards over those iterations, summing the gradients
of captured tensors (a weight used by every iteration).
"""
from __future__ import annotations

from typing import Callable, List, Optional

from ..framework import dtypes, nest
from ..framework.func_graph import Function
from ..framework.ops import Tensor, convert_to_tensor, get_default_graph, name_scope
from ..framework.registry import register_op, register_gradient
from ..framework.tensor_shape import TensorShape, as_shape
from . import _control_flow_util as util

__all__ = ["while_loop"]


@register_op("While", stateful=True)
def _while_shape(op):
    util.bind_ref_inputs(op)
    types, shapes = op.get_attr("T"), op.get_attr("output_shapes")
    n = len(types)
    n_captured = len(op.inputs) - n - op.get_attr("has_max") - op.get_attr("Nrefs")
    util.check_function(op, "cond", n + n_captured)
    util.check_function(op, "body", n + n_captured)
    for i in range(n):
        if op.inputs[i].dtype is not types[i]:
            raise TypeError(f"While: loop variable {i} is {op.inputs[i].dtype.name}, not "
                            f"{types[i].name}")
    history = [(t, TensorShape([None]).concatenate(s)) for t, s in zip(types, shapes)]
    return list(zip(types, shapes)) + history + [(dtypes.int32, TensorShape(()))]


@register_op("WhileGrad", stateful=True)
def _while_grad_shape(op):
    util.bind_ref_inputs(op)
    util.check_function(op, "vjp", op.get_attr("n_vars") + op.get_attr("n_captured")
                        + op.get_attr("n_float_vars"))
    return list(zip(op.get_attr("Tout"), op.get_attr("output_shapes")))


@register_gradient("While")
def _while_grad(op, *grads):
    result: List[Optional[Tensor]] = [None] * len(op.inputs)
    if not op.get_attr("back_prop"):
        return result
    types = op.get_attr("T")
    n, has_max, n_refs = len(types), op.get_attr("has_max"), op.get_attr("Nrefs")
    captured = list(op.inputs[n + has_max:len(op.inputs) - n_refs])
    float_vars = [i for i in range(n) if types[i].is_floating]
    float_captured = [k for k, t in enumerate(captured) if t.dtype.is_floating]
    if not float_vars:
        return result
    body: Function = op.get_attr("body")
    vjp = util.function_gradient(
        body,
        [body.inputs[i] for i in float_vars] + [body.inputs[n + k] for k in float_captured],
        float_vars, "gradients")
    # The iterations' values of a loop variable are kept only if the gradient reads them.
    read = util.reached_inputs(vjp)
    history_needed = [body.inputs[i] in read for i in range(n)]
    wrt = [op.inputs[i] for i in float_vars] + [captured[k] for k in float_captured]
    refs = list(op.inputs[len(op.inputs) - n_refs:])
    grad_op = util.create(
        op.graph, "WhileGrad",
        list(op.outputs[n:2 * n + 1]) + captured + [grads[i] for i in float_vars], refs,
        {"vjp": vjp, "n_vars": n, "n_captured": len(captured), "n_float_vars": len(float_vars),
         "float_captured": float_captured, "history_needed": history_needed,
         "Tout": [t.dtype for t in wrt],
         "output_shapes": [t.shape for t in wrt]}, name="WhileGrad")
    outs = grad_op.outputs
    for j, i in enumerate(float_vars):
        result[i] = outs[j]
    for j, k in enumerate(float_captured):
        result[n + has_max + k] = outs[len(float_vars) + j]
    return result


def while_loop(cond: Callable, body: Callable, loop_vars, shape_invariants=None,
               parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
               name: Optional[str] = None, maximum_iterations=None,
               return_same_structure: bool = False):
    """TF 1.x ``tf.while_loop``: repeats ``loop_vars = body(*loop_vars)`` while
    ``cond(*loop_vars)``, at most ``maximum_iterations`` times. A loop variable's shape may
    change across iterations only as far as its ``shape_invariants`` entry allows.
    ``parallel_iterations`` and ``swap_memory`` are accepted (iterations run one by one)."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    flat_in = nest.flatten(loop_vars)
    if not flat_in:
        raise ValueError("No loop variables provided")
    with name_scope(name, "while", [v for v in flat_in if isinstance(v, Tensor)]) as scope:
        graph = get_default_graph()
        flat = [convert_to_tensor(v) for v in flat_in]
        invariants = _invariants(loop_vars, flat, shape_invariants)
        specs = [(t.dtype, s, "loop_var") for t, s in zip(flat, invariants)]
        cg, c_res = util.trace(cond, scope + "cond", graph, specs, loop_vars)
        bg, b_res = util.trace(body, scope + "body", graph, specs, loop_vars)
        c_out = util.as_output(cg, c_res, "while_loop's cond")
        if c_out.dtype is not dtypes.bool or not c_out.shape.is_compatible_with(()):
            raise ValueError(f"while_loop '{scope[:-1]}': cond must return a bool scalar, got "
                             f"{c_out.dtype.name} of shape {c_out.shape}")
        if len(flat) == 1 and not nest.is_sequence(b_res):
            b_res = [b_res]
        nest.assert_same_structure(_as_list(loop_vars), _as_list(b_res),
                                   f"while_loop '{scope[:-1]}': body must return the structure "
                                   "of loop_vars. ")
        b_out = [util.as_output(bg, x, "while_loop's body") for x in nest.flatten(b_res)]
        check_body_outputs(flat, b_out, invariants)
        limit = []
        if maximum_iterations is not None:
            limit = [convert_to_tensor(maximum_iterations, dtype=dtypes.int32,
                                       name="maximum_iterations")]
            if not limit[0].shape.is_compatible_with(()):
                raise ValueError(f"maximum_iterations must be a scalar, got shape "
                                 f"{limit[0].shape}")
        op = create_while(graph, scope, flat, limit, invariants, cg, c_out, bg, b_out,
                          {"parallel_iterations": parallel_iterations,
                           "back_prop": bool(back_prop), "swap_memory": bool(swap_memory)})
    packed = nest.pack_sequence_as(loop_vars, op.outputs[:len(flat)])
    if not return_same_structure and isinstance(packed, (list, tuple)) and len(packed) == 1 \
            and not hasattr(packed, "_fields"):
        return packed[0]
    return packed


def create_while(graph, scope: str, flat: List[Tensor], limit: List[Tensor],
                 invariants: List[TensorShape], cg, c_out: Tensor, bg, b_out: List[Tensor],
                 attrs: dict):
    """The While op of traced cond and body graphs (whose first arguments are the loop
    variables), with their captures unified."""
    values, variables, inputs = util.unify_captures([cg, bg], [len(flat), len(flat)])
    return util.create(
        graph, "While", flat + limit + values, variables,
        dict(attrs, cond=Function(cg.func_name, cg, inputs[0], [c_out]),
             body=Function(bg.func_name, bg, inputs[1], b_out),
             T=[t.dtype for t in flat], output_shapes=invariants, has_max=len(limit)),
        name=scope, control_inputs=util.outer_controls([cg, bg]))


def _as_list(structure):
    return list(structure) if isinstance(structure, (list, tuple)) and \
        not hasattr(structure, "_fields") else structure


def _invariants(loop_vars, flat: List[Tensor], shape_invariants) -> List[TensorShape]:
    if shape_invariants is None:
        return [t.shape for t in flat]
    nest.assert_same_structure(loop_vars, shape_invariants,
                               "shape_invariants must have the structure of loop_vars. ")
    shapes = [as_shape(s) for s in nest.flatten(shape_invariants)]
    for t, s in zip(flat, shapes):
        if not s.is_compatible_with(t.shape):
            raise ValueError(f"The shape invariant specified for {t.name} is not compatible with "
                             "the initial shape of the loop variable. It enters the loop with "
                             f"shape {t.shape}, but the specified shape invariant is {s}.")
    return shapes


def check_body_outputs(flat: List[Tensor], outs: List[Tensor], invariants) -> None:
    for t, out, shape in zip(flat, outs, invariants):
        if out.dtype is not t.dtype:
            raise ValueError(f"Loop variable {t.name} enters the loop with type {t.dtype.name}, "
                             f"but has type {out.dtype.name} after one iteration.")
        if not _is_more_specific(out.shape, shape):
            raise ValueError(f"Input tensor '{t.name}' enters the loop with shape {shape}, but "
                             f"has shape {out.shape} after one iteration. To allow the shape to "
                             "vary across iterations, use the `shape_invariants` argument of "
                             "tf.while_loop to specify a less-specific shape.")


def _is_more_specific(shape: TensorShape, invariant: TensorShape) -> bool:
    """Whether every value of ``shape`` fits ``invariant`` (TF's _ShapeLessThanOrEqual)."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(w is None or g == w for g, w in zip(shape.as_list(), invariant.as_list()))

"""``tf.cond`` and ``tf.case`` as functional control flow (TensorFlow's control-flow v2 ``If``).

Each branch is traced into a function graph (``framework/func_graph.py``); the ``If`` op takes
the predicate, the tensors either branch captured and, as reference inputs, the variables they
write. Its kernel (``kernels/cpu/control_flow_kernels.py``) runs the taken branch's compiled plan,
so only that branch's ops — and side effects — run. Its gradient is an ``If`` on the same
predicate whose branches are the branches' vector-Jacobian products.
"""
from __future__ import annotations

from typing import Callable, List, Optional

from ..framework import dtypes, nest
from ..framework.func_graph import Function
from ..framework.ops import Operation, Tensor, convert_to_tensor, get_default_graph, name_scope
from ..framework.registry import register_gradient, register_op
from . import _control_flow_util as util

__all__ = ["cond", "case"]


@register_op("If", stateful=True)
def _if_shape(op):
    util.bind_ref_inputs(op)
    pred = op.inputs[0]
    if pred.dtype is not dtypes.bool or not pred.shape.is_compatible_with(()):
        raise ValueError(f"If: the predicate must be a bool scalar, got {pred.dtype.name} of "
                         f"shape {pred.shape}")
    n_values = len(op.inputs) - 1 - op.get_attr("Nrefs")
    for key in ("then_branch", "else_branch"):
        util.check_function(op, key, n_values)
    return list(zip(op.get_attr("Tout"), op.get_attr("output_shapes")))


@register_gradient("If")
def _if_grad(op, *grads):
    n_refs = op.get_attr("Nrefs")
    pred = op.inputs[0]
    values = list(op.inputs[1:len(op.inputs) - n_refs])
    then_f, else_f = op.get_attr("then_branch"), op.get_attr("else_branch")
    ys = [i for i, t in enumerate(op.outputs) if t.dtype.is_floating]
    wanted = [k for k, t in enumerate(values) if t.dtype.is_floating]
    if not ys or not wanted:
        return [None] * len(op.inputs)
    branches = [util.function_gradient(f, [f.inputs[k] for k in wanted], ys, "gradients")
                for f in (then_f, else_f)]
    refs = list(op.inputs[len(op.inputs) - n_refs:])
    grad_op = util.create(
        op.graph, "If", [pred] + values + [grads[i] for i in ys], refs,
        {"then_branch": branches[0], "else_branch": branches[1], "Ngrads": len(ys),
         "Tout": [values[k].dtype for k in wanted],
         "output_shapes": [values[k].shape for k in wanted]}, name="If")
    result: List[Optional[Tensor]] = [None] * len(op.inputs)
    for out, k in zip(grad_op.outputs, wanted):
        result[1 + k] = out
    return result


def _check_callable(fn, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what} must be callable.")


def cond(pred, true_fn: Optional[Callable] = None, false_fn: Optional[Callable] = None,
         strict: bool = False, name: Optional[str] = None, fn1=None, fn2=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``, as TF 1.x's ``tf.cond``: only the taken
    branch runs (with its side effects); both must return the same nested structure of
    tensors of the same dtypes. A one-element list result is unpacked unless ``strict``."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    _check_callable(true_fn, "true_fn")
    _check_callable(false_fn, "false_fn")
    if isinstance(pred, bool):
        raise TypeError("'pred' must not be a Python bool.")
    with name_scope(name, "cond", [pred]) as scope:
        pred = convert_to_tensor(pred)
        if pred.dtype is not dtypes.bool or not pred.shape.is_compatible_with(()):
            raise ValueError(f"cond: pred must be a bool scalar, got {pred.dtype.name} of shape "
                             f"{pred.shape} ({pred.name})")
        graph = get_default_graph()
        branches = []
        for fn, role, taken in ((true_fn, "true_fn", True), (false_fn, "false_fn", False)):
            g, result = util.trace(fn, f"{scope[:-1]}_{role[:-3]}", graph)
            branches.append((g, result, _branch_outputs(g, result, role, taken)))
        (tg, t_res, t_out), (fg, f_res, f_out) = branches
        nest.assert_same_structure(t_res, f_res, "Outputs of 'true_fn' and 'false_fn' must have "
                                   "the same structure. ")
        t_types = [t.dtype.name for t in t_out]
        f_types = [t.dtype.name for t in f_out]
        if t_types != f_types:
            raise ValueError("Outputs of 'true_fn' and 'false_fn' must have the same type(s). "
                             f"Received {', '.join(t_types)} from 'true_fn' and "
                             f"{', '.join(f_types)} from 'false_fn'.")
        values, variables, inputs = util.unify_captures([tg, fg], [0, 0])
        shapes = [util.most_specific_compatible_shape(a.shape, b.shape)
                  for a, b in zip(t_out, f_out)]
        op = util.create(
            graph, "If", [pred] + values, variables,
            {"then_branch": Function(tg.func_name, tg, inputs[0], t_out),
             "else_branch": Function(fg.func_name, fg, inputs[1], f_out), "Ngrads": 0,
             "Tout": [t.dtype for t in t_out], "output_shapes": shapes},
            name=scope, control_inputs=util.outer_controls([tg, fg]))
    result = nest.pack_sequence_as(t_res, op.outputs)
    return result if strict else _unpacked(result)


def _branch_outputs(g, result, role: str, taken: bool) -> List[Tensor]:
    """A branch's results as tensors of its graph. An Operation (a train op) becomes a bool
    that is ready once the op ran (TF 1.x returns the predicate's value there)."""
    from . import array_ops
    from .control_flow_ops import with_dependencies
    outs = []
    for x in nest.flatten(result):
        if isinstance(x, Operation):
            with g.as_default():
                x = with_dependencies([x], array_ops.constant(taken))
        outs.append(util.as_output(g, x, f"'{role}'"))
    return outs


# -- case ------------------------------------------------------------------------------------------
@register_op("CaseCheck", stateful=True)
def _case_check_shape(op):
    for t in op.inputs:
        if t.dtype is not dtypes.bool:
            raise ValueError(f"CaseCheck: predicates must be bool, got {t.name}")
    return []


def case(pred_fn_pairs, default: Optional[Callable] = None, exclusive: bool = False,
         strict: bool = False, name: str = "case"):
    """TF 1.x ``tf.case``: the fn of the first true predicate (list order; a dict's pairs in
    insertion order), else ``default``; with ``exclusive``, more than one true predicate is an
    InvalidArgumentError at run time, and so is none without a default."""
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("pred_fn_pairs must be a list or dict, got "
                        f"{type(pred_fn_pairs).__name__}")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple, got {pair!r}")
        pred, fn = pair
        if isinstance(pred, bool) or not isinstance(convert_to_tensor(pred), Tensor) \
                or convert_to_tensor(pred).dtype is not dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred!r}")
        _check_callable(fn, "fn")
    if default is not None:
        _check_callable(default, "default")
    if not pairs:
        if default is None:
            raise ValueError("case: pred_fn_pairs is empty and there is no default")
        return default()
    with name_scope(name, "case", [p for p, _ in pairs]):
        preds = [convert_to_tensor(p) for p, _ in pairs]
        fns = [fn for _, fn in pairs]
        require_one = default is None
        if require_one:  # as TF 1.x: the last fn is the default, and some predicate must hold
            default = fns.pop()
            preds_checked = preds[:-1]
        else:
            preds_checked = preds
        controls = []
        if (exclusive and len(preds) > 1) or require_one:
            controls = [get_default_graph().create_op(
                "CaseCheck", preds, {"names": [p.name for p in preds],
                                     "exclusive": bool(exclusive), "require_one": require_one},
                name="Assert")]
        graph = get_default_graph()
        with graph.control_dependencies(controls):
            result = _nested_cond(preds_checked, fns, default)
    return _unpacked(result) if not strict else result


def _nested_cond(preds, fns, default):
    if not preds:
        return default()
    return cond(preds[0], fns[0], lambda: _nested_cond(preds[1:], fns[1:], default),
                strict=True)


def _unpacked(result):
    """A one-element list or tuple as its element (cond's and case's default)."""
    if isinstance(result, (list, tuple)) and len(result) == 1 and not hasattr(result, "_fields"):
        return result[0]
    return result

"""Our graphs in the form TensorFlow runs, for the files TensorFlow reads (meta graphs,
SavedModels): ``export_graph_def(for_tensorflow=True)`` passes each NodeDef it writes, and
those of the functions its ``If``/``While`` ops call, through ``lower``.

- ``If``: TensorFlow's takes the predicate and the branches' arguments (``Tcond``, ``Tin``,
  ``Tout``, ``then_branch``, ``else_branch``, ``output_shapes``). The variables ours takes by
  reference (``Nrefs``: the variables its branches write) become control inputs: the branches
  reach them as ``VariableV2`` ops of the same ``shared_name``, in the session's resources.
- ``While``: TensorFlow's body returns every argument, and its outputs are its inputs'
  successors. The tensors ours captures become loop variables the body passes through, and
  ``maximum_iterations`` two more (the limit and an iteration counter) that the condition
  compares, as TensorFlow's ``while_v2``; the loop variables keep outputs ``0..n-1``. The
  per-iteration outputs ours has for its gradient are gone: a loop whose gradient
  (``WhileGrad``) reads them stays in our form, with a warning.
- Ops only tfjupyter has become TensorFlow's: ``SumToShape`` (a broadcast op's gradient) is
  ``Reshape(Sum(grad, BroadcastGradientArgs(shape, Shape(grad))[0]), shape)``, as TensorFlow's
  gradients compute it; ``SparseApplyAdam`` is TF 1.x Adam's sparse update (``Assign``,
  ``ScatterAdd``, ``AssignSub``); ``SetRow`` is ``TensorScatterUpdate``; tf.case's
  ``CaseCheck`` an ``Assert`` on the number of true predicates; the uninitialized
  variables' report (``ReportUninitialized``, ``AssertNoneUninitialized``: Scaffold's
  ready ops, in every MonitoredSession's checkpointed graph) is TF 1.x's ``Where``/``GatherV2``
  and ``Assert``. The others are kept and named in a warning: TensorFlow cannot run a graph
  holding them.

Lowered nodes keep their names, so their consumers are unchanged; the nodes they add are named
``<node>/tf_<part>``. A file written so reads back here too (graph_io reads TensorFlow's forms).
"""
from __future__ import annotations

import logging
import weakref
from typing import Dict, List, Sequence

import numpy as np

from ..summary._encoding import DATATYPE_ENUM
from ..summary.graph_def import _input_name, shape_proto
from . import dtypes
from .tensor_shape import TensorShape

_log = logging.getLogger("tfjupyter")

# If/While attr: the control inputs that are the variables our op took by reference.
REFS_ATTR = "_tfjupyter_refs"

# Ops of ours with no TensorFlow form: what they are, for the warning.
UNLOWERED = {
    "WhileGrad": "the gradient of a tf.while_loop",
    "InitializedValue": "Variable.initialized_value()",
}


def lower(node, op, graph_def) -> None:
    """Rewrites ``node`` (``op``'s NodeDef in ``graph_def``) into TensorFlow's form; the nodes
    that form needs are added to ``graph_def``, the functions to its library."""
    rule = _RULES.get(op.type)
    if rule is not None:
        rule(node, op, graph_def)
    elif op.type in UNLOWERED:
        _warn_once(op, f"Op '{op.name}' ({op.type}, {UNLOWERED[op.type]}) has no TensorFlow "
                   "equivalent: TensorFlow cannot import or run the graph being written for it.")


_warned: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _warn_once(op, message: str) -> None:
    """Logs ``message`` the first time an op's graph is written (a Saver writes its meta graph
    at every checkpoint)."""
    root = op.graph
    while getattr(root, "outer_graph", None) is not None:
        root = root.outer_graph
    seen = _warned.setdefault(root, set())
    if message not in seen:
        seen.add(message)
        _log.warning("%s", message)


# == writing nodes ================================================================================
def _derived(node, keys: Sequence[str]) -> None:
    """Marks attrs as added for TensorFlow (our importer leaves them out again)."""
    from .graph_io import DERIVED_ATTR
    listed = list(node.attr[DERIVED_ATTR].list.s) if DERIVED_ATTR in node.attr else []
    listed += [k.encode() for k in keys if k.encode() not in listed]
    node.attr[DERIVED_ATTR].list.s[:] = listed


def _set_attrs(node, attrs: Dict) -> None:
    from .graph_io import _encode
    for key, value in attrs.items():
        if isinstance(value, list) and value and isinstance(value[0], dtypes.DType):
            node.attr[key].list.type[:] = [DATATYPE_ENUM[t] for t in value]
        elif isinstance(value, list) and value and isinstance(value[0], TensorShape):
            node.attr[key].list.shape.extend(shape_proto(s) for s in value)
        else:
            _encode(node.attr[key], key, value)


def _add(graph_def, like, part: str, op_type: str, inputs: Sequence[str], attrs: Dict,
         shapes: Sequence[TensorShape] = (), on_its_device: bool = True):
    """A node for TensorFlow's form of ``like``, on its device unless ``on_its_device`` is
    false (shape arithmetic: the placer puts it where its kernel is)."""
    from .graph_io import SHAPES_ATTR
    node = graph_def.node.add(name=f"{like.name}/tf_{part}", op=op_type)
    node.input.extend(inputs)
    node.device = like.device if on_its_device else ""
    _set_attrs(node, attrs)
    if shapes:
        node.attr[SHAPES_ATTR].list.shape.extend(shape_proto(s) for s in shapes)
    return node


def _const(graph_def, like, part: str, value: np.ndarray):
    from .graph_io import tensor_proto
    node = _add(graph_def, like, part, "Const", [],
                {"dtype": dtypes.as_dtype(value.dtype)}, [TensorShape(value.shape)])
    node.attr["value"].tensor.CopyFrom(tensor_proto(value))
    return node


def _replace(node, op_type: str, inputs: Sequence[str], attrs: Dict) -> None:
    """``node`` becomes an op of type ``op_type``; it keeps its name, device, colocation and
    static shapes."""
    from .graph_io import SHAPES_ATTR
    controls = [x for x in node.input if x.startswith("^")]
    kept = {k: type(node.attr[k]).FromString(node.attr[k].SerializeToString())
            for k in (SHAPES_ATTR, "_class") if k in node.attr}
    node.op = op_type
    del node.input[:]
    node.input.extend(list(inputs) + controls)
    node.ClearField("attr")
    for key, value in kept.items():
        node.attr[key].CopyFrom(value)
    _set_attrs(node, attrs)


# == control flow =================================================================================
def _lower_if(node, op, graph_def) -> None:
    n_refs = op.get_attr("Nrefs")
    values = op.inputs[1:len(op.inputs) - n_refs]
    refs = op.inputs[len(op.inputs) - n_refs:]
    controls = [x for x in node.input if x.startswith("^")]
    del node.input[:]
    node.input.extend([_input_name(op.inputs[0])] + [_input_name(t) for t in values] + controls)
    _refs_as_controls(node, refs)
    for key in ("Nrefs", "Ngrads"):
        del node.attr[key]
    node.attr["Tin"].list.type[:] = [DATATYPE_ENUM[t.dtype] for t in values]
    node.attr["Tcond"].type = DATATYPE_ENUM[dtypes.bool]
    _derived(node, ["Tin", "Tcond"])


def _lower_while(node, op, graph_def) -> None:
    from .graph_io import SHAPES_ATTR
    types = op.get_attr("T")
    n, has_max, n_refs = len(types), op.get_attr("has_max"), op.get_attr("Nrefs")
    functions = {f.signature.name: f for f in graph_def.library.function}
    cond, body = (functions.get(node.attr[key].func.name) for key in ("cond", "body"))
    if any(t._consumers for t in op.outputs[n:]) or cond is None or body is None:
        _warn_once(op, f"While loop '{op.name}' is written in tfjupyter's form, which "
                   "TensorFlow cannot run: its gradient (WhileGrad) reads the loop's values of "
                   "every iteration, which TensorFlow's While does not output." if cond and body
                   else f"While loop '{op.name}' is written in tfjupyter's form, which "
                   "TensorFlow cannot run: its functions are shared with another op.")
        return
    loop_vars = list(op.inputs[:n])
    captured = list(op.inputs[n + has_max:len(op.inputs) - n_refs])
    refs = op.inputs[len(op.inputs) - n_refs:]
    inputs = [_input_name(t) for t in loop_vars + captured]
    shapes = list(op.get_attr("output_shapes")) + [t.shape for t in captured]
    all_types = list(types) + [t.dtype for t in captured]
    if has_max:
        counter = _const(graph_def, node, "loop_counter", np.array(0, np.int32))
        inputs += [_input_name(op.inputs[n]), counter.name]
        shapes += [TensorShape(()), TensorShape(())]
        all_types += [dtypes.int32, dtypes.int32]
    controls = [x for x in node.input if x.startswith("^")]
    del node.input[:]
    node.input.extend(inputs + controls)
    _refs_as_controls(node, refs)
    _loop_cond(cond, has_max)
    _loop_body(body, n, len(captured), has_max)
    for key in ("has_max", "Nrefs", "back_prop", "swap_memory", "T", "output_shapes",
                SHAPES_ATTR):
        if key in node.attr:
            del node.attr[key]
    _set_attrs(node, {"T": all_types, "output_shapes": shapes})
    node.attr[SHAPES_ATTR].list.shape.extend(shape_proto(s) for s in shapes)


def _refs_as_controls(node, refs) -> None:
    """The variables our op takes by reference become control inputs (TensorFlow's functions
    take no references; the functions reach the variables by name), listed in REFS_ATTR so
    that our importer takes them by reference again."""
    names = [t.op.name for t in refs]
    node.input.extend(f"^{name}" for name in names if f"^{name}" not in node.input)
    if names:
        node.attr[REFS_ATTR].list.s.extend(name.encode() for name in names)


def _function_node(fdef, name: str, op_type: str, inputs: List[str], attrs: Dict):
    """A node added to a FunctionDef, named ``name`` unless the function has one."""
    from .function_io import _unique
    taken = ({a.name for a in fdef.signature.input_arg} | {a.name for a in
             fdef.signature.output_arg} | {n.name for n in fdef.node_def})
    node = fdef.node_def.add(name=_unique(name, taken), op=op_type)
    node.input.extend(inputs)
    _set_attrs(node, attrs)
    return node


def _add_int_args(fdef, names: Sequence[str]) -> List[str]:
    """Adds scalar int32 arguments at the end; returns their names."""
    from .function_io import _unique
    taken = ({a.name for a in fdef.signature.input_arg} | {a.name for a in
             fdef.signature.output_arg} | {n.name for n in fdef.node_def})
    added = []
    for name in names:
        arg = _unique(name, taken)
        index = len(fdef.signature.input_arg)
        fdef.signature.input_arg.add(name=arg, type=DATATYPE_ENUM[dtypes.int32])
        fdef.arg_attr[index].attr["_output_shapes"].list.shape.add()
        added.append(arg)
    return added


def _loop_cond(fdef, has_max: int) -> None:
    """The condition of a loop with ``maximum_iterations``: also ``counter < limit``."""
    if not has_max:
        return
    limit, counter = _add_int_args(fdef, ["maximum_iterations", "loop_counter"])
    del fdef.attr["_tfjupyter_args"]      # no longer the graph's own placeholders
    out = fdef.signature.output_arg[0].name
    within = _function_node(fdef, "tf_within_limit", "Less", [counter, limit],
                            {"T": dtypes.int32})
    both = _function_node(fdef, "tf_cond_and_limit", "LogicalAnd",
                          [fdef.ret[out], f"{within.name}:z:0"], {})
    fdef.ret[out] = f"{both.name}:z:0"


def _loop_body(fdef, n: int, n_captured: int, has_max: int) -> None:
    """The body returns every argument: captured ones unchanged, the counter plus one."""
    from .function_io import _unique
    args = fdef.signature.input_arg
    taken = ({a.name for a in args} | {a.name for a in fdef.signature.output_arg}
             | {x for x in fdef.signature.control_output} | {x.name for x in fdef.node_def})
    results = [args[n + k] for k in range(n_captured)]
    if has_max:
        limit, counter = _add_int_args(fdef, ["maximum_iterations", "loop_counter"])
        del fdef.attr["_tfjupyter_args"]
        one = _function_node(fdef, "tf_one", "Const", [], {"dtype": dtypes.int32,
                                                          "value": np.array(1, np.int32)})
        next_count = _function_node(fdef, "tf_next_count", "AddV2",
                                    [counter, f"{one.name}:output:0"], {"T": dtypes.int32})
    for arg in results:
        out = _unique(f"{arg.name}_out", taken)
        fdef.signature.output_arg.add(name=out, type=arg.type)
        fdef.ret[out] = arg.name
    if has_max:
        for name, ref in (("maximum_iterations_out", limit),
                          ("loop_counter_out", f"{next_count.name}:z:0")):
            out = _unique(name, taken)
            fdef.signature.output_arg.add(name=out, type=DATATYPE_ENUM[dtypes.int32])
            fdef.ret[out] = ref


# == ops only tfjupyter has =======================================================================
def _lower_sum_to_shape(node, op, graph_def) -> None:
    grad, target = op.inputs
    index_type = target.dtype
    grad_shape = _add(graph_def, node, "grad_shape", "Shape", [_input_name(grad)],
                      {"T": grad.dtype, "out_type": index_type}, on_its_device=False)
    axes = _add(graph_def, node, "axes", "BroadcastGradientArgs",
                [_input_name(target), grad_shape.name], {"T": index_type}, on_its_device=False)
    total = _add(graph_def, node, "sum", "Sum", [_input_name(grad), axes.name + ":0"],
                 {"T": grad.dtype, "Tidx": index_type, "keep_dims": False})
    _replace(node, "Reshape", [total.name, _input_name(target)],
             {"T": grad.dtype, "Tshape": index_type})


def _lower_set_row(node, op, graph_def) -> None:
    acc, index, value = op.inputs
    position = _add(graph_def, node, "position", "Reshape",
                    [_input_name(index), _const(graph_def, node, "position_shape",
                                                np.array([1, 1], np.int32)).name],
                    {"T": index.dtype, "Tshape": dtypes.int32})
    row = _add(graph_def, node, "row", "ExpandDims",
               [_input_name(value), _const(graph_def, node, "row_axis",
                                           np.array(0, np.int32)).name],
               {"T": value.dtype, "Tdim": dtypes.int32})
    _replace(node, "TensorScatterUpdate", [_input_name(acc), position.name, row.name],
             {"T": acc.dtype, "Tindices": index.dtype})


def _lower_sparse_apply_adam(node, op, graph_def) -> None:
    """TF 1.x AdamOptimizer._apply_sparse_shared: m = beta1 m, m[indices] += (1 - beta1) g,
    v likewise with g^2, var -= lr sqrt(1 - beta2^t) / (1 - beta1^t) m / (sqrt(v) + eps)."""
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices = \
        [_input_name(t) for t in op.inputs]
    t = op.inputs[0].dtype
    locking = bool(op.get_attr("use_locking")) if "use_locking" in op._attrs else False
    one = _const(graph_def, node, "one", np.array(1, t.as_numpy_dtype)).name

    def add(part, op_type, inputs, **attrs):
        return _add(graph_def, node, part, op_type, inputs, dict({"T": t}, **attrs)).name

    def sparse_moment(name, moment, beta, update):
        scaled = add(f"{name}_decayed", "Mul", [moment, beta])
        decayed = add(f"{name}_assign", "Assign", [moment, scaled], use_locking=locking,
                      validate_shape=True)
        scale = add(f"{name}_one_minus_beta", "Sub", [one, beta])
        rows = add(f"{name}_rows", "Mul", [update, scale])
        return add(f"{name}_scatter_add", "ScatterAdd", [moment, indices, rows, "^" + decayed],
                   Tindices=op.inputs[10].dtype, use_locking=locking)

    m_t = sparse_moment("m", m, beta1, grad)
    v_t = sparse_moment("v", v, beta2, add("grad_squared", "Square", [grad]))
    bias_2 = add("sqrt_one_minus_beta2_power", "Sqrt", [add("one_minus_beta2_power", "Sub",
                                                            [one, beta2_power])])
    bias_1 = add("one_minus_beta1_power", "Sub", [one, beta1_power])
    lr_t = add("lr_t", "RealDiv", [add("lr_scaled", "Mul", [lr, bias_2]), bias_1])
    denominator = add("denominator", "AddV2", [add("sqrt_v", "Sqrt", [v_t]), epsilon])
    step = add("step", "Mul", [lr_t, add("m_over_denominator", "RealDiv", [m_t, denominator])])
    _replace(node, "AssignSub", [var, step], {"T": t, "use_locking": locking})


def _lower_report_uninitialized(node, op, graph_def) -> None:
    """TF 1.x's report_uninitialized_variables: the names where IsVariableInitialized is
    false, boolean_mask's way (Where, Squeeze, GatherV2)."""
    names, flags = op.inputs[0], op.inputs[1:]
    if not flags:                 # TensorFlow's empty report: a constant
        _replace(node, "Const", [], {"dtype": dtypes.string})
        node.attr["value"].tensor.CopyFrom(_string_vector([]))
        return
    packed = _add(graph_def, node, "initialized", "Pack", [_input_name(t) for t in flags],
                  {"T": dtypes.bool, "N": len(flags), "axis": 0})
    missing = _add(graph_def, node, "uninitialized", "LogicalNot", [packed.name], {})
    where = _add(graph_def, node, "where", "Where", [missing.name], {"T": dtypes.bool})
    indices = _add(graph_def, node, "indices", "Squeeze", [where.name],
                   {"T": dtypes.int64, "squeeze_dims": [1]})
    axis = _const(graph_def, node, "axis", np.array(0, np.int32))
    _replace(node, "GatherV2", [_input_name(names), indices.name, axis.name],
             {"Tparams": dtypes.string, "Tindices": dtypes.int64, "Taxis": dtypes.int32})


def _string_vector(values):
    from .graph_io import tensor_proto
    return tensor_proto(np.array(values, dtype=object).reshape(len(values)))


def _lower_assert_none_uninitialized(node, op, graph_def) -> None:
    """An Assert that the report is empty (it fails naming the variables)."""
    report = _input_name(op.inputs[0])
    size = _add(graph_def, node, "size", "Size", [report],
                {"T": dtypes.string, "out_type": dtypes.int32})
    zero = _const(graph_def, node, "zero", np.array(0, np.int32))
    empty = _add(graph_def, node, "empty", "Equal", [size.name, zero.name], {"T": dtypes.int32})
    _replace(node, "Assert", [empty.name, report], {"T": [dtypes.string], "summarize": 3})


def _lower_case_check(node, op, graph_def) -> None:
    """tf.case's checks as TF 1.x writes them: an Assert on the number of true predicates."""
    preds = [_input_name(t) for t in op.inputs]
    exclusive, require_one = op.get_attr("exclusive"), op.get_attr("require_one")
    packed = _add(graph_def, node, "preds", "Pack", preds,
                  {"T": dtypes.bool, "N": len(preds), "axis": 0})
    as_int = _add(graph_def, node, "preds_as_int", "Cast", [packed.name],
                  {"SrcT": dtypes.bool, "DstT": dtypes.int32, "Truncate": False})
    count = _add(graph_def, node, "true_count", "Sum",
                 [as_int.name, _const(graph_def, node, "axis", np.array(0, np.int32)).name],
                 {"T": dtypes.int32, "Tidx": dtypes.int32, "keep_dims": False})
    one = _const(graph_def, node, "one", np.array(1, np.int32)).name
    checks = []
    if exclusive:
        checks.append(_add(graph_def, node, "at_most_one", "LessEqual", [count.name, one],
                           {"T": dtypes.int32}).name)
    if require_one:
        checks.append(_add(graph_def, node, "at_least_one", "GreaterEqual", [count.name, one],
                           {"T": dtypes.int32}).name)
    if len(checks) == 2:
        checks = [_add(graph_def, node, "checks", "LogicalAnd", checks, {}).name]
    names = ", ".join(op.get_attr("names"))
    what = " and ".join(w for w, on in (("exclusive=True: more than 1 condition evaluated as "
                                         "True", exclusive),
                                        ("None of conditions evaluated as True", require_one))
                        if on)
    message = _const(graph_def, node, "message",
                     np.array(f"Input error: {what}: conditions ({names})".encode(), object))
    _replace(node, "Assert", [checks[0], message.name, packed.name],
             {"T": [dtypes.string, dtypes.bool], "summarize": len(preds)})


_RULES = {"If": _lower_if, "While": _lower_while, "SumToShape": _lower_sum_to_shape,
          "SetRow": _lower_set_row, "SparseApplyAdam": _lower_sparse_apply_adam,
          "CaseCheck": _lower_case_check, "ReportUninitialized": _lower_report_uninitialized,
          "AssertNoneUninitialized": _lower_assert_none_uninitialized}


# == reading TensorFlow's forms ===================================================================
# TensorFlow's op types that are ours under another name.
OUR_TYPES = {"StatelessIf": "If", "StatelessWhile": "While"}


def _adopt_refs(node) -> None:
    """The control inputs REFS_ATTR names as our op's reference inputs again."""
    refs = node.attrs.pop(REFS_ATTR, None) or []
    for name in refs:
        if name in node.controls:
            node.controls.remove(name)
        node.inputs.append((name, 0))
    node.attrs["Nrefs"] = len(refs)


def _adopt_if(node) -> None:
    """A TensorFlow ``If`` as ours: every input after the predicate is a branch argument."""
    if "Nrefs" in node.attrs:            # written by tfjupyter without for_tensorflow
        return
    _adopt_refs(node)
    node.attrs.update(Ngrads=0)
    n = len(node.attrs.get("Tout", ()))
    if len(node.attrs.get("output_shapes") or ()) != n:
        node.attrs["output_shapes"] = [TensorShape(None)] * n


def _adopt_while(node) -> None:
    """A TensorFlow ``While`` as ours: every input is a loop variable (TensorFlow's bodies
    return every argument, so captured tensors and counters are loop variables too)."""
    if "Nrefs" in node.attrs:
        return
    _adopt_refs(node)
    node.attrs.update(has_max=0, back_prop=True, swap_memory=False)
    node.attrs.setdefault("parallel_iterations", 10)
    n = len(node.attrs.get("T", ()))
    if len(node.attrs.get("output_shapes") or ()) != n:
        node.attrs["output_shapes"] = [TensorShape(None)] * n
    if node.shapes is not None:           # ours has more outputs, for the gradient
        node.shapes = None


ADOPT = {"If": _adopt_if, "While": _adopt_while}

# TensorFlow's control flow v1: frames of Switch/Merge/Enter/Exit nodes in the graph itself.
CONTROL_FLOW_V1 = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "RefSwitch",
                   "RefMerge", "RefEnter", "RefExit", "RefNextIteration", "RefSelect"}


def why_unregistered(op_type: str) -> str:
    """What to add to "Op type not registered" for TensorFlow's ops we know we lack."""
    if op_type in CONTROL_FLOW_V1:
        return (": the graph uses TensorFlow's control flow v1 (Switch/Merge/Enter/Exit "
                "frames), which tfjupyter does not run; write it with control flow v2 "
                "(tf.compat.v1.enable_control_flow_v2() before building the graph), whose "
                "If/While ops tfjupyter reads")
    return ""

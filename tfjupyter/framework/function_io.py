"""Function attrs (the branches and bodies of ``If``/``While``) in GraphDefs, as TensorFlow
writes them: the attr is a ``func`` naming a ``FunctionDef`` of the GraphDef's library.

A FunctionDef is written in TensorFlow's layout, so TensorFlow runs it: the signature names and
types the arguments (the function graph's placeholders, which are not nodes) and results; a
node's input is an argument's name or ``node:output_arg:index`` (the output argument's name from
TensorFlow's OpDef, ``tf_op_outputs.py``); ``ret`` maps each result to such a name and
``control_ret`` names the ops run for their effects (the function's targets). Each argument's
``arg_attr`` holds its static shape (``_output_shapes``, as TensorFlow writes it) and the
attrs ``_tfjupyter_args`` and ``_tfjupyter_arg_positions`` the placeholders' own names and
places among the ops, so ``rebuild_graph`` gets the same function graph back.

``decode`` reads FunctionDefs TensorFlow wrote (control-flow v2's branches and loop bodies) the
same way, and the layout of older tfjupyter files (the attrs ``_inputs``/``_outputs``/``_targets``,
inputs written ``op:index``).
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Dict, List, Optional, Tuple

from ..summary._encoding import DATATYPE_ENUM
from .func_graph import FuncGraph, Function

_local = threading.local()

ARG_NAMES_ATTR = "_tfjupyter_args"   # FunctionDef attr: the placeholders behind the arguments
ARG_POSITIONS_ATTR = "_tfjupyter_arg_positions"   # ... and their places among the graph's ops


def _arg_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def _unique(name: str, taken: set) -> str:
    """``name``, or ``name_1``, ``name_2``... whichever ``taken`` lacks (then taken)."""
    base, k = name, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


# == output argument names =======================================================================
def _output_args(node) -> List[Tuple[str, Optional[int]]]:
    """A NodeDef's output arguments per TensorFlow's OpDef: (name, length), the length None
    where the node's attrs do not say. Types TensorFlow does not have get one argument,
    "output", holding every output."""
    from .graph_io import _arg_length
    from .tf_op_args import OP_ARGS
    from .tf_op_outputs import OUTPUT_NAMES
    names = OUTPUT_NAMES.get(node.op, ("output",))
    args = OP_ARGS.get(node.op)
    specs = args[1] if args is not None else ("",) * len(names)
    if len(specs) != len(names):
        return [("output", None)]
    return [(name, _arg_length(node, spec)) for name, spec in zip(names, specs)]


def output_ref(node, index: int) -> str:
    """``node:output_arg:k``, a FunctionDef's name for output ``index`` of ``node``. An output
    beyond what the OpDef declares counts in the last argument (our ops with more outputs)."""
    args = _output_args(node)
    offset = 0
    for k, (name, length) in enumerate(args):
        if length is None or index < offset + length or k == len(args) - 1:
            return f"{node.name}:{name}:{index - offset}"
        offset += length
    return f"{node.name}:output:{index}"     # no output arguments: never read


def output_index(node, arg: str, k: int) -> int:
    """The flat output index of ``node:arg:k`` (output_ref's inverse)."""
    offset = 0
    for name, length in _output_args(node):
        if name == arg:
            return offset + k
        if length is None:
            break
        offset += length
    raise ValueError(f"Node '{node.name}' ({node.op}) has no output argument '{arg}' whose "
                     f"length its attrs give")


# == writing =====================================================================================
def encode(attr, function: Function, library, for_tensorflow: bool = False) -> None:
    """Writes ``function`` (and the functions its ops use) into ``library``; ``attr`` names it.
    ``for_tensorflow``: the ops of its body in the form TensorFlow runs (``tf_layout.py``)."""
    from .graph_io import export_graph_def
    names: Dict[int, str] = getattr(_local, "exported", None)
    top = names is None
    if top:
        names = _local.exported = {}
    try:
        name = names.get(id(function))
        if name is None:
            taken = {f.signature.name for f in library.function}
            name = _unique(_arg_name(function.name) or "function", taken)
            names[id(function)] = name
            fdef = library.function.add()
            fdef.signature.name = name
            body = export_graph_def(function.graph, for_tensorflow=for_tensorflow)
            for f in body.library.function:
                if f.signature.name not in {g.signature.name for g in library.function}:
                    library.function.add().CopyFrom(f)
            _fill_function_def(fdef, function, body)
        attr.func.name = name
    finally:
        if top:
            _local.exported = None


def _fill_function_def(fdef, function: Function, body) -> None:
    from .graph_io import AttrValue, shape_proto
    nodes = {n.name: n for n in body.node}
    taken = set(nodes)
    args: Dict[str, str] = {}       # placeholder op name -> argument name
    for i, t in enumerate(function.inputs):
        arg = _unique(_arg_name(t.op.name) or "arg", taken)
        args[t.op.name] = arg
        fdef.signature.input_arg.add(name=arg, type=DATATYPE_ENUM[t.dtype])
        fdef.arg_attr[i].attr["_output_shapes"].list.shape.add().CopyFrom(shape_proto(t.shape))
    fdef.attr[ARG_NAMES_ATTR].CopyFrom(AttrValue(list=AttrValue.ListValue(
        s=[t.op.name.encode() for t in function.inputs])))
    positions = {n.name: i for i, n in enumerate(body.node)}
    fdef.attr[ARG_POSITIONS_ATTR].list.i.extend(positions[t.op.name] for t in function.inputs)

    def ref(text: str) -> Optional[str]:
        if text.startswith("^"):
            return None if text[1:] in args else text
        src, colon, index = text.rpartition(":")
        if not colon:
            src, index = text, "0"
        if src in args:
            return args[src]
        return output_ref(nodes[src], int(index))

    for node in body.node:
        if node.name in args:
            continue
        new = fdef.node_def.add()
        new.CopyFrom(node)
        del new.input[:]
        new.input.extend(x for x in (ref(text) for text in node.input) if x is not None)
    for i, t in enumerate(function.outputs):
        out = _unique(f"output_{i}", taken)
        fdef.signature.output_arg.add(name=out, type=DATATYPE_ENUM[t.dtype])
        fdef.ret[out] = ref(f"{t.op.name}:{t.value_index}")
    for op in function.targets:
        out = _unique(_arg_name(op.name), taken)
        fdef.signature.control_output.append(out)
        fdef.control_ret[out] = op.name
    fdef.attr["_name"].s = function.name.encode()


# == reading =====================================================================================
@contextlib.contextmanager
def library_scope(library):
    """While a GraphDef is parsed: its library, for the func attrs that name functions."""
    saved = getattr(_local, "library", None)
    _local.library = ({f.signature.name: f for f in library.function}, {}, library)
    try:
        yield
    finally:
        _local.library = saved


def decode(name: str) -> Function:
    """The function a func attr names, rebuilt from the library being parsed."""
    from .graph_io import _NoForm
    scope = getattr(_local, "library", None)
    if scope is None or name not in scope[0]:
        raise _NoForm(f"is the function {name!r}; function attrs are not supported unless the "
                      "GraphDef's library defines the function")
    defs, built, library = scope
    if name in built:
        return built[name]
    fdef = defs[name]
    if "_inputs" in fdef.attr:
        function = _decode_old_layout(name, fdef, library)
    else:
        try:
            function = _decode(name, fdef, library)
        except (ValueError, KeyError) as e:
            raise _NoForm(f"is the function {name!r}, which cannot be read: {e}") from None
    built[name] = function
    return function


def _decode(name: str, fdef, library) -> Function:
    from tensorboard.compat.proto import graph_pb2, node_def_pb2
    arg_names = [a.name for a in fdef.signature.input_arg]
    own = [x.decode() for x in fdef.attr[ARG_NAMES_ATTR].list.s] \
        if ARG_NAMES_ATTR in fdef.attr else []
    ours = len(own) == len(arg_names)
    placeholders = own if ours else arg_names
    renamed = dict(zip(arg_names, placeholders))
    arg_nodes = []
    for i, arg in enumerate(fdef.signature.input_arg):
        node = node_def_pb2.NodeDef(name=renamed[arg.name], op="Placeholder")
        arg_nodes.append(node)
        node.attr["dtype"].type = arg.type
        shapes = fdef.arg_attr[i].attr["_output_shapes"].list.shape \
            if i in fdef.arg_attr and "_output_shapes" in fdef.arg_attr[i].attr else ()
        if len(shapes) == 1:
            node.attr["shape"].shape.CopyFrom(shapes[0])
        else:
            node.attr["shape"].shape.unknown_rank = True
    nodes = {n.name: n for n in fdef.node_def}

    def tensor_name(text: str) -> str:
        if text.startswith("^"):
            return "^" + renamed.get(text[1:], text[1:])
        parts = text.split(":")
        if len(parts) == 1:
            if text not in renamed:
                raise ValueError(f"input '{text}' names no argument of the function")
            return f"{renamed[text]}:0"
        if len(parts) == 2:                  # op:index, as some writers put it
            return text
        src, arg, index = parts
        if src not in nodes:
            raise ValueError(f"input '{text}' names no node of the function")
        return f"{src}:{output_index(nodes[src], arg, int(index))}"

    body_nodes = []
    for nd in fdef.node_def:
        node = node_def_pb2.NodeDef()
        node.CopyFrom(nd)
        del node.input[:]
        node.input.extend(tensor_name(text) for text in nd.input)
        body_nodes.append(node)
    # The placeholders where they were among the graph's ops (their order is the graph's).
    positions = list(fdef.attr[ARG_POSITIONS_ATTR].list.i) \
        if ours and ARG_POSITIONS_ATTR in fdef.attr else []
    if sorted(positions) != sorted(set(positions)) or len(positions) != len(arg_nodes) or \
            any(not 0 <= p < len(arg_nodes) + len(body_nodes) for p in positions):
        positions = range(len(arg_nodes))
    for position, node in sorted(zip(positions, arg_nodes), key=lambda x: x[0]):
        body_nodes.insert(position, node)
    body = graph_pb2.GraphDef(node=body_nodes)
    body.library.CopyFrom(library)
    outputs = [tensor_name(fdef.ret[a.name]) for a in fdef.signature.output_arg]
    targets = [fdef.control_ret[c] for c in fdef.signature.control_output]
    original = fdef.attr["_name"].s.decode() if "_name" in fdef.attr else name
    return _function(original, body, placeholders, outputs, targets)


def _function(name: str, body, inputs: List[str], outputs: List[str],
              targets: List[str]) -> Function:
    """A Function of a GraphDef body whose placeholders ``inputs`` are its arguments."""
    from .graph_io import rebuild_into
    from .ops import Graph
    graph = FuncGraph(name, Graph())
    rebuild_into(graph, body)
    inputs_t = [graph.get_tensor_by_name(n if ":" in n else n + ":0") for n in inputs]
    graph.inputs = list(inputs_t)
    for op in graph.get_operations():
        if op.op_def.stateful and not op.inputs:
            graph.variable_captures[op.outputs[0]] = op.outputs[0]
    return Function(name, graph, inputs_t, [graph.get_tensor_by_name(n) for n in outputs],
                    [graph.get_operation_by_name(n) for n in targets])


def _decode_old_layout(name: str, fdef, library) -> Function:
    """A FunctionDef of tfjupyter before TensorFlow's layout: the graph's nodes, placeholders
    included, inputs ``op:index``; attrs list the inputs, outputs and targets by name."""
    from tensorboard.compat.proto import graph_pb2
    body = graph_pb2.GraphDef(node=fdef.node_def)
    body.library.CopyFrom(library)
    listed = {key: [x.decode() for x in fdef.attr[key].list.s] for key in
              ("_inputs", "_outputs", "_targets")}
    original = fdef.attr["_name"].s.decode() if "_name" in fdef.attr else name
    return _function(original, body, listed["_inputs"], listed["_outputs"], listed["_targets"])

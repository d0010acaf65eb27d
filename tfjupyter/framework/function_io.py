"""Function attrs (the branches and bodies of ``If``/``While``) in GraphDefs, as TensorFlow
writes them: the attr is a ``func`` naming a ``FunctionDef`` of the GraphDef's library.

A FunctionDef's ``node_def`` holds the function graph's ops as GraphDef nodes (inputs written
``op:index``, as in a GraphDef, not TensorFlow's ``op:output_arg:index``), its signature names
and types the arguments and results, and the attrs ``_inputs``/``_outputs``/``_targets`` name
the placeholders fed, the tensors returned and the ops run, so ``rebuild_graph`` and
``import_graph_def`` (``graph_io.py``) get the same functions back.
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Dict

from ..summary._encoding import DATATYPE_ENUM
from .func_graph import FuncGraph, Function

_local = threading.local()


def _arg_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def encode(attr, function: Function, library) -> None:
    """Writes ``function`` (and the functions its ops use) into ``library``; ``attr`` names it."""
    from .graph_io import AttrValue, export_graph_def
    names: Dict[int, str] = getattr(_local, "exported", None)
    top = names is None
    if top:
        names = _local.exported = {}
    try:
        name = names.get(id(function))
        if name is None:
            taken = {f.signature.name for f in library.function}
            name = base = _arg_name(function.name) or "function"
            k = 1
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            names[id(function)] = name
            fdef = library.function.add()
            fdef.signature.name = name
            body = export_graph_def(function.graph)
            fdef.node_def.extend(body.node)
            for f in body.library.function:
                if f.signature.name not in {g.signature.name for g in library.function}:
                    library.function.add().CopyFrom(f)
            for t in function.inputs:
                fdef.signature.input_arg.add(name=_arg_name(t.op.name),
                                             type=DATATYPE_ENUM[t.dtype])
            for i, t in enumerate(function.outputs):
                out = f"output_{i}"
                fdef.signature.output_arg.add(name=out, type=DATATYPE_ENUM[t.dtype])
                fdef.ret[out] = t.name
            fdef.attr["_name"].s = function.name.encode()
            for key, items in (("_inputs", [t.name for t in function.inputs]),
                               ("_outputs", [t.name for t in function.outputs]),
                               ("_targets", [o.name for o in function.targets])):
                fdef.attr[key].CopyFrom(AttrValue(list=AttrValue.ListValue(
                    s=[x.encode() for x in items])))
        attr.func.name = name
    finally:
        if top:
            _local.exported = None


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
    from .graph_io import _NoForm, rebuild_into
    from .ops import Graph
    scope = getattr(_local, "library", None)
    if scope is None or name not in scope[0]:
        raise _NoForm(f"is the function {name!r}; function attrs are not supported unless the "
                      "GraphDef's library defines the function")
    defs, built, library = scope
    if name in built:
        return built[name]
    fdef = defs[name]
    graph = FuncGraph(name, Graph())
    from tensorboard.compat.proto import graph_pb2
    body = graph_pb2.GraphDef(node=fdef.node_def)
    body.library.CopyFrom(library)
    rebuild_into(graph, body)
    listed = {key: [x.decode() for x in fdef.attr[key].list.s] for key in
              ("_inputs", "_outputs", "_targets")}
    inputs = [graph.get_tensor_by_name(n) for n in listed["_inputs"]]
    graph.inputs = list(inputs)
    for op in graph.get_operations():
        if op.op_def.stateful and not op.inputs:
            graph.variable_captures[op.outputs[0]] = op.outputs[0]
    outputs = [graph.get_tensor_by_name(n) for n in listed["_outputs"]]
    targets = [graph.get_operation_by_name(n) for n in listed["_targets"]]
    original = fdef.attr["_name"].s.decode() if "_name" in fdef.attr else name
    function = Function(original, graph, inputs, outputs, targets)
    built[name] = function
    return function

"""MetaGraphDef export and import (TensorFlow's ``framework/meta_graph.py``): a graph, its
collections and its Saver's SaverDef in one protobuf, so a model can be rebuilt and its
checkpoints restored without the Python code that built it.

The proto is TensorFlow's ``tensorflow/core/protobuf/meta_graph.proto`` (TensorBoard's compiled
copy), so TensorFlow reads what we write and we read what TensorFlow writes:

- ``graph_def``: ``graph_io.export_graph_def`` (every attr in its TensorFlow form, exact values
  beside lossy ones, ``_output_shapes``) with ``for_tensorflow``: control flow and the ops only
  tfjupyter has in the form TensorFlow runs (``tf_layout.py``); imported with
  ``graph_io.import_graph_def``, which reads those forms (and TensorFlow's control flow v2).
- ``saver_def``: the SaverDef of the Saver, if any.
- ``collection_def``: each collection as TensorFlow writes it. Collections registered with
  ``register_proto_function`` (the variable collections, ``savers``, ``queue_runners``) hold
  serialized protos (``bytes_list``); others hold their items by kind: graph elements as names
  (``node_list``), ints (``int64_list``), floats (``float_list``), strings (``bytes_list``),
  ``google.protobuf.Any`` protos (``any_list``: SavedModel assets). Items with no such form
  (Python objects) are left out with a warning, as in TensorFlow.
  (``register_proto_function`` lives in ``framework.ops``, as in TensorFlow, so modules that
  register collections need not import this one.)

A graph exported under ``export_scope`` loses that prefix; inputs from outside the scope become
``$unbound_inputs_<name>`` (listed in the ``unbound_inputs`` collection), which an import must
map with ``input_map`` (``{"$unbound_inputs_x": tensor}``), as in TensorFlow. On import every
name in the collections and the SaverDef is translated to the name its op got (``import_scope/``
prefix, or ``_1`` where the graph already had it).
"""
from __future__ import annotations

import logging
import os
import re
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from google.protobuf import any_pb2
from google.protobuf import message as _message
from google.protobuf import text_format
from google.protobuf.unknown_fields import UnknownFieldSet
from tensorboard.compat.proto import graph_pb2, meta_graph_pb2

from . import graph_io, v1_control_flow
from .ops import (Graph, Operation, Tensor, get_default_graph, get_proto_functions,
                  register_proto_function, strip_name_scope)

__all__ = ["MetaGraphDef", "ImportedMetaGraph", "register_proto_function",
           "create_meta_graph_def", "export_scoped_meta_graph", "write_meta_graph",
           "read_meta_graph_file", "import_meta_graph_def", "import_scoped_meta_graph"]

MetaGraphDef = meta_graph_pb2.MetaGraphDef
_log = logging.getLogger("tfjupyter")

SAVER_DEF_NAME_FIELDS = ("filename_tensor_name", "save_tensor_name", "restore_op_name")
UNBOUND_INPUT_PREFIX = "$unbound_inputs_"
UNBOUND_INPUTS_COLLECTION = "unbound_inputs"


def _is_meta_graph_def(value) -> bool:
    descriptor = getattr(value, "DESCRIPTOR", None)
    # TensorBoard's copy of the protos is package "tensorboard"; TensorFlow's, "tensorflow".
    return getattr(descriptor, "full_name", None) in ("tensorboard.MetaGraphDef",
                                                      "tensorflow.MetaGraphDef")


# == export ======================================================================================
def _element_name(item) -> Optional[str]:
    """The graph name of a collection item that is a graph element (a Variable's is its
    VariableV2 tensor's), else None."""
    as_element = getattr(item, "_as_graph_element", None)
    if as_element is not None:
        item = as_element()
    if isinstance(item, (Tensor, Operation)):
        return item.name
    return None


def _in_scope(item, export_scope: Optional[str]) -> bool:
    if not export_scope:
        return True
    name = getattr(item, "name", None)
    return not isinstance(name, str) or name.startswith(export_scope + "/")


def _collection_kind(item) -> str:
    """The CollectionDef field an unregistered collection uses, from its first item (as
    TensorFlow's ``_get_kind_name``)."""
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    if isinstance(item, any_pb2.Any):
        return "any_list"
    return "node_list"


def _add_collection_def(meta: MetaGraphDef, key: str, graph: Graph,
                        export_scope: Optional[str]) -> None:
    if not isinstance(key, str):
        _log.warning("Only collections with string type keys will be serialized. This key has "
                     "%s", type(key).__name__)
        return
    items = [x for x in graph.get_collection(key) if _in_scope(x, export_scope)]
    if not items:
        return
    collection = meta_graph_pb2.CollectionDef()
    try:
        functions = get_proto_functions(key)
        if functions is not None and functions.to_proto is not None:
            for item in items:
                proto = functions.to_proto(item, export_scope)
                if proto is not None:
                    collection.bytes_list.value.append(proto.SerializeToString())
        else:
            kind = _collection_kind(items[0])
            if kind == "node_list":
                for item in items:
                    name = _element_name(item)
                    if name is None:
                        raise TypeError(f"{type(item).__name__} {item!r:.60} is not a graph "
                                        "element")
                    collection.node_list.value.append(strip_name_scope(name, export_scope))
            elif kind == "bytes_list":
                collection.bytes_list.value.extend(
                    x.encode() if isinstance(x, str) else x for x in items)
            else:
                getattr(collection, kind).value.extend(items)
    except (TypeError, ValueError, AttributeError) as e:
        # TensorFlow's behaviour: a collection that cannot be serialized is left out.
        _log.warning("Issue encountered when serializing: %s. Type is unsupported, or the "
                     "types of the items don't match field type in CollectionDef.\n%s", key, e)
        return
    meta.collection_def[key].CopyFrom(collection)


def _strip_scope_from_graph_def(graph_def: graph_pb2.GraphDef,
                                export_scope: str) -> List[str]:
    """Strips ``export_scope/`` from the nodes' names, inputs and colocation groups; inputs from
    outside the scope become ``$unbound_inputs_<input>``. Returns those new input names."""
    unbound: List[str] = []
    prefix = export_scope + "/"
    for node in graph_def.node:
        node.name = strip_name_scope(node.name, export_scope)
        for i, text in enumerate(node.input):
            if text.lstrip("^").startswith(prefix):
                node.input[i] = strip_name_scope(text, export_scope)
            else:
                node.input[i] = re.sub(r"^(\^?)", lambda m: m.group(1) + UNBOUND_INPUT_PREFIX,
                                       text, count=1)
                unbound.append(node.input[i])
        if "_class" in node.attr:
            groups = node.attr["_class"].list.s
            groups[:] = [strip_name_scope(g.decode(errors="replace"), export_scope).encode()
                         for g in groups]
    return unbound


def create_meta_graph_def(meta_info_def=None, graph_def=None, saver_def=None,
                          collection_list: Optional[Iterable[str]] = None, graph=None,
                          export_scope: Optional[str] = None,
                          clear_devices: bool = False) -> MetaGraphDef:
    """The MetaGraphDef of ``graph`` (the default graph): its GraphDef (or ``graph_def``), the
    SaverDef and the collections (all, or those in ``collection_list``). With ``export_scope``
    only the ops under it, without the prefix."""
    graph = graph if graph is not None else get_default_graph()
    if export_scope is not None:
        export_scope = export_scope.rstrip("/")
    from .. import __version__
    meta = MetaGraphDef()
    meta.meta_info_def.meta_graph_version = f"tfjupyter-{__version__}"
    if meta_info_def is not None:
        meta.meta_info_def.MergeFrom(meta_info_def)
    if graph_def is None:
        ops = graph.get_operations()
        if export_scope:
            ops = [op for op in ops if op.name.startswith(export_scope + "/")]
        graph_def = graph_io.export_graph_def(ops, clear_devices=clear_devices,
                                              for_tensorflow=True)
    else:
        graph_def = _copy(graph_def)
        if export_scope:
            kept = [n for n in graph_def.node if n.name.startswith(export_scope + "/")]
            del graph_def.node[:]
            graph_def.node.extend(kept)
        if clear_devices:
            for node in graph_def.node:
                node.device = ""
    unbound = _strip_scope_from_graph_def(graph_def, export_scope) if export_scope else []
    meta.graph_def.CopyFrom(graph_def)
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
        if export_scope:
            for field in SAVER_DEF_NAME_FIELDS:
                setattr(meta.saver_def, field,
                        strip_name_scope(getattr(saver_def, field), export_scope))
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(set(keys), key=str):
        _add_collection_def(meta, key, graph, export_scope)
    if unbound:
        meta.collection_def[UNBOUND_INPUTS_COLLECTION].bytes_list.value[:] = [
            x.encode() for x in dict.fromkeys(unbound)]
    return meta


def _copy(proto):
    copy = type(proto)()
    copy.CopyFrom(proto)
    return copy


def write_meta_graph(meta: MetaGraphDef, filename: str, as_text: bool = False) -> None:
    """Writes the MetaGraphDef to ``filename`` (binary, or text format), atomically."""
    from ..train import tensor_bundle   # the train package needs the framework first
    payload = (text_format.MessageToString(meta).encode() if as_text
               else meta.SerializeToString())
    try:
        tensor_bundle.atomic_write(os.fspath(filename), payload)
    except OSError as e:
        raise tensor_bundle.as_os_error(e, f"Failed to write meta graph {filename}") from None


def export_scoped_meta_graph(filename=None, graph_def=None, graph=None,
                             export_scope: Optional[str] = None, as_text: bool = False,
                             clear_devices: bool = False, saver_def=None,
                             collection_list=None, meta_info_def=None,
                             ) -> Tuple[MetaGraphDef, Dict[str, Any]]:
    """The MetaGraphDef (written to ``filename`` if given) and the exported variables by
    name (without ``export_scope``), as TensorFlow's function of this name."""
    graph = graph if graph is not None else get_default_graph()
    meta = create_meta_graph_def(meta_info_def=meta_info_def, graph_def=graph_def,
                                 saver_def=saver_def, collection_list=collection_list,
                                 graph=graph, export_scope=export_scope,
                                 clear_devices=clear_devices)
    if filename:
        write_meta_graph(meta, filename, as_text)
    var_list = {strip_name_scope(v.name, export_scope): v
                for v in graph.get_collection("variables") if _in_scope(v, export_scope)}
    return meta, var_list


# == import ======================================================================================
def read_meta_graph_file(filename) -> MetaGraphDef:
    """The MetaGraphDef in a file, binary or text format; OSError naming the file if it is
    missing or holds no MetaGraphDef."""
    filename = os.fspath(filename)
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OSError(e.errno, f"Cannot read meta graph file {filename}: {e.strerror}",
                      filename) from None
    if not data:
        raise OSError(f"Cannot parse file {filename}: it is empty")
    binary: Optional[MetaGraphDef] = MetaGraphDef()
    try:
        binary.ParseFromString(data)
        # Text can parse as binary by chance, into fields a MetaGraphDef does not have.
        if not UnknownFieldSet(binary):
            return binary
    except _message.DecodeError as e:
        binary, binary_error = None, e
    text = MetaGraphDef()
    try:
        text_format.Merge(data.decode("utf-8"), text)
        return text
    except (text_format.ParseError, UnicodeDecodeError):
        if binary is not None:             # a MetaGraphDef from a newer TensorFlow, perhaps
            return binary
        raise OSError(f"Cannot parse file {filename}: it holds neither a binary nor a text "
                      f"MetaGraphDef ({binary_error})") from None


class ImportedMetaGraph(NamedTuple):
    """What an import made: the MetaGraphDef read, the Operation each of its nodes became,
    and the imported variables by their tensor name in the MetaGraphDef ("w:0")."""
    meta_graph_def: MetaGraphDef
    ops: Dict[str, Operation]
    var_list: Dict[str, Any]

    def rename(self, name: str) -> str:
        """The imported name of a GraphDef name: an op ("w"), a tensor ("w:0") or a control
        input ("^w"); names of nothing imported pass unchanged."""
        caret = "^" if name.startswith("^") else ""
        op_name, colon, index = name[len(caret):].partition(":")
        op = self.ops.get(op_name)
        if op is None:
            return name
        return f"{caret}{op.name}{colon}{index}"

    def rename_fields(self, proto, name_fields: Sequence[str]):
        """A copy of ``proto`` with the names in ``name_fields`` (string or repeated string
        fields) renamed as ``rename`` does."""
        return _rename_fields(proto, name_fields, self.rename)


def _rename_fields(proto, name_fields: Sequence[str], rename: Callable[[str], str]):
    proto = _copy(proto)
    for field in name_fields:
        value = getattr(proto, field)
        if isinstance(value, str):
            setattr(proto, field, rename(value))
        else:                              # a repeated string field
            value[:] = [rename(v) for v in value]
    return proto


def _as_meta_graph_def(meta_graph_or_file) -> MetaGraphDef:
    if _is_meta_graph_def(meta_graph_or_file):
        return meta_graph_or_file
    if isinstance(meta_graph_or_file, (str, bytes, os.PathLike)):
        return read_meta_graph_file(meta_graph_or_file)
    raise TypeError("meta_graph_or_file must be a MetaGraphDef or the name of a file holding "
                    f"one, got {type(meta_graph_or_file).__name__}")


def import_meta_graph_def(meta_graph_or_file, clear_devices: bool = False, graph=None,
                          import_scope: Optional[str] = None, input_map=None,
                          unbound_inputs_col_name: Optional[str] = UNBOUND_INPUTS_COLLECTION,
                          restore_collections_predicate: Callable[[str], bool] = (
                              lambda key: True)) -> ImportedMetaGraph:
    """Imports a MetaGraphDef (or the file holding one) into ``graph`` (the default graph):
    its GraphDef with ``graph_io.import_graph_def`` (ops under ``import_scope/``, without
    devices if ``clear_devices``), then its collections (those the predicate accepts), their
    names translated to the imported ones. Unknown op types fail naming the op type and node;
    a failed import leaves no op behind."""
    meta = _as_meta_graph_def(meta_graph_or_file)
    source = ("the MetaGraphDef" if _is_meta_graph_def(meta_graph_or_file)
              else repr(os.fsdecode(meta_graph_or_file)))
    graph = graph if graph is not None else get_default_graph()
    graph_def = _with_default_attrs(meta)
    # TF 1.x's conds and loops become If/While ops: their Switch/Merge nodes are gone, and with
    # them what the "cond_context" collection (TensorFlow's CondContextDefs) describes.
    try:
        converted = v1_control_flow.convert_control_flow(graph_def)
    except ValueError as e:
        raise ValueError(f"Cannot import {source}: {e}") from None
    if converted is not graph_def:
        graph_def, keep = converted, restore_collections_predicate
        restore_collections_predicate = lambda key: key != "cond_context" and keep(key)  # noqa
    if clear_devices:
        for node in graph_def.node:
            node.device = ""
    _check_unbound_inputs(meta, unbound_inputs_col_name, input_map)
    node_names = [node.name for node in graph_def.node]
    with graph.as_default():
        try:
            ops = graph_io.import_graph_def(graph_def, input_map=input_map,
                                            return_elements=node_names,
                                            name=import_scope or "")
        except ValueError as e:
            raise ValueError(f"Cannot import {source}: {e}") from None
    imported = ImportedMetaGraph(meta, dict(zip(node_names, ops)), {})
    _restore_collections(meta, graph, imported, unbound_inputs_col_name,
                         restore_collections_predicate)
    original_names = {id(op): name for name, op in imported.ops.items()}
    for v in graph.get_collection("variables"):
        original = original_names.get(id(v.op))
        if original is not None:
            imported.var_list[f"{original}:0"] = v
    return imported


def _with_default_attrs(meta: MetaGraphDef) -> graph_pb2.GraphDef:
    """A copy of the GraphDef whose nodes have every attr their OpDef (in the MetaGraphDef's
    ``stripped_op_list``) gives a default for: TensorFlow may leave those out
    (``strip_default_attrs``), and our shape functions read them."""
    graph_def = _copy(meta.graph_def)
    defaults = {op_def.name: [(a.name, a.default_value) for a in op_def.attr
                              if a.HasField("default_value")]
                for op_def in meta.meta_info_def.stripped_op_list.op}
    if defaults:
        for node in graph_def.node:
            for name, value in defaults.get(node.op, ()):
                if name not in node.attr:
                    node.attr[name].CopyFrom(value)
    return graph_def


def _tensor_key(name: str) -> str:
    """'x' and 'x:0' as one key; control inputs ('^x') as they are."""
    if name.startswith("^"):
        return name
    op_name, colon, index = name.rpartition(":")
    return name if colon and index.isdigit() else f"{name}:0"


def _check_unbound_inputs(meta: MetaGraphDef, unbound_inputs_col_name: Optional[str],
                          input_map) -> None:
    """A graph exported under a scope needs its outside inputs (``$unbound_inputs_...``)
    mapped."""
    if not unbound_inputs_col_name or unbound_inputs_col_name not in meta.collection_def:
        return
    unbound = [x.decode() for x in
               meta.collection_def[unbound_inputs_col_name].bytes_list.value]
    mapped = {_tensor_key(k) for k in (input_map or {})}
    missing = [x for x in unbound if _tensor_key(x) not in mapped]
    if missing:
        raise ValueError(f"Graph contains unbound inputs: {', '.join(missing)}. Must provide "
                         "these inputs through input_map.")


def _restore_collections(meta: MetaGraphDef, graph: Graph, imported: ImportedMetaGraph,
                         unbound_inputs_col_name: Optional[str],
                         predicate: Callable[[str], bool]) -> None:
    # One object per serialized proto: a variable in several collections stays one Variable.
    objects: Dict[bytes, Any] = {}
    for key in sorted(meta.collection_def):
        if key == unbound_inputs_col_name or not predicate(key):
            continue
        collection = meta.collection_def[key]
        kind = collection.WhichOneof("kind")
        if kind is None:
            continue
        functions = get_proto_functions(key)
        if kind == "bytes_list" and functions is not None and functions.from_proto is not None:
            for value in collection.bytes_list.value:
                item = objects.get(value)
                if item is None:
                    try:
                        proto = functions.proto_type.FromString(value)
                    except _message.DecodeError as e:
                        raise ValueError(f"Collection {key!r} holds a malformed "
                                         f"{functions.proto_type.__name__}: {e}") from None
                    proto = imported.rename_fields(proto, functions.name_fields)
                    item = objects[value] = functions.from_proto(proto, None)
                graph.add_to_collection(key, item)
        elif kind == "node_list":
            for name in collection.node_list.value:
                graph.add_to_collection(key, graph.as_graph_element(imported.rename(name)))
        else:                              # ints, floats, strings, Any protos: as they are
            for value in getattr(collection, kind).value:
                graph.add_to_collection(key, value)


def import_scoped_meta_graph(meta_graph_or_file, clear_devices: bool = False, graph=None,
                             import_scope: Optional[str] = None, input_map=None,
                             unbound_inputs_col_name: Optional[str] = UNBOUND_INPUTS_COLLECTION,
                             restore_collections_predicate=lambda key: True) -> Dict[str, Any]:
    """Imports a MetaGraphDef (see ``import_meta_graph_def``); returns the imported variables
    by their name in the MetaGraphDef, as TensorFlow's function of this name."""
    return import_meta_graph_def(meta_graph_or_file, clear_devices, graph, import_scope,
                                 input_map, unbound_inputs_col_name,
                                 restore_collections_predicate).var_list

"""Our graphs as TensorFlow protocol buffers: ``GraphDef`` (TensorBoard's graph view) and
``MetaGraphDef`` (the ``.meta`` file a Saver writes beside a checkpoint).

The protos are TensorBoard's copies of TensorFlow's (``tensorboard.compat.proto``), so the
bytes are what TensorFlow would read.  Attributes without a protobuf form (Python callables,
None) are left out.
"""
from __future__ import annotations

import logging
import numbers
from typing import Iterable, Optional

import numpy as np
from tensorboard.compat.proto import (attr_value_pb2, graph_pb2, meta_graph_pb2, node_def_pb2,
                                      tensor_pb2, tensor_shape_pb2, variable_pb2)

from ..framework import dtypes
from ..framework.ops import Graph, Operation, Tensor
from ..framework.tensor_shape import TensorShape
from ._encoding import DATATYPE_ENUM

__all__ = ["graph_to_graph_def", "build_meta_graph_def"]

_log = logging.getLogger("tfjupyter")


def shape_proto(shape: TensorShape) -> tensor_shape_pb2.TensorShapeProto:
    proto = tensor_shape_pb2.TensorShapeProto()
    if shape.ndims is None:
        proto.unknown_rank = True
    else:
        for d in shape.as_list():
            proto.dim.add(size=-1 if d is None else int(d))
    return proto


def tensor_proto(value: np.ndarray) -> tensor_pb2.TensorProto:
    arr = np.asarray(value)
    dtype = dtypes.as_dtype(arr.dtype)
    proto = tensor_pb2.TensorProto(dtype=DATATYPE_ENUM[dtype])
    proto.tensor_shape.CopyFrom(shape_proto(TensorShape(arr.shape)))
    if dtype is dtypes.string:
        proto.string_val.extend(x if isinstance(x, bytes) else str(x).encode()
                                for x in arr.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(
            arr.astype(arr.dtype.newbyteorder("<"), copy=False)).tobytes()
    return proto


def _set_list(attr: attr_value_pb2.AttrValue, items: list) -> bool:
    lst = attr.list
    if all(isinstance(x, dtypes.DType) for x in items):
        lst.type.extend(DATATYPE_ENUM[x] for x in items)
    elif all(isinstance(x, TensorShape) for x in items):
        lst.shape.extend(shape_proto(x) for x in items)
    elif all(isinstance(x, bool) for x in items):
        lst.b.extend(items)
    elif all(isinstance(x, numbers.Integral) for x in items):
        lst.i.extend(int(x) for x in items)
    elif all(isinstance(x, numbers.Real) for x in items):
        lst.f.extend(float(x) for x in items)
    elif all(isinstance(x, (str, bytes)) for x in items):
        lst.s.extend(x.encode() if isinstance(x, str) else x for x in items)
    else:
        return False
    if not items:
        attr.list.SetInParent()
    return True


def attr_value(value) -> Optional[attr_value_pb2.AttrValue]:
    """The AttrValue of a Python attr value, or None when it has no protobuf form."""
    attr = attr_value_pb2.AttrValue()
    if isinstance(value, dtypes.DType):
        attr.type = DATATYPE_ENUM[value]
    elif isinstance(value, TensorShape):
        attr.shape.CopyFrom(shape_proto(value))
    elif isinstance(value, (bool, np.bool_)):
        attr.b = bool(value)
    elif isinstance(value, numbers.Integral):
        attr.i = int(value)
    elif isinstance(value, numbers.Real):
        attr.f = float(value)
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, bytes):
        attr.s = value
    elif isinstance(value, np.ndarray):
        try:
            attr.tensor.CopyFrom(tensor_proto(value))
        except (TypeError, KeyError):
            return None
    elif isinstance(value, (list, tuple)):
        if not _set_list(attr, list(value)):
            return None
    else:
        return None
    return attr


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def node_def(op: Operation, add_shapes: bool = False, clear_devices: bool = False):
    node = node_def_pb2.NodeDef(name=op.name, op=op.type)
    node.input.extend(_input_name(t) for t in op.inputs)
    node.input.extend("^" + c.name for c in op.control_inputs)
    if op.device and not clear_devices:
        node.device = op.device
    for key, value in op._attrs.items():
        attr = attr_value(value)
        if attr is not None:
            node.attr[key].CopyFrom(attr)
    if add_shapes:
        node.attr["_output_shapes"].list.shape.extend(shape_proto(t.shape) for t in op.outputs)
    return node


def graph_to_graph_def(graph: Graph, add_shapes: bool = False,
                       clear_devices: bool = False) -> graph_pb2.GraphDef:
    """The GraphDef of a graph (``graph.as_graph_def()`` in TensorFlow)."""
    graph_def = graph_pb2.GraphDef()
    graph_def.node.extend(node_def(op, add_shapes, clear_devices)
                          for op in graph.get_operations())
    return graph_def


def _variable_def(v) -> bytes:
    proto = variable_pb2.VariableDef(variable_name=v.name, trainable=bool(v.trainable))
    proto.initializer_name = v.initializer.name
    proto.snapshot_name = v.value().name
    if getattr(v, "initial_value", None) is not None:
        proto.initial_value_name = v.initial_value.name
    return proto.SerializeToString()


def _add_collection(meta: meta_graph_pb2.MetaGraphDef, key: str, items: list) -> None:
    if not items:
        return
    first = items[0]
    col = meta_graph_pb2.CollectionDef()
    try:
        if all(hasattr(x, "initializer") and hasattr(x, "_variable") for x in items):
            col.bytes_list.value.extend(_variable_def(v) for v in items)
        elif all(isinstance(x, (Tensor, Operation)) for x in items):
            col.node_list.value.extend(x.name for x in items)
        elif all(isinstance(x, (str, bytes)) for x in items):
            col.bytes_list.value.extend(x.encode() if isinstance(x, str) else x for x in items)
        elif all(isinstance(x, numbers.Integral) for x in items):
            col.int64_list.value.extend(int(x) for x in items)
        elif all(isinstance(x, numbers.Real) for x in items):
            col.float_list.value.extend(float(x) for x in items)
        else:
            _log.debug("Collection %r of %s is not written to the MetaGraphDef", key,
                       type(first).__name__)
            return
    except (AttributeError, ValueError, TypeError) as e:
        _log.debug("Collection %r is not written to the MetaGraphDef: %s", key, e)
        return
    meta.collection_def[key].CopyFrom(col)


def build_meta_graph_def(graph: Graph, saver_def=None,
                         collection_list: Optional[Iterable[str]] = None,
                         clear_devices: bool = False) -> meta_graph_pb2.MetaGraphDef:
    """A MetaGraphDef: the graph, the saver's SaverDef and the graph's collections."""
    from .. import __version__
    meta = meta_graph_pb2.MetaGraphDef()
    meta.meta_info_def.meta_graph_version = f"tfjupyter-{__version__}"
    meta.graph_def.CopyFrom(graph_to_graph_def(graph, add_shapes=True,
                                               clear_devices=clear_devices))
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(keys):
        _add_collection(meta, key, graph.get_collection(key))
    return meta

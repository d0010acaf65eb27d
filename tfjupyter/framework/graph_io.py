"""GraphDef round trip: a graph (or some of its ops) as TensorFlow's ``GraphDef`` protobuf, and
back, exactly.  The distributed runtime ships graph partitions to tasks this way.

Every attr keeps its TensorFlow form (``AttrValue`` s/i/f/b/type/shape/tensor/list), so
TensorBoard and TensorFlow read the graphs, and nothing is lost: where the TensorFlow form would
change a value (a float that float32 rounds, a tuple, bytes where a str is expected) the exact
value also goes to the reserved node attr ``_tfjupyter_attrs``; values with no TensorFlow form
(None, nested or mixed lists) use tagged ``func`` attrs (``NameAttrList`` named
``tfjupyter.list`` ...).  ``_output_shapes`` carries each output's static shape, so shapes that
``set_shape`` refined survive.  Numpy scalars come back as the equal Python scalars.  The type
attrs TensorFlow's OpDefs derive from inputs and outputs (``T``, ``N``...), which TensorFlow's
importer requires, are added where an op has none (``tf_op_args.py``), and named in
``_tfjupyter_derived`` so that our import leaves them out again.

- ``export_graph_def(graph_or_ops)``: the GraphDef, ops in creation order; the functions of
  ``If``/``While`` ops go to its library, as TensorFlow's (``function_io.py``).
- ``rebuild_graph(graph_def)``: a new Graph with the same names, devices, attrs, inputs and
  static shapes (the fast path of the distributed runtime).
- ``import_graph_def(...)``: TensorFlow's ``tf.import_graph_def`` into the default graph.
- ``write_graph(graph_or_graph_def, logdir, name, as_text)``: ``tf.train.write_graph``; a Graph
  is written for TensorFlow (``for_tensorflow``).
"""
from __future__ import annotations

import heapq
import importlib
import logging
import math
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from tensorboard.compat.proto import attr_value_pb2, graph_pb2, tensor_pb2, tensor_shape_pb2

from ..summary._encoding import DATATYPE_ENUM, ENUM_DATATYPE, ENUM_NAMES
from ..summary.graph_def import _input_name, attr_value, shape_proto, tensor_proto
from . import dtypes, function_io, tf_layout, v1_control_flow
from .device import DeviceSpec
from .func_graph import Function
from .ops import Graph, Operation, Tensor, convert_to_tensor, get_default_graph, name_scope
from .registry import registered_ops
from .tensor_shape import TensorShape

__all__ = ["import_graph_def", "export_graph_def", "write_graph"]

AttrValue = attr_value_pb2.AttrValue

EXACT_ATTR = "_tfjupyter_attrs"     # node attr: exact values of attrs whose TF form is lossy
SHAPES_ATTR = "_output_shapes"      # TensorFlow's name for the outputs' static shapes
DERIVED_ATTR = "_tfjupyter_derived"  # node attr: the type attrs added for TensorFlow's importer
_RESERVED = (EXACT_ATTR, SHAPES_ATTR, DERIVED_ATTR)
_TAG = "tfjupyter."                 # NameAttrList names of values with no TensorFlow form
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1

# TensorFlow's node-name rule; partitions (rebuild_graph) may also use internal names ("_send/...").
_NAME_RE = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_INTERNAL_NAME_RE = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9_.\-/>]*$")


class _NoForm(ValueError):
    """A value with no lossless GraphDef encoding, or an AttrValue we cannot decode."""


# == Python values <-> AttrValue =================================================================
def _py_scalar(value: Any) -> Any:
    """Numpy scalars as the equal Python scalars (the form they come back in)."""
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return float(value)
        if isinstance(value, (np.str_, np.bytes_)):
            return value.item()
    return value


def _same(a: Any, b: Any) -> bool:
    """Strict equality: same Python types throughout (list is not tuple, str is not bytes),
    arrays of the same dtype, shape and values, NaN equal to NaN."""
    a, b = _py_scalar(a), _py_scalar(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind == "f":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, TensorShape):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def _check_array(value: np.ndarray) -> None:
    if value.dtype == object:
        for x in value.reshape(-1):
            if not isinstance(x, bytes):
                raise _NoForm(f"is a string array holding {type(x).__name__} {x!r:.40} (string "
                              "tensors hold bytes)")
        return
    try:
        dtype = dtypes.as_dtype(value.dtype)
    except TypeError:
        dtype = None
    if dtype is None or dtype is dtypes.string or dtype.as_numpy_dtype != value.dtype.type \
            or not value.dtype.isnative:
        raise _NoForm(f"is an array of dtype {value.dtype}, which has no tensor form")


def _tagged(tag: str, items: Dict[str, AttrValue]) -> AttrValue:
    attr = AttrValue()
    attr.func.name = _TAG + tag
    for key, item in items.items():
        attr.func.attr[key].CopyFrom(item)
    return attr


def _float32_exact(x: float) -> bool:
    with np.errstate(over="ignore"):
        return math.isnan(x) or float(np.float32(x)) == x


def _exact(value: Any) -> AttrValue:
    """The lossless encoding of a value (tagged where TensorFlow has no exact form)."""
    value = _py_scalar(value)
    attr = AttrValue()
    if value is None:
        return attr                       # no field of the 'value' oneof set
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int) and type(value) is int:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise _NoForm(f"is the int {value}, outside int64")
        attr.i = value
    elif type(value) is float:
        if _float32_exact(value):
            attr.f = value
        else:
            double = tensor_pb2.TensorProto(dtype=DATATYPE_ENUM[dtypes.float64], double_val=[value])
            double.tensor_shape.SetInParent()
            return _tagged("float64", {"v": AttrValue(tensor=double)})
    elif type(value) is str:
        attr.s = value.encode()
    elif type(value) is bytes:
        return _tagged("bytes", {"v": AttrValue(s=value)})
    elif isinstance(value, dtypes.DType):
        attr.type = DATATYPE_ENUM[value]
    elif isinstance(value, TensorShape):
        attr.shape.CopyFrom(shape_proto(value))
    elif type(value) is np.ndarray:
        _check_array(value)
        attr.tensor.CopyFrom(tensor_proto(value))
    elif type(value) in (list, tuple):
        return _tagged(type(value).__name__, {str(i): _exact(x) for i, x in enumerate(value)})
    else:
        raise _NoForm(f"is a {type(value).__name__} ({value!r:.60}), which has no GraphDef form")
    return attr


def _encode(target: AttrValue, key: str, value: Any) -> Optional[AttrValue]:
    """Writes the attr's AttrValue into `target`; returns its exact value where that AttrValue
    would lose something."""
    kind = type(value)
    # Fast paths for the common kinds, exact by construction.
    if kind is bool:
        target.b = value
    elif kind is int and _INT64_MIN <= value <= _INT64_MAX:
        target.i = value
    elif kind is str and key != "_class":
        target.s = value.encode()
    elif kind is dtypes.DType:
        target.type = DATATYPE_ENUM[value]
    elif kind is TensorShape:
        target.shape.CopyFrom(shape_proto(value))
    elif kind is np.ndarray:
        _check_array(value)
        target.tensor.CopyFrom(tensor_proto(value))
    else:
        return _encode_general(target, key, value)
    return None


def _encode_general(target: AttrValue, key: str, value: Any) -> Optional[AttrValue]:
    try:
        tf_form = attr_value(value)
    except ValueError:                     # e.g. an int beyond int64
        tf_form = None
    if tf_form is not None and _same(_decode(tf_form, key), value):
        target.CopyFrom(tf_form)
        return None
    exact = _exact(value)
    # An exact value in the main attr is read with the attr's key; one beside it, without.
    if not _same(_decode(exact, key if tf_form is None else None), value):
        raise _NoForm(f"is a {type(value).__name__} ({value!r:.60}), which cannot be encoded "
                      "losslessly")
    target.CopyFrom(exact if tf_form is None else tf_form)
    return None if tf_form is None else exact


def _dtype(enum: int) -> dtypes.DType:
    base = enum - 100 if enum > 100 else enum      # 1xx: reference types
    dtype = ENUM_DATATYPE.get(base)
    if dtype is None:
        name = ENUM_NAMES.get(base, f"enum {enum}")
        raise _NoForm(f"has DataType {name}, which tfjupyter does not support")
    return dtype


def _dims(proto: tensor_shape_pb2.TensorShapeProto) -> Optional[Tuple[Optional[int], ...]]:
    """A shape's dims as TensorShape.as_tuple() gives them (None: unknown rank)."""
    if proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else d.size for d in proto.dim)


def _shape(proto: tensor_shape_pb2.TensorShapeProto) -> TensorShape:
    return TensorShape(_dims(proto))


_VALUE_FIELDS = {dtypes.float32: "float_val", dtypes.float64: "double_val",
                 dtypes.int32: "int_val", dtypes.int16: "int_val", dtypes.int8: "int_val",
                 dtypes.uint8: "int_val", dtypes.uint16: "int_val", dtypes.uint32: "uint32_val",
                 dtypes.uint64: "uint64_val", dtypes.int64: "int64_val", dtypes.bool: "bool_val",
                 dtypes.float16: "half_val", dtypes.string: "string_val",
                 dtypes.complex64: "scomplex_val", dtypes.complex128: "dcomplex_val"}


def _tensor(proto: tensor_pb2.TensorProto) -> np.ndarray:
    dtype = _dtype(proto.dtype)
    shape = _shape(proto.tensor_shape)
    if not shape.is_fully_defined():
        raise _NoForm(f"is a tensor of shape {shape}, which is not fully defined")
    dims = shape.as_tuple()
    size = int(np.prod(dims, dtype=np.int64))
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if dtype is not dtypes.string and proto.tensor_content:
        content = proto.tensor_content
        if len(content) != size * np_dtype.itemsize:
            raise _NoForm(f"is a {dtype.name} tensor of shape {list(dims)} with "
                          f"{len(content)} bytes of content, not {size * np_dtype.itemsize}")
        little = np.frombuffer(content, dtype=np_dtype.newbyteorder("<"))
        return little.astype(np_dtype).reshape(dims)   # a writable copy in native byte order
    values = getattr(proto, _VALUE_FIELDS[dtype])
    if len(values) > size:
        raise _NoForm(f"is a tensor of shape {list(dims)} with {len(values)} values")
    if dtype is dtypes.string:
        flat = np.empty(size, dtype=object)
        flat[:len(values)] = list(values)
        flat[len(values):] = values[-1] if values else b""
        return flat.reshape(dims)
    try:
        if dtype is dtypes.float16:      # half_val holds the bits
            given = np.asarray(values, dtype=np.uint16).view(np.float16)
        elif dtype.is_complex:           # (real, imaginary) pairs, flattened
            if len(values) % 2:
                raise _NoForm(f"is a {dtype.name} tensor with an odd number of values")
            given = np.asarray(values, dtype=dtype.real_dtype.as_numpy_dtype).view(np_dtype)
        else:
            given = np.asarray(values, dtype=np_dtype)
    except (OverflowError, ValueError, TypeError) as e:
        raise _NoForm(f"is a {dtype.name} tensor with values out of range: {e}") from None
    if len(given) == size:
        return given.reshape(dims)
    flat = np.zeros(size, dtype=np_dtype)   # TensorFlow repeats the last value given
    flat[:len(given)] = given
    if len(given):
        flat[len(given):] = given[-1]
    return flat.reshape(dims)


def _decode_tagged(func: attr_value_pb2.NameAttrList) -> Any:
    tag = func.name[len(_TAG):] if func.name.startswith(_TAG) else None
    if tag in ("list", "tuple"):
        try:
            items = sorted((int(k), v) for k, v in func.attr.items())
        except ValueError:
            raise _NoForm(f"is a malformed {func.name}") from None
        if [i for i, _ in items] != list(range(len(items))):
            raise _NoForm(f"is a malformed {func.name}")
        values = [_decode(v, None) for _, v in items]
        return values if tag == "list" else tuple(values)
    if tag == "bytes" and "v" in func.attr and func.attr["v"].WhichOneof("value") == "s":
        return func.attr["v"].s
    if tag == "float64" and "v" in func.attr and func.attr["v"].WhichOneof("value") == "tensor":
        value = _tensor(func.attr["v"].tensor)
        if value.shape == () and value.dtype == np.float64:
            return float(value)
    if tag is None:
        return function_io.decode(func.name)
    raise _NoForm(f"is a malformed {func.name}")


def _string(data: bytes, key: Optional[str]) -> Union[str, bytes]:
    if key == "_class":                  # colocation groups are bytes, as in TensorFlow
        return data
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


def _decode(attr: AttrValue, key: Optional[str]) -> Any:
    """The Python value of an AttrValue: s -> str (bytes for `_class`), list -> list..."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        return _string(attr.s, key)
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "type":
        return _dtype(attr.type)
    if kind == "shape":
        return _shape(attr.shape)
    if kind == "tensor":
        return _tensor(attr.tensor)
    if kind == "func":
        return _decode_tagged(attr.func)
    if kind == "list":
        fields = attr.list.ListFields()
        if not fields:
            return []
        if len(fields) > 1:
            raise _NoForm("is a list with values of several kinds")
        field, values = fields[0]
        if field.name == "s":
            return [_string(x, key) for x in values]
        if field.name in ("i", "f", "b"):
            return list(values)
        if field.name == "type":
            return [_dtype(x) for x in values]
        if field.name == "shape":
            return [_shape(x) for x in values]
        if field.name == "tensor":
            return [_tensor(x) for x in values]
        raise _NoForm(f"is a list of {field.name}, which is not supported")
    raise _NoForm(f"is a {kind} AttrValue, which is not supported")


# == export ======================================================================================
def _ops_to_export(graph_or_ops) -> List[Operation]:
    if isinstance(graph_or_ops, Graph):
        return graph_or_ops.get_operations()
    if isinstance(graph_or_ops, (Operation, Tensor, str, bytes)):
        raise TypeError("export_graph_def takes a Graph or an iterable of Operations, got "
                        f"{graph_or_ops!r}")
    ops = list(graph_or_ops)
    for op in ops:
        if not isinstance(op, Operation):
            raise TypeError(f"export_graph_def takes a Graph or Operations, got {op!r}")
        if op.graph is not ops[0].graph:
            raise ValueError(f"export_graph_def: Operation '{op.name}' is from another graph "
                             f"than '{ops[0].name}'")
    unique = {id(op): op for op in ops}
    return sorted(unique.values(), key=lambda op: op._id)


def export_graph_def(graph_or_ops: Union[Graph, Iterable[Operation]],
                     clear_devices: bool = False,
                     for_tensorflow: bool = False) -> graph_pb2.GraphDef:
    """The GraphDef of a graph, or of some of its ops (in creation order; their inputs may come
    from ops left out). Raises ValueError naming the op and attr for an attr with no form.
    ``for_tensorflow``: control flow and the ops only tfjupyter has in the form TensorFlow
    runs (``tf_layout.py``), for files TensorFlow reads; without it, our ops exactly (what
    the distributed runtime ships)."""
    graph_def = graph_pb2.GraphDef()
    for op in _ops_to_export(graph_or_ops):
        node = graph_def.node.add(name=op.name, op=op.type)
        node.input.extend(_input_name(t) for t in op._inputs)
        node.input.extend("^" + c.name for c in op._control_inputs)
        if op.device and not clear_devices:
            node.device = op.device
        exact: Dict[str, AttrValue] = {}
        for key, value in op._attrs.items():
            if key in _RESERVED:
                raise ValueError(f"Cannot export op '{op.name}' ({op.type}): its attr '{key}' "
                                 "has a name reserved by the GraphDef encoding")
            if isinstance(value, Function):
                function_io.encode(node.attr[key], value, graph_def.library, for_tensorflow)
                continue
            try:
                exact_value = _encode(node.attr[key], key, value)
            except _NoForm as e:
                raise ValueError(f"Cannot export op '{op.name}' ({op.type}): attr '{key}' {e}"
                                 ) from None
            if exact_value is not None:
                exact[key] = exact_value
        if exact:
            node.attr[EXACT_ATTR].CopyFrom(_tagged("attrs", exact))
        _add_type_attrs(node, op)
        if op._outputs:
            node.attr[SHAPES_ATTR].list.shape.extend(shape_proto(t.shape) for t in op._outputs)
        if for_tensorflow:
            tf_layout.lower(node, op, graph_def)
    return graph_def


def write_graph(graph_or_graph_def, logdir, name, as_text: bool = True) -> str:
    """``tf.train.write_graph``: writes a GraphDef to ``logdir/name`` (text or binary,
    atomically; ``logdir`` made if missing) and returns the path. A Graph is written with
    ``export_graph_def(for_tensorflow=True)``, so TensorFlow imports and runs it, its
    control flow included."""
    from google.protobuf import text_format
    from ..train import tensor_bundle   # the train package needs the framework first
    if isinstance(graph_or_graph_def, Graph):
        graph_def = export_graph_def(graph_or_graph_def, for_tensorflow=True)
    else:
        _check_graph_def(graph_or_graph_def)
        graph_def = graph_or_graph_def
        _warn_missing_functions(graph_def)
    logdir = os.fspath(logdir)
    path = os.path.join(logdir, os.fspath(name))
    payload = (text_format.MessageToString(graph_def).encode() if as_text
               else graph_def.SerializeToString())
    try:
        os.makedirs(logdir, exist_ok=True)
        tensor_bundle.atomic_write(path, payload)
    except OSError as e:
        raise tensor_bundle.as_os_error(e, f"Failed to write graph {path}") from None
    return path


def _warn_missing_functions(graph_def) -> None:
    """Graph.as_graph_def() is TensorBoard's form, without the functions of If/While ops."""
    defined = {f.signature.name for f in graph_def.library.function}
    function_attrs = {"If": ("then_branch", "else_branch"), "While": ("cond", "body")}
    for node in graph_def.node:
        for key in function_attrs.get(node.op, ()):
            if key not in node.attr or node.attr[key].func.name not in defined:
                logging.getLogger("tfjupyter").warning(
                    "write_graph: %s '%s' has no function '%s' in the GraphDef's library, so "
                    "neither TensorFlow nor tfjupyter can import the file; pass the Graph (not "
                    "graph.as_graph_def(), TensorBoard's form) to write its functions.",
                    node.op, node.name, key)
                return


def _add_type_attrs(node, op: Operation) -> None:
    """Adds the attrs that TensorFlow's OpDef of the node's type derives from its inputs and
    outputs (``T``, ``N``, ``dtypes``...) where the op has none of that name: TensorFlow's
    importer requires them, and our ops keep only those their kernels read. Their names go to
    ``DERIVED_ATTR``."""
    from .tf_op_args import OP_ARGS      # a big table, read only when a graph is exported
    args = OP_ARGS.get(op.type)
    if args is None:
        return
    before = set(node.attr)
    for specs, tensors in zip(args, (op._inputs, op._outputs)):
        lengths = [_arg_length(node, spec) for spec in specs]
        if lengths.count(None) == 1:      # one variable-length argument takes the rest
            lengths[lengths.index(None)] = len(tensors) - sum(n for n in lengths if n)
        if None in lengths or sum(lengths) != len(tensors):
            continue                      # not the arguments TensorFlow's OpDef has
        start = 0
        for spec, n in zip(specs, lengths):
            types = [t.dtype.as_datatype_enum for t in tensors[start:start + n]]
            start += n
            if spec.startswith("["):
                if spec[1:-1] not in node.attr:
                    node.attr[spec[1:-1]].list.type.extend(types)
                continue
            number, star, type_attr = spec.rpartition("*")
            if star and number not in node.attr:
                node.attr[number].i = n
            if type_attr and types and type_attr not in node.attr:
                node.attr[type_attr].type = types[0]
    added = sorted(set(node.attr) - before)
    if added:
        node.attr[DERIVED_ATTR].list.s.extend(name.encode() for name in added)


def _arg_length(node, spec: str) -> Optional[int]:
    """How many tensors an OpDef argument takes, when the node says; None if it does not."""
    if spec.startswith("["):
        attr = node.attr.get(spec[1:-1])
        return len(attr.list.type) if attr is not None else None
    number, star, _ = spec.rpartition("*")
    if not star:
        return 1
    return node.attr[number].i if number in node.attr else None


# == parsing and ordering a GraphDef =============================================================
class _Node:
    """A NodeDef, parsed and checked: data inputs as (node, output), control inputs as names."""

    __slots__ = ("index", "name", "type", "inputs", "controls", "device", "attrs", "shapes")

    def __init__(self, index: int, name: str, op_type: str):
        self.index, self.name, self.type = index, name, op_type
        self.inputs: List[Tuple[str, int]] = []
        self.controls: List[str] = []
        self.device = ""
        self.attrs: Dict[str, Any] = {}
        self.shapes: Optional[List[Optional[Tuple]]] = None   # _output_shapes, as dims


def _check_graph_def(graph_def) -> None:
    descriptor = getattr(graph_def, "DESCRIPTOR", None)
    # TensorBoard's copy of the protos is package "tensorboard"; TensorFlow's, "tensorflow".
    if getattr(descriptor, "full_name", None) not in ("tensorboard.GraphDef",
                                                      "tensorflow.GraphDef"):
        raise TypeError("graph_def must be a GraphDef proto.")
    if graph_def.library.gradient:
        raise ValueError("The GraphDef has a gradient library; tfjupyter does not support "
                         "gradient functions.")


def _parse(graph_def, internal: bool) -> List[_Node]:
    graph_def = v1_control_flow.convert_control_flow(graph_def)    # TF 1.x's Switch/Merge conds
    with function_io.library_scope(graph_def.library):
        return _parse_nodes(graph_def, internal)


def _every_registered_op():
    """Every op type tfjupyter has: a program that has only touched part of the API (a
    submodule such as ``tf.train``) has not imported every module that defines ops, and a
    graph file may hold any of them."""
    importlib.import_module("tfjupyter._api")
    return registered_ops()


def _parse_nodes(graph_def, internal: bool) -> List[_Node]:
    known = registered_ops()
    name_re = _INTERNAL_NAME_RE if internal else _NAME_RE
    nodes: List[_Node] = []
    seen = set()
    for index, nd in enumerate(graph_def.node):
        name = nd.name
        if not name_re.match(name):
            raise ValueError(f"Node '{name}': Node name contains invalid characters")
        if name in seen:
            raise ValueError(f"Duplicate node name in GraphDef: '{name}'")
        seen.add(name)
        op_type = tf_layout.OUR_TYPES.get(nd.op, nd.op)
        if op_type not in known:
            known = _every_registered_op()
        if op_type not in known:
            raise ValueError(f"Node '{name}': Op type not registered '{nd.op}'"
                             + tf_layout.why_unregistered(nd.op))
        node = _Node(index, name, op_type)
        for text in nd.input:
            if text.startswith("^"):
                if not text[1:]:
                    raise ValueError(f"Node '{name}': malformed control input '{text}'")
                node.controls.append(text[1:])
                continue
            if node.controls:
                raise ValueError(f"Node '{name}': data input '{text}' comes after a control "
                                 "input; control inputs must come last")
            src, colon, index_text = text.rpartition(":")
            if not colon:
                src, index_text = text, "0"
            if not src or not index_text.isdigit():
                raise ValueError(f"Node '{name}': malformed input '{text}'")
            node.inputs.append((src, int(index_text)))
        node.device = nd.device
        exact = nd.attr[EXACT_ATTR] if EXACT_ATTR in nd.attr else None
        if exact is not None and exact.func.name != _TAG + "attrs":
            raise ValueError(f"Node '{name}': attr '{EXACT_ATTR}' is malformed")
        derived = ({x.decode(errors="replace") for x in nd.attr[DERIVED_ATTR].list.s}
                   if DERIVED_ATTR in nd.attr else ())
        for key, attr in nd.attr.items():
            try:
                if key == SHAPES_ATTR:
                    node.shapes = _decode_shapes(attr)
                elif key in (EXACT_ATTR, DERIVED_ATTR) or key in derived:
                    continue
                elif exact is not None and key in exact.func.attr:
                    node.attrs[key] = _decode(exact.func.attr[key], None)
                else:
                    node.attrs[key] = _decode(attr, key)
            except _NoForm as e:
                raise ValueError(f"Node '{name}': attr '{key}' {e}") from None
        if node.type in tf_layout.ADOPT:
            tf_layout.ADOPT[node.type](node)
        nodes.append(node)
    return nodes


def _decode_shapes(attr: AttrValue) -> List[Optional[Tuple]]:
    if attr.WhichOneof("value") != "list" or (attr.list.ListFields()
                                              and not attr.list.shape):
        raise _NoForm("is not a list of shapes")
    return [_dims(s) for s in attr.list.shape]


def _topological_order(nodes: List[_Node]) -> List[_Node]:
    """The nodes, producers before consumers (data and control edges within the GraphDef),
    keeping the GraphDef's order where it allows; ValueError naming a cycle's nodes."""
    position = {n.name: i for i, n in enumerate(nodes)}

    def sources(node: _Node) -> List[int]:
        srcs = [position.get(src) for src, _ in node.inputs]
        srcs += [position.get(src) for src in node.controls]
        return [s for s in srcs if s is not None]

    deps = [sources(n) for n in nodes]
    if all(s < i for i, ds in enumerate(deps) for s in ds):
        return nodes                              # already ordered: the usual case
    pending = [len(set(ds)) for ds in deps]
    consumers: List[List[int]] = [[] for _ in nodes]
    for i, ds in enumerate(deps):
        for s in set(ds):
            consumers[s].append(i)
    ready = [i for i, p in enumerate(pending) if p == 0]
    heapq.heapify(ready)
    order: List[_Node] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < len(nodes):
        raise ValueError(f"The GraphDef has a cycle: {_find_cycle(nodes, deps, pending)}")
    return order


def _find_cycle(nodes: List[_Node], deps: List[List[int]], pending: List[int]) -> str:
    # Every node left has a dependency left, so walking dependencies must come back.
    start = next(i for i, p in enumerate(pending) if p > 0)
    path, seen = [start], {start: 0}
    while True:
        nxt = next(s for s in deps[path[-1]] if pending[s] > 0)
        if nxt in seen:
            cycle = path[seen[nxt]:] + [nxt]
            return " -> ".join(nodes[i].name for i in reversed(cycle))
        seen[nxt] = len(path)
        path.append(nxt)


# == building ====================================================================================
def _create(graph: Graph, node: _Node, new_name: str, inputs: List[Tensor],
            shapes: Optional[List[Optional[Tuple]]]) -> Operation:
    """The op of a node; `shapes` (its _output_shapes) refine the inferred static shapes."""
    try:
        op = graph.create_op(node.type, inputs, node.attrs, name=new_name + "/")
    except (ValueError, TypeError) as e:
        msg = str(e)
        named = f"'{new_name}'" in msg
        raise ValueError(msg if named else f"Node '{new_name}' ({node.type}): {msg}") from None
    except Exception as e:  # a shape function failing on malformed attrs
        raise ValueError(f"Node '{new_name}' ({node.type}): {type(e).__name__}: {e}") from e
    if shapes is not None:
        if len(shapes) != len(op._outputs):
            raise ValueError(f"Node '{new_name}' ({node.type}): its {SHAPES_ATTR} attr has "
                             f"{len(shapes)} shapes for {len(op._outputs)} outputs")
        for t, dims in zip(op._outputs, shapes):
            if t._shape.as_tuple() == dims:
                continue
            shape = TensorShape(dims)
            if not t.shape.is_compatible_with(shape):
                raise ValueError(f"Node '{new_name}' ({node.type}): output {t.value_index} has "
                                 f"shape {t.shape}, incompatible with {shape} in its "
                                 f"{SHAPES_ATTR} attr")
            t.set_shape(shape)
    return op


def _output(src: Operation, src_name: str, index: int, new_name: str) -> Tensor:
    if index >= len(src._outputs):
        raise ValueError(f"Node '{new_name}': Connecting to invalid output {index} of source "
                         f"node {src_name} which has {len(src._outputs)} outputs")
    return src._outputs[index]


def rebuild_graph(graph_def: graph_pb2.GraphDef) -> Graph:
    """A new Graph from a GraphDef, exactly: the same op names (no prefix, nothing made unique),
    devices (no device functions), attrs, control inputs and static shapes. Each op's shape
    function runs, so a malformed GraphDef fails with a ValueError naming the node."""
    _check_graph_def(graph_def)
    return rebuild_into(Graph(), graph_def)


def rebuild_into(graph: Graph, graph_def: graph_pb2.GraphDef) -> Graph:
    """rebuild_graph's work, into a given (empty) graph: a function graph's body."""
    nodes = _topological_order(_parse(graph_def, internal=True))
    built: Dict[str, Operation] = {}
    for node in nodes:
        inputs = []
        for src, index in node.inputs:
            src_op = built.get(src)
            if src_op is None:
                raise ValueError(f"Node '{node.name}': Unknown input node '{src}'")
            inputs.append(_output(src_op, src, index, node.name))
        op = _create(graph, node, node.name, inputs, node.shapes)
        for src in node.controls:
            src_op = built.get(src)
            if src_op is None:
                raise ValueError(f"Node '{node.name}': Unknown input node '^{src}'")
            op._add_control_input(src_op)
        try:
            op._set_device(node.device)
        except ValueError as e:
            raise ValueError(f"Node '{node.name}': {e}") from None
        built[node.name] = op
    _mark_names_used(graph, built.values())
    return graph


def _mark_names_used(graph: Graph, ops: Iterable[Operation]) -> None:
    """Names (and their scopes) taken by the ops, so ops added later get fresh names."""
    used = graph._names_in_use
    for op in ops:
        parts = op.name.split("/")
        for k in range(1, len(parts) + 1):
            key = "/".join(parts[:k]).lower()
            used[key] = max(used.get(key, 0), 1)


# == tf.import_graph_def =========================================================================
def _parse_tensor_name(name: str) -> Tuple[str, int]:
    op_name, colon, index = name.rpartition(":")
    if colon and index.isdigit() and op_name:
        return op_name, int(index)
    return name, 0


def _normalize_input_map(input_map) -> Dict[Tuple[str, int], Any]:
    """{(node, output): Tensor} and {("^", node): Operation} from TF's input_map."""
    if input_map is None:
        return {}
    if not isinstance(input_map, dict) or not all(isinstance(k, str) for k in input_map):
        raise TypeError("input_map must be a dictionary mapping strings to Tensor objects.")
    result: Dict[Tuple[str, int], Any] = {}
    for key, value in input_map.items():
        if key.startswith("^"):
            element = value.op if isinstance(value, Tensor) else value
            if not isinstance(element, Operation):
                raise TypeError(f"input_map[{key!r}] must be a Tensor or Operation, got {value!r}")
            result[("^", key[1:])] = element
        else:
            result[_parse_tensor_name(key)] = value
    return result


def _check_input_map(nodes: List[_Node], input_map: Dict, graph: Graph) -> None:
    names = {n.name for n in nodes}
    used = set()
    for n in nodes:
        used.update(n.inputs)
        used.update(("^", c) for c in n.controls)
    missing = []
    for (src, index), value in input_map.items():
        if (index if src == "^" else src) not in names and (src, index) not in used:
            missing.append(f"^{index}" if src == "^" else f"{src}:{index}")
        if value.graph is not graph:
            raise ValueError(f"input_map value {value.name!r} is not an element of this graph.")
    if missing:
        raise ValueError("Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(missing)}]")


def _new_names(nodes: List[_Node], graph: Graph, prefix: str) -> Dict[str, str]:
    """Prefixed names, made unique against the graph's ops (TF's uniquify_names)."""
    wanted = {n.name: prefix + n.name for n in nodes}
    planned = set(wanted.values())
    taken = graph._ops_by_name
    result: Dict[str, str] = {}
    assigned = set()
    for n in nodes:
        name = wanted[n.name]
        if name in taken:
            k = 1
            while (f"{name}_{k}" in taken or f"{name}_{k}" in planned
                   or f"{name}_{k}" in assigned):
                k += 1
            name = f"{name}_{k}"
        result[n.name] = name
        assigned.add(name)
    return result


def _rename_colocation(nodes: List[_Node], names: Dict[str, str], prefix: str,
                       graph: Graph) -> Dict[str, List[str]]:
    """Rewrites `_class` to the imported names; returns each colocated node's targets."""
    targets: Dict[str, List[str]] = {}
    imported = set(names.values())
    for n in nodes:
        groups = n.attrs.get("_class")
        if not groups:
            continue
        if not isinstance(groups, list) or not all(isinstance(g, bytes) for g in groups):
            raise ValueError(f"Node '{n.name}': attr '_class' must be a list of bytes")
        renamed, own = [], []
        for g in groups:
            if g.startswith(b"loc:@"):
                target = g[5:].decode(errors="replace")
                target = names.get(target, prefix + target)
                if target not in imported and target not in graph._ops_by_name:
                    raise ValueError("Specified colocation to an op that does not exist during "
                                     f"import: {target} in {names[n.name]}")
                own.append(target)
                g = b"loc:@" + target.encode()
            renamed.append(g)
        n.attrs["_class"] = renamed
        targets[n.name] = own
    return targets


def import_graph_def(graph_def: graph_pb2.GraphDef, input_map: Optional[Dict[str, Any]] = None,
                     return_elements: Optional[Sequence[str]] = None, name: Optional[str] = None,
                     op_dict=None, producer_op_list=None) -> Optional[List]:
    """Imports a GraphDef into the default graph, as ``tf.import_graph_def``.

    Op names get the prefix ``name/`` (``"import"`` by default, made unique; none for
    ``name=""``, names already in the graph made unique). ``input_map`` maps the GraphDef's tensor
    names (``"x:0"``, or ``"^x"`` for control inputs) to Tensors that replace them;
    ``return_elements`` lists GraphDef names of ops (``"x"``) or tensors (``"x:0"``) to return.
    Devices go through the enclosing ``tf.device`` scopes. On error nothing is imported.
    ``op_dict`` and ``producer_op_list`` are accepted for compatibility and unused.
    """
    del op_dict, producer_op_list
    _check_graph_def(graph_def)
    if return_elements is not None and (isinstance(return_elements, (str, bytes)) or not all(
            isinstance(x, str) for x in return_elements)):
        raise TypeError("return_elements must be a list of strings.")
    graph = get_default_graph()
    input_map = _normalize_input_map(input_map)
    if any(not isinstance(v, (Tensor, Operation)) for v in input_map.values()) and name == "":
        raise ValueError("tf.import_graph_def() requires a non-empty `name` if `input_map` "
                         "contains non-Tensor values. Try calling tf.convert_to_tensor() on "
                         "`input_map` values before calling tf.import_graph_def().")
    nodes = _topological_order(_parse(graph_def, internal=False))
    with graph._lock:
        graph._check_not_finalized()
        names_before = dict(graph._names_in_use)
        ops_before = len(graph._ops)
        try:
            with name_scope(name, "import", [v for v in input_map.values()
                                             if isinstance(v, Tensor)]) as scope:
                input_map = {k: v if k[0] == "^" or isinstance(v, Tensor) else convert_to_tensor(v)
                             for k, v in input_map.items()}
            prefix = scope or ""
            _check_input_map(nodes, input_map, graph)
            names = _new_names(nodes, graph, prefix)
            colocated = _rename_colocation(nodes, names, prefix, graph)
            built = _import_nodes(graph, nodes, names, input_map, colocated)
            for original, op in built.items():
                _set_colocated_device(graph, op, colocated.get(original, ()))
            _mark_names_used(graph, built.values())
            return _return_elements(return_elements, built, input_map)
        except BaseException:
            _rollback(graph, ops_before, names_before)
            raise


def _import_nodes(graph: Graph, nodes: List[_Node], names: Dict[str, str], input_map: Dict,
                  colocated: Dict[str, List[str]]) -> Dict[str, Operation]:
    built: Dict[str, Operation] = {}
    # The GraphDef's static shapes hold where no mapped input changed what flows in.
    remapped = set()
    # The importer ignores the enclosing control dependencies and colocation (as TensorFlow's).
    with graph.control_dependencies(None), graph.colocate_with(None):
        for node in nodes:
            new_name = names[node.name]
            inputs = []
            for k, (src, index) in enumerate(node.inputs):
                src_op = built.get(src)
                mapped = input_map.get((src, index))
                if mapped is not None or src in remapped:
                    remapped.add(node.name)
                if mapped is None:
                    if src_op is None:
                        raise ValueError(f"Node '{new_name}': Unknown input node '{src}'")
                    inputs.append(_output(src_op, src, index, new_name))
                    continue
                if src_op is not None:
                    expected = _output(src_op, src, index, new_name).dtype
                    if mapped.dtype is not expected:
                        raise ValueError(f"Input {k} of node {new_name} was passed "
                                         f"{mapped.dtype.name} from {mapped.name} incompatible "
                                         f"with expected {expected.name}.")
                inputs.append(mapped)
            # Devices: the node's own, completed by the enclosing tf.device scopes; colocated
            # nodes take their group's device afterwards.
            try:
                DeviceSpec.from_string(node.device)
            except ValueError as e:
                raise ValueError(f"Node '{new_name}': {e}") from None
            with graph.device(None if node.name in colocated else node.device):
                op = _create(graph, node, new_name, inputs,
                             None if node.name in remapped else node.shapes)
            for src in node.controls:
                target = input_map.get(("^", src)) or built.get(src)
                if target is None:
                    raise ValueError(f"Node '{new_name}': Unknown input node '^{src}'")
                op._add_control_input(target)
            built[node.name] = op
    return built


def _set_colocated_device(graph: Graph, op: Operation, targets: List[str]) -> None:
    """A colocated op takes the device of the first op of its group that has one."""
    for target in targets:
        device = graph._ops_by_name[target].device
        if device:
            op._set_device(device)
            return


def _return_elements(return_elements: Optional[Sequence[str]], built: Dict[str, Operation],
                     input_map: Dict) -> Optional[List]:
    if return_elements is None:
        return None
    results: List[Union[Tensor, Operation]] = []
    for element in return_elements:
        if ":" in element:
            src, index = _parse_tensor_name(element)
            if (src, index) in input_map:
                results.append(input_map[(src, index)])
                continue
            op = built.get(src)
            if op is not None and index < len(op._outputs):
                results.append(op._outputs[index])
                continue
        elif element in built:
            results.append(built[element])
            continue
        raise ValueError(f"Requested return_element {element!r} not found in graph_def.")
    return results


def _rollback(graph: Graph, ops_before: int, names_before: Dict[str, int]) -> None:
    """Removes the ops an import created (the graph is locked; nothing else added ops)."""
    for op in reversed(graph._ops[ops_before:]):
        for t in op._inputs:
            t._consumers.remove(op)
        for c in op._control_inputs:
            c._control_outputs.remove(op)
        del graph._ops_by_name[op.name]
    del graph._ops[ops_before:]
    graph._names_in_use = names_before

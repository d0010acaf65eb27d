"""Graph, Operation and Tensor: the dataflow graph that users build and sessions run."""
from __future__ import annotations

import contextlib
import re
import threading
from typing import (Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple,
                    Union)

import numpy as np

from . import dtypes as _dtypes
from .device import DeviceSpec, as_spec
from .registry import get_op_def
from .tensor_shape import TensorShape, as_shape

__all__ = ["Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph",
           "convert_to_tensor", "name_scope", "control_dependencies", "device", "colocate_with",
           "add_to_collection", "get_collection", "get_collection_ref", "GraphKeys",
           "register_tensor_conversion_function", "op"]


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    MODEL_VARIABLES = "model_variables"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    QUEUE_RUNNERS = "queue_runners"
    GLOBAL_STEP = "global_step"
    SAVEABLE_OBJECTS = "saveable_objects"
    SAVERS = "savers"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    TRAIN_OP = "train_op"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"


class Tensor:
    """One output of an Operation: a symbolic handle to a value computed when a session runs."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "__weakref__")

    # numpy should defer to our operators (np.float32(2) * tensor -> Tensor.__rmul__).
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: _dtypes.DType, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = as_shape(shape)
        self._consumers: List[Operation] = []

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    graph = property(lambda self: self._op._graph)
    device = property(lambda self: self._op.device)

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        try:
            self._shape = self._shape.merge_with(shape)
        except ValueError:
            raise ValueError(f"Tensor {self.name} has shape {self._shape}, which is not "
                             f"compatible with the requested shape {as_shape(shape)}") from None

    def consumers(self) -> List["Operation"]:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        from ..client.session import _default_session_for
        return _default_session_for(self.graph, session).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not "
                        "None:` instead of `if t:` to test if a tensor is defined, and use "
                        "TensorFlow ops such as tf.cond to execute subgraphs conditioned on the "
                        "value of a tensor.")

    def __iter__(self):
        shape = self._shape
        if shape.ndims is None or shape.ndims == 0 or shape.as_list()[0] is None:
            raise TypeError(f"Tensor {self.name} of shape {shape} is not iterable: its first "
                            "dimension must be statically known.")
        for i in range(shape.as_list()[0]):
            yield self[i]

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors ({self.name}). "
                        "Use tf.shape or .shape instead.")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    # Operators are attached by tfjupyter.ops.math_ops (_install_operators) to avoid an import cycle.


class Operation:
    """A node of the graph: an op type applied to input tensors, producing output tensors."""

    __slots__ = ("_graph", "_name", "_type", "_inputs", "_outputs", "_control_inputs", "_attrs",
                 "_device", "_id", "_op_def", "_control_outputs", "_traceback", "__weakref__")

    def __init__(self, graph: "Graph", op_type: str, name: str, inputs: Sequence[Tensor],
                 attrs: Dict[str, Any], control_inputs: Sequence["Operation"]):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = list(inputs)
        self._attrs = attrs
        self._control_inputs = list(control_inputs)
        self._control_outputs: List[Operation] = []
        self._device = ""
        self._op_def = get_op_def(op_type)
        self._id = graph._next_id()
        self._outputs: List[Tensor] = []

    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    graph = property(lambda self: self._graph)
    inputs = property(lambda self: tuple(self._inputs))
    outputs = property(lambda self: list(self._outputs))
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)
    op_def = property(lambda self: self._op_def)

    def values(self):
        return tuple(self._outputs)

    def get_attr(self, name: str):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' ({self._type}) has no attr named "
                             f"'{name}'.") from None

    @property
    def node_def(self):
        """The op as a ``tf.NodeDef`` protobuf (name, op, inputs, device, the attrs that have a
        protobuf form), as TensorFlow's; device functions read ``op.node_def.op``."""
        from ..summary.graph_def import node_def   # the summary package imports this module
        return node_def(self)

    def colocation_groups(self) -> List[bytes]:
        return list(self._attrs.get("_class", [f"loc:@{self._name}".encode()]))

    def _set_device(self, dev: Union[str, DeviceSpec, None]) -> None:
        self._device = as_spec(dev).to_string() if dev else ""

    def _add_control_input(self, op: "Operation") -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)

    def run(self, feed_dict=None, session=None) -> None:
        from ..client.session import _default_session_for
        _default_session_for(self._graph, session).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"


def _valid_op_name(name: str) -> bool:
    return bool(re.match(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$", name))


class Graph:
    """A dataflow graph. Append-only: ops are added, never changed or removed, so compiled
    execution plans stay valid while a graph grows cell by cell."""

    def __init__(self):
        self._lock = threading.RLock()
        self._ops_by_name: Dict[str, Operation] = {}
        self._ops: List[Operation] = []
        self._last_id = 0
        self._names_in_use: Dict[str, int] = {}
        self._name_stack = ""
        self._device_stack: List[Optional[Callable]] = []
        self._control_stack: List[Optional[List[Operation]]] = []
        self._colocation_stack: List[Operation] = []
        self._collections: Dict[str, List[Any]] = {}
        self._finalized = False
        self.seed: Optional[int] = None
        self._variable_store = None
        self._variable_scope = None
        self._gradient_override_map: Dict[str, str] = {}

    # -- identity ---------------------------------------------------------------------------
    def _next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    @property
    def version(self) -> int:
        return self._last_id

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    @contextlib.contextmanager
    def as_default(self):
        # Inside a control-flow function being traced, an enclosing graph's as_default (TF 1.x
        # code does `with loss.graph.as_default()`) keeps building in the function.
        graph = _building_graph(self)
        _default_graph_stack.push(graph)
        try:
            yield self
        finally:
            _default_graph_stack.pop(graph)

    # -- lookup ------------------------------------------------------------------------------
    def get_operations(self) -> List[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation, Variable or name ('add', 'add:0') to a graph element."""
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None:
            obj = conv()
        if isinstance(obj, Tensor) and allow_tensor or isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"{_describe(obj)} is not an element of this graph.")
            return obj
        if isinstance(obj, bytes):
            obj = obj.decode()
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation)
        wanted = " or ".join(w for w, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {wanted}.")

    def _element_by_name(self, name: str, allow_tensor: bool, allow_operation: bool):
        if ":" in name and allow_tensor:
            op_name, _, index = name.rpartition(":")
            if not index.isdigit():
                raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not a "
                                 "valid one. Tensor names must be of the form "
                                 "\"<op_name>:<output_index>\".")
            op = self._ops_by_name.get(op_name)
            if op is None:
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The "
                               f"operation, {op_name!r}, does not exist in the graph.")
            if int(index) >= len(op._outputs):
                raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The "
                               f"operation, {op_name!r}, exists but only has "
                               f"{len(op._outputs)} outputs.")
            return op._outputs[int(index)]
        if ":" in name:
            raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a Operation.")
        op = self._ops_by_name.get(name)
        if op is None:
            raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
        if not allow_operation:
            raise ValueError(f"The name {name!r} refers to an Operation, not a Tensor. Tensor "
                             f"names must be of the form \"<op_name>:<output_index>\".")
        return op

    def as_graph_def(self, add_shapes: bool = False):
        """A GraphDef protobuf of this graph, for TensorBoard (an export format only)."""
        from ..summary.graph_def import graph_to_graph_def
        return graph_to_graph_def(self, add_shapes)

    # -- names -------------------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = name
            while f"{base}_{count}".lower() in self._names_in_use:
                count += 1
            name = f"{base}_{count}"
            if mark_as_used:
                self._names_in_use[name.lower()] = 1
        return name

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]):
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            if not _valid_op_name(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield "" if not new else new + "/"
        finally:
            self._name_stack = old

    # -- devices, control dependencies, colocation ------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        self._device_stack.append(_device_function(device_name_or_function))
        try:
            yield
        finally:
            self._device_stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Innermost first; a field an inner scope set is kept, so the innermost wins field by
        # field. None (tf.device(None)) hides every scope outside it.
        for fn in reversed(self._device_stack):
            if fn is None:
                break
            op._set_device(fn(op))

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            self._control_stack.append(None)
        else:
            ops = []
            for c in control_inputs:
                c = c.op if isinstance(c, Tensor) else self.as_graph_element(c)
                if isinstance(c, Tensor):
                    c = c.op
                ops.append(c)
            self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    def _current_control_inputs(self) -> List[Operation]:
        out: List[Operation] = []
        for frame in reversed(self._control_stack):
            if frame is None:
                break
            out.extend(frame)
        return out

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        if op is None:
            saved, self._colocation_stack = self._colocation_stack, []
            try:
                yield
            finally:
                self._colocation_stack = saved
            return
        target = op._as_graph_element() if hasattr(op, "_as_graph_element") else op
        target = target.op if isinstance(target, Tensor) else target
        saved_colocation = self._colocation_stack
        if ignore_existing:
            self._colocation_stack = []
        self._colocation_stack = self._colocation_stack + [target]
        # Colocation is stronger than device scopes, as in TensorFlow.
        saved_devices, self._device_stack = self._device_stack, []
        try:
            yield
        finally:
            self._device_stack = saved_devices
            self._colocation_stack = saved_colocation

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: Dict[str, str]):
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    # -- building ----------------------------------------------------------------------------
    def create_op(self, op_type: str, inputs: Sequence[Tensor], attrs: Optional[Dict] = None,
                  name: Optional[str] = None, control_inputs: Sequence[Operation] = ()) -> Operation:
        building = _building_graph(self)
        if building is not self:
            return building.create_op(op_type, inputs, attrs, name, control_inputs)
        return self._create_op_here(op_type, inputs, attrs, name, control_inputs)

    def _create_op_here(self, op_type: str, inputs: Sequence[Tensor], attrs: Optional[Dict],
                        name: Optional[str], control_inputs: Sequence[Operation]) -> Operation:
        with self._lock:
            self._check_not_finalized()
            for t in inputs:
                if not isinstance(t, Tensor):
                    raise TypeError(f"Input to {op_type} must be a Tensor, got {t!r}")
                if t.graph is not self:
                    raise ValueError(f"Tensor {t.name} must be from the same graph as the "
                                     f"{op_type} op being created; it belongs to another graph.")
            name = name or op_type
            if name.endswith("/"):
                # A scope name ('w/' from `with name_scope('w') as scope`) names the op exactly.
                unique = name[:-1]
                if unique in self._ops_by_name:
                    raise ValueError(f"Duplicate node name in graph: '{unique}'")
                key = unique.lower()
                self._names_in_use[key] = max(1, self._names_in_use.get(key, 0))
            else:
                if not _valid_op_name(name.split("/")[-1] or "x"):
                    raise ValueError(f"'{name}' is not a valid node name")
                unique = self.unique_name(name)
                if unique in self._ops_by_name:
                    raise ValueError(f"Duplicate node name in graph: '{unique}'")
            op = Operation(self, op_type, unique, inputs, dict(attrs or {}), ())
            try:
                specs = op._op_def.shape_fn(op)
            except (ValueError, TypeError) as e:
                msg = str(e)
                if op.name not in msg:
                    msg = f"{msg} (op '{op.name}' of type {op_type})"
                raise type(e)(msg) from None
            op._outputs = [Tensor(op, i, _dtypes.as_dtype(d), s) for i, (d, s) in enumerate(specs)]
            # Only a valid op is linked into the graph.
            for c in list(control_inputs) + self._current_control_inputs():
                if all(t.op is not c for t in inputs):
                    op._add_control_input(c)
            # Device functions see the finished op (outputs included), as in TensorFlow.
            if self._colocation_stack:
                groups = []
                for target in self._colocation_stack:
                    for g in target.colocation_groups():
                        if g not in groups:
                            groups.append(g)
                op._attrs["_class"] = groups
                op._set_device(self._colocation_stack[-1].device)
            else:
                self._apply_device_functions(op)
            for t in inputs:
                t._consumers.append(op)
            self._ops_by_name[unique] = op
            self._ops.append(op)
            return op

    # -- collections ---------------------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for n in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name: str) -> List:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: Optional[str] = None) -> List:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [x for x in items if getattr(x, "name", None) is not None and pattern.match(x.name)]

    def get_all_collection_keys(self) -> List[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    def __repr__(self) -> str:
        return f"<tf.Graph with {len(self._ops)} ops at {hex(id(self))}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """In Jupyter, a cell ending in a graph shows its view (tfjupyter.lab.GraphView)."""
        from ..lab.graph import graph_mimebundle  # imported here: the view needs the client layer
        return graph_mimebundle(self, include, exclude)


def _describe(obj) -> str:
    return f"Tensor {obj.name}" if isinstance(obj, Tensor) else f"Operation {obj.name}"


def _device_function(device_name_or_function):
    if device_name_or_function is None:
        return None
    if callable(device_name_or_function) and not isinstance(device_name_or_function, DeviceSpec):
        user_fn = device_name_or_function

        def call_user(op):
            result = user_fn(op)
            return _merge_keep_existing(op.device, as_spec(result))
        return call_user
    spec = as_spec(device_name_or_function)  # parse now: a malformed string fails here

    def merge(op):
        return _merge_keep_existing(op.device, spec)
    return merge


def _merge_keep_existing(current: str, spec: DeviceSpec) -> str:
    merged = spec.copy()
    if current:
        merged.merge_from(DeviceSpec.from_string(current))
    return merged.to_string()


class _DefaultGraphStack(threading.local):
    def __init__(self):
        self.stack: List[Graph] = []

    def push(self, g: Graph) -> None:
        self.stack.append(g)

    def pop(self, g: Graph) -> None:
        if self.stack and self.stack[-1] is g:
            self.stack.pop()


_default_graph_stack = _DefaultGraphStack()
_global_default_graph: Optional[Graph] = None


def get_default_graph() -> Graph:
    global _global_default_graph
    if _default_graph_stack.stack:
        return _default_graph_stack.stack[-1]
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    global _global_default_graph
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you "
                             "need a cleared graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()


# -- conversion -------------------------------------------------------------------------------------
_conversion_functions: List = []


def register_tensor_conversion_function(base_type, conversion_func, priority: int = 100) -> None:
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda x: x[0])


def _graph_of(values: Iterable) -> Optional[Graph]:
    for v in values:
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return _building_graph(g)
    return None


def _building_graph(graph: Graph) -> Graph:
    """Where an op on ``graph``'s tensors is built: the default graph while it is a control-flow
    function nested in ``graph`` (the op then captures its outer inputs), else ``graph``."""
    default = _default_graph_stack.stack[-1] if _default_graph_stack.stack else None
    if default is None or default is graph or getattr(default, "outer_graph", None) is None:
        return graph
    return default if default.encloses(graph) else graph


def convert_to_tensor(value, dtype=None, name: Optional[str] = None, preferred_dtype=None,
                      as_ref: bool = False) -> Tensor:
    """Tensor -> itself (dtype checked); Variable -> its value; Python/numpy -> a Const op."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with "
                             f"dtype {value.dtype.name}: {value!r}")
        return value
    for _, base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            t = fn(value, dtype=dtype, name=name, as_ref=as_ref)
            if dtype is not None and t.dtype is not dtype:
                raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor "
                                 f"with dtype {t.dtype.name}: {t!r}")
            return t
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name={name!r}, as_ref={as_ref})")
    if isinstance(value, (list, tuple)):
        from ..ops.array_join_ops import autopack, contains_tensor  # Pack lives there
        if contains_tensor(value):
            return autopack(value, dtype, name or "packed")
    from ..ops.array_ops import constant  # the Const op lives with the array ops
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def convert_n_to_tensor(values, dtype=None, name=None) -> List[Tensor]:
    return [convert_to_tensor(v, dtype=dtype, name=name) for v in values]


def numpy_to_tensor_value(value, dtype: Optional[_dtypes.DType] = None) -> np.ndarray:
    """A Python or numpy value as an ndarray of a tfjupyter dtype (TF's default dtypes)."""
    if dtype is not None:
        if dtype is _dtypes.string:
            return _as_string_array(value)
        arr = np.asarray(value)
        if arr.dtype.kind in "OSU" and dtype is not _dtypes.string:
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        if dtype.is_integer and arr.dtype.kind == "f" and not np.all(np.equal(np.mod(arr, 1), 0)):
            raise TypeError(f"Expected {dtype.name}, got {value!r} with fractional values.")
        if dtype.is_bool and arr.dtype.kind != "b":
            raise TypeError(f"Expected bool, got {value!r} of type '{type(value).__name__}'.")
        return arr.astype(dtype.as_numpy_dtype, copy=False)
    if isinstance(value, (bytes, str)):
        return _as_string_array(value)
    arr = np.asarray(value)
    if arr.dtype.kind in "OSU":
        return _as_string_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        _dtypes.as_dtype(arr.dtype)  # numpy values keep their dtype; this rejects unsupported ones
        return arr
    # Python values: floats -> float32, ints -> int32 (int64 if they do not fit).
    if arr.dtype.kind == "f":
        return arr.astype(np.float32)
    if arr.dtype.kind in "iu":
        if arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min):
            return arr.astype(np.int64)
        return arr.astype(np.int32)
    if arr.dtype.kind in "bc":          # bools; complex numbers are complex128, as in TensorFlow
        return arr
    raise TypeError(f"Cannot convert {value!r} to a tensor: unsupported type {arr.dtype}")


def _as_string_array(value) -> np.ndarray:
    arr = np.asarray(value, dtype=object)
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            flat[i] = v.encode()
        elif not isinstance(v, bytes):
            raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}' instead.")
    return arr


# -- module-level conveniences on the default graph -------------------------------------------------
def op(op_type: str, inputs: Sequence, attrs: Optional[Dict] = None, name: Optional[str] = None,
       dtype_hint=None) -> Operation:
    """Creates an op in the graph of its inputs (or the default graph)."""
    graph = _graph_of(inputs) or get_default_graph()
    tensors = []
    for x in inputs:
        t = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype_hint)
        tensors.append(t)
    return graph.create_op(op_type, tensors, attrs, name)


@contextlib.contextmanager
def name_scope(name: Optional[str], default_name: Optional[str] = None, values=None):
    """``with tf.name_scope('layer1') as scope:`` — scope is 'layer1/' (made unique)."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name for name_scope must be a string, got {name!r}")
    graph = (_graph_of(values) if values else None) or get_default_graph()
    with graph.as_default(), graph.name_scope(name if name is not None else default_name) as s:
        yield s


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(name: str, scope: Optional[str] = None) -> List:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name: str) -> List:
    return get_default_graph().get_collection_ref(name)


# -- names under an export or import scope (meta graphs) -------------------------------------------
def strip_name_scope(name: str, export_scope: Optional[str]) -> str:
    """``name`` without the leading ``export_scope/``, also inside ``^name`` (control inputs)
    and ``loc:@name`` (colocation groups); unchanged when it is outside the scope."""
    if not export_scope:
        return name
    scope = re.escape(export_scope.rstrip("/"))
    return re.sub(r"([\^]|loc:@|^)" + scope + r"/+(.*)", r"\1\2", name, count=1)


def prepend_name_scope(name: str, import_scope: Optional[str]) -> str:
    """``import_scope/name``, also inside ``^name`` and ``loc:@name``."""
    if not import_scope:
        return name
    scope = import_scope.rstrip("/")
    return re.sub(r"([\^]|loc:@|^)(.*)", lambda m: f"{m.group(1)}{scope}/{m.group(2)}", name,
                  count=1)


# -- collections whose items are written as protos (meta graphs) -----------------------------------
class _ProtoFunctions(NamedTuple):
    proto_type: type
    to_proto: Optional[Callable[[Any, Optional[str]], Any]]      # (item, export_scope) -> proto
    from_proto: Optional[Callable[[Any, Optional[str]], Any]]    # (proto, import_scope) -> item
    name_fields: Tuple[str, ...]     # the proto's fields holding graph names (import renames them)


_PROTO_FUNCTIONS: Dict[str, _ProtoFunctions] = {}


def register_proto_function(collection_name: str, proto_type=None, to_proto=None,
                            from_proto=None, name_fields: Sequence[str] = ()) -> None:
    """Declares that the items of a collection are written as ``proto_type`` protos
    (``to_proto(item, export_scope)``, None to leave an item out) and read back with
    ``from_proto(proto, import_scope)`` (TensorFlow's ``ops.register_proto_function``).
    ``name_fields`` are the proto's fields that hold op or tensor names (strings or repeated
    strings), so an import can give them the names the ops got."""
    _PROTO_FUNCTIONS[collection_name] = _ProtoFunctions(proto_type, to_proto, from_proto,
                                                        tuple(name_fields))


def get_proto_functions(collection_name: str) -> Optional[_ProtoFunctions]:
    """What ``register_proto_function`` declared for a collection, or None."""
    return _PROTO_FUNCTIONS.get(collection_name)

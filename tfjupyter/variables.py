"""Variables: named state that persists across steps (per session, or per task when distributed).

A ``Variable`` named ``w`` is the ops TensorFlow 1.x builds for it: ``w`` (VariableV2, the
state), ``w/Assign`` (its initializer, colocated with it) and ``w/read`` (an Identity that
every use of the variable reads through, so gradients flow back to ``w``).

A ``PartitionedVariable`` (``get_variable`` with a partitioner) is a list of Variables
``w/part_0``, ``w/part_1``, ... cut along one axis; each part's ``SaveSliceInfo`` says which
slice of the full ``w`` it is, so the Saver saves the parts as slices of one tensor ``w``.
"""
from __future__ import annotations

import os
from typing import Callable, List, Optional, Sequence

from tensorboard.compat.proto import variable_pb2

from .framework import dtypes
from .framework.ops import (GraphKeys, Operation, Tensor, convert_to_tensor, get_default_graph,
                            prepend_name_scope, register_proto_function,
                            register_tensor_conversion_function, strip_name_scope)
from .framework.registry import NotDifferentiable, register_op
from .framework.tensor_shape import TensorShape, as_shape
from .ops import _shapes, array_ops, control_flow_ops

__all__ = ["Variable", "PartitionedVariable", "global_variables", "all_variables",
           "trainable_variables",
           "local_variables", "moving_average_variables", "model_variables",
           "global_variables_initializer", "initialize_all_variables", "local_variables_initializer",
           "initialize_local_variables", "variables_initializer", "initialize_variables",
           "is_variable_initialized", "report_uninitialized_variables",
           "assert_variables_initialized", "assign", "assign_add", "assign_sub"]


# -- state ops -------------------------------------------------------------------------------------
@register_op("VariableV2", stateful=True)
def _variable_shape(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


NotDifferentiable("VariableV2")


@register_op("Assign", ref_inputs=(0,), stateful=True)
def _assign_shape(op):
    ref, value = op.inputs
    _shapes.check_same_dtype(op, ref, value)
    if op.get_attr("validate_shape") and not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes must be equal rank, but are {ref.shape} and {value.shape} for "
                         f"'{op.name}' (op: 'Assign') with input shapes: {ref.shape}, {value.shape}.")
    return [(ref.dtype, ref.shape if op.get_attr("validate_shape") else value.shape)]


@register_op("AssignAdd", ref_inputs=(0,), stateful=True)
@register_op("AssignSub", ref_inputs=(0,), stateful=True)
def _assign_update_shape(op):
    ref, value = op.inputs
    _shapes.check_same_dtype(op, ref, value)
    if not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible for "
                         f"'{op.name}' (op: '{op.type}')")
    return [(ref.dtype, ref.shape)]


@register_op("InitializedValue", ref_inputs=(0,))
def _initialized_value_shape(op):
    ref, initial = op.inputs
    _shapes.check_same_dtype(op, ref, initial)
    return [(ref.dtype, ref.shape)]


NotDifferentiable("InitializedValue")


@register_op("IsVariableInitialized", ref_inputs=(0,))
def _is_initialized_shape(op):
    return [(dtypes.bool, TensorShape(()))]


for _t in ("Assign", "AssignAdd", "AssignSub", "IsVariableInitialized"):
    NotDifferentiable(_t)


def _state_op(op_type: str, ref, value, attrs, name):
    ref_t = ref._variable if isinstance(ref, Variable) else ref
    if not isinstance(ref_t, Tensor) or ref_t.op.type != "VariableV2":
        raise TypeError(f"{op_type} needs a Variable to write into, got {ref!r}")
    value = convert_to_tensor(value, dtype=ref_t.dtype)
    graph = ref_t.graph
    return graph.create_op(op_type, [ref_t, value], attrs, name=name or op_type).outputs[0]


def assign(ref, value, validate_shape: bool = True, use_locking: bool = True,
           name: Optional[str] = None) -> Tensor:
    if isinstance(ref, PartitionedVariable):    # as TF: the parts' assigns, a list
        return ref.assign(value, use_locking=use_locking, name=name)
    return _state_op("Assign", ref, value, {"validate_shape": validate_shape,
                                            "use_locking": use_locking}, name)


def assign_add(ref, value, use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    if isinstance(ref, PartitionedVariable):
        return ref.assign_add(value, use_locking=use_locking, name=name)
    return _state_op("AssignAdd", ref, value, {"use_locking": use_locking}, name)


def assign_sub(ref, value, use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    if isinstance(ref, PartitionedVariable):
        return ref.assign_sub(value, use_locking=use_locking, name=name)
    return _state_op("AssignSub", ref, value, {"use_locking": use_locking}, name)


# -- Variable --------------------------------------------------------------------------------------
class Variable:
    """``tf.Variable(initial_value, name=...)``: a variable with an initializer op."""

    def __init__(self, initial_value=None, trainable: bool = True,
                 collections: Optional[Sequence[str]] = None, validate_shape: bool = True,
                 caching_device=None, name: Optional[str] = None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None):
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            self._constraint = constraint
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        from .framework.func_graph import init_scope
        with init_scope():  # inside tf.cond/tf.while_loop: created once, in the outer graph
            self._init_from_args(initial_value, trainable, collections, validate_shape, name,
                                 dtype, constraint)

    def _init_from_args(self, initial_value, trainable, collections, validate_shape, name,
                        dtype, constraint) -> None:
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        graph = get_default_graph()
        with graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                # As TF: the initializer's ops ignore device scopes and live with the variable.
                first_new = len(graph._ops)
                with graph.name_scope("Initializer"), graph.device(None):
                    initial_value = initial_value()
                for init_op in graph._ops[first_new:]:
                    init_op._attrs["_class"] = [f"loc:@{scope[:-1]}".encode()]
            self._initial_value = convert_to_tensor(initial_value, dtype=dtype,
                                                    name="initial_value")
            shape = self._initial_value.shape
            if validate_shape and not shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: "
                                 f"{self._initial_value}")
            if not validate_shape:
                shape = TensorShape(None)
            self._variable = graph.create_op(
                "VariableV2", [], {"shape": shape, "dtype": self._initial_value.dtype,
                                   "container": "", "shared_name": ""}, name=scope).outputs[0]
            with graph.colocate_with(self._variable.op):
                self._initializer_op = assign(self._variable, self._initial_value,
                                              validate_shape=validate_shape, name="Assign").op
                self._snapshot = array_ops.identity(self._variable, name="read")
        self._trainable = trainable
        self._save_slice_info = None
        self._constraint = constraint
        graph.add_to_collections(collections, self)

    def _init_from_proto(self, variable_def, import_scope: Optional[str]) -> None:
        """The Variable whose ops a VariableDef names, already in the default graph (an imported
        meta graph); the importer, not this, puts it in its collections."""
        if variable_def.is_resource:
            raise ValueError(f"Variable {variable_def.variable_name!r} is a resource variable; "
                             "tfjupyter has reference (VariableV2) variables only.")
        graph = get_default_graph()

        def element(name: str):
            return graph.as_graph_element(prepend_name_scope(name, import_scope))

        self._variable = element(variable_def.variable_name)
        self._initializer_op = element(variable_def.initializer_name)
        self._snapshot = element(variable_def.snapshot_name)
        # A VariableDef written by old TensorFlow versions may lack the initial value's name.
        self._initial_value = (element(variable_def.initial_value_name)
                               if variable_def.initial_value_name else None)
        self._trainable = variable_def.trainable
        self._save_slice_info = (SaveSliceInfo.from_proto(variable_def.save_slice_info_def,
                                                          import_scope)
                                 if variable_def.HasField("save_slice_info_def") else None)

    def to_proto(self, export_scope: Optional[str] = None):
        """The VariableDef of this variable (its op names, without ``export_scope``), or None
        when the variable is outside ``export_scope``."""
        if export_scope and not self._variable.name.startswith(export_scope + "/"):
            return None
        proto = variable_pb2.VariableDef(
            variable_name=strip_name_scope(self._variable.name, export_scope),
            initializer_name=strip_name_scope(self._initializer_op.name, export_scope),
            snapshot_name=strip_name_scope(self._snapshot.name, export_scope),
            trainable=bool(self._trainable), is_resource=False)
        if self._initial_value is not None:
            proto.initial_value_name = strip_name_scope(self._initial_value.name, export_scope)
        slice_info = self._save_slice_info.to_proto(export_scope) \
            if self._save_slice_info is not None else None
        if slice_info is not None:
            proto.save_slice_info_def.MergeFrom(slice_info)
        return proto

    @staticmethod
    def from_proto(variable_def, import_scope: Optional[str] = None) -> "Variable":
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # -- identity --------------------------------------------------------------------------------
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    dtype = property(lambda self: self._variable.dtype)
    device = property(lambda self: self._variable.device)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self._variable.shape

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _ref(self) -> Tensor:
        return self._variable

    def value(self) -> Tensor:
        return self._snapshot

    def read_value(self) -> Tensor:
        return array_ops.identity(self._variable, name="read")

    def initialized_value(self) -> Tensor:
        """The variable's value if it is initialized, else its initial value — without
        initializing it (TF's cond on is_variable_initialized), so another variable can be
        initialized from this one in any order."""
        from .framework.func_graph import init_scope
        from .ops.cond_ops import cond
        # As TF 1.x: a cond on is_variable_initialized. The read happens inside the branch
        # (the If op takes the variable by reference), so it never reads an uninitialized one.
        with init_scope(), self.graph.colocate_with(self._variable.op):
            return cond(is_variable_initialized(self._variable),
                        lambda: array_ops.identity(self._variable, name="read"),
                        lambda: self._initial_value, name="cond")

    # -- state changes ---------------------------------------------------------------------------
    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        t = assign(self._variable, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        t = assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        t = assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None) -> None:
        """Writes ``value`` into the variable through its initializer (no new ops)."""
        from .client.session import _default_session_for
        _default_session_for(self.graph, session).run(self._initializer_op,
                                                      {self._initial_value: value})

    def is_initialized(self) -> Tensor:
        return is_variable_initialized(self)

    def set_shape(self, shape) -> None:
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    def __repr__(self) -> str:
        return (f"<tf.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}_ref>")

    # -- a part of a partitioned variable ----------------------------------------------------------
    def _set_save_slice_info(self, save_slice_info: "SaveSliceInfo") -> None:
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self) -> Optional["SaveSliceInfo"]:
        return self._save_slice_info

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError("Using a `tf.Variable` as a Python `bool` is not allowed.")

    def __iter__(self):
        return iter(self.value())


class SaveSliceInfo:
    """Which slice of the full variable ``full_name`` (of ``full_shape``) a part holds: the
    part starts at ``var_offset`` and has shape ``var_shape``. ``spec`` is the Saver's
    shape_and_slice string, "10 4 4,3:0,4"."""

    def __init__(self, full_name: Optional[str] = None, full_shape=None, var_offset=None,
                 var_shape=None, save_slice_info_def=None, import_scope: Optional[str] = None):
        if save_slice_info_def is not None:
            full_name = prepend_name_scope(save_slice_info_def.full_name, import_scope)
            full_shape = list(save_slice_info_def.full_shape)
            var_offset = list(save_slice_info_def.var_offset)
            var_shape = list(save_slice_info_def.var_shape)
        self.full_name = full_name
        self.full_shape = [int(d) for d in full_shape]
        self.var_offset = [int(d) for d in var_offset]
        self.var_shape = [int(d) for d in var_shape]

    @property
    def spec(self) -> str:
        return (" ".join(str(d) for d in self.full_shape) + " "
                + ":".join(f"{o},{n}" for o, n in zip(self.var_offset, self.var_shape)))

    def to_proto(self, export_scope: Optional[str] = None):
        """The SaveSliceInfoDef of a VariableDef, or None outside ``export_scope``."""
        if export_scope and not self.full_name.startswith(export_scope + "/"):
            return None
        return variable_pb2.SaveSliceInfoDef(
            full_name=strip_name_scope(self.full_name, export_scope),
            full_shape=self.full_shape, var_offset=self.var_offset, var_shape=self.var_shape)

    @staticmethod
    def from_proto(save_slice_info_def, import_scope: Optional[str] = None) -> "SaveSliceInfo":
        return SaveSliceInfo(save_slice_info_def=save_slice_info_def, import_scope=import_scope)

    def __repr__(self) -> str:
        return f"SaveSliceInfo({self.full_name!r}, {self.spec!r})"


Variable.SaveSliceInfo = SaveSliceInfo


class PartitionedVariable:
    """A variable made of parts cut along one axis (``get_variable(..., partitioner=...)``).

    It iterates over its parts (Variables, in offset order); used as a tensor, it is their
    concatenation (``as_tensor()``: ``<name>/ConcatPartitions/concat``, then ``<name>``)."""

    def __init__(self, name: str, shape, dtype, variable_list: Sequence[Variable], partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        shape = as_shape(shape)
        if any(v._get_save_slice_info() is None for v in variable_list):
            raise ValueError("All variables must have a save_slice_info available: "
                             f"{[v.name for v in variable_list]}")
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        for v in variable_list:
            if v._get_save_slice_info().full_shape != shape.as_list():
                raise ValueError(f"All variables' full shapes must match shape: {shape}; but "
                                 f"full shapes were: {[v._get_save_slice_info().full_shape]}")
        self._variable_list = sorted(variable_list,
                                     key=lambda v: v._get_save_slice_info().var_offset)
        self._name = name
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self) -> TensorShape:
        return self._shape

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length of {len(axes)} > 1 partitioned variables")
        return len(self._variable_list)

    def _get_variable_list(self) -> List[Variable]:
        return self._variable_list

    def _get_partitions(self) -> List[int]:
        return self._partitions

    def _partition_axes(self) -> List[int]:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def as_tensor(self) -> Tensor:
        """The full value: the parts concatenated (outside any control dependencies)."""
        graph = self.graph
        with graph.as_default(), graph.control_dependencies(None):
            if len(self._variable_list) == 1:
                with graph.name_scope(None):
                    return array_ops.identity(self._variable_list[0], name=self._name)
            axes = self._partition_axes()
            if len(axes) > 1:
                raise NotImplementedError(
                    f"Cannot concatenate along more than one dimension: {axes}.  Multi-axis "
                    "partition concat is not supported")
            with graph.name_scope(self._name + "/ConcatPartitions/"):
                concatenated = array_ops.concat(self._variable_list, axes[0])
            with graph.name_scope(None):
                return array_ops.identity(concatenated, name=self._name)

    def _apply_assign_fn(self, assign_fn, value) -> list:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(
                f"Cannot do assign action along more than one dimension: {axes}.  Multi-axis "
                "partition assign action is not supported ")
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError(f"Assigning {len(value)} values to the "
                                 f"{len(self._variable_list)} parts of {self._name}")
            values = value
        elif isinstance(value, PartitionedVariable):
            values = list(value)
        else:
            values = array_ops.split(
                value, [v.shape.as_list()[axes[0]] for v in self._variable_list], axis=axes[0])
        return [assign_fn(v, values[i]) for i, v in enumerate(self._variable_list)]

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        return self._apply_assign_fn(lambda v, x: v.assign(
            x, use_locking=use_locking, name=name, read_value=read_value), value)

    def assign_add(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        return self._apply_assign_fn(lambda v, x: v.assign_add(
            x, use_locking=use_locking, name=name, read_value=read_value), value)

    def assign_sub(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        return self._apply_assign_fn(lambda v, x: v.assign_sub(
            x, use_locking=use_locking, name=name, read_value=read_value), value)

    def __repr__(self) -> str:
        return (f"<tf.PartitionedVariable '{self._name}' shape={self._shape} "
                f"dtype={self._dtype.name} parts={len(self._variable_list)}>")


def _partitioned_to_tensor(v: PartitionedVariable, dtype=None, name=None, as_ref=False):
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError(f"Incompatible type conversion requested to type '{dtype.name}' for "
                         f"variable of type '{v.dtype.name}'")
    if as_ref:
        raise NotImplementedError("PartitionedVariable doesn't support being used as a "
                                  "reference.")
    return v.as_tensor()


def _install_variable_operators() -> None:
    """A Variable in an expression means its value: delegate every Tensor operator."""
    names = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
             "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
             "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__",
             "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__",
             "__rxor__", "__invert__", "__getitem__", "__div__", "__rdiv__"]
    for n in names:
        def method(self, *args, _n=n):
            return getattr(self.value(), _n)(*args)
        method.__name__ = n
        setattr(Variable, n, method)


_install_variable_operators()
register_tensor_conversion_function(
    Variable, lambda v, dtype=None, name=None, as_ref=False: v._variable if as_ref else v.value())
register_tensor_conversion_function(PartitionedVariable, _partitioned_to_tensor)

# In a MetaGraphDef the variable collections hold VariableDefs, so an import gets Variables back.
for _key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES,
             GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES,
             GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.GLOBAL_STEP, "metric_variables"):
    register_proto_function(
        _key, proto_type=variable_pb2.VariableDef,
        to_proto=lambda v, export_scope: v.to_proto(export_scope),
        from_proto=Variable.from_proto,
        name_fields=("variable_name", "initial_value_name", "initializer_name", "snapshot_name"))


# -- collections and initializers --------------------------------------------------------------------
def global_variables(scope: Optional[str] = None) -> List[Variable]:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: Optional[str] = None) -> List[Variable]:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: Optional[str] = None) -> List[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: Optional[str] = None) -> List[Variable]:
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: Optional[str] = None) -> List[Variable]:
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> Operation:
    if not var_list:
        return control_flow_ops.no_op(name=name)
    return control_flow_ops.group(*[v.initializer for v in var_list], name=name)


initialize_variables = variables_initializer


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables())


initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable) -> Tensor:
    ref = variable._variable if isinstance(variable, Variable) else variable
    return ref.graph.create_op("IsVariableInitialized", [ref], {"dtype": ref.dtype},
                               name="IsVariableInitialized").outputs[0]


def report_uninitialized_variables(var_list: Optional[Sequence[Variable]] = None,
                                   name: str = "report_uninitialized_variables") -> Tensor:
    """A 1-D string tensor: the names of the variables in var_list not yet initialized."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph.name_scope(name):
        flags = [is_variable_initialized(v) for v in var_list]
        with graph.device(_UNINITIALIZED_REPORTING_DEVICE):  # string tensors: on the host, as TF
            names = array_ops.constant([v.op.name for v in var_list] or [""], dtype=dtypes.string)
            return graph.create_op("ReportUninitialized", [names] + flags, {"N": len(flags)},
                                   name="report").outputs[0]


# TF's TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING: where the name list and the report run.
_UNINITIALIZED_REPORTING_DEVICE = os.environ.get(
    "TF_DEVICE_FOR_UNINITIALIZED_VARIABLE_REPORTING", "/cpu:0")


@register_op("ReportUninitialized")
def _report_uninitialized_shape(op):
    return [(dtypes.string, TensorShape([None]))]


NotDifferentiable("ReportUninitialized")


def assert_variables_initialized(var_list: Optional[Sequence[Variable]] = None) -> Operation:
    report = report_uninitialized_variables(var_list)
    with report.graph.device(_UNINITIALIZED_REPORTING_DEVICE):
        return report.graph.create_op("AssertNoneUninitialized", [report], {},
                                      name="assert_variables_initialized")


@register_op("AssertNoneUninitialized")
def _assert_none_uninitialized_shape(op):
    return []


NotDifferentiable("AssertNoneUninitialized")

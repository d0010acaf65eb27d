"""Variable scopes and ``tf.get_variable``: named, shareable variables.

Each graph keeps a variable store (``graph._variable_store``: full name -> Variable) and a
variable-scope store (``graph._variable_scope``: the current ``VariableScope`` and how often each
scope name was opened, per thread). ``tf.variable_scope('layer1')`` opens both a variable scope
('layer1', which prefixes ``get_variable`` names) and a name scope ('layer1/' made unique, which
prefixes the names of other ops). ``get_variable`` names depend only on variable scopes, so the
tower pattern works::

    for i in range(2):
        with tf.name_scope('GPU_%d' % i):
            loss = build()                          # get_variable('layer1/weights') both times
            tf.get_variable_scope().reuse_variables()

Reuse is inherited by sub-scopes; ``reuse=tf.AUTO_REUSE`` creates a variable if it is missing
and returns it otherwise. With a partitioner (``get_variable``'s or the scope's), a variable of
rank >= 1 is a ``PartitionedVariable`` of parts ``name/part_<i>`` (ops/partitioned_variables.py).
"""
from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import os
import threading
import traceback
from typing import Callable, Dict, List, Optional, Sequence

from . import init_ops
from .framework import dtypes
from .framework.ops import (GraphKeys, Tensor, _graph_of, convert_to_tensor, get_collection,
                            get_default_graph, numpy_to_tensor_value)
from .framework.tensor_shape import TensorShape, as_shape
from .ops import array_ops, partitioned_variables
from .variables import PartitionedVariable, SaveSliceInfo, Variable

__all__ = ["variable_scope", "variable_op_scope", "get_variable", "get_local_variable",
           "get_variable_scope", "VariableScope", "AUTO_REUSE", "no_regularizer"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class _ReuseMode(enum.Enum):
    """``reuse=tf.AUTO_REUSE``: get_variable creates missing variables and returns existing ones."""
    AUTO_REUSE = 1

    def __repr__(self) -> str:
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_) -> None:
    """Use it as a variable's regularizer to turn off its scope's default regularizer."""
    return None


# -- VariableScope ---------------------------------------------------------------------------------
class VariableScope:
    """The defaults ``get_variable`` applies under a ``variable_scope``: its name prefix, reuse
    flag, initializer, regularizer, dtype, custom getter...; ``original_name_scope`` is the name
    scope ('layer1/') opened when the scope was first created."""

    def __init__(self, reuse, name: str = "", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 name_scope: str = "", dtype=dtypes.float32, use_resource=None, constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = None
        self.set_custom_getter(custom_getter)
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        """From now on, get_variable in this scope (and sub-scopes opened later) reuses."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter!r}")
        self._custom_getter = custom_getter

    def get_collection(self, name: str) -> List:
        """The items of a collection whose names start with this scope's name."""
        return get_collection(name, self._name + "/" if self._name else "")

    def trainable_variables(self) -> List[Variable]:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self) -> List[Variable]:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self) -> List[Variable]:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store: "_VariableStore", name: str, shape=None, dtype=None,
                     initializer=None, regularizer=None, reuse=None, trainable=None,
                     collections=None, caching_device=None, partitioner=None,
                     validate_shape: bool = True, use_resource=None, custom_getter=None,
                     constraint=None) -> Variable:
        """get_variable with this scope's defaults for the arguments left as None."""
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if use_resource is None:
            use_resource = self._use_resource
        full_name = self._name + "/" + name if self._name else name
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if initializer is not None and not callable(initializer):
                init_dtype = _value_dtype(initializer)
                if init_dtype is not dtype:
                    raise ValueError(f"Initializer type '<dtype: '{init_dtype.name}'>' and "
                                     f"explicit dtype '<dtype: '{dtype.name}'>' don't match.")
        if initializer is None:
            initializer = self._initializer
        if constraint is None:
            constraint = self._constraint
        if dtype is None:
            dtype = self._dtype
        # Variable names depend only on variable scopes: build it outside any name scope.
        with var_store.graph.name_scope(None):
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device, partitioner=partitioner,
                validate_shape=validate_shape, use_resource=use_resource,
                custom_getter=custom_getter, constraint=constraint)

    def __repr__(self) -> str:
        return f"<tf.VariableScope '{self._name}' reuse={self._reuse!r}>"


def _value_dtype(value) -> dtypes.DType:
    """The dtype a constant initializer's value gets, without adding ops to the graph."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return value.dtype
    return dtypes.as_dtype(numpy_to_tensor_value(value).dtype)


# -- the variable store ----------------------------------------------------------------------------
class _VariableStore:
    """The variables get_variable created in one graph, by full name."""

    def __init__(self, graph):
        self.graph = graph
        self._vars: Dict[str, Variable] = {}
        self._partitioned_vars: Dict[str, PartitionedVariable] = {}
        self._created_at: Dict[str, List[traceback.FrameSummary]] = {}

    def get_variable(self, name: str, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape: bool = True,
                     use_resource=None, custom_getter=None, constraint=None) -> Variable:
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter!r}")
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
        if trainable is None:
            trainable = True

        def true_getter(name, shape=None, dtype=dtypes.float32, initializer=None,
                        regularizer=None, reuse=None, trainable=None, collections=None,
                        caching_device=None, partitioner=None, validate_shape=True,
                        use_resource=None, constraint=None, **unused):
            cut = partitioner is not None and not (isinstance(shape, (list, tuple)) and
                                                   not shape)   # scalars are never cut
            if cut and not callable(partitioner):
                raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
            # A partitioned variable is reused without its partitioner too.
            if cut or (reuse is True and partitioner is None and name in self._partitioned_vars):
                return self._get_partitioned_variable(
                    name, partitioner, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, reuse=reuse, trainable=trainable,
                    collections=collections, caching_device=caching_device,
                    validate_shape=validate_shape, constraint=constraint)
            return self._get_single_variable(
                name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse,
                trainable=True if trainable is None else trainable, collections=collections,
                caching_device=caching_device, validate_shape=validate_shape,
                constraint=constraint)

        kwargs = dict(name=name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, reuse=reuse, trainable=trainable,
                      collections=collections, caching_device=caching_device,
                      partitioner=partitioner, validate_shape=validate_shape,
                      use_resource=use_resource)
        if custom_getter is None:
            return true_getter(constraint=constraint, **kwargs)
        # Older custom getters do not take `constraint`; pass it only where it is accepted.
        if _accepts(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(getter=true_getter, **kwargs)

    def _get_partitioned_variable(self, name: str, partitioner, shape, dtype, initializer,
                                  regularizer, reuse, trainable, collections, caching_device,
                                  validate_shape, constraint) -> PartitionedVariable:
        """The PartitionedVariable ``name``: its parts ``name/part_<i>``, each with the
        SaveSliceInfo of its slice, created or (reusing) found, as TensorFlow 1.15 does."""
        if name in self._vars:
            raise ValueError(f"A partitioner was provided, but an unpartitioned version of the "
                             f"variable was found: {name}.  Perhaps a variable of the same name "
                             "was already created without partitioning?")
        dtype = dtypes.as_dtype(dtype)
        shape = _as_variable_shape(shape, name) if shape is not None else TensorShape(None)
        if isinstance(initializer, Tensor):
            shape = shape.merge_with(initializer.shape)
        partitions = None
        if not reuse or partitioner:
            partitions = partitioned_variables.call_partitioner(partitioner, shape, dtype)

        if name in self._partitioned_vars:
            if reuse is False:
                raise ValueError(f"Partitioned variable with name {name} already exists. Did "
                                 "you mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                                 "VarScope?")
            existing = self._partitioned_vars[name]
            if not shape.is_compatible_with(existing.get_shape()):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                                 f"shape {shape} and found shape {existing.get_shape()}.")
            if dtype is not existing.dtype:
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                                 f"dtype {dtype.name} and found dtype {existing.dtype.name}.")
            if partitions is not None and existing._get_partitions() != partitions:
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                                 f"partitions {partitions} and found partitions "
                                 f"{existing._get_partitions()}.")
            return existing
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created "
                             "with tf.get_variable(). Did you mean to set reuse=False or "
                             "reuse=tf.AUTO_REUSE in VarScope?")

        slice_dim, num_slices = partitioned_variables.slice_dim_and_num_slices(partitions)
        if f"{name}/part_0" in self._vars:
            if f"{name}/part_{num_slices - 1}" not in self._vars:
                raise ValueError(
                    "Partitioner returned a different partitioning than what was already "
                    f"found.  Partitioner returned {num_slices} shards, and shard {name}/part_0 "
                    f"was found, but {name}/part_{num_slices - 1} was not.")
            if f"{name}/part_{num_slices}" in self._vars:
                raise ValueError(
                    "Partitioner returned a different partitioning than what was already "
                    f"found.  Partitioner returned {num_slices} shards, and shard {name}/part_0 "
                    f"was found, but so was the extra shard {name}/part_{num_slices}.")

        parts = []
        full_shape = shape.as_list()
        for i, (offset, part_shape) in enumerate(
                partitioned_variables.iter_slices(full_shape, num_slices, slice_dim)):
            part_name = f"{name}/part_{i}"
            partition_info = partitioned_variables.PartitionInfo(full_shape, offset)
            with self.graph.name_scope(part_name + "/PartitionedInitializer"):
                # A value to start from is cut like the variable; an initializer is called
                # with the part's shape (and its PartitionInfo).
                if initializer is None or callable(initializer):
                    init, init_shape = initializer, part_shape
                else:
                    init = array_ops.slice(convert_to_tensor(initializer, dtype=None if isinstance(
                        initializer, Tensor) else dtype), offset, part_shape)
                    dtype, init_shape = init.dtype.base_dtype, None
            with self.graph.name_scope(None):
                var = self._get_single_variable(
                    part_name, shape=init_shape, dtype=dtype, initializer=init,
                    regularizer=regularizer, reuse=reuse, trainable=trainable,
                    collections=collections, caching_device=caching_device,
                    validate_shape=validate_shape, constraint=constraint,
                    partition_info=partition_info)
            var._set_save_slice_info(SaveSliceInfo(name, full_shape, offset, part_shape))
            parts.append(var)
        partitioned = PartitionedVariable(name=name, shape=shape, dtype=dtype,
                                          variable_list=parts, partitions=partitions)
        self._partitioned_vars[name] = partitioned
        return partitioned

    def _get_single_variable(self, name: str, shape, dtype, initializer, regularizer, reuse,
                             trainable, collections, caching_device, validate_shape,
                             constraint, partition_info=None) -> Variable:
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        if shape is not None:
            shape = _as_variable_shape(shape, name)

        if name in self._vars:
            found = self._vars[name]
            if reuse is False:
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to "
                                 "set reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally "
                                 f"defined at:\n\n{self._where_created(name)}")
            if shape is not None and not shape.is_compatible_with(found.get_shape()):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} "
                                 f"and found shape {found.get_shape()}.")
            if dtype is not found.dtype:
                raise ValueError(f"Trying to share variable {name}, but specified dtype "
                                 f"{dtype.name} and found dtype {found.dtype.name}.")
            return found

        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` "
                                 "argument must be specified.")
            initializer = _default_initializer(name, dtype)

        if initializing_from_value:
            init_val, variable_dtype = initializer, None
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape is not None and shape.is_fully_defined():
                init_kwargs = {"dtype": dtype}
                if isinstance(initializer, init_ops.Initializer) or \
                        _accepts(initializer, "partition_info"):
                    init_kwargs["partition_info"] = partition_info
                init_val = _checked_initial_value(name, initializer, shape, init_kwargs)
                variable_dtype = dtype
            elif _needs_no_arguments(initializer):
                init_val, variable_dtype = initializer, None
            else:
                raise ValueError(
                    f"Variable {name}: the initializer passed is not valid. It should be a "
                    "callable with no arguments and the shape should not be provided or an "
                    "initializer (like tf.zeros_initializer()) and `shape` should be fully "
                    f"defined; got shape {shape} and initializer {initializer!r}.")

        graph = self.graph
        # Like TF's init_scope: the variable does not depend on surrounding control dependencies.
        with graph.control_dependencies(None):
            v = Variable(initial_value=init_val, name=name, trainable=trainable,
                         collections=collections, caching_device=caching_device,
                         dtype=variable_dtype, validate_shape=validate_shape,
                         constraint=constraint)
            self._vars[name] = v
            # Source lines are looked up only if the error message needs them.
            self._created_at[name] = traceback.StackSummary.extract(
                traceback.walk_stack(None), lookup_lines=False)

            if regularizer:
                with graph.colocate_with(v), graph.name_scope(name + "/Regularizer/"):
                    loss = regularizer(v)
                if loss is not None:
                    graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v

    def _where_created(self, name: str) -> str:
        """The innermost user frames (outside tfjupyter) that created the variable."""
        frames = [f for f in self._created_at.get(name, [])  # innermost first
                  if not f.filename.startswith(_PACKAGE_DIR)][:5]
        return "".join(traceback.format_list(frames))


def _checked_initial_value(name: str, initializer, shape: TensorShape, kwargs) -> Callable:
    """``() -> initializer(shape, **kwargs)``, checking the result has the shape asked for."""
    def initial_value():
        value = convert_to_tensor(initializer(shape.as_list(), **kwargs), dtype=kwargs["dtype"])
        if not shape.is_compatible_with(value.shape):
            raise ValueError(f"Variable {name}: the initializer returned a value of shape "
                             f"{value.shape}, but the shape asked for is {shape}.")
        return value
    return initial_value


def _as_variable_shape(shape, name: str) -> TensorShape:
    if isinstance(shape, Tensor):
        raise TypeError(f"get_variable('{name}'): shape must be a list of ints (a static "
                        f"shape), got the Tensor {shape.name}.")
    if isinstance(shape, int):
        shape = [shape]
    try:
        return as_shape(shape)
    except (TypeError, ValueError) as e:
        raise TypeError(f"get_variable('{name}'): invalid shape {shape!r}: {e}") from None


def _default_initializer(name: str, dtype: dtypes.DType):
    """glorot_uniform for floats, zeros for integers, bools and strings (TF's defaults)."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_bool or dtype is dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


def _accepts(fn: Callable, arg: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return arg in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _needs_no_arguments(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or
               p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
               for p in params)


# -- per-graph state -------------------------------------------------------------------------------
class _VariableScopeStore(threading.local):
    """The current variable scope and how many times each scope name was opened (per thread)."""

    def __init__(self):
        self.current_scope = VariableScope(False)
        self.variable_scopes_count: Dict[str, int] = {}

    def open_variable_scope(self, scope_name: str) -> None:
        self.variable_scopes_count[scope_name] = self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name: Optional[str]) -> None:
        for k in self.variable_scopes_count:
            if scope_name is None or k.startswith(scope_name + "/"):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name: str) -> int:
        return self.variable_scopes_count.get(scope_name, 0)


def _variable_store(graph=None) -> _VariableStore:
    graph = graph or get_default_graph()
    if graph._variable_store is None:
        graph._variable_store = _VariableStore(graph)
    return graph._variable_store


def stored_variables(graph=None) -> Dict[str, Variable]:
    """The variables get_variable made in ``graph`` (the default one), by full name; the parts
    of a partitioned variable are there by their names, ``w/part_0``... (a copy)."""
    return dict(_variable_store(graph)._vars)


def _scope_store(graph=None) -> _VariableScopeStore:
    graph = graph or get_default_graph()
    if graph._variable_scope is None:
        graph._variable_scope = _VariableScopeStore()
    return graph._variable_scope


def get_variable_scope() -> VariableScope:
    """The current VariableScope of the default graph (the root scope has name '')."""
    return _scope_store().current_scope


def _unique_variable_scope(prefix: str) -> str:
    """prefix, or prefix_1, prefix_2, ... if that variable scope was already opened here."""
    store = _scope_store()
    current = store.current_scope.name
    name = current + "/" + prefix if current else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while store.variable_scope_count(f"{name}_{idx}") > 0:
        idx += 1
    return f"{prefix}_{idx}"


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """Nested custom getters compose: the inner scope's getter calls the outer one's."""
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)
    return wrapped_custom_getter


class _pure_variable_scope:  # noqa: N801 - TensorFlow's name
    """Enters a variable scope without touching name scopes."""

    def __init__(self, name_or_scope, reuse=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, old_name_scope=None,
                 dtype=None, use_resource=None, constraint=None):
        self._name_or_scope = name_or_scope
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._old_name_scope = old_name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint
        self._store = _scope_store()
        self._last_scope: Optional[VariableScope] = None

    def _apply_overrides(self, scope: VariableScope, old_getter) -> VariableScope:
        if self._initializer is not None:
            scope.set_initializer(self._initializer)
        if self._regularizer is not None:
            scope.set_regularizer(self._regularizer)
        if self._caching_device is not None:
            scope.set_caching_device(self._caching_device)
        if self._partitioner is not None:
            scope.set_partitioner(self._partitioner)
        if self._custom_getter is not None:
            scope.set_custom_getter(_maybe_wrap_custom_getter(self._custom_getter, old_getter))
        if self._dtype is not None:
            scope.set_dtype(self._dtype)
        if self._use_resource is not None:
            scope.set_use_resource(self._use_resource)
        return scope

    def __enter__(self) -> VariableScope:
        store = self._store
        self._old = store.current_scope
        if isinstance(self._name_or_scope, VariableScope):
            # Jumping to a captured scope: a copy of it, with the overrides asked for here.
            given = self._name_or_scope
            self._new_name = given.name
            scope = VariableScope(
                given.reuse if not self._reuse else self._reuse, name=given.name,
                initializer=given.initializer, regularizer=given.regularizer,
                caching_device=given.caching_device, partitioner=given.partitioner,
                dtype=given.dtype, custom_getter=given.custom_getter,
                name_scope=given.original_name_scope, use_resource=given.use_resource,
                constraint=self._constraint)
            self._apply_overrides(scope, given.custom_getter)
            store.open_variable_scope(self._new_name)
            self._old_subscopes = dict(store.variable_scopes_count)
        else:
            # Extending the current scope; reuse and the defaults are inherited.
            old = self._old
            self._new_name = old.name + "/" + self._name_or_scope if old.name \
                else self._name_or_scope
            reuse = self._reuse or old.reuse
            scope = VariableScope(
                reuse, name=self._new_name, initializer=old.initializer,
                regularizer=old.regularizer, caching_device=old.caching_device,
                partitioner=old.partitioner, dtype=old.dtype, use_resource=old.use_resource,
                custom_getter=old.custom_getter,
                name_scope=self._name_or_scope if self._old_name_scope is None
                else self._old_name_scope,
                constraint=self._constraint)
            self._apply_overrides(scope, old.custom_getter)
            store.open_variable_scope(self._new_name)
        store.current_scope = scope
        self._last_scope = scope
        return scope

    def __exit__(self, *exc) -> None:
        store = self._store
        if store.current_scope is not self._last_scope:
            raise RuntimeError("Improper nesting of variable_scope.")
        if isinstance(self._name_or_scope, VariableScope):
            store.variable_scopes_count = self._old_subscopes
        else:
            store.close_variable_subscopes(self._new_name)
        store.current_scope = self._old


# -- variable_scope --------------------------------------------------------------------------------
class variable_scope:  # noqa: N801 - TensorFlow's name
    """``with tf.variable_scope('layer1') as scope:`` opens variable scope 'layer1' (prefixing
    get_variable names) and name scope 'layer1/' (made unique; prefixing other ops).

    ``name_or_scope`` may be a captured VariableScope (re-entered with its name; a fresh name
    scope is opened). With ``name_or_scope=None``, ``default_name`` is used, made unique
    ('dense', 'dense_1', ...). ``reuse``: True, tf.AUTO_REUSE, or None/False to inherit.
    ``initializer``, ``regularizer``, ``dtype``, ``custom_getter``... become defaults for
    get_variable inside the scope.
    """

    def __init__(self, name_or_scope, default_name: Optional[str] = None, values=None,
                 initializer=None, regularizer=None, caching_device=None, partitioner=None,
                 custom_getter=None, reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope: bool = True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
            raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if reuse is False:
            reuse = None  # False means "inherit": there are no non-inheriting scopes.
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope!r}")
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter!r}")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._values = list(values) if values is not None else []
        self._graph = _graph_of(self._values) or get_default_graph()
        self._scope_kwargs = dict(initializer=initializer, regularizer=regularizer,
                                  caching_device=caching_device, partitioner=partitioner,
                                  custom_getter=custom_getter, dtype=dtype,
                                  use_resource=use_resource, constraint=constraint)
        self._reuse = reuse
        self._auxiliary_name_scope = auxiliary_name_scope
        self._exit_stacks: List[contextlib.ExitStack] = []

    def __enter__(self) -> VariableScope:
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(self._graph.as_default())
            scope = self._enter(stack)
        except BaseException:
            stack.close()
            raise
        self._exit_stacks.append(stack)
        return scope

    def __exit__(self, *exc) -> bool:
        return self._exit_stacks.pop().__exit__(*exc)

    def _enter(self, stack: contextlib.ExitStack) -> VariableScope:
        graph = self._graph
        name_scope = None
        if not self._auxiliary_name_scope:
            current = graph.get_name_scope()
            name_scope = graph.name_scope(current + "/" if current else "")
        given = self._name_or_scope
        if given is not None:
            scope_name = given if isinstance(given, str) else given.name.split("/")[-1]
            if not scope_name and name_scope is None:
                # Entering the root variable scope: no name scope to open.
                return stack.enter_context(
                    _pure_variable_scope(given, reuse=self._reuse, **self._scope_kwargs))
            entered = stack.enter_context(name_scope or graph.name_scope(scope_name))
            old_name_scope = entered if isinstance(given, str) else given.original_name_scope
            return stack.enter_context(_pure_variable_scope(
                given, reuse=self._reuse, old_name_scope=old_name_scope, **self._scope_kwargs))
        if self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        entered = stack.enter_context(name_scope or graph.name_scope(self._default_name))
        unique = _unique_variable_scope(self._default_name)
        return stack.enter_context(_pure_variable_scope(
            unique, old_name_scope=entered, **self._scope_kwargs))


@contextlib.contextmanager
def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """TF 0.x: ``variable_op_scope(values, name, default_name)`` is
    ``variable_scope(name, default_name, values)``."""
    with variable_scope(name_or_scope, default_name=default_name, values=values,
                        initializer=initializer, regularizer=regularizer,
                        caching_device=caching_device, partitioner=partitioner,
                        custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                        use_resource=use_resource, constraint=constraint) as scope:
        yield scope


# -- get_variable ----------------------------------------------------------------------------------
def get_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable: Optional[bool] = None, collections: Optional[Sequence[str]] = None,
                 caching_device=None, partitioner=None, validate_shape: bool = True,
                 use_resource=None, custom_getter=None, constraint=None) -> Variable:
    """Gets the variable ``<current variable scope>/name``, creating it unless reusing.

    ``initializer``: an initializer (``tf.zeros_initializer()``, or the class itself), a
    callable ``(shape, dtype, partition_info) -> Tensor``, or a value/Tensor (then no
    ``shape``). Default: glorot_uniform for floats, zeros for integers. ``regularizer``:
    ``variable -> loss``, added to GraphKeys.REGULARIZATION_LOSSES when the variable is
    created. Errors when creating an existing variable without reuse, when reusing a missing
    one, and when the shape or dtype asked for differ from the existing variable's.
    """
    if not isinstance(name, str):
        raise TypeError(f"get_variable: name must be a string, got {name!r}")
    return get_variable_scope().get_variable(
        _variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint)


def get_local_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable: bool = False, collections: Optional[Sequence[str]] = None,
                       caching_device=None, partitioner=None, validate_shape: bool = True,
                       use_resource=None, custom_getter=None, constraint=None) -> Variable:
    """get_variable for a local variable (GraphKeys.LOCAL_VARIABLES; not trainable)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=trainable, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint)

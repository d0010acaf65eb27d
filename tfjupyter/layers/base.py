"""``tf.layers.Layer``: TensorFlow 1.x's graph-mode layer base, on variable scopes.

A layer owns one variable scope, chosen the first time it is called (or at construction when
the functional form passes ``name``): ``variable_scope(name)`` when named, else
``variable_scope(None, default_name='dense')``, which TF makes unique per graph ('dense',
'dense_1', ...). Every later use re-enters that captured scope with ``reuse=True``, so a layer
object shares its variables across calls, and ``tf.layers.dense(x, 10, name='fc', reuse=True)``
finds the variables an earlier ``name='fc'`` call created. Ops go under the scope's original
name scope ('dense/MatMul'), variables under its variable-scope name ('dense/kernel'), exactly
as in TensorFlow, so TF checkpoints of tf.layers models restore unchanged.

Collections follow TF: regularization losses of newly created variables (and activity
regularization) go to ``GraphKeys.REGULARIZATION_LOSSES``, updates (batch normalization's
moving averages) to ``GraphKeys.UPDATE_OPS``.
"""
from __future__ import annotations

import collections
import re
import weakref
from typing import Any, Callable, List, Optional

from ..framework import dtypes
from ..framework.ops import (GraphKeys, Tensor, convert_to_tensor, get_collection_ref,
                             get_default_graph, name_scope)
from ..framework.tensor_shape import TensorShape
from ..ops import _shapes, array_ops, math_ops
from ..variable_scopes import VariableScope, get_variable, variable_scope
from ..variables import PartitionedVariable, Variable

__all__ = ["Layer"]

# Layer names ('dense_1', ...) are unique per graph, counted from 1 as in TF's
# backend.unique_object_name(zero_based=False); the graph's lifetime bounds the counters.
_LAYER_NAME_UIDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def to_snake_case(name: str) -> str:
    """'BatchNormalization' -> 'batch_normalization', 'Conv2D' -> 'conv2d' (TF's rule)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    # A leading underscore would make a private-looking name; TF prefixes 'private'.
    return "private" + insecure if insecure[0] == "_" else insecure


def _unique_layer_name(base_name: str) -> str:
    graph = get_default_graph()
    uids = _LAYER_NAME_UIDS.setdefault(graph, collections.defaultdict(int))
    uids[base_name] += 1
    return f"{base_name}_{uids[base_name]}"


def _add_elements_to_collection(elements, collection_name: str) -> None:
    """Adds each element once (TF's layers add their updates and losses on every call)."""
    collection = get_collection_ref(collection_name)
    present = {id(e) for e in collection}
    for element in elements:
        if id(element) not in present:
            collection.append(element)
            present.add(id(element))


def constant_bool(value) -> Optional[bool]:
    """A Python bool for ``training`` arguments known while building the graph (a bool, or a
    constant tensor); None for a tensor whose value is only known when the step runs."""
    if isinstance(value, (Tensor, Variable)):
        known = _shapes.constant_value(convert_to_tensor(value))
        return None if known is None else bool(known)
    return bool(value)


class Layer:
    """The base of ``tf.layers``: subclasses define ``build(input_shape)`` (creating variables
    with ``add_weight``) and ``call(inputs, ...)``; ``layer(inputs)`` (= ``layer.apply``)
    builds on first use inside the layer's variable scope and then calls."""

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype=None,
                 activity_regularizer: Optional[Callable] = None, _scope=None, _reuse=None,
                 **kwargs):
        # Keras-style arguments TF 1.x layers accept and that change nothing in graph mode.
        for ignored in ("input_shape", "batch_input_shape", "batch_size", "autocast"):
            kwargs.pop(ignored, None)
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {sorted(kwargs)[0]!r}")
        self.trainable = bool(trainable)
        self.built = False
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._activity_regularizer = activity_regularizer
        self._reuse = _reuse
        self._trainable_weights: List[Variable] = []
        self._non_trainable_weights: List[Variable] = []
        self._losses: List[Tensor] = []
        self._updates: List[Any] = []
        self._init_set_name(name)
        self._scope: Optional[VariableScope] = None
        if _scope:
            # The functional forms pass their ``name`` as the scope, captured right away.
            with variable_scope(_scope) as captured_scope:
                self._scope = captured_scope
        self._current_scope: Optional[VariableScope] = None

    def _init_set_name(self, name) -> None:
        if isinstance(name, VariableScope):
            self._base_name = name.name
            self._name = _unique_layer_name(to_snake_case(type(self).__name__))
        elif name:
            self._base_name = self._name = name
        else:
            self._base_name = to_snake_case(type(self).__name__)
            self._name = _unique_layer_name(self._base_name)

    def _set_scope(self, scope=None) -> None:
        """Captures the layer's variable scope the first time it is needed."""
        if self._scope is not None:
            return
        if self._reuse:
            with variable_scope(scope if scope is not None else self._base_name) as captured:
                self._scope = captured
        else:
            with variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured

    # -- properties ------------------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    activity_regularizer = property(lambda self: self._activity_regularizer)

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(f'No name available for layer scope because the layer "{self._name}"'
                             " has not been used yet. The scope name is determined the first "
                             "time the layer instance is called. You must therefore call the "
                             "layer before querying `scope_name`.")
        return self._scope.name

    @property
    def trainable_weights(self) -> List[Variable]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> List[Variable]:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> List[Variable]:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self) -> List[Tensor]:
        return list(self._losses)

    @property
    def updates(self) -> List[Any]:
        return list(self._updates)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on {self._name}, but the layer "
                             "isn't built.")
        return int(sum(v.get_shape().num_elements() for v in self.weights))

    # -- what subclasses use ---------------------------------------------------------------------
    def add_loss(self, losses, inputs=None) -> None:
        """Adds loss tensors to the layer and to GraphKeys.REGULARIZATION_LOSSES (TF 1.x)."""
        losses = [t for t in (losses if isinstance(losses, (list, tuple)) else [losses])
                  if t is not None]
        self._losses.extend(losses)
        _add_elements_to_collection(losses, GraphKeys.REGULARIZATION_LOSSES)

    def add_update(self, updates, inputs=None) -> None:
        """Adds update ops (run them with the train op: they go to GraphKeys.UPDATE_OPS)."""
        self._updates.extend(updates if isinstance(updates, (list, tuple)) else [updates])

    def add_weight(self, name: str, shape, dtype=None, initializer=None, regularizer=None,
                   trainable: bool = True, constraint=None, partitioner=None,
                   use_resource=None) -> Variable:
        """``get_variable(name)`` in the layer's scope (reusing once the layer is built).
        ``initializer`` None: the scope's initializer, else glorot_uniform. A regularizer's
        loss is added only for a variable created here, not for one reused."""
        self._set_scope(None)
        reuse = self.built or self._reuse
        graph = get_default_graph()
        existing = {id(v) for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
        trainable = bool(trainable) and self.trainable
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with name_scope(scope.original_name_scope):
                variable = get_variable(
                    name, shape=shape, dtype=dtypes.as_dtype(dtype or self._dtype or
                                                             dtypes.float32),
                    initializer=initializer, trainable=trainable, constraint=constraint,
                    partitioner=partitioner, use_resource=use_resource)
                # A partitioned variable (a scope's partitioner): its parts are the weights,
                # each regularized on its own, as in TensorFlow.
                parts = list(variable) if isinstance(variable, PartitionedVariable) \
                    else [variable]
                if regularizer and id(parts[0]) not in existing:
                    with name_scope(name + "/Regularizer"):
                        for part in parts:
                            self.add_loss(regularizer(part))
        # A custom getter may have made a variable not trainable: trust the collection.
        trainable_collection = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        for part in parts:
            if trainable and part in trainable_collection:
                self._trainable_weights.append(part)
            else:
                self._non_trainable_weights.append(part)
        return variable

    add_variable = add_weight

    def build(self, input_shape: TensorShape) -> None:
        """Creates the layer's variables; the base layer has none."""
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    # -- calling ---------------------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        inputs = convert_to_tensor(inputs)
        if self._dtype is None:
            # TF 1.x layers take their dtype from their first input ("infer" policy).
            self._dtype = inputs.dtype.base_dtype if inputs.dtype.is_floating else dtypes.float32
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as vscope:
            self._current_scope = vscope
            with name_scope(vscope.original_name_scope):
                if not self.built:
                    self.build(inputs.get_shape())
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self._activity_regularizer is not None:
                    self._add_activity_regularization(outputs)
        _add_elements_to_collection(self._updates, GraphKeys.UPDATE_OPS)
        return outputs

    apply = __call__

    def _add_activity_regularization(self, outputs: Tensor) -> None:
        """regularizer(outputs) divided by the batch size, so its strength does not depend on
        it (Keras's rule)."""
        with name_scope("ActivityRegularizer"):
            activity_loss = self._activity_regularizer(outputs)
            if activity_loss is None:
                return
            batch_size = math_ops.cast(array_ops.shape(outputs)[0], activity_loss.dtype)
            self.add_loss(math_ops.divide(activity_loss, batch_size))

    def __repr__(self) -> str:
        return f"<tf.layers.{type(self).__name__} '{self._name}'>"


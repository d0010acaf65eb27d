"""``tf.keras.optimizers`` (TF 1.15's Keras optimizers: SGD, Adam, RMSprop, Adagrad) as
``tf.train`` optimizers with Keras's defaults and update rules, and ``get`` for
``compile(optimizer='adam')``. A ``tf.train`` optimizer given to ``compile`` is used as is.

- SGD: learning rate 0.01; with ``momentum`` Keras's update ``v = momentum * v - lr * grad;
  var += v`` (Nesterov: ``var += momentum * v - lr * grad``), else plain descent. Sparse
  gradients (embeddings) take tf.train's Momentum update, the same values while the rate is
  constant.
- Adam: epsilon 1e-7 (Keras's), TF's Adam update otherwise.
- RMSprop: the mean square starts at 0 (tf.train's at 1), and without momentum the update is
  ``var -= lr * grad / (sqrt(ms) + epsilon)``, epsilon outside the root, as Keras computes it.

The learning rate of a Keras optimizer is a variable, as TF 1.15's (OptimizerV2 hyperparameters):
``optimizer.lr`` / ``optimizer.learning_rate`` is a float32 'learning_rate' variable of the
default graph, made on first use and initialized by Keras's session, so
``backend.get_value`` / ``set_value`` (and the LearningRateScheduler and ReduceLROnPlateau
callbacks) read and change it, and the next training step uses the new rate without a new
graph. A learning rate given as a tensor or a callable is used as is. ``decay`` (Keras's
time-based decay) makes each step's rate ``lr / (1 + decay * iterations)``, ``iterations``
being the steps the optimizer applied ('iter').
"""
from __future__ import annotations

import weakref

from ..framework import dtypes
from ..framework.ops import Tensor, get_default_graph, name_scope
from ..ops import control_flow_ops, math_ops
from ..train.optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                                MomentumOptimizer, Optimizer, RMSPropOptimizer)
from ..variables import Variable, assign, assign_add, assign_sub
from . import backend

__all__ = ["SGD", "Adam", "RMSprop", "Adagrad", "Optimizer", "get"]


def _learning_rate(learning_rate, kwargs):
    """(learning rate, decay) from a Keras optimizer's arguments: Keras 1.x's ``lr`` is
    accepted for ``learning_rate``; clipping is refused rather than ignored."""
    learning_rate = kwargs.pop("lr", learning_rate)
    decay = kwargs.pop("decay", 0.0)
    for clipping in ("clipnorm", "clipvalue"):
        if kwargs.pop(clipping, None) is not None:
            _refuse(clipping)
    if kwargs:
        raise TypeError(f"Unexpected keyword argument passed to optimizer: {sorted(kwargs)[0]}")
    if decay < 0.0:
        raise ValueError(f"decay cannot be less than 0: {decay}")
    return learning_rate, decay


def _is_tensor_or_function(value) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element") or callable(value)


class _LearningRateVariable:
    """``lr`` / ``learning_rate`` as a variable per graph, and ``iterations``, the steps the
    optimizer has applied in that graph (int64 'iter'), as TF 1.15's optimizers have them. The
    tf.train update reads the rate through the callable ``_rate_of_step`` given to it as its
    learning rate: ``lr / (1 + decay * iterations)`` (Keras's time-based ``decay``)."""

    def _keep_learning_rate(self, value, decay):
        """Records the initial learning rate; returns what the tf.train base is given."""
        self._initial_learning_rate = value
        self._learning_rate_decay = float(decay)
        self._learning_rate_variables = weakref.WeakKeyDictionary()
        self._iterations_variables = weakref.WeakKeyDictionary()
        if _is_tensor_or_function(value):
            if self._learning_rate_decay:
                raise NotImplementedError("Keras optimizers' `decay` with a learning rate that is "
                                          "a tensor or a function is not supported by "
                                          "tfjupyter.")
            return value
        return self._rate_of_step

    def _graph_variable(self, variables, name: str, initial_value, dtype):
        graph = get_default_graph()
        variable = variables.get(graph)
        if variable is None:
            with graph.as_default(), graph.control_dependencies(None):
                variable = Variable(initial_value, trainable=False, name=name, dtype=dtype)
            backend.track_variable(variable)
            variables[graph] = variable
        return variable

    def _learning_rate_of_graph(self):
        value = self._initial_learning_rate
        if _is_tensor_or_function(value):
            return value
        return self._graph_variable(self._learning_rate_variables, "learning_rate", float(value),
                                    dtypes.float32)

    def _rate_of_step(self):
        rate = self._learning_rate_of_graph()
        if not self._learning_rate_decay:
            return rate
        step = math_ops.cast(self.iterations, dtypes.float32)
        return rate / (1.0 + self._learning_rate_decay * step)

    @property
    def iterations(self):
        return self._graph_variable(self._iterations_variables, "iter", 0, dtypes.int64)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The updates, then ``iterations`` + 1 (after them: the step's rate reads it)."""
        updates = super().apply_gradients(grads_and_vars, global_step=global_step, name=name)
        graph = updates.graph
        with graph.as_default(), graph.name_scope(name or self._name):
            iterations = self.iterations
            with graph.control_dependencies([updates]), graph.colocate_with(iterations.op):
                return assign_add(iterations, 1).op

    @property
    def learning_rate(self):
        return self._learning_rate_of_graph()

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        variable = self._learning_rate_variables.get(get_default_graph())
        if variable is None:
            self._initial_learning_rate = value
        else:
            backend.set_value(variable, value)

    lr = learning_rate


def _refuse(argument: str):
    raise NotImplementedError(f"Keras optimizers' `{argument}` is not supported by tfjupyter.")


class SGD(_LearningRateVariable, MomentumOptimizer):
    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        learning_rate = self._keep_learning_rate(*_learning_rate(learning_rate, kwargs))
        super().__init__(learning_rate, momentum, name=name, use_nesterov=nesterov)

    def _create_slots(self, var_list) -> None:
        if self._momentum:
            super()._create_slots(var_list)

    def _apply_dense(self, grad, var):
        if not self._momentum:
            return GradientDescentOptimizer._apply_dense(self, grad, var)
        # Keras's momentum: the rate scales the gradient as it enters the velocity, so a rate
        # that changes (decay, callbacks) does not rescale the velocity, unlike tf.train's.
        dtype = var.dtype.base_dtype
        lr, momentum = self._hyper("learning_rate", dtype), self._hyper("momentum", dtype)
        velocity = self.get_slot(var, "momentum")
        with name_scope("SGD_update"):
            new_velocity = assign(velocity, momentum * velocity - lr * grad)
            step = momentum * new_velocity - lr * grad if self._use_nesterov else new_velocity
            return control_flow_ops.group(assign_add(var, step))

    def _apply_sparse_duplicate_indices(self, grad, var):
        if self._momentum:
            return super()._apply_sparse_duplicate_indices(grad, var)
        return GradientDescentOptimizer._apply_sparse_duplicate_indices(self, grad, var)


class Adam(_LearningRateVariable, AdamOptimizer):
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            _refuse("amsgrad")
        learning_rate = self._keep_learning_rate(*_learning_rate(learning_rate, kwargs))
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name=name)


class RMSprop(_LearningRateVariable, RMSPropOptimizer):
    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        learning_rate = self._keep_learning_rate(*_learning_rate(learning_rate, kwargs))
        super().__init__(learning_rate, decay=rho, momentum=momentum, epsilon=epsilon,
                         centered=centered, name=name)

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            if self._momentum:
                self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        if self._momentum or self._centered:
            return super()._apply_dense(grad, var)
        dtype = var.dtype.base_dtype
        lr, rho, epsilon = (self._hyper(n, dtype) for n in ("learning_rate", "decay", "epsilon"))
        rms = self.get_slot(var, "rms")
        with name_scope("RMSprop_update"):
            new_rms = assign(rms, rho * rms + (1.0 - rho) * math_ops.square(grad))
            step = lr * grad / (math_ops.sqrt(new_rms) + epsilon)
            return control_flow_ops.group(assign_sub(var, step))

    def _apply_sparse(self, grad, var):
        if self._momentum or self._centered:
            return super()._apply_sparse(grad, var)
        raise NotImplementedError("tf.keras.optimizers.RMSprop without momentum does not update "
                                  "sparse gradients (embeddings) in tfjupyter; pass momentum>0.")


class Adagrad(_LearningRateVariable, AdagradOptimizer):
    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        learning_rate = self._keep_learning_rate(*_learning_rate(learning_rate, kwargs))
        super().__init__(learning_rate, initial_accumulator_value=initial_accumulator_value,
                         name=name)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier) -> Optimizer:
    """An optimizer from a Keras name ('adam'), or the optimizer given (Keras's or tf.train's)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}. Known names: "
                     f"{sorted(_BY_NAME)}, or an optimizer object.")

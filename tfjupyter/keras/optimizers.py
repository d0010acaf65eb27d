"""``tf.keras.optimizers`` (TF 1.15's Keras optimizers: SGD, Adam, RMSprop, Adagrad) as
``tf.train`` optimizers with Keras's defaults and update rules, and ``get`` for
``compile(optimizer='adam')``. A ``tf.train`` optimizer given to ``compile`` is used as is.

- SGD: learning rate 0.01; with ``momentum`` TF's Momentum update (the same values as
  Keras's ``v = momentum * v - lr * grad; var += v`` for a constant rate), else plain descent.
- Adam: epsilon 1e-7 (Keras's), TF's Adam update otherwise.
- RMSprop: the mean square starts at 0 (tf.train's at 1), and without momentum the update is
  ``var -= lr * grad / (sqrt(ms) + epsilon)``, epsilon outside the root, as Keras computes it.
"""
from __future__ import annotations

from ..framework.ops import name_scope
from ..ops import control_flow_ops, math_ops
from ..train.optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                                MomentumOptimizer, Optimizer, RMSPropOptimizer)
from ..variables import assign, assign_sub

__all__ = ["SGD", "Adam", "RMSprop", "Adagrad", "Optimizer", "get"]


def _learning_rate(learning_rate, kwargs):
    """Keras 1.x's ``lr`` is accepted for ``learning_rate``; a learning-rate ``decay`` would
    change the schedule, which is not implemented, so it is refused rather than ignored."""
    learning_rate = kwargs.pop("lr", learning_rate)
    if kwargs.pop("decay", 0.0):
        raise NotImplementedError("Keras optimizers' `decay` is not supported by tfjupyter; "
                                  "use a tf.train learning-rate schedule with a tf.train "
                                  "optimizer instead.")
    for clipping in ("clipnorm", "clipvalue"):
        if kwargs.pop(clipping, None) is not None:
            _refuse(clipping)
    if kwargs:
        raise TypeError(f"Unexpected keyword argument passed to optimizer: {sorted(kwargs)[0]}")
    return learning_rate


def _refuse(argument: str):
    raise NotImplementedError(f"Keras optimizers' `{argument}` is not supported by tfjupyter.")


class SGD(MomentumOptimizer):
    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(_learning_rate(learning_rate, kwargs), momentum, name=name,
                         use_nesterov=nesterov)

    def _create_slots(self, var_list) -> None:
        if self._momentum:
            super()._create_slots(var_list)

    def _apply_dense(self, grad, var):
        if self._momentum:
            return super()._apply_dense(grad, var)
        return GradientDescentOptimizer._apply_dense(self, grad, var)

    def _apply_sparse_duplicate_indices(self, grad, var):
        if self._momentum:
            return super()._apply_sparse_duplicate_indices(grad, var)
        return GradientDescentOptimizer._apply_sparse_duplicate_indices(self, grad, var)


class Adam(AdamOptimizer):
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            _refuse("amsgrad")
        super().__init__(_learning_rate(learning_rate, kwargs), beta_1, beta_2, epsilon,
                         name=name)


class RMSprop(RMSPropOptimizer):
    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(_learning_rate(learning_rate, kwargs), decay=rho, momentum=momentum,
                         epsilon=epsilon, centered=centered, name=name)

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


class Adagrad(AdagradOptimizer):
    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        super().__init__(_learning_rate(learning_rate, kwargs),
                         initial_accumulator_value=initial_accumulator_value, name=name)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier) -> Optimizer:
    """An optimizer from a Keras name ('adam'), or the optimizer given (Keras's or tf.train's)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}. Known names: "
                     f"{sorted(_BY_NAME)}, or an optimizer object.")

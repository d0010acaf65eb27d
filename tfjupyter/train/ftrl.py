"""``tf.train.FtrlOptimizer``: FTRL-Proximal (McMahan et al., 2013) as TensorFlow 1.x's, with
its slots (``accum``, starting at ``initial_accumulator_value``, and ``linear``, at 0: variables
``<var>/Ftrl`` and ``<var>/Ftrl_1``), its checks and its ops (ApplyFtrl, or ApplyFtrlV2 when
``l2_shrinkage_regularization_strength`` is positive; the math is in
kernels/cpu/ftrl_kernels.py)."""
from __future__ import annotations

from typing import Optional

from .optimizers import Optimizer, apply_ftrl

__all__ = ["FtrlOptimizer"]


class FtrlOptimizer(Optimizer):

    def __init__(self, learning_rate, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: Optional[str] = None,
                 linear_name: Optional[str] = None,
                 l2_shrinkage_regularization_strength: float = 0.0):
        super().__init__(use_locking, name)
        checks = [("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
                  ("learning_rate_power", -learning_rate_power, "negative or zero"),
                  ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
                  ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
                  ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                   "positive or zero")]
        for label, value, wanted in checks:
            if value < 0.0:
                shown = -value if label == "learning_rate_power" else value
                raise ValueError(f"{label} {shown:f} needs to be {wanted}")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._filled_slot(v, "accum", self._initial_accumulator_value,
                              self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._learning_rate)
        self._make_hyper("l1_regularization_strength", self._l1)
        self._make_hyper("l2_regularization_strength", self._l2)
        self._make_hyper("l2_shrinkage_regularization_strength", self._l2_shrinkage)
        self._make_hyper("learning_rate_power", self._learning_rate_power)

    def _step(self, var, grad, indices=None):
        dtype = var.dtype
        shrinkage = (self._hyper("l2_shrinkage_regularization_strength", dtype)
                     if self._l2_shrinkage > 0.0 else None)
        return apply_ftrl(var, self.get_slot(var, "accum"), self.get_slot(var, "linear"), grad,
                          self._hyper("learning_rate", dtype),
                          self._hyper("l1_regularization_strength", dtype),
                          self._hyper("l2_regularization_strength", dtype),
                          self._hyper("learning_rate_power", dtype), l2_shrinkage=shrinkage,
                          indices=indices, use_locking=self._use_locking).op

    def _apply_dense(self, grad, var):
        return self._step(var, grad)

    def _apply_sparse(self, grad, var):
        return self._step(var, grad.values, grad.indices)

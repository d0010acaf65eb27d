"""Exponential moving averages of variables and tensors (TensorFlow 1.x's moving_averages).

``ema.apply([w])`` creates a shadow variable ``w/ExponentialMovingAverage`` starting at w's
initial value and returns an op that moves it towards w:
``shadow -= (1 - decay) * (shadow - w)``.  Evaluation code restores the shadows into the
model's variables through ``ema.variables_to_restore()``.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Union

from ..framework import dtypes
from ..framework.ops import GraphKeys, Operation, Tensor, convert_to_tensor, get_default_graph, \
    name_scope
from ..ops import control_flow_ops, math_ops
from ..variables import Variable, assign_sub, global_variables
from .training_util import create_filled_slot, create_slot

__all__ = ["ExponentialMovingAverage", "assign_moving_average"]

_FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def _is_tensorlike(x) -> bool:
    return isinstance(x, Tensor) or hasattr(x, "_as_graph_element")


def assign_moving_average(variable, value, decay, zero_debias: bool = True,
                          name: Optional[str] = None) -> Tensor:
    """``variable -= (1 - decay) * (variable - value)``; returns the updated variable.

    With ``zero_debias`` the average is of a biased accumulator started at zero, divided by
    ``1 - decay^t`` (Adam's bias correction), so early averages are not pulled towards the
    variable's initial value; it keeps two more variables, ``<variable>/biased`` and
    ``<variable>/local_step``.
    """
    ref = variable._ref() if isinstance(variable, Variable) else variable
    if not isinstance(ref, Tensor) or ref.op.type != "VariableV2":
        raise TypeError(f"assign_moving_average updates a Variable in place, got {variable!r}")
    graph = ref.graph
    dtype = ref.dtype.base_dtype
    with graph.as_default(), name_scope(name, "AssignMovingAvg") as scope:
        with graph.colocate_with(ref.op):
            if _is_tensorlike(decay):
                decay = convert_to_tensor(decay)
                one_minus_decay = 1.0 - decay if decay.dtype is dtype else \
                    math_ops.cast(1.0 - decay, dtype)
            else:
                one_minus_decay = convert_to_tensor(1.0 - decay, dtype=dtype, name="decay")
            if zero_debias:
                delta = _zero_debias(variable, value, one_minus_decay)
            else:
                delta = (variable - value) * one_minus_decay
            return assign_sub(variable, delta, name=scope)


def _zero_debias(unbiased_var, value, one_minus_decay: Tensor) -> Tensor:
    """The delta that sets ``unbiased_var`` to ``biased / (1 - decay^t)``, where ``biased`` is
    a zero-initialized moving average of ``value`` and ``t`` counts the updates."""
    biased = create_filled_slot(unbiased_var, 0, "biased")
    local_step = create_filled_slot(unbiased_var, 0, "local_step", shape=())
    update_biased = assign_sub(biased, (biased - value) * one_minus_decay)
    update_local_step = local_step.assign_add(1)
    graph = unbiased_var.graph
    with graph.control_dependencies([update_biased, update_local_step]):
        return unbiased_var - biased.read_value() / (
            1 - math_ops.pow(1.0 - one_minus_decay, local_step.read_value()))


class ExponentialMovingAverage:
    """Maintains moving averages of variables (and tensors) with exponential decay.

    ``decay`` is close to 1 (0.999, 0.9999). With ``num_updates`` (usually the global step),
    the decay used is ``min(decay, (1 + num_updates) / (10 + num_updates))``, so the average
    follows faster early in training. ``zero_debias`` applies to averaged tensors (variables
    start their shadow at their own initial value instead).
    """

    def __init__(self, decay, num_updates=None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: Dict[Union[Variable, Tensor], Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None) -> Operation:
        """Creates the shadow variables of ``var_list`` (default: the trainable variables) and
        returns an op that updates them all. Variables are added to the
        MOVING_AVERAGE_VARIABLES collection; shadows to GLOBAL_VARIABLES (not trainable)."""
        if var_list is None:
            var_list = get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES)
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if not isinstance(var, (Variable, Tensor)):
                raise TypeError(f"ExponentialMovingAverage.apply: expected Variables or Tensors, "
                                f"got {var!r}")
            if var.dtype.base_dtype not in _FLOAT_TYPES:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
        for var in var_list:
            if isinstance(var, Variable):
                avg = create_slot(var, var.initialized_value, self._name)
                var.graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                avg = create_filled_slot(var, 0, self._name, colocate_with_primary=(
                    var.op.type in ("Variable", "VariableV2")))
                if self._zero_debias:
                    zero_debias_true.add(avg)
            self._averages[var] = avg

        graph = var_list[0].graph if var_list else get_default_graph()
        with graph.as_default(), name_scope(self._name) as scope:
            decay = self._decay
            if self._num_updates is not None or _is_tensorlike(decay):
                decay = convert_to_tensor(decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, dtypes.float32,
                                            name="num_updates")
                if decay.dtype is not dtypes.float32:
                    decay = math_ops.cast(decay, dtypes.float32)
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay,
                                             zero_debias=self._averages[var] in zero_debias_true)
                       for var in var_list]
            return control_flow_ops.group(*updates, name=scope)

    def average(self, var) -> Optional[Variable]:
        """The shadow variable of ``var``, or None if apply() was not called for it."""
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name of ``var``'s shadow variable (what it is, or will be, called), e.g.
        'conv1/weights/ExponentialMovingAverage'; the key of checkpoints of averages."""
        if var in self._averages:
            return self._averages[var].op.name
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None) -> Dict[str, Variable]:
        """A map for ``tf.train.Saver(ema.variables_to_restore())`` that loads each averaged
        variable from its average's checkpoint entry (``'w/ExponentialMovingAverage': w``)
        and every other global variable from its own (``'b': b``)."""
        if moving_avg_variables is None:
            moving_avg_variables = (get_default_graph().get_collection(
                GraphKeys.TRAINABLE_VARIABLES) + get_default_graph().get_collection(
                GraphKeys.MOVING_AVERAGE_VARIABLES))
        averaged: List = []
        for v in moving_avg_variables:
            if v not in averaged:
                averaged.append(v)
        name_map: Dict[str, Variable] = {}
        for v in averaged:
            name_map[self.average_name(v)] = v
        averaged_names = {v.name for v in averaged}
        for v in global_variables():
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map

"""Optimizers (TensorFlow 1.x's ``tf.train.*Optimizer``) and the apply ops they build.

``opt.minimize(loss)`` is ``compute_gradients`` (``tf.gradients`` w.r.t. the trainable
variables) then ``apply_gradients``, which adds one apply op per variable — ApplyAdam and
friends, fused in-place kernels that update the variable and its slots — grouped into the
train op, and increments the global step once they have all run.

An ``IndexedSlices`` gradient (a gather's, e.g. an embedding lookup's) is applied sparsely, as
TensorFlow 1.x's ``_apply_sparse_duplicate_indices``: GradientDescent subtracts the scaled
rows with ScatterSub; the others first sum the rows of repeated indices and then run their
SparseApply op, which touches only those rows (Adam's is TensorFlow 1.x's ``_apply_sparse``:
its moments decay everywhere, see SparseApplyAdam). The update ops are colocated with their
variable, so with the variable on a ps task only the gradient's rows and indices travel.

Slots (Momentum's accumulator, Adam's moments, ...) are variables named
``<variable>/<optimizer name>``, ``<variable>/<optimizer name>_1``, ..., placed with their
variable, as TensorFlow names them; ``get_slot(var, "m")`` finds them.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..framework import dtypes
from ..framework.ops import (Graph, GraphKeys, Operation, Tensor, convert_to_tensor,
                             get_default_graph)
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape, list_str
from ..gradients_impl import gradients
from ..framework.indexed_slices import IndexedSlices
from ..ops import _shapes, array_ops, control_flow_ops, math_ops, state_ops
from ..variables import Variable, assign_add
from .training_util import create_filled_slot, create_slot

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdagradOptimizer",
           "RMSPropOptimizer", "AdamOptimizer", "AdadeltaOptimizer"]

_FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


# ---------------------------------------------------------------------------------------------
# The apply ops (TensorFlow's training_ops): var and slots by reference, updated in place.

# op type -> its argument names; the first ``n_refs`` are references (var and slots).
_APPLY_OPS: Dict[str, Tuple[Tuple[str, ...], int]] = {
    "ApplyGradientDescent": (("var", "alpha", "delta"), 1),
    "ApplyMomentum": (("var", "accum", "lr", "grad", "momentum"), 2),
    "ApplyAdagrad": (("var", "accum", "lr", "grad"), 2),
    "ApplyRMSProp": (("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"), 3),
    "ApplyCenteredRMSProp": (("var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon",
                              "grad"), 4),
    "ApplyAdam": (("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                   "epsilon", "grad"), 3),
    "ApplyAdadelta": (("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"), 3),
    "ApplyFtrl": (("var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"), 3),
    "ApplyFtrlV2": (("var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage",
                     "lr_power"), 3),
}
# Arguments shaped like var; every other non-ref argument is a scalar hyperparameter.
_TENSOR_ARGS = frozenset({"grad", "delta"})


def _apply_shape(op) -> List[Tuple[dtypes.DType, TensorShape]]:
    arg_names, n_refs = _APPLY_OPS[op.type]
    var = op.inputs[0]
    _shapes.check_dtype_in(op, var, _FLOAT_TYPES)
    _shapes.check_same_dtype(op, *op.inputs)
    shape = var.shape
    for k, (arg, t) in enumerate(zip(arg_names, op.inputs)):
        if k < n_refs or arg in _TENSOR_ARGS:
            if not shape.is_compatible_with(t.shape):
                raise ValueError(
                    f"var and {arg} do not have the same shape: {list_str(var.shape)} vs "
                    f"{list_str(t.shape)} for '{op.name}' (op: '{op.type}')")
            shape = shape.merge_with(t.shape)
        elif t.shape.ndims not in (None, 0):
            raise ValueError(f"{arg} is not a scalar: {list_str(t.shape)}; shape must be rank "
                             f"0 but is rank {t.shape.ndims} for '{op.name}' (op: '{op.type}')")
    return [(var.dtype, shape)]


for _op_type, (_, _n_refs) in _APPLY_OPS.items():
    register_op(_op_type, ref_inputs=tuple(range(_n_refs)), stateful=True)(_apply_shape)
    NotDifferentiable(_op_type)


# The sparse apply ops: ``grad`` holds rows of var, ``indices`` the row of each, and only those
# rows of var and its slots change, once per index in order (callers sum repeated indices
# first, as TensorFlow's optimizers do). SparseApplyAdam is ours: TensorFlow 1.x's Adam applies
# an IndexedSlices with Assign, ScatterAdd and AssignSub over the whole variable, and this op
# is that computation fused in place, without the temporaries of the variable's size.
_SPARSE_APPLY_OPS: Dict[str, Tuple[Tuple[str, ...], int]] = {
    "SparseApplyMomentum": (("var", "accum", "lr", "grad", "indices", "momentum"), 2),
    "SparseApplyAdagrad": (("var", "accum", "lr", "grad", "indices"), 2),
    "SparseApplyRMSProp": (("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad",
                            "indices"), 3),
    "SparseApplyCenteredRMSProp": (("var", "mg", "ms", "mom", "lr", "rho", "momentum",
                                    "epsilon", "grad", "indices"), 4),
    "SparseApplyAdam": (("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                         "epsilon", "grad", "indices"), 3),
    "SparseApplyAdadelta": (("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad",
                             "indices"), 3),
    "SparseApplyFtrl": (("var", "accum", "linear", "grad", "indices", "lr", "l1", "l2",
                         "lr_power"), 3),
    "SparseApplyFtrlV2": (("var", "accum", "linear", "grad", "indices", "lr", "l1", "l2",
                           "l2_shrinkage", "lr_power"), 3),
}


def _sparse_apply_shape(op) -> List[Tuple[dtypes.DType, TensorShape]]:
    arg_names, n_refs = _SPARSE_APPLY_OPS[op.type]
    args = dict(zip(arg_names, op.inputs))
    var, grad, indices = args["var"], args["grad"], args["indices"]
    where = f"for '{op.name}' (op: '{op.type}')"
    _shapes.check_dtype_in(op, var, _FLOAT_TYPES)
    _shapes.check_same_dtype(op, *[t for name, t in args.items() if name != "indices"])
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name} {where}")
    shape = var.shape
    for arg in arg_names[:n_refs]:
        if not shape.is_compatible_with(args[arg].shape):
            raise ValueError(f"var and {arg} do not have the same shape: {list_str(var.shape)} "
                             f"vs {list_str(args[arg].shape)} {where}")
        shape = shape.merge_with(args[arg].shape)
    if shape.ndims == 0:
        raise ValueError(f"var must be at least 1 dimensional {where}")
    if indices.shape.ndims not in (None, 1):
        raise ValueError(f"indices must be one-dimensional, got {list_str(indices.shape)} "
                         f"{where}")
    if shape.ndims is not None and grad.shape.ndims is not None:
        expected = indices.shape.concatenate(shape[1:]) if indices.shape.ndims is not None \
            else TensorShape([None]).concatenate(shape[1:])
        if not grad.shape.is_compatible_with(expected):
            raise ValueError(f"grad must be the rows of var at indices: {list_str(grad.shape)} "
                             f"vs {list_str(expected)} {where}")
    for arg in arg_names[n_refs:]:
        t = args[arg]
        if arg not in ("grad", "indices") and t.shape.ndims not in (None, 0):
            raise ValueError(f"{arg} is not a scalar: {list_str(t.shape)} {where}")
    return [(var.dtype, shape)]


for _op_type, (_, _n_refs) in _SPARSE_APPLY_OPS.items():
    register_op(_op_type, ref_inputs=tuple(range(_n_refs)), stateful=True)(_sparse_apply_shape)
    NotDifferentiable(_op_type)


def _ref_tensor(ref, op_type: str) -> Tensor:
    t = ref._ref() if isinstance(ref, Variable) else ref
    if not isinstance(t, Tensor) or t.op.type != "VariableV2":
        raise TypeError(f"{op_type} updates variables in place: expected a Variable, got {ref!r}")
    return t


def _apply(op_type: str, refs: Sequence, values: Sequence, use_locking: bool,
           name: Optional[str], **attrs: Any) -> Tensor:
    ref_tensors = [_ref_tensor(r, op_type) for r in refs]
    dtype = ref_tensors[0].dtype
    inputs = ref_tensors + [convert_to_tensor(v) if isinstance(v, Tensor) or
                            hasattr(v, "_as_graph_element") else convert_to_tensor(v, dtype=dtype)
                            for v in values]
    attrs.update(T=dtype, use_locking=bool(use_locking))
    if op_type in _SPARSE_APPLY_OPS:
        arg_names, _ = _SPARSE_APPLY_OPS[op_type]
        attrs.update(Tindices=inputs[arg_names.index("indices")].dtype)
    graph = ref_tensors[0].graph
    return graph.create_op(op_type, inputs, attrs, name=name or op_type).outputs[0]


def apply_gradient_descent(var, alpha, delta, use_locking: bool = False,
                           name: Optional[str] = None) -> Tensor:
    """``var -= alpha * delta``."""
    return _apply("ApplyGradientDescent", [var], [alpha, delta], use_locking, name)


def apply_momentum(var, accum, lr, grad, momentum, use_locking: bool = False,
                   name: Optional[str] = None, use_nesterov: bool = False) -> Tensor:
    """``accum = accum * momentum + grad``; ``var -= lr * accum``, or with Nesterov
    ``var -= grad * lr + accum * momentum * lr``."""
    return _apply("ApplyMomentum", [var, accum], [lr, grad, momentum], use_locking, name,
                  use_nesterov=bool(use_nesterov))


def apply_adagrad(var, accum, lr, grad, use_locking: bool = False,
                  name: Optional[str] = None) -> Tensor:
    """``accum += grad^2``; ``var -= lr * grad / sqrt(accum)``."""
    return _apply("ApplyAdagrad", [var, accum], [lr, grad], use_locking, name)


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking: bool = False,
                   name: Optional[str] = None) -> Tensor:
    """``ms = rho * ms + (1 - rho) * grad^2``; ``mom = momentum * mom + lr * grad /
    sqrt(ms + epsilon)``; ``var -= mom``."""
    return _apply("ApplyRMSProp", [var, ms, mom], [lr, rho, momentum, epsilon, grad],
                  use_locking, name)


def apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad,
                            use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    """As apply_rms_prop with the variance estimate centered: ``mg = rho * mg + (1 - rho) *
    grad`` and the denominator ``sqrt(ms - mg^2 + epsilon)``."""
    return _apply("ApplyCenteredRMSProp", [var, mg, ms, mom], [lr, rho, momentum, epsilon, grad],
                  use_locking, name)


def apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
               use_locking: bool = False, use_nesterov: bool = False,
               name: Optional[str] = None) -> Tensor:
    """``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``; ``m = beta1 * m + (1 -
    beta1) * grad``; ``v = beta2 * v + (1 - beta2) * grad^2``; ``var -= lr_t * m /
    (sqrt(v) + epsilon)``."""
    return _apply("ApplyAdam", [var, m, v],
                  [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad], use_locking, name,
                  use_nesterov=bool(use_nesterov))


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking: bool = False,
                   name: Optional[str] = None) -> Tensor:
    """``accum = rho * accum + (1 - rho) * grad^2``; ``update = sqrt(accum_update + epsilon) /
    sqrt(accum + epsilon) * grad``; ``var -= lr * update``; ``accum_update = rho *
    accum_update + (1 - rho) * update^2``."""
    return _apply("ApplyAdadelta", [var, accum, accum_update], [lr, rho, epsilon, grad],
                  use_locking, name)


def _indices_tensor(indices) -> Tensor:
    """Row indices as a tensor: int64 only when given as int64 (the apply ops' other inputs
    are converted to var's dtype, which indices must not be)."""
    if isinstance(indices, Tensor) or hasattr(indices, "_as_graph_element"):
        return convert_to_tensor(indices)
    wide = np.asarray(indices).dtype == np.int64
    return convert_to_tensor(indices, dtype=dtypes.int64 if wide else dtypes.int32)


def sparse_apply_momentum(var, accum, lr, grad, indices, momentum, use_locking: bool = False,
                          name: Optional[str] = None, use_nesterov: bool = False) -> Tensor:
    """apply_momentum on the rows ``indices`` of var and accum, with ``grad`` their rows."""
    return _apply("SparseApplyMomentum", [var, accum], [lr, grad, _indices_tensor(indices),
                                                         momentum], use_locking, name,
                  use_nesterov=bool(use_nesterov))


def sparse_apply_adagrad(var, accum, lr, grad, indices, use_locking: bool = False,
                         name: Optional[str] = None) -> Tensor:
    """apply_adagrad on the rows ``indices`` of var and accum."""
    return _apply("SparseApplyAdagrad", [var, accum], [lr, grad, _indices_tensor(indices)],
                  use_locking, name)


def sparse_apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                          use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    """apply_rms_prop on the rows ``indices`` of var, ms and mom."""
    return _apply("SparseApplyRMSProp", [var, ms, mom],
                  [lr, rho, momentum, epsilon, grad, _indices_tensor(indices)], use_locking, name)


def sparse_apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices,
                                   use_locking: bool = False,
                                   name: Optional[str] = None) -> Tensor:
    """apply_centered_rms_prop on the rows ``indices`` of var, mg, ms and mom."""
    return _apply("SparseApplyCenteredRMSProp", [var, mg, ms, mom],
                  [lr, rho, momentum, epsilon, grad, _indices_tensor(indices)], use_locking, name)


def sparse_apply_adam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                      indices, use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    """TensorFlow 1.x's Adam update for a gradient given at rows ``indices``: ``m = beta1 * m``
    and ``v = beta2 * v`` everywhere, ``m[indices] += (1 - beta1) * grad``, ``v[indices] += (1 -
    beta2) * grad^2``, then ``var -= lr_t * m / (sqrt(v) + epsilon)`` everywhere."""
    return _apply("SparseApplyAdam", [var, m, v],
                  [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad,
                   _indices_tensor(indices)], use_locking, name)


def sparse_apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, indices,
                          use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    """apply_adadelta on the rows ``indices`` of var, accum and accum_update."""
    return _apply("SparseApplyAdadelta", [var, accum, accum_update],
                  [lr, rho, epsilon, grad, _indices_tensor(indices)], use_locking, name)


def apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, l2_shrinkage=None,
               indices=None, use_locking: bool = False, name: Optional[str] = None) -> Tensor:
    """FTRL-Proximal's step (kernels/cpu/ftrl_kernels.py): ApplyFtrl, or ApplyFtrlV2 with
    ``l2_shrinkage``; the Sparse* forms on the rows ``indices``."""
    op_type = "ApplyFtrl" if l2_shrinkage is None else "ApplyFtrlV2"
    scalars = [lr, l1, l2] + ([] if l2_shrinkage is None else [l2_shrinkage]) + [lr_power]
    if indices is None:
        return _apply(op_type, [var, accum, linear], [grad] + scalars, use_locking, name)
    return _apply("Sparse" + op_type, [var, accum, linear],
                  [grad, _indices_tensor(indices)] + scalars, use_locking, name)


def _deduplicate_indexed_slices(values: Tensor, indices: Tensor) -> Tuple[Tensor, Tensor]:
    """(summed values, unique indices): the rows of repeated indices summed, as TensorFlow's
    optimizer helper of the same name."""
    unique_indices, positions = array_ops.unique(indices)
    summed = array_ops.unsorted_segment_sum(values, positions,
                                            array_ops.shape(unique_indices)[0])
    return summed, unique_indices


# ---------------------------------------------------------------------------------------------
# Optimizer

def _var_key(var) -> Tuple[Graph, str]:
    return var.op.graph, var.op.name


def _flatten(items) -> list:
    if isinstance(items, dict):
        items = list(items.values())
    if isinstance(items, (list, tuple)):
        return [x for item in items for x in _flatten(item)]
    return [items]


def _check_variable(v) -> None:
    if isinstance(v, Variable) or isinstance(v, Tensor) and v.op.type == "VariableV2":
        return
    raise TypeError(f"Trying to optimize unsupported type {v!r}: the optimizer updates "
                    "tf.Variable objects.")


def _ref(v) -> Tensor:
    return v._ref() if isinstance(v, Variable) else v


class Optimizer:
    """Base class for optimizers: subclasses create their slots and one apply op per variable.

    Subclass hooks, as TensorFlow's: ``_create_slots(var_list)``, ``_prepare()`` (turn the
    hyperparameters into tensors with ``_make_hyper``), ``_apply_dense(grad, var)`` and
    ``_finish(update_ops, name_scope)``.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: Dict[str, Dict[Tuple[Graph, str], Variable]] = {}
        self._non_slot_dict: Dict[Tuple[str, Graph], Variable] = {}
        self._hypers: Dict[Tuple[str, dtypes.DType], Tensor] = {}
        self._hyper_dtypes: List[dtypes.DType] = []

    def get_name(self) -> str:
        return self._name

    # -- the public API ----------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients: int = GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss=None) -> Operation:
        """Adds ops that compute the gradients of ``loss`` and apply them to ``var_list`` (the
        trainable variables); increments ``global_step`` if given. Returns the train op."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients: int = GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops: bool = False,
                          grad_loss=None) -> List[Tuple[Optional[Tensor], Any]]:
        """``[(gradient of loss w.r.t. var, var)]`` for each var of ``var_list`` (default: the
        trainable variables of loss's graph); the gradient is None where var does not affect
        the loss."""
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            grad_loss = convert_to_tensor(grad_loss)
            self._assert_valid_dtypes([grad_loss])
        graph = loss.graph
        if var_list is None:
            var_list = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        else:
            var_list = _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            _check_variable(v)
        with graph.as_default():
            grads = gradients(loss, [_ref(v) for v in var_list], grad_ys=grad_loss,
                              gate_gradients=(gate_gradients == Optimizer.GATE_OP),
                              aggregation_method=aggregation_method,
                              colocate_gradients_with_ops=colocate_gradients_with_ops)
            if gate_gradients != Optimizer.GATE_NONE and sum(g is not None for g in grads) > 1:
                # The updates write the variables in place, and computing one gradient may read
                # a variable that another update writes: no gradient is released before all
                # are computed. (TensorFlow's GATE_OP gates each op's gradients inside
                # tf.gradients; gating them all here is the stronger GATE_GRAPH.)
                grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None,
                        name: Optional[str] = None) -> Operation:
        """Adds one update op per (grad, var) with a gradient, grouped into the returned op;
        with ``global_step``, the returned op increments it after all the updates."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None and not isinstance(g, IndexedSlices):
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError("Gradient must be convertible to a Tensor or IndexedSlices, "
                                    f"or None: {g}") from None
            _check_variable(v)
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{tuple(str(v) for _, v in converted)}.")
        if global_step is not None:
            step = _ref(global_step)
            if not isinstance(step, Tensor) or step.op.type != "VariableV2":
                raise TypeError(f"global_step must be a Variable, got {global_step!r}")
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._hyper_dtypes = sorted(
                    {v.dtype.base_dtype for v in var_list} |
                    {v.dtype.base_dtype for (_, g), v in self._non_slot_dict.items() if g is graph},
                    key=lambda d: d.name)
                self._hypers = {}
                self._prepare()
                update_ops = []
                for grad, var in converted:
                    if grad is None:
                        continue
                    with graph.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
                        if isinstance(grad, IndexedSlices):
                            update_ops.append(self._apply_sparse_duplicate_indices(grad, var))
                        else:
                            update_ops.append(self._apply_dense(grad, var))
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope)
                else:
                    with graph.control_dependencies([self._finish(update_ops, "update")]):
                        with graph.colocate_with(step.op):
                            apply_updates = assign_add(global_step, 1, name=scope).op
            train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_ops:
                train_ops.append(apply_updates)
        return apply_updates

    def get_slot(self, var, name: str) -> Optional[Variable]:
        """The slot variable ``name`` (see get_slot_names) created for ``var``, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self) -> List[str]:
        """The names of the slots this optimizer creates, e.g. ['m', 'v'] for Adam."""
        return sorted(self._slots)

    def variables(self) -> List[Variable]:
        """The optimizer's variables in the default graph (slots and others, e.g. Adam's
        beta1_power), sorted by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        for named_slots in self._slots.values():
            found.extend(v for (g, _), v in named_slots.items() if g is graph)
        return sorted(found, key=lambda v: v.name)

    # -- for subclasses ------------------------------------------------------------------------
    def _create_slots(self, var_list: List) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var) -> Operation:
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_dense")

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var) -> Operation:
        """Applies an IndexedSlices gradient whose indices may repeat: sums the rows of each
        index, then ``_apply_sparse``. Optimizers whose update is linear in the gradient
        override it to skip the sum."""
        values, indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(values, indices, grad.dense_shape), var)

    def _apply_sparse(self, grad: IndexedSlices, var) -> Operation:
        """Applies an IndexedSlices gradient with distinct indices."""
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_sparse")

    def _finish(self, update_ops: List[Operation], name_scope: str) -> Operation:
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _valid_dtypes(self):
        return set(_FLOAT_TYPES)

    def _assert_valid_dtypes(self, tensors) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                names = sorted(valid, key=lambda d: d.name)
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: {names}.")

    def _make_hyper(self, name: str, value) -> None:
        """Converts a hyperparameter (number, tensor, variable or callable) into one tensor per
        dtype of the variables being updated: a constant of that dtype for a number (no cast,
        no rounding through float32), the tensor itself or its cast for a tensor."""
        if callable(value) and not isinstance(value, (Tensor, Variable)):
            value = value()
        is_tensor = isinstance(value, Tensor) or hasattr(value, "_as_graph_element")
        if is_tensor:
            value = convert_to_tensor(value)
            if not value.dtype.is_floating:
                raise TypeError(f"{type(self).__name__}: {name} must be a floating point tensor, "
                                f"got {value}")
        for dtype in self._hyper_dtypes:
            if is_tensor:
                t = value if value.dtype is dtype else math_ops.cast(value, dtype, name=name)
            else:
                t = convert_to_tensor(value, dtype=dtype, name=name)
            self._hypers[(name, dtype)] = t

    def _hyper(self, name: str, dtype: dtypes.DType) -> Tensor:
        return self._hypers[(name, dtype.base_dtype)]

    def _slot_dict(self, slot_name: str) -> Dict[Tuple[Graph, str], Variable]:
        return self._slots.setdefault(slot_name, {})

    def _filled_slot(self, var, slot_name: str, value: float, op_name: str) -> Variable:
        """The slot ``slot_name`` of var, created filled with ``value`` on first use."""
        named_slots = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named_slots:
            named_slots[key] = create_filled_slot(var, value, op_name)
        return named_slots[key]

    def _zeros_slot(self, var, slot_name: str, op_name: str) -> Variable:
        return self._filled_slot(var, slot_name, 0, op_name)

    def _get_or_make_slot(self, var, val, slot_name: str, op_name: str) -> Variable:
        """The slot ``slot_name`` of var, created with initial value ``val`` on first use."""
        named_slots = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named_slots:
            named_slots[key] = create_slot(var, val, op_name)
        return named_slots[key]

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with,
                                  dtype: dtypes.DType) -> Variable:
        """A variable of the optimizer not tied to one variable (Adam's beta1_power), one per
        graph, created in the current name scope and placed with ``colocate_with``."""
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.as_default(), graph.control_dependencies(None), \
                    graph.colocate_with(colocate_with.op):
                if isinstance(initial_value, Tensor) or hasattr(initial_value, "_as_graph_element"):
                    initial_value = convert_to_tensor(initial_value)
                    if initial_value.dtype is not dtype:
                        initial_value = math_ops.cast(initial_value, dtype)
                v = Variable(initial_value, name=name, trainable=False, dtype=dtype)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Graph) -> Optional[Variable]:
        return self._non_slot_dict.get((name, graph))


def _check_hyper(name: str, value) -> None:
    """Rejects a hyperparameter that is neither a number, a tensor nor a callable."""
    if isinstance(value, (int, float)) or callable(value) or isinstance(value, Tensor) or \
            hasattr(value, "_as_graph_element") or hasattr(value, "dtype"):
        return
    raise TypeError(f"{name} must be a number or a scalar tensor, got {value!r}")


# ---------------------------------------------------------------------------------------------
# The optimizers

class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        _check_hyper("learning_rate", learning_rate)
        self._learning_rate = learning_rate

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._learning_rate)

    def _apply_dense(self, grad, var) -> Operation:
        return apply_gradient_descent(var, self._hyper("learning_rate", var.dtype), grad,
                                      use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad, var) -> Operation:
        # Linear in the gradient: ScatterSub subtracts every row, repeated indices included.
        delta = math_ops.multiply(grad.values, self._hyper("learning_rate", var.dtype))
        return state_ops.scatter_sub(var, grad.indices, delta, use_locking=self._use_locking).op


class MomentumOptimizer(Optimizer):
    """``accumulation = momentum * accumulation + grad``; ``var -= learning_rate *
    accumulation`` (with ``use_nesterov``, the update looks ahead along the accumulation)."""

    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(use_locking, name)
        _check_hyper("learning_rate", learning_rate)
        _check_hyper("momentum", momentum)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._learning_rate)
        self._make_hyper("momentum", self._momentum)

    def _apply_dense(self, grad, var) -> Operation:
        return apply_momentum(var, self.get_slot(var, "momentum"),
                              self._hyper("learning_rate", var.dtype), grad,
                              self._hyper("momentum", var.dtype), use_locking=self._use_locking,
                              use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad, var) -> Operation:
        return sparse_apply_momentum(var, self.get_slot(var, "momentum"),
                                     self._hyper("learning_rate", var.dtype), grad.values,
                                     grad.indices, self._hyper("momentum", var.dtype),
                                     use_locking=self._use_locking,
                                     use_nesterov=self._use_nesterov).op


class AdagradOptimizer(Optimizer):
    """``accumulator += grad^2``; ``var -= learning_rate * grad / sqrt(accumulator)``."""

    def __init__(self, learning_rate, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        _check_hyper("learning_rate", learning_rate)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._filled_slot(v, "accumulator", self._initial_accumulator_value, self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._learning_rate)

    def _apply_dense(self, grad, var) -> Operation:
        return apply_adagrad(var, self.get_slot(var, "accumulator"),
                             self._hyper("learning_rate", var.dtype), grad,
                             use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var) -> Operation:
        return sparse_apply_adagrad(var, self.get_slot(var, "accumulator"),
                                    self._hyper("learning_rate", var.dtype), grad.values,
                                    grad.indices, use_locking=self._use_locking).op


class RMSPropOptimizer(Optimizer):
    """``ms = decay * ms + (1 - decay) * grad^2`` (ms starts at 1, as in TensorFlow);
    ``mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon)``; ``var -= mom``.
    ``centered`` normalizes by the estimated variance ``ms - mg^2`` instead."""

    def __init__(self, learning_rate, decay: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp"):
        super().__init__(use_locking, name)
        for hyper, value in (("learning_rate", learning_rate), ("decay", decay),
                             ("momentum", momentum), ("epsilon", epsilon)):
            _check_hyper(hyper, value)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._filled_slot(v, "rms", 1, self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._learning_rate)
        self._make_hyper("decay", self._decay)
        self._make_hyper("momentum", self._momentum)
        self._make_hyper("epsilon", self._epsilon)

    def _apply_dense(self, grad, var) -> Operation:
        hyper = [self._hyper(n, var.dtype) for n in ("learning_rate", "decay", "momentum",
                                                      "epsilon")]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *hyper, grad,
                                           use_locking=self._use_locking).op
        return apply_rms_prop(var, rms, mom, *hyper, grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var) -> Operation:
        hyper = [self._hyper(n, var.dtype) for n in ("learning_rate", "decay", "momentum",
                                                      "epsilon")]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return sparse_apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, *hyper,
                                                  grad.values, grad.indices,
                                                  use_locking=self._use_locking).op
        return sparse_apply_rms_prop(var, rms, mom, *hyper, grad.values, grad.indices,
                                     use_locking=self._use_locking).op


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba): ``m = beta1 * m + (1 - beta1) * grad``, ``v = beta2 * v + (1 -
    beta2) * grad^2``, ``var -= lr_t * m / (sqrt(v) + epsilon)`` with the bias-corrected
    ``lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)``.

    beta1^t and beta2^t are the variables ``beta1_power`` and ``beta2_power``, placed with the
    first variable (by name) and multiplied by beta1, beta2 after each step's updates."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        for hyper, value in (("learning_rate", learning_rate), ("beta1", beta1),
                             ("beta2", beta2), ("epsilon", epsilon)):
            _check_hyper(hyper, value)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self, graph: Optional[Graph] = None) -> Tuple[Variable, Variable]:
        graph = graph or get_default_graph()
        return (self._get_non_slot_variable("beta1_power", graph),
                self._get_non_slot_variable("beta2_power", graph))

    def _create_slots(self, var_list) -> None:
        first_var = min(var_list, key=lambda v: v.name)
        # float32 as in TensorFlow, float64 for float64 models (exact bias correction).
        dtype = dtypes.float64 if first_var.dtype.base_dtype is dtypes.float64 else dtypes.float32
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var, dtype)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var, dtype)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._lr)
        self._make_hyper("beta1", self._beta1)
        self._make_hyper("beta2", self._beta2)
        self._make_hyper("epsilon", self._epsilon)

    def _beta_powers(self, var) -> Tuple[Tensor, Tensor]:
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        if beta1_power.dtype.base_dtype is not dtype:
            beta1_power = math_ops.cast(beta1_power, dtype)
            beta2_power = math_ops.cast(beta2_power, dtype)
        return beta1_power, beta2_power

    def _apply_dense(self, grad, var) -> Operation:
        dtype = var.dtype.base_dtype
        return apply_adam(var, self.get_slot(var, "m"), self.get_slot(var, "v"),
                          *self._beta_powers(var), self._hyper("learning_rate", dtype),
                          self._hyper("beta1", dtype), self._hyper("beta2", dtype),
                          self._hyper("epsilon", dtype), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var) -> Operation:
        dtype = var.dtype.base_dtype
        return sparse_apply_adam(var, self.get_slot(var, "m"), self.get_slot(var, "v"),
                                 *self._beta_powers(var), self._hyper("learning_rate", dtype),
                                 self._hyper("beta1", dtype), self._hyper("beta2", dtype),
                                 self._hyper("epsilon", dtype), grad.values, grad.indices,
                                 use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope) -> Operation:
        beta1_power, beta2_power = self._get_beta_accumulators()
        dtype = beta1_power.dtype.base_dtype
        graph = beta1_power.graph
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = beta1_power.assign(beta1_power * self._hyper("beta1", dtype),
                                              use_locking=self._use_locking)
            update_beta2 = beta2_power.assign(beta2_power * self._hyper("beta2", dtype),
                                              use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler): per-element step sizes from running averages of squared gradients
    (slot ``accum``) and of squared updates (slot ``accum_update``)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        for hyper, value in (("learning_rate", learning_rate), ("rho", rho),
                             ("epsilon", epsilon)):
            _check_hyper(hyper, value)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._make_hyper("learning_rate", self._lr)
        self._make_hyper("rho", self._rho)
        self._make_hyper("epsilon", self._epsilon)

    def _apply_dense(self, grad, var) -> Operation:
        dtype = var.dtype
        return apply_adadelta(var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
                              self._hyper("learning_rate", dtype), self._hyper("rho", dtype),
                              self._hyper("epsilon", dtype), grad,
                              use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var) -> Operation:
        dtype = var.dtype
        return sparse_apply_adadelta(var, self.get_slot(var, "accum"),
                                     self.get_slot(var, "accum_update"),
                                     self._hyper("learning_rate", dtype), self._hyper("rho", dtype),
                                     self._hyper("epsilon", dtype), grad.values, grad.indices,
                                     use_locking=self._use_locking).op

"""Neural-network ops: activations, softmax, cross-entropy losses, L2 loss, top-k and local
response normalization; with the spatial ops of ``nn_conv_ops`` (convolution, pooling, bias),
the op definitions behind ``tf.nn``.

Shape rules and gradients are registered beside each Python API, with TensorFlow 1.x's op
type names, attrs and argument orders. The compositions built from these and the math ops
(dropout, moments, ...) are in ``tfjupyter/nn.py``.
"""
from __future__ import annotations

import collections
from typing import List, Optional, Tuple

import numpy as np

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.registry import NotDifferentiable, register_gradient, register_op
from ..framework.tensor_shape import TensorShape, list_str
from . import _shapes, array_ops, math_ops, nn_conv_ops
from ._nn_util import (FLOATS, INDEX_TYPES, REALS, const_ints, convert_like, dims_must_match,
                       input_shapes, is_zero, outputs, rank_dims)
from .nn_conv_ops import *  # noqa: F401,F403

__all__ = nn_conv_ops.__all__ + [
    "relu", "relu6", "elu", "softplus",
    "softmax", "log_softmax", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
    "l2_loss", "in_top_k", "top_k", "local_response_normalization", "lrn",
]


# ---------------------------------------------------------------------------------------------
# Activations


def _unary_float(op):
    _shapes.check_dtype_in(op, op.inputs[0], FLOATS)
    return _shapes.unchanged(op)


def _unary_real(op):
    _shapes.check_dtype_in(op, op.inputs[0], REALS)
    return _shapes.unchanged(op)


def _binary_same(op):
    a, b = op.inputs
    _shapes.check_same_dtype(op, a, b)
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"{op.type} op '{op.name}': inputs must have the same shape, got "
                         f"{input_shapes(op)}.")
    return [(a.dtype, a.shape.merge_with(b.shape))]


register_op("Relu")(_unary_real)
register_op("Relu6")(_unary_real)
register_op("Elu")(_unary_float)
register_op("Softplus")(_unary_float)
for _grad_type in ("ReluGrad", "Relu6Grad", "EluGrad", "SoftplusGrad"):
    register_op(_grad_type)(_binary_same)


def _activation(op_type: str, features, name: Optional[str]) -> Tensor:
    return outputs(op_type, [convert_to_tensor(features, name="features")], {}, name)[0]


def _grad_op(op_type: str, grad: Tensor, other: Tensor) -> Tensor:
    return outputs(op_type, [grad, other], {}, None)[0]


@register_gradient("Relu")
def _relu_grad(op, grad):
    return [_grad_op("ReluGrad", grad, op.outputs[0])]


@register_gradient("Relu6")
def _relu6_grad(op, grad):
    # 0 < relu6(x) < 6 exactly where 0 < x < 6, so the output serves as the features.
    return [_grad_op("Relu6Grad", grad, op.outputs[0])]


@register_gradient("ReluGrad")
@register_gradient("Relu6Grad")
def _relu_grad_grad(op, grad):
    features = op.inputs[1]
    return [_grad_op(op.type, grad, features), array_ops.zeros_like(features)]


@register_gradient("Elu")
def _elu_grad(op, grad):
    return [_grad_op("EluGrad", grad, op.outputs[0])]


@register_gradient("EluGrad")
def _elu_grad_grad(op, grad):
    dy, y = op.inputs
    negative = math_ops.less(y, array_ops.zeros_like(y))
    return [_grad_op("EluGrad", grad, y),
            array_ops.where(negative, math_ops.multiply(grad, dy), array_ops.zeros_like(y))]


@register_gradient("Softplus")
def _softplus_grad(op, grad):
    return [_grad_op("SoftplusGrad", grad, op.inputs[0])]


@register_gradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    dy, x = op.inputs
    # d/dx [dy * sigmoid(x)] = dy * sigmoid'(x) = dy / (exp(-x) + 2 + exp(x)).
    denom = math_ops.add(math_ops.add(math_ops.exp(math_ops.negative(x)), math_ops.exp(x)),
                         array_ops.constant(2, dtype=x.dtype))
    return [_grad_op("SoftplusGrad", grad, x), math_ops.divide(math_ops.multiply(grad, dy), denom)]


def relu(features, name: Optional[str] = None) -> Tensor:
    """max(features, 0)."""
    return _activation("Relu", features, name)


def relu6(features, name: Optional[str] = None) -> Tensor:
    """min(max(features, 0), 6)."""
    return _activation("Relu6", features, name)


def elu(features, name: Optional[str] = None) -> Tensor:
    """features if features > 0 else exp(features) - 1."""
    return _activation("Elu", features, name)


def softplus(features, name: Optional[str] = None) -> Tensor:
    """log(exp(features) + 1), computed without overflow."""
    return _activation("Softplus", features, name)


# ---------------------------------------------------------------------------------------------
# Softmax


@register_op("Softmax")
@register_op("LogSoftmax")
def _softmax_shape(op):
    logits = op.inputs[0]
    _shapes.check_dtype_in(op, logits, FLOATS)
    if logits.shape.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: [].")
    return [(logits.dtype, logits.shape)]


@register_gradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    dot = math_ops.reduce_sum(math_ops.multiply(grad, y), -1, keepdims=True)
    return [math_ops.multiply(math_ops.subtract(grad, dot), y)]


@register_gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    probs = math_ops.exp(op.outputs[0])
    total = math_ops.reduce_sum(grad, -1, keepdims=True)
    return [math_ops.subtract(grad, math_ops.multiply(total, probs))]


def _axis_in_range(axis: int, ndims: int, api: str) -> int:
    if not -ndims <= axis < ndims:
        raise ValueError(f"{api}: Dimension ({axis}) must be in the range [{-ndims}, {ndims}) "
                         f"where {ndims} is the number of dimensions in the input.")
    return axis % ndims


def _move_axis_perm(axis: int, ndims: int) -> List[int]:
    """The permutation that swaps ``axis`` with the last axis (its own inverse)."""
    perm = list(range(ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return perm


def _last_axis_op(op_type: str, api: str, logits, axis, dim, name: Optional[str]) -> Tensor:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = -1 if axis is None and dim is None else int(axis if axis is not None else dim)
    logits = convert_to_tensor(logits, name="logits")
    ndims = logits.shape.ndims
    if axis == -1 or ndims is not None and _axis_in_range(axis, ndims, api) == ndims - 1:
        return outputs(op_type, [logits], {}, name)[0]
    if ndims is None:
        raise ValueError(f"{api}: axis={axis} needs the rank of {logits.name}, which is unknown.")
    perm = _move_axis_perm(axis % ndims, ndims)
    with name_scope(name, api, [logits]) as scope:
        moved = outputs(op_type, [array_ops.transpose(logits, perm)], {}, None)[0]
        return array_ops.transpose(moved, perm, name=scope)


def softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
            dim: Optional[int] = None) -> Tensor:
    """exp(logits) / reduce_sum(exp(logits), axis), over the last axis by default."""
    return _last_axis_op("Softmax", "softmax", logits, axis, dim, name)


def log_softmax(logits, axis: Optional[int] = None, name: Optional[str] = None,
                dim: Optional[int] = None) -> Tensor:
    """logits - log(reduce_sum(exp(logits), axis)), over the last axis by default."""
    return _last_axis_op("LogSoftmax", "log_softmax", logits, axis, dim, name)


# ---------------------------------------------------------------------------------------------
# Cross-entropy losses


@register_op("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_shape(op):
    features, labels = op.inputs
    _shapes.check_dtype_in(op, features, FLOATS)
    _shapes.check_same_dtype(op, features, labels)
    f, l_ = rank_dims(op, features, 2), rank_dims(op, labels, 2)
    if not features.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must be same size: logits_size="
                         f"{list_str(features.shape)} labels_size={list_str(labels.shape)} for "
                         f"'{op.name}' (op: '{op.type}')")
    batch = f[0] if f[0] is not None else l_[0]
    classes = f[1] if f[1] is not None else l_[1]
    return [(features.dtype, TensorShape([batch])),
            (features.dtype, TensorShape([batch, classes]))]


@register_op("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_shape(op):
    features, labels = op.inputs
    _shapes.check_dtype_in(op, features, FLOATS)
    _check_label_dtype(op.type, labels)
    f, (n,) = rank_dims(op, features, 2), rank_dims(op, labels, 1)
    dims_must_match(op, f[0], n, "batch size of logits vs. labels")
    batch = f[0] if f[0] is not None else n
    return [(features.dtype, TensorShape([batch])),
            (features.dtype, TensorShape([batch, f[1]]))]


def _check_label_dtype(op_type: str, labels: Tensor) -> None:
    if labels.dtype not in INDEX_TYPES:
        raise TypeError(f"Value passed to parameter 'labels' of {op_type} has DataType "
                        f"{labels.dtype.name} not in list of allowed values: int32, int64 "
                        f"(sparse labels are class indices; for one-hot or probability labels "
                        f"use softmax_cross_entropy_with_logits).")


def _times_loss_grad(grad_loss: Tensor, t: Tensor) -> Tensor:
    return math_ops.multiply(array_ops.expand_dims(grad_loss, -1), t)


def _backprop_grad_term(grad_backprop: Tensor, logits: Tensor) -> Optional[Tensor]:
    """The logits' gradient through the backprop output (softmax - labels), when it is used:
    (g - sum(g * p)) * p with p = softmax(logits)."""
    if is_zero(grad_backprop):
        return None
    probs = softmax(logits)
    dot = math_ops.reduce_sum(math_ops.multiply(grad_backprop, probs), -1, keepdims=True)
    return math_ops.multiply(math_ops.subtract(grad_backprop, dot), probs)


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_backprop):
    logits = op.inputs[0]
    grad = _times_loss_grad(grad_loss, op.outputs[1])
    extra = _backprop_grad_term(grad_backprop, logits)
    if extra is not None:
        grad = math_ops.add(grad, extra)
    return [grad, _times_loss_grad(grad_loss, math_ops.negative(log_softmax(logits)))]


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_grad(op, grad_loss, grad_backprop):
    grad = _times_loss_grad(grad_loss, op.outputs[1])
    extra = _backprop_grad_term(grad_backprop, op.inputs[0])
    if extra is not None:
        grad = math_ops.add(grad, extra)
    return [grad, None]


def _xent_arguments(api: str, sentinel, labels, logits) -> Tuple:
    """(labels, logits, spill) from a TF 1.x keyword call or a TF 0.x positional one.

    0.x took ``(logits, labels, ...)``; under 1.x's ``(_sentinel, labels, logits, ...)`` those
    land in ``_sentinel`` and ``labels``, and the 0.x argument after labels (``spill``, None
    if absent) lands in the ``logits`` slot.
    """
    if sentinel is None:
        if labels is None or logits is None:
            raise ValueError(f"Both labels and logits must be provided to {api}, as "
                             f"{api}(labels=..., logits=...).")
        return labels, logits, None
    if labels is None:
        raise ValueError(f"Only call `{api}` with named arguments (labels=..., logits=..., ...) "
                         f"or with the TF 0.x positional form {api}(logits, labels).")
    return labels, sentinel, logits


def _flatten_to_matrix(t: Tensor) -> Tensor:
    """Reshapes t (rank >= 1) to [-1, last dim] for the 2-D loss kernels."""
    last = t.shape.as_list()[-1]
    if last is None:
        return array_ops.reshape(t, array_ops.concat([[-1], array_ops.shape(t)[-1:]], 0))
    return array_ops.reshape(t, [-1, last])


def _dense_xent(api: str, labels, logits, dim: int, name: Optional[str],
                labels_differentiable: bool) -> Tensor:
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_like(labels, logits, "labels")
        if not labels_differentiable:
            labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        ndims = logits.shape.ndims if logits.shape.ndims is not None else labels.shape.ndims
        if ndims is None:
            raise ValueError(f"{api}: the rank of logits {logits.name} must be known.")
        if ndims == 0:
            raise ValueError(f"{api}: logits cannot be scalars - received shape {logits.shape}.")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"{api}: logits and labels must have the same shape, got logits "
                             f"{logits.shape} and labels {labels.shape}.")
        axis = _axis_in_range(int(dim), ndims, api)
        if axis != ndims - 1:
            perm = _move_axis_perm(axis, ndims)
            logits, labels = array_ops.transpose(logits, perm), array_ops.transpose(labels, perm)
        if ndims == 2:
            return outputs("SoftmaxCrossEntropyWithLogits", [logits, labels], {}, scope)[0]
        static = logits.shape.merge_with(labels.shape).as_list()[:-1]
        out_shape = static if None not in static else array_ops.shape(logits)[:-1]
        cost = outputs("SoftmaxCrossEntropyWithLogits",
                        [_flatten_to_matrix(logits), _flatten_to_matrix(labels)], {}, None)[0]
        return array_ops.reshape(cost, out_shape, name=scope)


def _dim_and_name(spill, dim, name) -> Tuple[int, Optional[str]]:
    """0.x (logits, labels, dim, name) positionally puts dim in the 1.x logits slot (spill)
    and name in the 1.x dim slot."""
    if spill is not None:
        if isinstance(dim, str):
            name = dim
        dim = spill
    return dim, name


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim: int = -1,
                                      name: Optional[str] = None) -> Tensor:
    """-sum(labels * log_softmax(logits), dim): one loss per example.

    TF 1.x: ``(labels=..., logits=...)``, and no gradient flows into ``labels`` (use
    ``softmax_cross_entropy_with_logits_v2`` for that). TF 0.x's positional
    ``(logits, labels, dim=-1, name=None)`` is accepted too.
    """
    api = "softmax_cross_entropy_with_logits"
    labels, logits, spill = _xent_arguments(api, _sentinel, labels, logits)
    dim, name = _dim_and_name(spill, dim, name)
    return _dense_xent(api, labels, logits, dim, name, labels_differentiable=False)


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None,
                                         dim: int = -1, name: Optional[str] = None,
                                         axis: Optional[int] = None) -> Tensor:
    """Like softmax_cross_entropy_with_logits, with gradients into ``labels`` as well."""
    api = "softmax_cross_entropy_with_logits_v2"
    labels, logits, spill = _xent_arguments(api, _sentinel, labels, logits)
    dim, name = _dim_and_name(spill, dim if axis is None else axis, name)
    return _dense_xent(api, labels, logits, dim, name, labels_differentiable=True)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name: Optional[str] = None) -> Tensor:
    """-log_softmax(logits)[labels]: one loss per example, with ``labels`` class indices
    (int32/int64) of rank rank(logits) - 1.

    TF 1.x: ``(labels=..., logits=...)``; TF 0.x's positional ``(logits, labels, name)`` too.
    """
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    labels, logits, spill = _xent_arguments("sparse_softmax_cross_entropy_with_logits",
                                            _sentinel, labels, logits)
    name = spill if spill is not None else name
    with name_scope(name, op_type, [labels, logits]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        _check_label_dtype(op_type, labels)
        l_shape, f_shape = labels.shape, logits.shape
        if f_shape.ndims == 0:
            raise ValueError(f"{op_type}: Logits cannot be scalars - received shape {f_shape}.")
        if f_shape.ndims is not None and l_shape.ndims is not None \
                and l_shape.ndims != f_shape.ndims - 1:
            raise ValueError(f"{op_type}: Rank mismatch: Rank of labels (received "
                             f"{l_shape.ndims}) should equal rank of logits minus 1 (received "
                             f"{f_shape.ndims}).")
        if f_shape.ndims is not None and not l_shape.is_compatible_with(f_shape[:-1]):
            raise ValueError(f"{op_type}: Shape mismatch: The shape of labels (received "
                             f"{l_shape}) should equal the shape of logits except for the last "
                             f"dimension (received {f_shape}).")
        if f_shape.ndims == 2:
            return outputs(op_type, [logits, labels], {}, scope)[0]
        if f_shape.ndims is None:
            raise ValueError(f"{op_type}: the rank of logits {logits.name} must be known.")
        static = l_shape.merge_with(f_shape[:-1]).as_list()
        out_shape = static if None not in static else array_ops.shape(labels)
        cost = outputs(op_type, [_flatten_to_matrix(logits), array_ops.reshape(labels, [-1])],
                        {}, None)[0]
        return array_ops.reshape(cost, out_shape, name=scope)


# ---------------------------------------------------------------------------------------------
# L2Loss


@register_op("L2Loss")
def _l2_loss_shape(op):
    t = op.inputs[0]
    _shapes.check_dtype_in(op, t, FLOATS)
    return [(t.dtype, TensorShape(()))]


@register_gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [math_ops.multiply(op.inputs[0], grad)]


def l2_loss(t, name: Optional[str] = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar."""
    return outputs("L2Loss", [convert_to_tensor(t, name="t")], {}, name)[0]


# ---------------------------------------------------------------------------------------------
# Top-k


def _in_top_k_shape(op, predictions: Tensor, targets: Tensor):
    _shapes.check_dtype_in(op, predictions, FLOATS)
    _shapes.check_dtype_in(op, targets, INDEX_TYPES)
    p, (n,) = rank_dims(op, predictions, 2), rank_dims(op, targets, 1)
    dims_must_match(op, p[0], n, "batch size of predictions vs. targets")
    return [(dtypes.bool, TensorShape([p[0] if p[0] is not None else n]))]


@register_op("InTopK")
def _in_top_k_attr_shape(op):
    if op.get_attr("k") < 0:
        raise ValueError(f"InTopK op '{op.name}': k must be non-negative, got {op.get_attr('k')}.")
    return _in_top_k_shape(op, *op.inputs)


@register_op("InTopKV2")
def _in_top_k_v2_shape(op):
    predictions, targets, k = op.inputs
    rank_dims(op, k, 0)
    _shapes.check_same_dtype(op, targets, k)
    return _in_top_k_shape(op, predictions, targets)


NotDifferentiable("InTopK")
NotDifferentiable("InTopKV2")


def in_top_k(predictions, targets, k, name: Optional[str] = None) -> Tensor:
    """For each row, whether ``predictions[i, targets[i]]`` is among the row's ``k`` largest
    values (ties at the boundary count as in); False for out-of-range targets or rows with
    non-finite predictions."""
    predictions = convert_to_tensor(predictions, name="predictions")
    targets = convert_to_tensor(targets, name="targets")
    if isinstance(k, (int, np.integer)):
        return outputs("InTopK", [predictions, targets], {"k": int(k)}, name)[0]
    k = convert_to_tensor(k, dtype=targets.dtype, name="k")
    return outputs("InTopKV2", [predictions, targets, k], {}, name)[0]


@register_op("TopKV2")
def _top_k_shape(op):
    x, k = op.inputs
    _shapes.check_dtype_in(op, x, REALS)
    _shapes.check_dtype_in(op, k, (dtypes.int32,))
    rank_dims(op, k, 0)
    if x.shape.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         f"(op: 'TopKV2') with input shapes: {input_shapes(op)}.")
    kv = const_ints(k)
    if kv is not None:
        last = None if x.shape.ndims is None else x.shape.as_list()[-1]
        if kv[0] < 0:
            raise ValueError(f"TopKV2 op '{op.name}': k must be non-negative, got {kv[0]}.")
        if last is not None and last < kv[0]:
            raise ValueError(f"input must have at least k columns. Had {last}, needed {kv[0]} "
                             f"for '{op.name}' (op: 'TopKV2').")
    if x.shape.ndims is None:
        out = TensorShape(None)
    else:
        out = TensorShape(x.shape.as_list()[:-1] + [None if kv is None else kv[0]])
    return [(x.dtype, out), (dtypes.int32, out)]


@register_gradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    x, indices = op.inputs[0], op.outputs[1]
    depth = x.shape.as_list()[-1] if x.shape.ndims is not None else None
    if depth is None:
        raise ValueError(f"The gradient of {op.name} (TopKV2) needs the static size of the last "
                         f"dimension of {x.name}.")
    # Scatters each value's gradient back to its index: sum_k grad[..., k] * onehot(index_k).
    hot = array_ops.one_hot(indices, depth, dtype=grad_values.dtype)
    return [math_ops.reduce_sum(math_ops.multiply(array_ops.expand_dims(grad_values, -1), hot),
                                -2), None]


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted: bool = True,  # noqa: A002
          name: Optional[str] = None) -> Tuple[Tensor, Tensor]:
    """(values, indices) of the ``k`` largest entries along the last axis, largest first;
    among equal values the lower index comes first."""
    x = convert_to_tensor(input, name="input")
    k = convert_to_tensor(k, dtype=dtypes.int32, name="k")
    return TopKV2(*outputs("TopKV2", [x, k], {"sorted": bool(sorted)}, name))


# ---------------------------------------------------------------------------------------------
# Local response normalization


def _lrn_attrs(op) -> dict:
    return {k: op.get_attr(k) for k in ("depth_radius", "bias", "alpha", "beta")}


@register_op("LRN")
def _lrn_shape(op):
    x = op.inputs[0]
    _shapes.check_dtype_in(op, x, FLOATS)
    rank_dims(op, x, 4)
    if op.get_attr("depth_radius") < 0:
        raise ValueError(f"LRN op '{op.name}': depth_radius must be non-negative, got "
                         f"{op.get_attr('depth_radius')}.")
    return [(x.dtype, x.shape)]


@register_op("LRNGrad")
def _lrn_grad_shape(op):
    grads, image, output = op.inputs
    _shapes.check_dtype_in(op, image, FLOATS)
    _shapes.check_same_dtype(op, grads, image, output)
    shape = image.shape
    for t in (grads, output):
        rank_dims(op, t, 4)
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"LRNGrad op '{op.name}': inputs must have the same shape, got "
                             f"{input_shapes(op)}.")
        shape = shape.merge_with(t.shape)
    return [(image.dtype, shape)]


@register_gradient("LRN")
def _lrn_grad(op, grad):
    return [outputs("LRNGrad", [grad, op.inputs[0], op.outputs[0]], _lrn_attrs(op), None)[0]]


def local_response_normalization(input, depth_radius: int = 5, bias: float = 1.0,  # noqa: A002
                                 alpha: float = 1.0, beta: float = 0.5,
                                 name: Optional[str] = None) -> Tensor:
    """input / (bias + alpha * sqr_sum) ** beta, where sqr_sum is the sum of squares over the
    channels within ``depth_radius`` of each channel (4-D NHWC input)."""
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
             "beta": float(beta)}
    return outputs("LRN", [convert_to_tensor(input, name="input")], attrs, name)[0]


lrn = local_response_normalization

"""``tf.nn``: the neural-network op APIs (``ops/nn_ops.py``, ``ops/nn_conv_ops.py``) and the
functions TensorFlow 1.x builds from them and the math ops (dropout, moments, batch
normalization, logistic losses, embedding lookup, ...), with the same signatures and graphs.
"""
from __future__ import annotations

import numbers
from typing import Optional, Sequence, Tuple

import numpy as np

from .framework import dtypes as _dtypes
from .framework.ops import Tensor, convert_to_tensor, name_scope
from .framework.tensor_shape import TensorShape
from .ops import _shapes, array_ops as _array_ops, math_ops as _math_ops, nn_ops as _nn_ops
from .ops import candidate_sampling_ops as _sampling, random_ops as _random_ops
from .ops._nn_util import convert_like as _convert_like, shape_of as _shape_of
from .ops.candidate_sampling_ops import *  # noqa: F401,F403
from .ops.math_ops import sigmoid, tanh  # noqa: F401  (tf.nn.sigmoid is tf.sigmoid)
from .ops.nn_ops import *  # noqa: F401,F403
from .ops.nn_compat_ops import *  # noqa: F401,F403  (swish, log_poisson_loss, max_pool2d...)
from .ops.nn_ops import (_xent_arguments, bias_add, conv2d, elu, relu,
                         softmax_cross_entropy_with_logits_v2)
from .ops.embedding_ops import embedding_lookup_sparse, safe_embedding_lookup_sparse  # noqa: F401
from .variables import PartitionedVariable

__all__ = _nn_ops.__all__ + _sampling.__all__ + [
    "sigmoid", "tanh", "dropout", "moments", "weighted_moments", "sufficient_statistics",
    "normalize_moments", "l2_normalize", "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits", "batch_normalization", "fused_batch_norm",
    "batch_norm_with_global_normalization", "xw_plus_b", "relu_layer", "leaky_relu", "selu",
    "softsign", "crelu", "zero_fraction", "conv1d", "atrous_conv2d", "convolution",
    "embedding_lookup", "nce_loss", "sampled_softmax_loss",
    "swish", "log_poisson_loss", "max_pool2d", "avg_pool2d",
]


# ---------------------------------------------------------------------------------------------
# Dropout


def dropout(x, keep_prob=None, noise_shape=None, seed: Optional[int] = None,
            name: Optional[str] = None, rate=None) -> Tensor:
    """Keeps each element of ``x`` with probability ``keep_prob``, scaled by 1 / keep_prob so
    the expected sum is unchanged, and zeroes the others. ``keep_prob`` may be a tensor (a
    placeholder fed 1.0 at test time); ``noise_shape`` broadcasts one keep/drop decision
    along the dimensions where it is 1. ``rate`` = 1 - keep_prob (TF 1.13+)."""
    with name_scope(name, "dropout", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be "
                             f"scaled. Got a {x.dtype.name} tensor instead.")
        if rate is not None:
            if keep_prob is not None:
                raise ValueError("dropout: pass either keep_prob or rate, not both.")
            if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
                raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), "
                                 f"got {rate:g}")
            keep_prob = 1 - rate if isinstance(rate, numbers.Real) else \
                _math_ops.subtract(1.0, _convert_like(rate, x, "rate"))
        if keep_prob is None:
            raise ValueError("dropout: keep_prob (or rate) must be given.")
        if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
            raise ValueError(f"keep_prob must be a scalar tensor or a float in the range (0, 1], "
                             f"got {keep_prob:g}")
        keep_prob = _convert_like(keep_prob, x, "keep_prob")
        if not keep_prob.shape.is_compatible_with(TensorShape(())):
            raise ValueError(f"dropout: keep_prob must be a scalar, got shape {keep_prob.shape}.")
        known = _shapes.constant_value(keep_prob)
        if known is not None:
            if not 0 < float(known) <= 1:
                raise ValueError(f"keep_prob must be a scalar tensor or a float in the range "
                                 f"(0, 1], got {float(known):g}")
            if float(known) == 1:
                return x
        if noise_shape is None:
            noise_shape = _shape_of(x)
        # keep_prob + U[0, 1) is >= 1 with probability keep_prob: floor gives the 0/1 mask.
        random_tensor = _math_ops.add(keep_prob, _random_ops.random_uniform(
            noise_shape, seed=seed, dtype=x.dtype))
        mask = _math_ops.floor(random_tensor)
        ret = _math_ops.multiply(_math_ops.divide(x, keep_prob), mask, name=scope)
        ret.set_shape(x.shape)
        return ret


# ---------------------------------------------------------------------------------------------
# Moments and normalization


def _keepdims(keep_dims, keepdims) -> bool:
    if keep_dims is not None and keepdims is not None and bool(keep_dims) != bool(keepdims):
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims' with different values")
    return bool(keepdims if keepdims is not None else keep_dims)


def moments(x, axes: Sequence[int], shift=None, name: Optional[str] = None,
            keep_dims: Optional[bool] = None, keepdims: Optional[bool] = None
            ) -> Tuple[Tensor, Tensor]:
    """(mean, variance) of ``x`` over ``axes`` (the population variance, as TensorFlow).
    ``shift`` is accepted and unused, as in TensorFlow 1.x. float16 is computed in float32."""
    keep = _keepdims(keep_dims, keepdims)
    axes = [int(a) for a in axes]
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x, name="x")
        y = _math_ops.cast(x, _dtypes.float32) if x.dtype is _dtypes.float16 else x
        mean = _math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = _math_ops.reduce_mean(
            _math_ops.squared_difference(y, _array_ops.stop_gradient(mean)), axes,
            keepdims=True, name="variance")
        if not keep:
            mean = _array_ops.squeeze(mean, axes)
            variance = _array_ops.squeeze(variance, axes)
        if x.dtype is _dtypes.float16:
            return _math_ops.cast(mean, x.dtype), _math_ops.cast(variance, x.dtype)
        return mean, variance


def weighted_moments(x, axes: Sequence[int], frequency_weights, name: Optional[str] = None,
                     keep_dims: Optional[bool] = None, keepdims: Optional[bool] = None
                     ) -> Tuple[Tensor, Tensor]:
    """(mean, variance) of ``x`` over ``axes`` with each element counted
    ``frequency_weights`` times (the weights broadcast against x)."""
    keep = _keepdims(keep_dims, keepdims)
    axes = [int(a) for a in axes]
    with name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert_to_tensor(x, name="x")
        weights = _convert_like(frequency_weights, x, "frequency_weights")
        half = x.dtype is _dtypes.float16
        if half:
            x = _math_ops.cast(x, _dtypes.float32)
            weights = _math_ops.cast(weights, _dtypes.float32)
        weighted_sum = _math_ops.reduce_sum(_math_ops.multiply(weights, x), axes, keepdims=True,
                                            name="weighted_input_sum")
        total_weight = _math_ops.reduce_sum(
            _math_ops.add(weights, _array_ops.zeros_like(x)), axes, keepdims=True,
            name="sum_of_weights")
        divisor = _math_ops.reciprocal(total_weight, name="inv_weight_sum")
        mean = _math_ops.multiply(weighted_sum, divisor)
        distsq = _math_ops.reduce_sum(_math_ops.multiply(weights, _math_ops.squared_difference(
            x, _array_ops.stop_gradient(mean))), axes, keepdims=True, name="weighted_distsq")
        variance = _math_ops.multiply(distsq, divisor)
        if not keep:
            mean, variance = _array_ops.squeeze(mean, axes), _array_ops.squeeze(variance, axes)
        if half:
            mean, variance = (_math_ops.cast(mean, _dtypes.float16),
                              _math_ops.cast(variance, _dtypes.float16))
        return mean, variance


def sufficient_statistics(x, axes: Sequence[int], shift=None, keep_dims: bool = False,
                          name: Optional[str] = None):
    """(count, sum(x - shift), sum((x - shift) ** 2), shift) over ``axes``: the statistics
    ``normalize_moments`` turns into a mean and variance (shift None: no shift)."""
    axes = [int(a) for a in axes]
    with name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert_to_tensor(x, name="x")
        dims = x.shape.as_list() if x.shape.ndims is not None else None
        if dims is not None and all(dims[a] is not None for a in axes):
            count = _array_ops.constant(float(np.prod([dims[a] for a in axes])), dtype=x.dtype,
                                        name="count")
        else:
            count = _math_ops.cast(_math_ops.reduce_prod(
                _array_ops.gather(_array_ops.shape(x), axes)), x.dtype, name="count")
        if shift is not None:
            shift = _convert_like(shift, x, "shift")
            m_ss = _math_ops.subtract(x, shift)
            v_ss = _math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, _math_ops.square(x)
        m_ss = _math_ops.reduce_sum(m_ss, axes, keepdims=keep_dims, name="mean_ss")
        v_ss = _math_ops.reduce_sum(v_ss, axes, keepdims=keep_dims, name="var_ss")
        return count, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name: Optional[str] = None
                      ) -> Tuple[Tensor, Tensor]:
    """(mean, variance) from ``sufficient_statistics``' count and shifted sums."""
    with name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        mean_ss = convert_to_tensor(mean_ss, name="mean_ss")
        divisor = _math_ops.reciprocal(_convert_like(counts, mean_ss, "counts"), name="divisor")
        shifted_mean = _math_ops.multiply(mean_ss, divisor, name="shifted_mean")
        mean = shifted_mean if shift is None else \
            _math_ops.add(shifted_mean, _convert_like(shift, mean_ss, "shift"), name="mean")
        variance = _math_ops.subtract(
            _math_ops.multiply(_convert_like(variance_ss, mean_ss, "variance_ss"), divisor),
            _math_ops.square(shifted_mean), name="variance")
        return mean, variance


def l2_normalize(x, axis=None, epsilon: float = 1e-12, name: Optional[str] = None,
                 dim=None) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon)). ``dim`` is the 0.x name of ``axis``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = _math_ops.reduce_sum(_math_ops.square(x), axis, keepdims=True)
        inv_norm = _math_ops.rsqrt(_math_ops.maximum(square_sum, epsilon))
        return _math_ops.multiply(x, inv_norm, name=scope)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon: float,
                        name: Optional[str] = None) -> Tensor:
    """scale * (x - mean) / sqrt(variance + variance_epsilon) + offset; ``offset`` and
    ``scale`` may be None."""
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        mean, variance = _convert_like(mean, x, "mean"), _convert_like(variance, x, "variance")
        inv = _math_ops.rsqrt(_math_ops.add(variance, variance_epsilon))
        if scale is not None:
            inv = _math_ops.multiply(inv, _convert_like(scale, x, "scale"))
        shift = _math_ops.negative(_math_ops.multiply(mean, inv))
        if offset is not None:
            shift = _math_ops.add(shift, _convert_like(offset, x, "offset"))
        return _math_ops.add(_math_ops.multiply(x, inv), shift)


def batch_norm_with_global_normalization(t, m, v, beta, gamma, variance_epsilon: float,
                                         scale_after_normalization: bool,
                                         name: Optional[str] = None) -> Tensor:
    """TF 0.x batch normalization: ``batch_normalization`` with gamma applied only when
    ``scale_after_normalization``."""
    with name_scope(name, "batchnorm", [t, m, v, beta, gamma]):
        return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                                   variance_epsilon)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon: float = 0.001,
                     data_format: str = "NHWC", is_training: bool = True,
                     name: Optional[str] = None) -> Tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D ``x`` per channel: (y, batch_mean, batch_variance).

    Training normalizes with the batch statistics and returns the variance with Bessel's
    correction (for moving averages); inference uses the given ``mean`` and ``variance``.
    """
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"fused_batch_norm: data_format must be NHWC or NCHW, got "
                         f"{data_format!r}.")
    epsilon = max(float(epsilon), 1.001e-5)  # TensorFlow's (cuDNN's) floor
    with name_scope(name, "FusedBatchNorm", [x, scale, offset]):
        x = convert_to_tensor(x, name="x")
        if x.shape.ndims is not None and x.shape.ndims != 4:
            raise ValueError(f"fused_batch_norm: x must be 4-dimensional, got shape {x.shape}.")
        axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
        if is_training:
            if mean is not None or variance is not None:
                raise ValueError("fused_batch_norm: mean and variance must be None when "
                                 "is_training is True.")
            mean, variance = moments(x, axes)
            # The returned variance has Bessel's correction: count / (count - 1).
            dims = x.shape.as_list() if x.shape.ndims is not None else [None] * 4
            reduced = [dims[a] for a in axes]
            if None not in reduced:
                count = float(np.prod(reduced))
                correction = count / max(count - 1.0, 1.0)
            else:
                count = _math_ops.divide(_math_ops.cast(_array_ops.size(x), x.dtype),
                                         _math_ops.cast(_array_ops.size(mean), x.dtype))
                correction = _math_ops.divide(count, _math_ops.maximum(
                    _math_ops.subtract(count, 1.0), 1.0))
            unbiased = _math_ops.multiply(variance, correction)
        else:
            if mean is None or variance is None:
                raise ValueError("Both 'mean' and 'variance' must be a 1-D tensor when "
                                 "is_training is False.")
            mean, variance = _convert_like(mean, x, "mean"), _convert_like(variance, x, "variance")
            unbiased = variance
        scale, offset = _convert_like(scale, x, "scale"), _convert_like(offset, x, "offset")
        if data_format == "NCHW":
            def per_channel(t):
                return _array_ops.reshape(t, [-1, 1, 1])
        else:
            def per_channel(t):
                return t
        y = batch_normalization(x, per_channel(mean), per_channel(variance),
                                per_channel(offset), per_channel(scale), epsilon)
        return y, mean, unbiased


# ---------------------------------------------------------------------------------------------
# Logistic losses


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                      name: Optional[str] = None, targets=None) -> Tensor:
    """Elementwise -labels * log(sigmoid(logits)) - (1 - labels) * log(1 - sigmoid(logits)),
    computed as max(x, 0) - x * z + log(1 + exp(-|x|)) so that it never overflows.

    TF 1.x: ``(labels=..., logits=...)``; TF 0.x: ``(logits, targets, name=None)``.
    """
    api = "sigmoid_cross_entropy_with_logits"
    if targets is not None:
        if labels is not None:
            raise ValueError(f"{api}: pass labels or (TF 0.x) targets, not both.")
        labels = targets
    labels, logits, spill = _xent_arguments(api, _sentinel, labels, logits)
    name = spill if spill is not None else name
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = _convert_like(labels, logits, "labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs "
                             f"{labels.shape})")
        zeros = _array_ops.zeros_like(logits)
        positive = _math_ops.greater_equal(logits, zeros)
        relu_logits = _array_ops.where(positive, logits, zeros)
        neg_abs_logits = _array_ops.where(positive, _math_ops.negative(logits), logits)
        return _math_ops.add(
            _math_ops.subtract(relu_logits, _math_ops.multiply(logits, labels)),
            _math_ops.log1p(_math_ops.exp(neg_abs_logits)), name=scope)


def weighted_cross_entropy_with_logits(targets=None, logits=None, pos_weight=None,
                                       name: Optional[str] = None, labels=None) -> Tensor:
    """sigmoid_cross_entropy_with_logits with the positive term weighted by ``pos_weight``:
    (1 - z) * x + (1 + (pos_weight - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0))."""
    if labels is not None:
        if targets is not None:
            raise ValueError("weighted_cross_entropy_with_logits: pass labels or targets, "
                             "not both.")
        targets = labels
    if targets is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs targets (labels), logits "
                         "and pos_weight.")
    with name_scope(name, "logistic_loss", [logits, targets]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        targets = _convert_like(targets, logits, "targets")
        if not logits.shape.is_compatible_with(targets.shape):
            raise ValueError(f"logits and targets must have the same shape ({logits.shape} vs "
                             f"{targets.shape})")
        pos_weight = _convert_like(pos_weight, logits, "pos_weight")
        log_weight = _math_ops.add(
            1.0, _math_ops.multiply(_math_ops.subtract(pos_weight, 1.0), targets))
        softplus_neg_abs = _math_ops.add(
            _math_ops.log1p(_math_ops.exp(_math_ops.negative(_math_ops.abs(logits)))),
            relu(_math_ops.negative(logits)))
        return _math_ops.add(_math_ops.multiply(_math_ops.subtract(1.0, targets), logits),
                             _math_ops.multiply(log_weight, softplus_neg_abs), name=scope)


# ---------------------------------------------------------------------------------------------
# Layers and activations built from other ops


def xw_plus_b(x, weights, biases, name: Optional[str] = None) -> Tensor:
    """matmul(x, weights) + biases."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(_math_ops.matmul(x, weights), biases, name=scope)


def relu_layer(x, weights, biases, name: Optional[str] = None) -> Tensor:
    """relu(matmul(x, weights) + biases)."""
    with name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(bias_add(_math_ops.matmul(x, weights), biases), name=scope)


def leaky_relu(features, alpha: float = 0.2, name: Optional[str] = None) -> Tensor:
    """max(alpha * features, features) (for alpha <= 1)."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = _math_ops.cast(features, _dtypes.float32)
        alpha = _convert_like(alpha, features, "alpha")
        return _math_ops.maximum(_math_ops.multiply(alpha, features), features, name=scope)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name: Optional[str] = None) -> Tensor:
    """Scaled exponential linear unit: scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    with name_scope(name, "selu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        negative = _math_ops.multiply(_SELU_ALPHA, elu(features))
        positive = _math_ops.greater(features, _array_ops.zeros_like(features))
        return _math_ops.multiply(_SELU_SCALE, _array_ops.where(positive, features, negative),
                                  name=scope)


def softsign(features, name: Optional[str] = None) -> Tensor:
    """features / (abs(features) + 1)."""
    with name_scope(name, "Softsign", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        return _math_ops.divide(features, _math_ops.add(_math_ops.abs(features), 1.0),
                                name=scope)


def crelu(features, name: Optional[str] = None, axis: int = -1) -> Tensor:
    """Concatenated ReLU: concat([relu(x), relu(-x)], axis), doubling that dimension."""
    with name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        both = _array_ops.concat([features, _math_ops.negative(features)], axis)
        return relu(both, name=scope)


def zero_fraction(value, name: Optional[str] = None) -> Tensor:
    """The fraction of zeros in ``value``, as a float32 scalar."""
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        zero = _array_ops.constant(0, dtype=value.dtype, name="zero")
        return _math_ops.reduce_mean(_math_ops.cast(_math_ops.equal(value, zero),
                                                    _dtypes.float32))


def conv1d(value, filters, stride: int, padding: str, use_cudnn_on_gpu=None,
           data_format: Optional[str] = None, name: Optional[str] = None) -> Tensor:
    """1-D convolution of a 3-D ``value`` [batch, width, in_channels] ("NWC", or "NCW") by
    ``filters`` [width, in_channels, out_channels], as a conv2d of height 1."""
    if data_format in (None, "NHWC", "NWC"):
        spatial, strides, fmt = 1, [1, 1, stride, 1], "NHWC"
    elif data_format in ("NCHW", "NCW"):
        spatial, strides, fmt = 2, [1, 1, 1, stride], "NCHW"
    else:
        raise ValueError("data_format must be \"NWC\" or \"NCW\".")
    with name_scope(name, "conv1d", [value, filters]) as scope:
        value = _array_ops.expand_dims(convert_to_tensor(value, name="value"), spatial)
        filters = _array_ops.expand_dims(_convert_like(filters, value, "filters"), 0)
        result = conv2d(value, filters, strides, padding,
                        use_cudnn_on_gpu=True if use_cudnn_on_gpu is None else use_cudnn_on_gpu,
                        data_format=fmt)
        return _array_ops.squeeze(result, [spatial], name=scope)


def atrous_conv2d(value, filters, rate: int, padding: str, name: Optional[str] = None) -> Tensor:
    """Dilated ("atrous") 2-D convolution: the filter taps are ``rate`` pixels apart."""
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1],
                  name=name or "atrous_conv2d")


def convolution(input, filter, padding: str, strides: Optional[Sequence[int]] = None,  # noqa: A002
                dilation_rate: Optional[Sequence[int]] = None, name: Optional[str] = None,
                data_format: Optional[str] = None) -> Tensor:
    """N-D convolution for N = 1 ("NWC"/"NCW") or 2 ("NHWC"/"NCHW"): ``input`` has N spatial
    dimensions, ``filter`` is [spatial..., in_channels, out_channels]."""
    with name_scope(name, "convolution", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        w = _convert_like(filter, x, "filter")
        ndims = x.shape.ndims if x.shape.ndims is not None else w.shape.ndims
        if ndims not in (3, 4):
            raise ValueError(f"convolution: only 1-D and 2-D convolutions are supported (input "
                             f"rank 3 or 4); input {x.name} has shape {x.shape}.")
        n = ndims - 2
        strides = [1] * n if strides is None else [int(v) for v in strides]
        rates = [1] * n if dilation_rate is None else [int(v) for v in dilation_rate]
        if len(strides) != n or len(rates) != n:
            raise ValueError(f"convolution: strides and dilation_rate need {n} values each, got "
                             f"{strides} and {rates}.")
        if max(strides) > 1 and max(rates) > 1:
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        channels_first = data_format is not None and data_format.startswith("NC")
        if n == 1:  # as a 2-D convolution of height 1
            x = _array_ops.expand_dims(x, 2 if channels_first else 1)
            w = _array_ops.expand_dims(w, 0)
            strides, rates = [1] + strides, [1] + rates
        fmt = "NCHW" if channels_first else "NHWC"
        full = ([1, 1] + strides) if channels_first else ([1] + strides + [1])
        dilations = ([1, 1] + rates) if channels_first else ([1] + rates + [1])
        y = conv2d(x, w, full, padding, data_format=fmt, dilations=dilations,
                   name=None if n == 1 else scope)
        if n == 1:
            y = _array_ops.squeeze(y, [2 if channels_first else 1], name=scope)
        return y


# ---------------------------------------------------------------------------------------------
# Embeddings


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm: Optional[float] = None) -> Tensor:
    """The rows of ``params`` at ``ids``: gather(params, ids). ``params`` may be a list of
    shards or a PartitionedVariable (its parts), split with ``partition_strategy`` "mod" (id i
    in shard i % n, at row i // n) or "div" (contiguous blocks); ``max_norm`` clips each
    looked-up row's L2 norm."""
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    shards = list(params) if isinstance(params, (list, tuple, PartitionedVariable)) else [params]
    if not shards:
        raise ValueError("Need at least one param")
    with name_scope(name, "embedding_lookup", shards + [ids]) as scope:
        ids = convert_to_tensor(ids, name="ids")
        if ids.dtype not in (_dtypes.int32, _dtypes.int64):
            raise TypeError(f"embedding_lookup: ids must be int32 or int64, got {ids.dtype.name}.")
        shards = [convert_to_tensor(p) for p in shards]
        if len(shards) == 1:
            # With the table, as in TensorFlow: with the table on a ps task only the ids and
            # the looked-up rows travel, not the table.
            with shards[0].graph.colocate_with(shards[0].op):
                result = _array_ops.gather(shards[0], ids,
                                           name=None if max_norm is not None else scope)
        else:
            result = _sharded_lookup(shards, ids, partition_strategy,
                                     None if max_norm is not None else scope)
        if max_norm is None:
            return result
        return _clip_rows(result, ids.shape.ndims, max_norm, scope)


def _sharded_lookup(shards, ids: Tensor, partition_strategy: str, name) -> Tensor:
    """TensorFlow's lookup in shards: each id's shard and row there ("mod": shard i % n, row
    i // n; "div": contiguous blocks, the first size % n one row longer), one gather per shard
    placed with it (only the ids and the rows found travel), the rows put back in order. The
    gradient of each shard is an IndexedSlices of its rows."""
    from .ops.array_index_ops import gather, where
    from .ops.array_scatter_ops import unsorted_segment_sum
    n = len(shards)
    flat_ids = _array_ops.reshape(ids, [-1])
    if partition_strategy == "mod":
        assignments = _math_ops.floormod(flat_ids, n)
        local_ids = _math_ops.floordiv(flat_ids, n)
    else:
        sizes = [s.shape.as_list()[0] if s.shape.ndims else None for s in shards]
        if None in sizes:
            total = _math_ops.add_n([_math_ops.cast(_array_ops.shape(s)[0], flat_ids.dtype)
                                     for s in shards])
        else:
            total = _array_ops.constant(sum(sizes), flat_ids.dtype)
        per_shard, extras = _math_ops.floordiv(total, n), _math_ops.floormod(total, n)
        assignments = _math_ops.maximum(_math_ops.floordiv(flat_ids, per_shard + 1),
                                        _math_ops.floordiv(flat_ids - extras, per_shard))
        local_ids = where(_math_ops.less(assignments, extras),
                          _math_ops.floormod(flat_ids, per_shard + 1),
                          _math_ops.floormod(flat_ids - extras, per_shard))
    assignments = _math_ops.cast(assignments, _dtypes.int32)
    positions, rows = [], []
    for p, shard in enumerate(shards):
        # dynamic_partition's part p: the positions (in flat_ids) of the ids in shard p.
        mine = _array_ops.reshape(where(_math_ops.equal(assignments, p)), [-1])
        positions.append(mine)
        shard_ids = gather(local_ids, mine)
        with shard.graph.colocate_with(shard.op):
            rows.append(_array_ops.gather(shard, shard_ids))
    # dynamic_stitch: row k of the result is the found row of position k (each position is in
    # one shard: the sum adds one row to zeros; its gradient is dense, split back by shard).
    found = unsorted_segment_sum(_array_ops.concat(rows, 0), _array_ops.concat(positions, 0),
                                 _array_ops.size(flat_ids))
    element_shape = _array_ops.shape(shards[0])[1:]
    result = _array_ops.reshape(found, _array_ops.concat(
        [_array_ops.shape(ids), element_shape], 0), name=name)
    result.set_shape(ids.shape.concatenate(shards[0].shape[1:]))
    return result


def _clip_rows(rows: Tensor, ids_rank: Optional[int], max_norm: float, name: str) -> Tensor:
    """Scales each embedding row (the dims after the ids' dims) to L2 norm <= max_norm."""
    if ids_rank is None or rows.shape.ndims is None:
        raise ValueError("embedding_lookup with max_norm needs the ranks of ids and params.")
    axes = list(range(ids_rank, rows.shape.ndims))
    norm = _math_ops.sqrt(_math_ops.reduce_sum(_math_ops.square(rows), axes, keepdims=True))
    limit = _convert_like(max_norm, rows, "max_norm")
    return _math_ops.divide(_math_ops.multiply(rows, limit), _math_ops.maximum(norm, limit),
                            name=name)


# ---------------------------------------------------------------------------------------------
# Sampled losses


def _sampled_logits(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
                    num_true: int, sampled_values, remove_accidental_hits: bool,
                    partition_strategy: str, seed: Optional[int]) -> Tuple[Tensor, Tensor]:
    """(logits, labels) of the true classes and the sampled ones, [batch, num_true +
    num_sampled], with log Q (the expected counts) subtracted; TF's _compute_sampled_logits."""
    weights = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    inputs = convert_to_tensor(inputs, name="inputs")
    labels = convert_to_tensor(labels, name="labels")
    if labels.dtype is not _dtypes.int64:
        labels = _math_ops.cast(labels, _dtypes.int64)
    labels_flat = _array_ops.reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = _sampling.log_uniform_candidate_sampler(
            labels, num_true, num_sampled, True, num_classes, seed=seed)
    sampled, true_expected, sampled_expected = (
        _array_ops.stop_gradient(convert_to_tensor(s)) for s in sampled_values)
    sampled = _math_ops.cast(sampled, _dtypes.int64) if sampled.dtype is not _dtypes.int64 \
        else sampled
    # One lookup for the true and the sampled classes' weights and biases, then split.
    all_ids = _array_ops.concat([labels_flat, sampled], 0)
    all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
    all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
    n_true = _array_ops.shape(labels_flat)[:1]
    true_w = _array_ops.slice(all_w, [0, 0], _array_ops.concat([n_true, [-1]], 0))
    sampled_w = _array_ops.slice(all_w, _array_ops.concat([n_true, [0]], 0), [-1, -1])
    true_b = _array_ops.slice(all_b, [0], n_true)
    sampled_b = _array_ops.slice(all_b, n_true, [-1])
    sampled_logits = _math_ops.add(_math_ops.matmul(inputs, sampled_w, transpose_b=True),
                                   sampled_b)
    # true_logits[i, j] = <inputs[i], true_w[i * num_true + j]> + true_b[...].
    dim = _array_ops.shape(true_w)[1:2]
    true_w = _array_ops.reshape(true_w, _array_ops.concat([[-1, num_true], dim], 0))
    true_logits = _math_ops.reduce_sum(
        _math_ops.multiply(_array_ops.expand_dims(inputs, 1), true_w), 2)
    true_logits = _math_ops.add(true_logits, _array_ops.reshape(true_b, [-1, num_true]))
    if remove_accidental_hits:
        # A sampled class that is one of the row's true classes is masked out of that row.
        hits = _math_ops.reduce_any(
            _math_ops.equal(_array_ops.expand_dims(labels, 2), sampled), 1)
        lowest = _array_ops.fill(_array_ops.shape(sampled_logits),
                                 _array_ops.constant(-inputs.dtype.max, inputs.dtype))
        sampled_logits = _array_ops.where(hits, lowest, sampled_logits)
    true_logits = _math_ops.subtract(
        true_logits, _math_ops.log(_math_ops.cast(true_expected, true_logits.dtype)))
    sampled_logits = _math_ops.subtract(
        sampled_logits, _math_ops.log(_math_ops.cast(sampled_expected, sampled_logits.dtype)))
    logits = _array_ops.concat([true_logits, sampled_logits], 1)
    targets = _array_ops.concat([
        _math_ops.divide(_array_ops.ones_like(true_logits), float(num_true)),
        _array_ops.zeros_like(sampled_logits)], 1)
    return logits, targets


def _labels_and_inputs(labels, inputs) -> Tuple[Tensor, Tensor]:
    """TF 0.x took (weights, biases, inputs, labels, ...), 1.x (weights, biases, labels,
    inputs, ...): a positional 0.x call shows as float labels and integer inputs."""
    labels = convert_to_tensor(labels, name="labels")
    inputs = convert_to_tensor(inputs, name="inputs")
    if labels.dtype.is_floating and inputs.dtype.is_integer:
        return inputs, labels
    return labels, inputs


def nce_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
             num_true: int = 1, sampled_values=None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss") -> Tensor:
    """Noise-contrastive estimation loss per example: logistic losses of the true classes
    (label 1 / num_true) against ``num_sampled`` classes drawn by the log-uniform sampler
    (label 0). ``weights`` [num_classes, dim] (or a list of shards), ``biases``
    [num_classes], ``labels`` int [batch, num_true], ``inputs`` [batch, dim]."""
    labels, inputs = _labels_and_inputs(labels, inputs)
    with name_scope(name, "nce_loss", [labels, inputs]):
        logits, targets = _sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
            remove_accidental_hits, partition_strategy, None)
        losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                                   name="sampled_losses")
        return _math_ops.reduce_sum(losses, 1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
                         num_true: int = 1, sampled_values=None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed: Optional[int] = None
                         ) -> Tensor:
    """Softmax cross-entropy per example over the true classes and ``num_sampled`` classes
    drawn by the log-uniform sampler, a fast estimate of the full softmax loss for training
    with many classes. Arguments as nce_loss."""
    labels, inputs = _labels_and_inputs(labels, inputs)
    with name_scope(name, "sampled_softmax_loss", [labels, inputs]):
        logits, targets = _sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
            remove_accidental_hits, partition_strategy, seed)
        return softmax_cross_entropy_with_logits_v2(
            labels=_array_ops.stop_gradient(targets), logits=logits)


# ---------------------------------------------------------------------------------------------
# Recurrent networks, loaded on first use: their cells are tf.layers Layers, and tf.layers
# imports this module (its activations); importing them here would make a cycle that only this
# module could enter (importing ops/rnn_cell_impl.py first would fail).

_RECURRENT = ("static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn")
__all__ += ["rnn_cell", *_RECURRENT]
__all__ += ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]


def __getattr__(name: str):
    if name == "rnn_cell":
        from .ops import rnn_cell
        return rnn_cell
    if name in _RECURRENT:
        from .ops import rnn
        return getattr(rnn, name)
    raise AttributeError(f"module 'tfjupyter.nn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

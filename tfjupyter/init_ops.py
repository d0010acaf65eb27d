"""Initializers: objects that build the initial value of a variable from its shape and dtype.

``tf.get_variable("w", [784, 10], initializer=tf.truncated_normal_initializer(stddev=0.1))``
calls ``initializer(shape, dtype=..., partition_info=...)`` inside the variable's
``Initializer`` name scope; the result is a Tensor built from ordinary graph ops (Fill, Const,
RandomUniform, ...), so running the variable's initializer again draws new random values.

As in TensorFlow 1.x, ``tf.zeros_initializer`` is a class (``tf.zeros_initializer()`` gives an
initializer, and the class itself may be passed as an initializer); TF 0.x programs that call
``tf.zeros_initializer(shape, dtype)`` / ``tf.ones_initializer(shape, dtype)`` directly get
the Tensor, as they did then.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .framework import dtypes
from .framework.ops import Tensor
from .framework.tensor_shape import Dimension, TensorShape
from .ops import array_ops, math_ops, random_ops

__all__ = ["constant_initializer", "zeros_initializer", "ones_initializer",
           "random_uniform_initializer", "random_normal_initializer",
           "truncated_normal_initializer", "uniform_unit_scaling_initializer",
           "variance_scaling_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "orthogonal_initializer"]

# scipy.stats.truncnorm.std(a=-2, b=2): the stddev of a unit normal truncated at two stddevs.
_TRUNCATED_NORMAL_STDDEV = 0.87962566103423978


class Initializer:
    """Base class: ``initializer(shape, dtype=None, partition_info=None) -> Tensor``."""

    dtype: dtypes.DType

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__.")

    def get_config(self) -> Dict[str, Any]:
        """The constructor arguments, as a JSON-serializable dict."""
        return {}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Initializer":
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


# -- helpers ---------------------------------------------------------------------------------------
def _static_shape(shape, who: str) -> List[int]:
    """A shape as a list of ints; the initializers that scale by fan-in need it known."""
    if isinstance(shape, Tensor):
        raise TypeError(f"{who} needs a static shape (a list of ints), got the Tensor "
                        f"{shape.name}.")
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"{who} needs a fully defined shape, got {shape}.")
        return shape.as_list()
    if isinstance(shape, (int, np.integer, Dimension)):
        shape = [shape]
    try:
        dims = [int(d.value if isinstance(d, Dimension) else d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError(f"{who}: the shape must be a list of ints, got {shape!r}.") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{who}: dimensions must be non-negative, got shape {dims}.")
    return dims


def _dtype_or(dtype, default: dtypes.DType) -> dtypes.DType:
    return default if dtype is None else dtypes.as_dtype(dtype)


def _assert_float_dtype(dtype: dtypes.DType, who: str) -> dtypes.DType:
    if not dtype.is_floating:
        raise ValueError(f"{who}: Argument `dtype` is expected to be floating point. "
                         f"Received: {dtype.name}.")
    return dtype


def _compute_fans(shape: Sequence[int]):
    """(fan_in, fan_out) of a weight shape: [in, out] for matrices, [..., in, out] for kernels."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    receptive_field = 1
    for d in shape[:-2]:
        receptive_field *= d
    return int(shape[-2] * receptive_field), int(shape[-1] * receptive_field)


def _looks_like_shape(value) -> bool:
    return isinstance(value, (list, tuple, TensorShape, Tensor, np.ndarray, int, np.integer))


def _legacy_call(args, kwargs) -> bool:
    """True for the TF 0.x function form ``zeros_initializer(shape, dtype=..., ...)``."""
    return "shape" in kwargs or (bool(args) and _looks_like_shape(args[0])
                                 and not isinstance(args[0], bool))


# -- constants -------------------------------------------------------------------------------------
class Zeros(Initializer):
    """Initializer that generates tensors initialized to 0."""

    def __new__(cls, *args, **kwargs):
        if _legacy_call(args, kwargs):
            return _legacy_fill(array_ops.zeros, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return array_ops.zeros(shape, _dtype_or(dtype, self.dtype))

    def get_config(self) -> Dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Initializer that generates tensors initialized to 1."""

    def __new__(cls, *args, **kwargs):
        if _legacy_call(args, kwargs):
            return _legacy_fill(array_ops.ones, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        return array_ops.ones(shape, _dtype_or(dtype, self.dtype))

    def get_config(self) -> Dict[str, Any]:
        return {"dtype": self.dtype.name}


def _legacy_fill(fill, shape, dtype=dtypes.float32, partition_info=None) -> Tensor:
    return fill(shape, dtypes.as_dtype(dtype))


class Constant(Initializer):
    """Initializer that generates tensors with constant values.

    ``value`` is a Python scalar, a list/tuple or a numpy array. A scalar fills the shape; a
    list with as many elements as the shape is reshaped; a shorter one is padded with its last
    element (unless ``verify_shape``), as ``tf.constant`` does in TensorFlow 1.x.
    """

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value={value!r} of type: "
                            f"{type(value).__name__}. Expected Python scalar, list or tuple of "
                            "values, or numpy.ndarray.")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None) -> Tensor:
        dtype = _dtype_or(dtype, self.dtype)
        if verify_shape is None:
            verify_shape = self._verify_shape
        return array_ops.constant(self.value, dtype=dtype, shape=shape, verify_shape=verify_shape)

    def get_config(self) -> Dict[str, Any]:
        value = self.value.tolist() if isinstance(self.value, np.ndarray) else self.value
        return {"value": value, "dtype": self.dtype.name}


# -- random ----------------------------------------------------------------------------------------
class RandomUniform(Initializer):
    """Initializer that generates tensors with a uniform distribution in [minval, maxval)."""

    def __init__(self, minval=0, maxval=None, seed: Optional[int] = None, dtype=dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = _dtype_or(dtype, self.dtype)
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Initializer that generates tensors with a normal distribution."""

    def __init__(self, mean=0.0, stddev=1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), "random_normal_initializer")

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype),
                                    "random_normal_initializer")
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(Initializer):
    """A normal distribution whose values more than two stddevs from the mean are redrawn."""

    def __init__(self, mean=0.0, stddev=1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), "truncated_normal_initializer")

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype),
                                    "truncated_normal_initializer")
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class UniformUnitScaling(Initializer):
    """Uniform in [-sqrt(3 / input_size) * factor, +...], input_size = prod(shape[:-1]), which
    keeps the scale of a layer's inputs (deprecated in TF 1.x for variance_scaling)."""

    def __init__(self, factor: float = 1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), "uniform_unit_scaling_initializer")

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype),
                                    "uniform_unit_scaling_initializer")
        dims = _static_shape(shape, "uniform_unit_scaling_initializer")
        scale_dims = _static_shape(partition_info.full_shape, "uniform_unit_scaling_initializer") \
            if partition_info is not None else dims
        input_size = 1.0
        for d in scale_dims[:-1]:
            input_size *= float(d)
        input_size = max(input_size, 1.0)  # zero-size tensors
        max_val = math.sqrt(3 / input_size) * self.factor
        return random_ops.random_uniform(dims, -max_val, max_val, dtype, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class VarianceScaling(Initializer):
    """Samples with variance ``scale / n``, n = fan_in, fan_out or their average (``mode``).

    ``distribution``: "truncated_normal" (or its alias "normal"; the stddev is corrected for
    the truncation), "untruncated_normal", or "uniform" in [-sqrt(3 * scale / n), +...].
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: Optional[int] = None,
                 dtype=dtypes.float32):
        if scale <= 0.:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError("Argument `mode` should be one of ('fan_in', 'fan_out', "
                             f"'fan_avg'). Received: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError("Argument `distribution` should be one of ('normal', 'uniform', "
                             f"'truncated_normal', 'untruncated_normal'). Received: {distribution}")
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), type(self).__name__)

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        who = type(self).__name__
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype), who)
        dims = _static_shape(shape, who)
        scale_dims = _static_shape(partition_info.full_shape, who) \
            if partition_info is not None else dims
        fan_in, fan_out = _compute_fans(scale_dims)
        scale = self.scale
        if self.mode == "fan_in":
            scale /= max(1., fan_in)
        elif self.mode == "fan_out":
            scale /= max(1., fan_out)
        else:
            scale /= max(1., (fan_in + fan_out) / 2.)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_NORMAL_STDDEV
            return random_ops.truncated_normal(dims, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(dims, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(dims, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> Dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Xavier uniform: U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Xavier normal: truncated normal with stddev sqrt(2 / (fan_in + fan_out)) after
    truncation."""

    def __init__(self, seed: Optional[int] = None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed,
                         dtype=dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """A random orthogonal matrix (times ``gain``): the Q of the QR decomposition of a normal
    matrix, with signs fixed so that the distribution is uniform. Shapes of rank > 2 are
    treated as [prod(shape[:-1]), shape[-1]] matrices."""

    def __init__(self, gain: float = 1.0, seed: Optional[int] = None, dtype=dtypes.float32):
        self.gain = gain
        self.seed = seed
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), "orthogonal_initializer")

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        try:
            from .ops import linalg_ops  # the QR decomposition lives with the linear algebra ops
        except ImportError:
            raise NotImplementedError("orthogonal_initializer needs the Qr op "
                                      "(tfjupyter.ops.linalg_ops.qr), which is not available "
                                      "in this build.") from None
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype), "orthogonal_initializer")
        dims = _static_shape(shape, "orthogonal_initializer")
        if len(dims) < 2:
            raise ValueError("The tensor to initialize, specified by argument `shape` must be at "
                             f"least two-dimensional. Received shape={dims}")
        num_rows = int(np.prod(dims[:-1]))
        num_cols = dims[-1]
        flat_shape = (num_cols, num_rows) if num_rows < num_cols else (num_rows, num_cols)
        a = random_ops.random_normal(flat_shape, dtype=dtype, seed=self.seed)
        q, r = linalg_ops.qr(a, full_matrices=False)
        # Multiplying column j of Q by sign(R[j, j]) makes the distribution uniform (Haar).
        eye = array_ops.constant(np.eye(flat_shape[1]), dtype=dtype)
        diag = math_ops.reduce_sum(math_ops.multiply(r, eye), axis=0)
        q = math_ops.multiply(q, math_ops.sign(diag))
        if num_rows < num_cols:
            q = array_ops.transpose(q)
        return math_ops.multiply(array_ops.constant(self.gain, dtype=dtype),
                                 array_ops.reshape(q, dims))

    def get_config(self) -> Dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0, dtype=dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtypes.as_dtype(dtype), "identity_initializer")

    def __call__(self, shape, dtype=None, partition_info=None) -> Tensor:
        dtype = _assert_float_dtype(_dtype_or(dtype, self.dtype), "identity_initializer")
        dims = _static_shape(shape, "identity_initializer")
        if len(dims) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices, got "
                             f"shape={dims}")
        return array_ops.constant(self.gain * np.eye(*dims), dtype=dtype)

    def get_config(self) -> Dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


# The named variance-scaling initializers of tf.initializers / tf.keras.initializers.
def lecun_normal(seed: Optional[int] = None) -> VarianceScaling:
    return VarianceScaling(scale=1., mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed: Optional[int] = None) -> VarianceScaling:
    return VarianceScaling(scale=1., mode="fan_in", distribution="uniform", seed=seed)


def he_normal(seed: Optional[int] = None) -> VarianceScaling:
    return VarianceScaling(scale=2., mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed: Optional[int] = None) -> VarianceScaling:
    return VarianceScaling(scale=2., mode="fan_in", distribution="uniform", seed=seed)


# TensorFlow 1.x's names for the classes.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal

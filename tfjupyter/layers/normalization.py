"""``tf.layers.BatchNormalization`` / ``batch_normalization``, as TensorFlow 1.x defines them.

Variables (under the layer's scope): 'gamma' (if ``scale``) and 'beta' (if ``center``),
trainable; 'moving_mean' and 'moving_variance', in GLOBAL_VARIABLES only (TF 1.x's layer puts
them in no other collection).

Training normalizes with the batch moments and adds two update ops to GraphKeys.UPDATE_OPS,
``moving -= (moving - batch_statistic) * (1 - momentum)``; run them with the train op::

    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss)

Inference normalizes with the moving statistics. Where TF 1.x would take its fused kernel (4-D
inputs normalized over axis 1 or 3), the moving variance is updated with the batch variance
with Bessel's correction (n / (n - 1)), as TF's fused kernel reports it; elsewhere with the
population variance. The normalized outputs use the population variance in both cases.
"""
from __future__ import annotations

from typing import List, Optional

from .. import nn
from ..framework import dtypes
from ..framework.ops import Tensor, colocate_with, convert_to_tensor, name_scope
from ..framework.tensor_shape import TensorShape
from ..init_ops import ones_initializer, zeros_initializer
from ..ops import array_ops, math_ops
from ..variables import assign_sub
from .base import Layer, constant_bool

__all__ = ["BatchNormalization", "batch_normalization", "BatchNorm"]

# TF's fused batch norm kernel (cuDNN) refuses smaller epsilons and raises them to this.
_FUSED_MIN_EPSILON = 1.001e-5


class BatchNormalization(Layer):
    """Normalizes each feature along ``axis`` (the channels: -1 for channels_last, 1 for
    channels_first) over the other dimensions: ``gamma * (x - mean) / sqrt(var + epsilon) +
    beta``. ``training`` (a bool or a bool tensor) chooses batch or moving statistics."""

    def __init__(self, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True,
                 beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                 moving_mean_initializer=zeros_initializer(),
                 moving_variance_initializer=ones_initializer(), beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm: bool = False, renorm_clipping=None, renorm_momentum: float = 0.99,
                 fused: Optional[bool] = None, trainable: bool = True,
                 virtual_batch_size: Optional[int] = None, adjustment=None,
                 name: Optional[str] = None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        # These change the algorithm itself; refusing them beats computing something else.
        if renorm:
            raise NotImplementedError("tf.layers.BatchNormalization: renorm=True (batch "
                                      "renormalization) is not supported by tfjupyter.")
        if virtual_batch_size is not None:
            raise NotImplementedError("tf.layers.BatchNormalization: virtual_batch_size is not "
                                      "supported by tfjupyter.")
        if adjustment is not None:
            raise NotImplementedError("tf.layers.BatchNormalization: adjustment is not "
                                      "supported by tfjupyter.")
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = [axis]
        else:
            raise TypeError(f"axis must be int or list, type given: {type(axis)}")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape: TensorShape) -> None:
        input_shape = TensorShape(input_shape)
        ndims = input_shape.ndims
        if ndims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        axis = [a + ndims if a < 0 else a for a in self.axis]
        for a in axis:
            if not 0 <= a < ndims:
                raise ValueError(f"Invalid axis: {a}")
        if len(set(axis)) != len(axis):
            raise ValueError(f"Duplicate axis: {self.axis}")
        self.axis = axis
        # As TF 1.x: fused (unless fused=False) for 4-D inputs normalized over axis 1 or 3.
        can_fuse = ndims == 4 and axis in ([1], [3])
        if self.fused is True and not can_fuse:
            raise ValueError(f"Fused batch norm only supports 4-D inputs normalized over axis 1 "
                             f"or 3; got axis {self.axis} for input shape {input_shape}.")
        self.fused = can_fuse and self.fused is not False
        if self.fused:
            self.epsilon = max(self.epsilon, _FUSED_MIN_EPSILON)

        dims = input_shape.as_list()
        for a in axis:
            if dims[a] is None:
                raise ValueError(f"Input has undefined `axis` dimension. Input shape: "
                                 f"{input_shape}")
        if len(axis) == 1:
            param_shape = [dims[axis[0]]]
        else:
            param_shape = [dims[i] if i in axis else 1 for i in range(ndims)]
        # float16 inputs keep float32 statistics, as TF does.
        param_dtype = dtypes.float32 if self._dtype in (None, dtypes.float16) else self._dtype

        if self.scale:
            self.gamma = self.add_weight("gamma", shape=param_shape, dtype=param_dtype,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True)
        if self.center:
            self.beta = self.add_weight("beta", shape=param_shape, dtype=param_dtype,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True)
        self.moving_mean = self.add_weight("moving_mean", shape=param_shape, dtype=param_dtype,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape=param_shape,
                                               dtype=param_dtype,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def _assign_moving_average(self, variable, value: Tensor, decay: Tensor) -> Tensor:
        """variable -= (variable - value) * decay: TF's form of
        variable * momentum + value * (1 - momentum)."""
        with name_scope("AssignMovingAvg") as scope, colocate_with(variable):
            update_delta = math_ops.multiply(
                math_ops.subtract(variable, math_ops.cast(value, variable.dtype)), decay)
            return assign_sub(variable, update_delta, name=scope)

    def call(self, inputs: Tensor, training=False) -> Tensor:
        ndims = inputs.get_shape().ndims
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        single_axis = len(self.axis) == 1

        def broadcast(t: Optional[Tensor]) -> Optional[Tensor]:
            # Per-feature vectors along a non-last axis need [1, C, 1, 1]-style shapes.
            if t is None or not single_axis or self.axis[0] == ndims - 1:
                return t
            shape = [1] * ndims
            shape[self.axis[0]] = inputs.get_shape().as_list()[self.axis[0]]
            return array_ops.reshape(t, shape)

        training_value = constant_bool(training)
        if training_value is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_variance = nn.moments(
                math_ops.cast(inputs, self.moving_mean.dtype), reduction_axes,
                keep_dims=not single_axis)
            update_variance = batch_variance
            if self.fused:
                update_variance = math_ops.multiply(batch_variance, self._bessel_correction(
                    inputs, reduction_axes, batch_variance.dtype))
            momentum = convert_to_tensor(self.momentum, dtype=self.moving_mean.dtype)
            decay = math_ops.subtract(1.0, momentum, name="decay")
            if training_value is None:
                # tf.cond in TF; without control flow here, select between the statistics.
                # The update then uses decay 0 in inference steps: moving - 0 * (...), no
                # change, like TF's fused layer (momentum 1.0 when not training).
                training = convert_to_tensor(training)
                mean = array_ops.where(training, batch_mean, convert_to_tensor(self.moving_mean))
                variance = array_ops.where(training, batch_variance,
                                           convert_to_tensor(self.moving_variance))
                update_variance = array_ops.where(training, update_variance,
                                                  convert_to_tensor(self.moving_variance))
                decay = array_ops.where(training, decay, array_ops.zeros_like(decay))
            else:
                mean, variance = batch_mean, batch_variance
            self.add_update(self._assign_moving_average(self.moving_mean, mean, decay))
            self.add_update(self._assign_moving_average(self.moving_variance, update_variance,
                                                        decay))
        outputs = nn.batch_normalization(
            inputs, broadcast(math_ops.cast(mean, inputs.dtype)),
            broadcast(math_ops.cast(variance, inputs.dtype)),
            broadcast(self.beta), broadcast(self.gamma), self.epsilon)
        outputs.set_shape(inputs.get_shape())
        return outputs

    @staticmethod
    def _bessel_correction(inputs: Tensor, reduction_axes: List[int], dtype: dtypes.DType):
        """n / (n - 1) for the n values each statistic is computed from."""
        dims = inputs.get_shape().as_list()
        reduced = [dims[a] for a in reduction_axes]
        if None not in reduced:
            count = 1.0
            for d in reduced:
                count *= d
            return count / max(count - 1.0, 1.0)
        shape = math_ops.cast(array_ops.shape(inputs), dtype)
        count = math_ops.reduce_prod(array_ops.gather(shape, reduction_axes))
        return math_ops.divide(count, math_ops.maximum(math_ops.subtract(count, 1.0), 1.0))


BatchNorm = BatchNormalization


def batch_normalization(inputs, axis=-1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True,
                        beta_initializer=zeros_initializer(), gamma_initializer=ones_initializer(),
                        moving_mean_initializer=zeros_initializer(),
                        moving_variance_initializer=ones_initializer(), beta_regularizer=None,
                        gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                        training=False, trainable: bool = True, name: Optional[str] = None,
                        reuse=None, renorm: bool = False, renorm_clipping=None,
                        renorm_momentum: float = 0.99, fused: Optional[bool] = None,
                        virtual_batch_size: Optional[int] = None, adjustment=None) -> Tensor:
    """The functional form of ``BatchNormalization``; in training, run the ops of
    GraphKeys.UPDATE_OPS with the train op to keep the moving statistics."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _reuse=reuse, _scope=name)
    return layer.apply(inputs, training=training)

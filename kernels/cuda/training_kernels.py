"""GPU kernels for the optimizers' apply ops: ApplyGradientDescent, ApplyMomentum, ApplyAdagrad,
ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdam and ApplyAdadelta.

Each is one fused elementwise kernel that updates the variable and its slots in place, in the
device buffers of the ResourceManager: every element of grad and of each slot is read once and
written once. The scalar hyperparameters stay on the device (0-d arrays, read by every thread
as element 0), so a step never waits for the GPU; each thread derives the scalar terms
(1 - rho, Adam's bias-corrected step) once, in float64 as the CPU kernels do on the host, then
works in the variable's precision. float16 state is computed in float32 and rounded on store.
The math is TensorFlow's (core/kernels/training_ops.cc), term for term as the CPU kernels.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numba import cuda

from ..cpu.training_kernels import (_checked_refs, _grad_shape_error, _ref_inputs,
                                    _refs_unchanged)
from . import KERNELS, _runtime
from .array_kernels import on_device


def _build(F) -> Dict[str, Callable]:
    """The update kernels computing in the numpy float type ``F`` (np.float32 or np.float64):
    every load is cast to ``F`` so that float32 state never drifts into float64 arithmetic."""

    @_runtime.kernel
    def gradient_descent(var, grad, alpha):  # pragma: no cover - device code
        a = F(alpha[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            var[i] = F(var[i]) - a * F(grad[i])

    @_runtime.kernel
    def momentum(var, accum, grad, lr, mom):  # pragma: no cover - device code
        r = F(lr[0])
        m = F(mom[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            a = F(accum[i]) * m + F(grad[i])
            accum[i] = a
            var[i] = F(var[i]) - r * a

    @_runtime.kernel
    def momentum_nesterov(var, accum, grad, lr, mom):  # pragma: no cover - device code
        r = F(lr[0])
        m = F(mom[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            a = F(accum[i]) * m + g
            accum[i] = a
            var[i] = F(var[i]) - (g * r + a * m * r)

    @_runtime.kernel
    def adagrad(var, accum, grad, lr):  # pragma: no cover - device code
        r = F(lr[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            a = F(accum[i]) + g * g
            accum[i] = a
            var[i] = F(var[i]) - r * g / F(math.sqrt(a))

    @_runtime.kernel
    def rmsprop(var, ms, mom, grad, lr, rho, momentum_, epsilon):  # pragma: no cover
        r = F(lr[0])
        one_minus_rho = F(1.0 - np.float64(rho[0]))
        m_ = F(momentum_[0])
        eps = F(epsilon[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            s0 = F(ms[i])
            s = s0 + (g * g - s0) * one_minus_rho
            ms[i] = s
            m = F(mom[i]) * m_ + r * g / F(math.sqrt(s + eps))
            mom[i] = m
            var[i] = F(var[i]) - m

    @_runtime.kernel
    def centered_rmsprop(var, mg, ms, mom, grad, lr, rho, momentum_,
                         epsilon):  # pragma: no cover - device code
        r = F(lr[0])
        one_minus_rho = F(1.0 - np.float64(rho[0]))
        m_ = F(momentum_[0])
        eps = F(epsilon[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            s0 = F(ms[i])
            s = s0 + (g * g - s0) * one_minus_rho
            ms[i] = s
            a0 = F(mg[i])
            a = a0 + (g - a0) * one_minus_rho
            mg[i] = a
            m = F(mom[i]) * m_ + r * g / F(math.sqrt(s - a * a + eps))
            mom[i] = m
            var[i] = F(var[i]) - m

    @_runtime.kernel
    def adam(var, m, v, grad, beta1_power, beta2_power, lr, beta1, beta2,
             epsilon):  # pragma: no cover - device code
        alpha = F(np.float64(lr[0]) * math.sqrt(1.0 - np.float64(beta2_power[0]))
                  / (1.0 - np.float64(beta1_power[0])))
        one_minus_beta1 = F(1.0 - np.float64(beta1[0]))
        one_minus_beta2 = F(1.0 - np.float64(beta2[0]))
        eps = F(epsilon[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            m0 = F(m[i])
            v0 = F(v[i])
            mi = m0 + (g - m0) * one_minus_beta1
            vi = v0 + (g * g - v0) * one_minus_beta2
            m[i] = mi
            v[i] = vi
            var[i] = F(var[i]) - mi * alpha / (F(math.sqrt(vi)) + eps)

    @_runtime.kernel
    def adam_nesterov(var, m, v, grad, beta1_power, beta2_power, lr, beta1, beta2,
                      epsilon):  # pragma: no cover - device code
        alpha = F(np.float64(lr[0]) * math.sqrt(1.0 - np.float64(beta2_power[0]))
                  / (1.0 - np.float64(beta1_power[0])))
        one_minus_beta1 = F(1.0 - np.float64(beta1[0]))
        one_minus_beta2 = F(1.0 - np.float64(beta2[0]))
        b1 = F(1.0) - one_minus_beta1
        eps = F(epsilon[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            m0 = F(m[i])
            v0 = F(v[i])
            mi = m0 + (g - m0) * one_minus_beta1
            vi = v0 + (g * g - v0) * one_minus_beta2
            m[i] = mi
            v[i] = vi
            var[i] = F(var[i]) - (g * one_minus_beta1 + b1 * mi) * alpha / \
                (F(math.sqrt(vi)) + eps)

    @_runtime.kernel
    def adadelta(var, accum, accum_update, grad, lr, rho, epsilon):  # pragma: no cover
        r = F(lr[0])
        p = F(rho[0])
        one_minus_rho = F(1.0 - np.float64(rho[0]))
        eps = F(epsilon[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            a = F(accum[i]) * p + g * g * one_minus_rho
            accum[i] = a
            u0 = F(accum_update[i])
            u = F(math.sqrt(u0 + eps)) / F(math.sqrt(a + eps)) * g
            var[i] = F(var[i]) - u * r
            accum_update[i] = u0 * p + u * u * one_minus_rho

    return dict(gradient_descent=gradient_descent, momentum=momentum,
                momentum_nesterov=momentum_nesterov, adagrad=adagrad, rmsprop=rmsprop,
                centered_rmsprop=centered_rmsprop, adam=adam, adam_nesterov=adam_nesterov,
                adadelta=adadelta)


_KERNELS = {np.dtype(np.float64): _build(np.float64), np.dtype(np.float32): _build(np.float32)}
# float16 state computes in float32 (the kernels cast every load to the compute type).
_KERNELS[np.dtype(np.float16)] = _KERNELS[np.dtype(np.float32)]


class _Scalars:
    """The 1-element views of scalar inputs, remembered while the same arrays come back (a
    constant hyperparameter is the same device array every step): making a view is ~10 us of
    Python, a launch's worth."""

    def __init__(self, ctx, count: int):
        self._ctx = ctx
        self._sources: List[object] = [None] * count
        self._views: List[object] = [None] * count

    def __call__(self, values: Sequence) -> List:
        for k, value in enumerate(values):
            if value is not self._sources[k]:
                self._views[k] = _runtime.flat(on_device(self._ctx, value))
                self._sources[k] = value
        return self._views


def _updater(op, ctx, kernel_name: str) -> Callable:
    """``update(grad, *scalars)``: launches the op's kernel on the flat variable and slot
    buffers, the flat grad and the scalars; returns the variable's buffer.

    The buffers are checked (initialized, same shapes) when first seen; later steps only check
    that they are still the same objects (an Assign of another shape or a new session replaces
    them)."""
    store = ctx.resources.variables
    names, lookup, where = _ref_inputs(op, ctx)
    dtype = np.dtype(op.inputs[0].dtype.as_numpy_dtype)
    kernels = _KERNELS.get(dtype)
    if kernels is None:
        raise TypeError(f"{op.type} has no GPU kernel for dtype {dtype.name}")
    kernel = kernels[kernel_name]
    n_scalars = len(op.inputs) - len(names) - 1
    scalars_of = _Scalars(ctx, n_scalars)
    state: Tuple[Tuple[object, ...], List[object], Tuple[int, ...]] = ((), [], ())

    def refresh():
        nonlocal state
        found = _checked_refs(op, store, names, lookup, where)
        state = (tuple(found), [_runtime.flat(ref) for ref in found], tuple(found[0].shape))
        return state

    def update(grad, *scalars):
        refs, flats, shape = state
        if not _refs_unchanged(store, lookup, refs):
            refs, flats, shape = refresh()
        if tuple(grad.shape) != shape:
            raise _grad_shape_error(op, shape, grad.shape, where)
        n = int(refs[0].size)
        if n:
            _runtime.launch(ctx, kernel, n)(*flats, _runtime.flat(on_device(ctx, grad)),
                                            *scalars_of(scalars))
        return refs[0]

    if not op.get_attr("use_locking"):
        return update
    lock = ctx.resources.lock

    def locked(grad, *scalars):
        with lock:
            return update(grad, *scalars)
    return locked


# op type -> (kernel, kernel when use_nesterov, position of grad among the op's inputs after the
# refs, which the comments list). update() takes grad first, then the other inputs in order.
_APPLY: Dict[str, Tuple[str, Optional[str], int]] = {
    "ApplyGradientDescent": ("gradient_descent", None, 1),  # alpha, delta
    "ApplyMomentum": ("momentum", "momentum_nesterov", 1),  # lr, grad, momentum
    "ApplyAdagrad": ("adagrad", None, 1),  # lr, grad
    "ApplyRMSProp": ("rmsprop", None, 4),  # lr, rho, momentum, epsilon, grad
    "ApplyCenteredRMSProp": ("centered_rmsprop", None, 4),  # as ApplyRMSProp
    "ApplyAdam": ("adam", "adam_nesterov", 6),  # b1_power, b2_power, lr, b1, b2, eps, grad
    "ApplyAdadelta": ("adadelta", None, 3),  # lr, rho, epsilon, grad
}


@KERNELS.register(*_APPLY)
def apply_optimizer(op, ctx):
    plain, nesterov, g = _APPLY[op.type]
    update = _updater(op, ctx, nesterov if nesterov and op.get_attr("use_nesterov") else plain)

    def run(*inputs):
        return update(inputs[g], *inputs[:g], *inputs[g + 1:])
    return run

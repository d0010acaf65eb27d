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
import operator
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
from numba import cuda

from tfjupyter.framework import errors

from ..cpu.training_kernels import _REF_ARGS, _variable_name
from . import KERNELS, _runtime
from .array_kernels import on_device


def _build(F) -> Dict[str, Callable]:
    """The update kernels computing in the numpy float type ``F`` (np.float32 or np.float64):
    every load is cast to ``F`` so that float32 state never drifts into float64 arithmetic."""

    @cuda.jit
    def gradient_descent(var, grad, alpha):  # pragma: no cover - device code
        a = F(alpha[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            var[i] = F(var[i]) - a * F(grad[i])

    @cuda.jit
    def momentum(var, accum, grad, lr, mom):  # pragma: no cover - device code
        r = F(lr[0])
        m = F(mom[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            a = F(accum[i]) * m + F(grad[i])
            accum[i] = a
            var[i] = F(var[i]) - r * a

    @cuda.jit
    def momentum_nesterov(var, accum, grad, lr, mom):  # pragma: no cover - device code
        r = F(lr[0])
        m = F(mom[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            a = F(accum[i]) * m + g
            accum[i] = a
            var[i] = F(var[i]) - (g * r + a * m * r)

    @cuda.jit
    def adagrad(var, accum, grad, lr):  # pragma: no cover - device code
        r = F(lr[0])
        for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
            g = F(grad[i])
            a = F(accum[i]) + g * g
            accum[i] = a
            var[i] = F(var[i]) - r * g / F(math.sqrt(a))

    @cuda.jit
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

    @cuda.jit
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

    @cuda.jit
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

    @cuda.jit
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

    @cuda.jit
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


def _dims(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _flat(a):
    return a.reshape(int(a.size)) if a.ndim != 1 else a


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
                self._views[k] = _flat(on_device(self._ctx, value))
                self._sources[k] = value
        return self._views


def _updater(op, ctx, kernel_name: str) -> Callable:
    """``update(grad, *scalars)``: launches the op's kernel on the flat variable and slot
    buffers, the flat grad and the scalars; returns the variable's buffer.

    The buffers are checked (initialized, same shapes) when first seen; later steps only check
    that they are still the same objects (an Assign of another shape or a new session replaces
    them)."""
    store = ctx.resources.variables
    arg_names = _REF_ARGS[op.type]
    names = tuple(_variable_name(op.inputs[i].op) for i in range(len(arg_names)))
    lookup = operator.itemgetter(*names) if len(names) > 1 else \
        (lambda s, _name=names[0]: (s[_name],))
    where = f"\n\t [[node {op.name} ({op.type}) on {ctx.name}]]"
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
        try:
            found = lookup(store)
        except KeyError:
            missing = next(n for n in names if n not in store)
            raise errors.FailedPreconditionError(
                None, op, f"Attempting to use uninitialized value {missing}{where}") from None
        shape = tuple(found[0].shape)
        for k, ref in enumerate(found):
            if tuple(ref.shape) != shape:
                raise errors.InvalidArgumentError(
                    None, op, f"var and {arg_names[k]} do not have the same shape"
                    f"{_dims(shape)} {_dims(ref.shape)}{where}")
        state = (tuple(found), [_flat(ref) for ref in found], shape)
        return state

    def update(grad, *scalars):
        refs, flats, shape = state
        try:
            same = all(map(operator.is_, lookup(store), refs)) and refs
        except KeyError:
            same = False
        if not same:
            refs, flats, shape = refresh()
        if tuple(grad.shape) != shape:
            raise errors.InvalidArgumentError(
                None, op, f"var and grad do not have the same shape{_dims(shape)} "
                f"{_dims(grad.shape)}{where}")
        n = int(refs[0].size)
        if n:
            _runtime.launch(ctx, kernel, n)(*flats, _flat(on_device(ctx, grad)),
                                            *scalars_of(scalars))
        return refs[0]

    if not op.get_attr("use_locking"):
        return update
    lock = ctx.resources.lock

    def locked(grad, *scalars):
        with lock:
            return update(grad, *scalars)
    return locked


@KERNELS.register("ApplyGradientDescent")
def apply_gradient_descent(op, ctx):
    update = _updater(op, ctx, "gradient_descent")

    def run(alpha, delta):
        return update(delta, alpha)
    return run


@KERNELS.register("ApplyMomentum")
def apply_momentum(op, ctx):
    update = _updater(op, ctx, "momentum_nesterov" if op.get_attr("use_nesterov") else
                      "momentum")

    def run(lr, grad, momentum):
        return update(grad, lr, momentum)
    return run


@KERNELS.register("ApplyAdagrad")
def apply_adagrad(op, ctx):
    update = _updater(op, ctx, "adagrad")

    def run(lr, grad):
        return update(grad, lr)
    return run


@KERNELS.register("ApplyRMSProp")
def apply_rmsprop(op, ctx):
    update = _updater(op, ctx, "rmsprop")

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, lr, rho, momentum, epsilon)
    return run


@KERNELS.register("ApplyCenteredRMSProp")
def apply_centered_rmsprop(op, ctx):
    update = _updater(op, ctx, "centered_rmsprop")

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, lr, rho, momentum, epsilon)
    return run


@KERNELS.register("ApplyAdam")
def apply_adam(op, ctx):
    update = _updater(op, ctx, "adam_nesterov" if op.get_attr("use_nesterov") else "adam")

    def run(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        return update(grad, beta1_power, beta2_power, lr, beta1, beta2, epsilon)
    return run


@KERNELS.register("ApplyAdadelta")
def apply_adadelta(op, ctx):
    update = _updater(op, ctx, "adadelta")

    def run(lr, rho, epsilon, grad):
        return update(grad, lr, rho, epsilon)
    return run

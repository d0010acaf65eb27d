"""CPU kernels for the optimizers' apply ops: ApplyGradientDescent, ApplyMomentum, ApplyAdagrad,
ApplyRMSProp, ApplyCenteredRMSProp and ApplyAdam.

Each one updates its variable and slots in place, in the buffers of the device's
ResourceManager, with one fused Numba loop: every element of grad and of each slot is read
once and written once, and nothing is allocated.  The hyperparameters arrive as 0-d arrays
and become Python floats.  float16 state is computed in float32 and written back.
The math is TensorFlow's (core/kernels/training_ops.cc).
"""
from __future__ import annotations

import math
from typing import Callable, List, Sequence

import numpy as np
from numba import njit

from tfjupyter.framework import errors

from . import KERNELS

# Argument names of the ref inputs of each op, in input order (for error messages).
_REF_ARGS = {
    "ApplyGradientDescent": ("var",),
    "ApplyMomentum": ("var", "accum"),
    "ApplyAdagrad": ("var", "accum"),
    "ApplyRMSProp": ("var", "ms", "mom"),
    "ApplyCenteredRMSProp": ("var", "mg", "ms", "mom"),
    "ApplyAdam": ("var", "m", "v"),
}


# ---------------------------------------------------------------------------------------
# Fused update loops over flat (contiguous) arrays


@njit(cache=True, nogil=True)
def _gradient_descent(var, grad, alpha):
    for i in range(var.size):
        var[i] -= alpha * grad[i]


@njit(cache=True, nogil=True)
def _momentum(var, accum, grad, lr, momentum, nesterov):
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * momentum + g
        accum[i] = a
        if nesterov:
            var[i] -= g * lr + a * momentum * lr
        else:
            var[i] -= lr * a


@njit(cache=True, nogil=True)
def _adagrad(var, accum, grad, lr):
    for i in range(var.size):
        g = grad[i]
        a = accum[i] + g * g
        accum[i] = a
        var[i] -= lr * g / math.sqrt(a)


@njit(cache=True, nogil=True)
def _rmsprop(var, ms, mom, grad, lr, rho, momentum, epsilon):
    one_minus_rho = 1.0 - rho
    for i in range(var.size):
        g = grad[i]
        s = ms[i] + (g * g - ms[i]) * one_minus_rho
        ms[i] = s
        m = mom[i] * momentum + lr * g / math.sqrt(s + epsilon)
        mom[i] = m
        var[i] -= m


@njit(cache=True, nogil=True)
def _centered_rmsprop(var, mg, ms, mom, grad, lr, rho, momentum, epsilon):
    one_minus_rho = 1.0 - rho
    for i in range(var.size):
        g = grad[i]
        s = ms[i] + (g * g - ms[i]) * one_minus_rho
        ms[i] = s
        a = mg[i] + (g - mg[i]) * one_minus_rho
        mg[i] = a
        m = mom[i] * momentum + lr * g / math.sqrt(s - a * a + epsilon)
        mom[i] = m
        var[i] -= m


@njit(cache=True, nogil=True)
def _adam(var, m, v, grad, alpha, beta1, beta2, epsilon, nesterov):
    one_minus_beta1 = 1.0 - beta1
    one_minus_beta2 = 1.0 - beta2
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta1
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        m[i] = mi
        v[i] = vi
        if nesterov:
            var[i] -= (g * one_minus_beta1 + beta1 * mi) * alpha / (math.sqrt(vi) + epsilon)
        else:
            var[i] -= mi * alpha / (math.sqrt(vi) + epsilon)


# ---------------------------------------------------------------------------------------
# Resolving the variable buffers


def _variable_name(var_op) -> str:
    return var_op.get_attr("shared_name") or var_op.name


def _updater(op, ctx, loop: Callable) -> Callable:
    """``update(grad, *scalars)``: runs ``loop(*flat_refs, flat_grad, *scalars)`` in place on
    the op's variable and slot buffers after checking them, and returns the variable buffer."""
    store = ctx.resources.variables
    arg_names = _REF_ARGS[op.type]
    names = tuple(_variable_name(op.inputs[i].op) for i in range(len(arg_names)))
    lock = ctx.resources.lock if op.get_attr("use_locking") else None
    dtype = op.inputs[0].dtype.as_numpy_dtype
    half = dtype == np.float16

    def buffers(grad) -> List[np.ndarray]:
        try:
            refs = [store[n] for n in names]
        except KeyError:
            missing = next(n for n in names if n not in store)
            raise errors.FailedPreconditionError(
                None, op, f"Attempting to use uninitialized value {missing}\n\t [[node "
                f"{op.name} ({op.type}) on {ctx.name}]]") from None
        shape = refs[0].shape
        for arg, ref in zip(arg_names[1:], refs[1:]):
            if ref.shape != shape:
                raise errors.InvalidArgumentError(
                    None, op, f"var and {arg} do not have the same shape{_dims(shape)} "
                    f"{_dims(ref.shape)}\n\t [[node {op.name} ({op.type}) on {ctx.name}]]")
        if np.shape(grad) != shape:
            raise errors.InvalidArgumentError(
                None, op, f"var and grad do not have the same shape{_dims(shape)} "
                f"{_dims(np.shape(grad))}\n\t [[node {op.name} ({op.type}) on {ctx.name}]]")
        for k, ref in enumerate(refs):
            if not ref.flags.c_contiguous:  # never from Assign; kept correct if it happens
                refs[k] = store[names[k]] = np.ascontiguousarray(ref)
        return refs

    def update(grad, *scalars):
        refs = buffers(grad)
        if half:
            work = [r.astype(np.float32) for r in refs]
            loop(*[w.reshape(-1) for w in work], np.asarray(grad, np.float32).reshape(-1),
                 *scalars)
            for r, w in zip(refs, work):
                np.copyto(r, w, casting="unsafe")
        else:
            loop(*[r.reshape(-1) for r in refs], np.asarray(grad, dtype).reshape(-1), *scalars)
        return refs[0]

    if lock is None:
        return update

    def locked_update(grad, *scalars):
        with lock:
            return update(grad, *scalars)
    return locked_update


def _dims(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# ---------------------------------------------------------------------------------------
# Kernels


@KERNELS.register("ApplyGradientDescent")
def apply_gradient_descent(op, ctx):
    update = _updater(op, ctx, _gradient_descent)

    def run(alpha, delta):
        return update(delta, float(alpha))
    return run


@KERNELS.register("ApplyMomentum")
def apply_momentum(op, ctx):
    update = _updater(op, ctx, _momentum)
    nesterov = bool(op.get_attr("use_nesterov"))

    def run(lr, grad, momentum):
        return update(grad, float(lr), float(momentum), nesterov)
    return run


@KERNELS.register("ApplyAdagrad")
def apply_adagrad(op, ctx):
    update = _updater(op, ctx, _adagrad)

    def run(lr, grad):
        return update(grad, float(lr))
    return run


@KERNELS.register("ApplyRMSProp")
def apply_rmsprop(op, ctx):
    update = _updater(op, ctx, _rmsprop)

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, float(lr), float(rho), float(momentum), float(epsilon))
    return run


@KERNELS.register("ApplyCenteredRMSProp")
def apply_centered_rmsprop(op, ctx):
    update = _updater(op, ctx, _centered_rmsprop)

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, float(lr), float(rho), float(momentum), float(epsilon))
    return run


@KERNELS.register("ApplyAdam")
def apply_adam(op, ctx):
    update = _updater(op, ctx, _adam)
    nesterov = bool(op.get_attr("use_nesterov"))

    def run(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        alpha = float(lr) * math.sqrt(1.0 - float(beta2_power)) / (1.0 - float(beta1_power))
        return update(grad, alpha, float(beta1), float(beta2), float(epsilon), nesterov)
    return run

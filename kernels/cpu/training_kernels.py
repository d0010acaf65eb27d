"""CPU kernels for the optimizers' apply ops: ApplyGradientDescent, ApplyMomentum, ApplyAdagrad,
ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdam and ApplyAdadelta.

Each one updates its variable and slots in place, in the buffers of the device's
ResourceManager, with one fused Numba loop: every element of grad and of each slot is read
once and written once, and nothing is allocated.  The scalar hyperparameters become numpy
scalars of the state's precision; float16 state is computed in float32 and written back.
The math is TensorFlow's (core/kernels/training_ops.cc).
"""
from __future__ import annotations

import math
import operator
from typing import Callable, List, Sequence, Tuple

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
    "ApplyAdadelta": ("var", "accum", "accum_update"),
    # The sparse apply ops (sparse_training_kernels.py) share the lookup and checks.
    "SparseApplyMomentum": ("var", "accum"),
    "SparseApplyAdagrad": ("var", "accum"),
    "SparseApplyRMSProp": ("var", "ms", "mom"),
    "SparseApplyCenteredRMSProp": ("var", "mg", "ms", "mom"),
    "SparseApplyAdam": ("var", "m", "v"),
    "SparseApplyAdadelta": ("var", "accum", "accum_update"),
    # FTRL's kernels are in ftrl_kernels.py.
    "ApplyFtrl": ("var", "accum", "linear"),
    "ApplyFtrlV2": ("var", "accum", "linear"),
    "SparseApplyFtrl": ("var", "accum", "linear"),
    "SparseApplyFtrlV2": ("var", "accum", "linear"),
}


# ---------------------------------------------------------------------------------------
# Fused update loops over flat (contiguous) arrays. The scalars come in the arrays' own
# precision (np.float32 for float32 state), so that the loops compute in it, as TensorFlow
# does, and vectorize; there are no branches inside the loops for the same reason (numpy's
# error model: a division by zero gives inf/nan, as in TensorFlow, instead of a check).


@njit(cache=True, nogil=True, error_model="numpy")
def _gradient_descent(var, grad, alpha):
    for i in range(var.size):
        var[i] -= alpha * grad[i]


@njit(cache=True, nogil=True, error_model="numpy")
def _momentum(var, accum, grad, lr, momentum):
    for i in range(var.size):
        a = accum[i] * momentum + grad[i]
        accum[i] = a
        var[i] -= lr * a


@njit(cache=True, nogil=True, error_model="numpy")
def _momentum_nesterov(var, accum, grad, lr, momentum):
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * momentum + g
        accum[i] = a
        var[i] -= g * lr + a * momentum * lr


@njit(cache=True, nogil=True, error_model="numpy")
def _adagrad(var, accum, grad, lr):
    for i in range(var.size):
        g = grad[i]
        a = accum[i] + g * g
        accum[i] = a
        var[i] -= lr * g / np.sqrt(a)


@njit(cache=True, nogil=True, error_model="numpy")
def _rmsprop(var, ms, mom, grad, lr, one_minus_rho, momentum, epsilon):
    for i in range(var.size):
        g = grad[i]
        s = ms[i] + (g * g - ms[i]) * one_minus_rho
        ms[i] = s
        m = mom[i] * momentum + lr * g / np.sqrt(s + epsilon)
        mom[i] = m
        var[i] -= m


@njit(cache=True, nogil=True, error_model="numpy")
def _centered_rmsprop(var, mg, ms, mom, grad, lr, one_minus_rho, momentum, epsilon):
    for i in range(var.size):
        g = grad[i]
        s = ms[i] + (g * g - ms[i]) * one_minus_rho
        ms[i] = s
        a = mg[i] + (g - mg[i]) * one_minus_rho
        mg[i] = a
        m = mom[i] * momentum + lr * g / np.sqrt(s - a * a + epsilon)
        mom[i] = m
        var[i] -= m


@njit(cache=True, nogil=True, error_model="numpy")
def _adam(var, m, v, grad, alpha, one_minus_beta1, one_minus_beta2, epsilon):
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta1
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        m[i] = mi
        v[i] = vi
        var[i] -= mi * alpha / (np.sqrt(vi) + epsilon)


@njit(cache=True, nogil=True, error_model="numpy")
def _adam_nesterov(var, m, v, grad, alpha, one_minus_beta1, one_minus_beta2, epsilon):
    beta1 = 1 - one_minus_beta1
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta1
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        m[i] = mi
        v[i] = vi
        var[i] -= (g * one_minus_beta1 + beta1 * mi) * alpha / (np.sqrt(vi) + epsilon)


@njit(cache=True, nogil=True, error_model="numpy")
def _adadelta(var, accum, accum_update, grad, lr, rho, epsilon):
    one_minus_rho = 1 - rho
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * rho + g * g * one_minus_rho
        accum[i] = a
        u = np.sqrt(accum_update[i] + epsilon) / np.sqrt(a + epsilon) * g
        var[i] -= u * lr
        accum_update[i] = accum_update[i] * rho + u * u * one_minus_rho


# ---------------------------------------------------------------------------------------
# Resolving the variable buffers


def _variable_name(var_op) -> str:
    return var_op.get_attr("shared_name") or var_op.name


# The lookup and the checks of the ref buffers, shared with the GPU kernels
# (kernels/cuda/training_kernels.py), whose buffers are device arrays.

def _ref_inputs(op, ctx) -> Tuple[Tuple[str, ...], Callable, str]:
    """(names, lookup, where) of an apply op's ref inputs (variable and slots): their names in
    the ResourceManager, ``lookup(store)`` -> their buffers (KeyError while one is
    uninitialized), and the node suffix of the op's error messages."""
    names = tuple(_variable_name(op.inputs[i].op) for i in range(len(_REF_ARGS[op.type])))
    lookup = operator.itemgetter(*names) if len(names) > 1 else \
        (lambda s, _name=names[0]: (s[_name],))
    return names, lookup, f"\n\t [[node {op.name} ({op.type}) on {ctx.name}]]"


def _checked_refs(op, store, names: Sequence[str], lookup: Callable, where: str) -> list:
    """The ref buffers, all initialized and of one shape (else TensorFlow's errors)."""
    try:
        found = list(lookup(store))
    except KeyError:
        missing = next(n for n in names if n not in store)
        raise errors.FailedPreconditionError(
            None, op, f"Attempting to use uninitialized value {missing}{where}") from None
    shape = tuple(found[0].shape)
    for arg_name, ref in zip(_REF_ARGS[op.type], found):
        if tuple(ref.shape) != shape:
            raise errors.InvalidArgumentError(
                None, op, f"var and {arg_name} do not have the same shape"
                f"{_dims(shape)} {_dims(ref.shape)}{where}")
    return found


def _refs_unchanged(store, lookup: Callable, refs: Sequence) -> bool:
    """Whether the store still holds exactly the buffers ``refs`` (an Assign of another shape
    or a new session replaces them)."""
    try:
        return bool(refs) and all(map(operator.is_, lookup(store), refs))
    except KeyError:
        return False


def _grad_shape_error(op, shape, grad_shape, where: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, op, f"var and grad do not have the same shape{_dims(shape)} "
        f"{_dims(grad_shape)}{where}")


def _updater(op, ctx, loop: Callable) -> Callable:
    """``update(grad, *scalars)``: runs ``loop(*flat_refs, flat_grad, *scalars)`` in place on
    the op's variable and slot buffers, and returns the variable's buffer.

    The buffers are checked (initialized, same shapes, contiguous) and their flat views made
    when they are first seen; later steps only check that they are still the same objects (an
    Assign of another shape or a new session replaces them)."""
    store = ctx.resources.variables
    names, lookup, where = _ref_inputs(op, ctx)
    dtype = op.inputs[0].dtype.as_numpy_dtype
    scalar_type = np.float64 if dtype == np.float64 else np.float32
    # (buffers, their flat views, their shape), replaced as a whole: steps may run in threads.
    state: Tuple[Tuple[np.ndarray, ...], List[np.ndarray], Tuple[int, ...]] = ((), [], ())

    def refresh() -> Tuple[Tuple[np.ndarray, ...], List[np.ndarray], Tuple[int, ...]]:
        nonlocal state
        found = _checked_refs(op, store, names, lookup, where)
        for k, ref in enumerate(found):
            if not ref.flags.c_contiguous:  # never from Assign; kept correct if it happens
                found[k] = store[names[k]] = np.ascontiguousarray(ref)
        state = (tuple(found), [ref.reshape(-1) for ref in found], found[0].shape)
        return state

    def check_grad(grad, shape) -> None:
        if np.shape(grad) != shape:
            raise _grad_shape_error(op, shape, np.shape(grad), where)

    def update(grad, *scalars):
        refs, flats, shape = state
        if not _refs_unchanged(store, lookup, refs):
            refs, flats, shape = refresh()
        if grad.shape != shape:
            check_grad(grad, shape)
        loop(*flats, grad.reshape(-1), *map(scalar_type, scalars))
        return refs[0]

    def update_half(grad, *scalars):
        # float16 state: computed in float32, written back.
        refs, _, shape = refresh()
        check_grad(grad, shape)
        work = [ref.astype(np.float32) for ref in refs]
        loop(*[w.reshape(-1) for w in work], np.asarray(grad, np.float32).reshape(-1),
             *map(np.float32, scalars))
        for ref, w in zip(refs, work):
            np.copyto(ref, w, casting="unsafe")
        return refs[0]

    run = update_half if dtype == np.float16 else update
    if not op.get_attr("use_locking"):
        return run
    lock = ctx.resources.lock

    def locked(grad, *scalars):
        with lock:
            return run(grad, *scalars)
    return locked


def _dims(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# ---------------------------------------------------------------------------------------
# Kernels


@KERNELS.register("ApplyGradientDescent")
def apply_gradient_descent(op, ctx):
    update = _updater(op, ctx, _gradient_descent)

    def run(alpha, delta):
        return update(delta, alpha)
    return run


@KERNELS.register("ApplyMomentum")
def apply_momentum(op, ctx):
    update = _updater(op, ctx, _momentum_nesterov if op.get_attr("use_nesterov") else _momentum)

    def run(lr, grad, momentum):
        return update(grad, lr, momentum)
    return run


@KERNELS.register("ApplyAdagrad")
def apply_adagrad(op, ctx):
    update = _updater(op, ctx, _adagrad)

    def run(lr, grad):
        return update(grad, lr)
    return run


@KERNELS.register("ApplyRMSProp")
def apply_rmsprop(op, ctx):
    update = _updater(op, ctx, _rmsprop)

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, lr, 1.0 - float(rho), momentum, epsilon)
    return run


@KERNELS.register("ApplyCenteredRMSProp")
def apply_centered_rmsprop(op, ctx):
    update = _updater(op, ctx, _centered_rmsprop)

    def run(lr, rho, momentum, epsilon, grad):
        return update(grad, lr, 1.0 - float(rho), momentum, epsilon)
    return run


@KERNELS.register("ApplyAdam")
def apply_adam(op, ctx):
    update = _updater(op, ctx, _adam_nesterov if op.get_attr("use_nesterov") else _adam)

    def run(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
        alpha = float(lr) * math.sqrt(1.0 - float(beta2_power)) / (1.0 - float(beta1_power))
        return update(grad, alpha, 1.0 - float(beta1), 1.0 - float(beta2), epsilon)
    return run


@KERNELS.register("ApplyAdadelta")
def apply_adadelta(op, ctx):
    update = _updater(op, ctx, _adadelta)

    def run(lr, rho, epsilon, grad):
        return update(grad, lr, rho, epsilon)
    return run

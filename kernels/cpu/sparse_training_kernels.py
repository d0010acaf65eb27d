"""CPU kernels for the sparse updates of variables: ScatterAdd, ScatterSub and the sparse apply
ops (SparseApplyMomentum, SparseApplyAdagrad, SparseApplyRMSProp, SparseApplyCenteredRMSProp,
SparseApplyAdam, SparseApplyAdadelta).

A sparse gradient is ``grad`` ``[N, ...]``, the rows of the variable at ``indices`` ``[N]``.
The kernels update the variable and its slots in place, row by row in index order (a repeated
index is applied twice, as TensorFlow's kernels do; the optimizers sum repeats first), with
Numba loops over the touched rows only: nothing of the variable's size is allocated or read,
so a step on a large embedding costs its looked-up rows. SparseApplyAdam is the exception by
definition (TensorFlow 1.x's sparse Adam decays both moments and moves every row); it still
allocates nothing. The math is the dense kernels' (training_kernels.py), row-wise.
"""
from __future__ import annotations

import math
from typing import Callable, List, Tuple

import numpy as np
from numba import njit

from tfjupyter.framework import errors

from . import KERNELS
from .state_kernels import _stored, _variable_name as _written_variable
from .training_kernels import _checked_refs, _dims, _ref_inputs, _refs_unchanged


@njit(cache=True, nogil=True)
def _first_out_of_range(indices, rows):
    for i in range(indices.size):
        if indices[i] < 0 or indices[i] >= rows:
            return i
    return -1


# ---------------------------------------------------------------------------------------
# Row-wise update loops: refs are [rows, width] views, grad is [N, width], indices [N].


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_momentum(var, accum, grad, indices, lr, momentum):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            a = accum[r, j] * momentum + grad[i, j]
            accum[r, j] = a
            var[r, j] -= lr * a


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_momentum_nesterov(var, accum, grad, indices, lr, momentum):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            g = grad[i, j]
            a = accum[r, j] * momentum + g
            accum[r, j] = a
            var[r, j] -= g * lr + a * momentum * lr


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_adagrad(var, accum, grad, indices, lr):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            g = grad[i, j]
            a = accum[r, j] + g * g
            accum[r, j] = a
            var[r, j] -= lr * g / np.sqrt(a)


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_rmsprop(var, ms, mom, grad, indices, lr, one_minus_rho, momentum, epsilon):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            g = grad[i, j]
            s = ms[r, j] + (g * g - ms[r, j]) * one_minus_rho
            ms[r, j] = s
            m = mom[r, j] * momentum + lr * g / np.sqrt(s + epsilon)
            mom[r, j] = m
            var[r, j] -= m


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_centered_rmsprop(var, mg, ms, mom, grad, indices, lr, one_minus_rho, momentum,
                             epsilon):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            g = grad[i, j]
            s = ms[r, j] + (g * g - ms[r, j]) * one_minus_rho
            ms[r, j] = s
            a = mg[r, j] + (g - mg[r, j]) * one_minus_rho
            mg[r, j] = a
            m = mom[r, j] * momentum + lr * g / np.sqrt(s - a * a + epsilon)
            mom[r, j] = m
            var[r, j] -= m


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_adam(var, m, v, grad, indices, alpha, beta1, beta2, one_minus_beta1,
                 one_minus_beta2, epsilon):
    # TensorFlow 1.x's AdamOptimizer._apply_sparse_shared, fused: m = m * beta1, then
    # m[indices] += grad * (1 - beta1); v likewise with grad^2; var -= lr_t * m / (sqrt(v) + eps)
    # over the whole variable.
    rows, width = var.shape
    for r in range(rows):
        for j in range(width):
            m[r, j] *= beta1
            v[r, j] *= beta2
    for i in range(indices.size):
        r = indices[i]
        for j in range(width):
            g = grad[i, j]
            m[r, j] += g * one_minus_beta1
            v[r, j] += g * g * one_minus_beta2
    for r in range(rows):
        for j in range(width):
            var[r, j] -= alpha * m[r, j] / (np.sqrt(v[r, j]) + epsilon)


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_adadelta(var, accum, accum_update, grad, indices, lr, rho, epsilon):
    one_minus_rho = 1 - rho
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            g = grad[i, j]
            a = accum[r, j] * rho + g * g * one_minus_rho
            accum[r, j] = a
            u = np.sqrt(accum_update[r, j] + epsilon) / np.sqrt(a + epsilon) * g
            var[r, j] -= u * lr
            accum_update[r, j] = accum_update[r, j] * rho + u * u * one_minus_rho


# ---------------------------------------------------------------------------------------
# The updater: buffers looked up and checked as the dense kernels do, gradient rows checked.


def _rows_view(ref: np.ndarray) -> np.ndarray:
    """``ref`` as [rows, width] (a view; ref is contiguous)."""
    width = int(np.prod(ref.shape[1:], dtype=np.int64))
    return ref.reshape(ref.shape[0], width)


def _sparse_updater(op, ctx, loop: Callable, whole_variable: bool = False) -> Callable:
    """``update(grad, indices, *scalars)``: runs ``loop(*ref_rows, grad_rows, indices,
    *scalars)`` in place on the op's variable and slots; returns the variable's buffer.
    ``whole_variable``: the loop reads rows besides those at indices (SparseApplyAdam)."""
    store = ctx.resources.variables
    names, lookup, where = _ref_inputs(op, ctx)
    dtype = op.inputs[0].dtype.as_numpy_dtype
    scalar_type = np.float64 if dtype == np.float64 else np.float32
    # (buffers, their [rows, width] views, their shape), replaced as a whole: steps may run in
    # threads.
    state: Tuple[Tuple[np.ndarray, ...], List[np.ndarray], Tuple[int, ...]] = ((), [], ())

    def refresh():
        nonlocal state
        found = _checked_refs(op, store, names, lookup, where)
        if not found[0].ndim:
            raise errors.InvalidArgumentError(None, op, f"var must be at least 1 dimensional"
                                              f"{where}")
        for k, ref in enumerate(found):
            if not ref.flags.c_contiguous:  # never from Assign; kept correct if it happens
                found[k] = store[names[k]] = np.ascontiguousarray(ref)
        state = (tuple(found), [_rows_view(ref) for ref in found], found[0].shape)
        return state

    def grad_rows(grad: np.ndarray, indices: np.ndarray, shape) -> np.ndarray:
        """grad as [N, width], after TensorFlow's checks of grad and indices."""
        if indices.ndim != 1:
            raise errors.InvalidArgumentError(
                None, op, f"indices must be one-dimensional{where}")
        if grad.ndim == 0 or grad.shape[0] != indices.shape[0]:
            raise errors.InvalidArgumentError(
                None, op, f"grad must be the same size as indices in the first dimension: "
                f"{_dims(np.shape(grad))} vs {_dims(indices.shape)}{where}")
        if grad.shape[1:] != tuple(shape[1:]):
            raise errors.InvalidArgumentError(
                None, op, f"var and grad must match beyond the first dimension: "
                f"{_dims(shape)} vs {_dims(grad.shape)}{where}")
        bad = _first_out_of_range(indices, shape[0])
        if bad >= 0:
            raise errors.InvalidArgumentError(
                None, op, f"Index {int(indices[bad])} at offset {bad} in indices is out of "
                f"range{where}")
        return _rows_view(np.ascontiguousarray(grad))

    def update(grad, indices, *scalars):
        refs, views, shape = state
        if not _refs_unchanged(store, lookup, refs):
            refs, views, shape = refresh()
        loop(*views, grad_rows(grad, indices, shape), indices, *map(scalar_type, scalars))
        return refs[0]

    def update_half(grad, indices, *scalars):
        # float16 state (Numba has no float16): the touched rows (all for whole_variable) are
        # computed in float32 and written back.
        refs, _, shape = refresh()
        rows = grad_rows(grad, indices, shape).astype(np.float32)
        scalars32 = [np.float32(s) for s in scalars]
        if whole_variable:
            work = [_rows_view(ref).astype(np.float32) for ref in refs]
            loop(*work, rows, indices, *scalars32)
            for ref, w in zip(refs, work):
                np.copyto(_rows_view(ref), w, casting="unsafe")
            return refs[0]
        touched, local_indices = np.unique(indices, return_inverse=True)
        work = [_rows_view(ref)[touched].astype(np.float32) for ref in refs]
        loop(*work, rows, local_indices.reshape(-1), *scalars32)
        for ref, w in zip(refs, work):
            _rows_view(ref)[touched] = w
        return refs[0]

    run = update_half if dtype == np.float16 else update
    if not op.get_attr("use_locking"):
        return run
    lock = ctx.resources.lock

    def locked(grad, indices, *scalars):
        with lock:
            return run(grad, indices, *scalars)
    return locked


# ---------------------------------------------------------------------------------------
# Kernels


@KERNELS.register("SparseApplyMomentum")
def sparse_apply_momentum(op, ctx):
    loop = _sparse_momentum_nesterov if op.get_attr("use_nesterov") else _sparse_momentum
    update = _sparse_updater(op, ctx, loop)

    def run(lr, grad, indices, momentum):
        return update(grad, indices, lr, momentum)
    return run


@KERNELS.register("SparseApplyAdagrad")
def sparse_apply_adagrad(op, ctx):
    update = _sparse_updater(op, ctx, _sparse_adagrad)

    def run(lr, grad, indices):
        return update(grad, indices, lr)
    return run


@KERNELS.register("SparseApplyRMSProp", "SparseApplyCenteredRMSProp")
def sparse_apply_rmsprop(op, ctx):
    centered = op.type == "SparseApplyCenteredRMSProp"
    update = _sparse_updater(op, ctx, _sparse_centered_rmsprop if centered else _sparse_rmsprop)

    def run(lr, rho, momentum, epsilon, grad, indices):
        return update(grad, indices, lr, 1.0 - float(rho), momentum, epsilon)
    return run


@KERNELS.register("SparseApplyAdam")
def sparse_apply_adam(op, ctx):
    update = _sparse_updater(op, ctx, _sparse_adam, whole_variable=True)

    def run(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices):
        alpha = float(lr) * math.sqrt(1.0 - float(beta2_power)) / (1.0 - float(beta1_power))
        return update(grad, indices, alpha, beta1, beta2, 1.0 - float(beta1),
                      1.0 - float(beta2), epsilon)
    return run


@KERNELS.register("SparseApplyAdadelta")
def sparse_apply_adadelta(op, ctx):
    update = _sparse_updater(op, ctx, _sparse_adadelta)

    def run(lr, rho, epsilon, grad, indices):
        return update(grad, indices, lr, rho, epsilon)
    return run


# ---------------------------------------------------------------------------------------
# ScatterAdd, ScatterSub: ufunc.at adds every row, repeated indices included, in place.


def _scatter_kernel(op, ctx, ufunc) -> Callable:
    store = ctx.resources.variables
    name = _written_variable(op)
    where = f"\n\t [[node {op.name} ({op.type}) on {ctx.name}]]"

    def run(indices, updates):
        var = _stored(store, name, op, ctx)
        if var.ndim == 0:
            raise errors.InvalidArgumentError(None, op, f"params must be at least 1-D{where}")
        expected = np.shape(indices) + var.shape[1:]
        if np.ndim(updates) and np.shape(updates) != expected:
            raise errors.InvalidArgumentError(
                None, op, f"Must have updates.shape = indices.shape + params.shape[1:] or "
                f"updates.shape = [], got updates.shape {_dims(np.shape(updates))}, "
                f"indices.shape {_dims(np.shape(indices))}, params.shape {_dims(var.shape)}"
                f"{where}")
        flat = np.reshape(indices, -1)
        bad = _first_out_of_range(flat, var.shape[0])
        if bad >= 0:
            raise errors.InvalidArgumentError(
                None, op, f"indices[{bad}] = {int(flat[bad])} is not in [0, {var.shape[0]})"
                f"{where}")
        rows = np.reshape(updates, (flat.size,) + var.shape[1:]) if np.ndim(updates) else updates
        ufunc.at(var, flat, rows)
        return var

    if not op.get_attr("use_locking"):
        return run
    lock = ctx.resources.lock

    def locked(indices, updates):
        with lock:
            return run(indices, updates)
    return locked


@KERNELS.register("ScatterAdd")
def scatter_add(op, ctx):
    return _scatter_kernel(op, ctx, np.add)


@KERNELS.register("ScatterSub")
def scatter_sub(op, ctx):
    return _scatter_kernel(op, ctx, np.subtract)

"""CPU kernels of FTRL-Proximal's apply ops (``ApplyFtrl``/``ApplyFtrlV2`` and their sparse
forms), TensorFlow's math (core/kernels/training_ops.cc), per element::

    g_shrunk   = grad + 2 * l2_shrinkage * var            (V2; the V1 ops have no shrinkage)
    new_accum  = accum + grad * grad
    linear    += g_shrunk - (new_accum^-p - accum^-p) / lr * var      (p = lr_power)
    quadratic  = new_accum^-p / lr + 2 * l2
    var        = (sign(linear) * l1 - linear) / quadratic  if |linear| > l1  else 0
    accum      = new_accum

with ``sqrt`` for ``p = -0.5``, as TensorFlow computes it. The in-place update machinery (refs,
checks, float16, locking) is training_kernels' and sparse_training_kernels'.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import KERNELS
from .sparse_training_kernels import _sparse_updater
from .training_kernels import _updater


@njit(cache=True, nogil=True, error_model="numpy")
def _ftrl_element(var, accum, linear, g, lr, l1, l2, l2_shrinkage, lr_power):
    """(var, accum, linear) after one step; the state's precision throughout."""
    g_shrunk = g + 2 * l2_shrinkage * var
    new_accum = accum + g * g
    if lr_power == -0.5:
        new_pow, old_pow = np.sqrt(new_accum), np.sqrt(accum)
    else:
        new_pow, old_pow = new_accum ** -lr_power, accum ** -lr_power
    linear = linear + g_shrunk - (new_pow - old_pow) / lr * var
    quadratic = new_pow / lr + 2 * l2
    if abs(linear) > l1:
        sign = 1 if linear > 0 else -1
        var = (sign * l1 - linear) / quadratic
    else:
        var = var * 0
    return var, new_accum, linear


@njit(cache=True, nogil=True, error_model="numpy")
def _ftrl(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    for i in range(var.size):
        var[i], accum[i], linear[i] = _ftrl_element(var[i], accum[i], linear[i], grad[i], lr,
                                                    l1, l2, l2_shrinkage, lr_power)


@njit(cache=True, nogil=True, error_model="numpy")
def _sparse_ftrl(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power):
    for i in range(indices.size):
        r = indices[i]
        for j in range(var.shape[1]):
            var[r, j], accum[r, j], linear[r, j] = _ftrl_element(
                var[r, j], accum[r, j], linear[r, j], grad[i, j], lr, l1, l2, l2_shrinkage,
                lr_power)


@KERNELS.register("ApplyFtrl", "ApplyFtrlV2")
def apply_ftrl(op, ctx):
    update = _updater(op, ctx, _ftrl)
    if op.type == "ApplyFtrl":
        return lambda grad, lr, l1, l2, lr_power: update(grad, lr, l1, l2, 0.0, lr_power)
    return lambda grad, lr, l1, l2, l2_shrinkage, lr_power: update(grad, lr, l1, l2,
                                                                   l2_shrinkage, lr_power)


@KERNELS.register("SparseApplyFtrl", "SparseApplyFtrlV2")
def sparse_apply_ftrl(op, ctx):
    update = _sparse_updater(op, ctx, _sparse_ftrl)
    if op.type == "SparseApplyFtrl":
        return lambda grad, indices, lr, l1, l2, lr_power: update(grad, indices, lr, l1, l2,
                                                                  0.0, lr_power)
    return lambda grad, indices, lr, l1, l2, l2_shrinkage, lr_power: update(
        grad, indices, lr, l1, l2, l2_shrinkage, lr_power)

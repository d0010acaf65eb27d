"""CPU kernels for math ops. Where a numpy ufunc is exactly the kernel, it is the kernel."""
from __future__ import annotations

import numpy as np

from . import KERNELS


@KERNELS.register("Add", "AddV2")
def add(op, ctx):
    return np.add


@KERNELS.register("Mul")
def mul(op, ctx):
    return np.multiply


@KERNELS.register("MatMul")
def matmul(op, ctx):
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return np.matmul
    if ta and not tb:
        return lambda a, b: np.matmul(a.T, b)
    if tb and not ta:
        return lambda a, b: np.matmul(a, b.T)
    return lambda a, b: np.matmul(a.T, b.T)

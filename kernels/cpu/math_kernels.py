"""CPU kernels for math ops. Where a numpy ufunc is exactly the kernel, it is the kernel.

+ - * / and comparisons of two 0-D tensors unbox them (``x[()]``) and use numpy's scalar fast
path: ~0.2 us instead of ~0.4-0.9 us for a ufunc call, which long chains of scalar ops feel.

Outputs are fresh arrays (or numpy scalars for 0-D results, as TensorFlow's Session returns
them). In-place steps use augmented assignment (``out *= y``), which also works on numpy
scalars. Sigmoid and the fused sigmoid/tanh backward ops are single Numba passes.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
from numba import njit

from tfjupyter.framework import dtypes
from tfjupyter.ops import _shapes

from . import KERNELS
from ._threads import PARALLEL_MIN_FLOPS, WORKERS


def _np_dtype(tensor):
    return tensor.dtype.as_numpy_dtype


def _is_float(op, index: int = 0) -> bool:
    return op.inputs[index].dtype.is_floating


# -- binary arithmetic ---------------------------------------------------------------------------------
def _check_int_divisor(fn: Callable) -> Callable:
    """Integer division by zero is an error (numpy would only warn and return 0)."""
    def run(x, y):
        if not y.all():
            raise ZeroDivisionError("Integer division by zero")
        return fn(x, y)
    return run


def _truncate_div(x, y):
    # C semantics (rounds toward zero), as TensorFlow's integer Div.
    q = np.floor_divide(x, y)
    q += (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q


# (ufunc, the same on two numpy scalars) for ops with a scalar fast path.
_SCALAR_FAST = {
    "Add": (np.add, lambda x, y: x[()] + y[()]),
    "AddV2": (np.add, lambda x, y: x[()] + y[()]),
    "Sub": (np.subtract, lambda x, y: x[()] - y[()]),
    "Mul": (np.multiply, lambda x, y: x[()] * y[()]),
    "RealDiv": (np.true_divide, lambda x, y: x[()] / y[()]),
    "Less": (np.less, lambda x, y: x[()] < y[()]),
    "LessEqual": (np.less_equal, lambda x, y: x[()] <= y[()]),
    "Greater": (np.greater, lambda x, y: x[()] > y[()]),
    "GreaterEqual": (np.greater_equal, lambda x, y: x[()] >= y[()]),
    "Equal": (np.equal, lambda x, y: x[()] == y[()]),
    "NotEqual": (np.not_equal, lambda x, y: x[()] != y[()]),
}


@KERNELS.register(*_SCALAR_FAST)
def scalar_fast_binary(op, ctx):
    ufunc, on_scalars = _SCALAR_FAST[op.type]
    x, y = op.inputs
    # Strings stay on the ufunc: unboxed, they would be Python bytes, not numpy values.
    if x.shape.ndims == 0 and y.shape.ndims == 0 and x.dtype is not dtypes.string:
        return on_scalars
    return ufunc


@KERNELS.register("Div")
def div(op, ctx):
    return np.true_divide if _is_float(op) else _check_int_divisor(_truncate_div)


@KERNELS.register("FloorDiv")
def floor_div(op, ctx):
    return np.floor_divide if _is_float(op) else _check_int_divisor(np.floor_divide)


@KERNELS.register("FloorMod")
def floor_mod(op, ctx):
    # np.remainder has floor semantics (the result takes the divisor's sign), as TF's FloorMod.
    return np.remainder if _is_float(op) else _check_int_divisor(np.remainder)


def c_pow(x, y):
    """np.power with C's pow (TensorFlow's) results; the CUDA simulator uses it too."""
    out = np.power(x, y)  # integers to negative integer powers raise ValueError, as in TF
    if np.ndim(y) == 0 and out.dtype.kind == "f" and y == 0.5:
        # numpy computes x ** 0.5 as sqrt(x) for a scalar exponent: sqrt(-0) = -0 and
        # sqrt(-inf) = NaN, where C's pow (TensorFlow's, and the GPU's) gives +0 and +inf.
        out = np.where(np.isneginf(x), out.dtype.type(np.inf), out + out.dtype.type(0))
    return out


@KERNELS.register("Pow")
def pow_(op, ctx):
    return c_pow


@KERNELS.register("Maximum")
def maximum(op, ctx):
    return np.maximum


@KERNELS.register("Minimum")
def minimum(op, ctx):
    return np.minimum


def _squared_difference(x, y):
    d = np.subtract(x, y)
    d *= d
    return d


@KERNELS.register("SquaredDifference")
def squared_difference(op, ctx):
    return _squared_difference


# -- logic ------------------------------------------------------------------------------------------
_LOGICAL = {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
            "LogicalNot": np.logical_not}


@KERNELS.register(*_LOGICAL)
def logical(op, ctx):
    return _LOGICAL[op.type]


# -- unary ------------------------------------------------------------------------------------------
_UNARY = {"Neg": np.negative, "Abs": np.absolute, "Square": np.square, "Sqrt": np.sqrt,
          "Exp": np.exp, "Log": np.log, "Log1p": np.log1p, "Tanh": np.tanh, "Sign": np.sign,
          "Floor": np.floor, "Ceil": np.ceil, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan,
          "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan, "Expm1": np.expm1,
          "IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite}


@KERNELS.register(*_UNARY)
def unary(op, ctx):
    return _UNARY[op.type]


def _rsqrt(x):
    out = np.sqrt(x)
    return np.divide(1, out, out=out) if out.ndim else 1 / out


@KERNELS.register("Rsqrt")
def rsqrt(op, ctx):
    return _rsqrt


def _int_reciprocal(x):
    if not x.all():
        raise ZeroDivisionError("Integer division by zero")
    return np.reciprocal(x)


@KERNELS.register("Reciprocal")
def reciprocal(op, ctx):
    return np.reciprocal if _is_float(op) else _int_reciprocal


@KERNELS.register("Round")
def round_(op, ctx):
    # np.rint rounds half to even, as TensorFlow's Round; an integer is its own rounding.
    return np.rint if _is_float(op) else np.positive


# -- Numba elementwise passes ------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _sigmoid_nb(x, out):
    for i in range(x.size):
        v = x[i]
        if v >= 0:
            out[i] = 1.0 / (1.0 + np.exp(-v))
        else:  # exp of a negative number cannot overflow
            e = np.exp(v)
            out[i] = e / (1.0 + e)


@njit(cache=True, nogil=True)
def _sigmoid_grad_nb(y, dy, out):
    for i in range(y.size):
        v = y[i]
        out[i] = dy[i] * v * (1.0 - v)


@njit(cache=True, nogil=True)
def _tanh_grad_nb(y, dy, out):
    for i in range(y.size):
        v = y[i]
        out[i] = dy[i] * (1.0 - v * v)


def _flat(nb_fn: Callable, numpy_fn: Callable) -> Callable:
    """Runs ``nb_fn(*flat_inputs, flat_out)`` over same-shaped float32/float64 arrays;
    float16 (which Numba does not compute in) goes through the numpy expression."""
    def run(*arrays):
        first = arrays[0]
        if first.dtype == np.float16:
            return numpy_fn(*arrays)
        shape = first.shape
        for a in arrays[1:]:
            if a.shape != shape:
                raise ValueError(f"Inputs must have the same shape: {list(shape)} vs. "
                                 f"{list(a.shape)}")
        flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        out = np.empty(flat[0].size, first.dtype)
        nb_fn(*flat, out)
        return out.reshape(shape) if shape else out[0]
    return run


def _sigmoid_np(x):
    return (np.tanh(x * 0.5) + 1) * 0.5


def _sigmoid_grad_np(y, dy):
    out = 1 - y
    out *= y
    out *= dy
    return out


def _tanh_grad_np(y, dy):
    out = y * y
    out = 1 - out
    out *= dy
    return out


@KERNELS.register("Sigmoid")
def sigmoid(op, ctx):
    return _flat(_sigmoid_nb, _sigmoid_np)


@KERNELS.register("SigmoidGrad")
def sigmoid_grad(op, ctx):
    return _flat(_sigmoid_grad_nb, _sigmoid_grad_np)


@KERNELS.register("TanhGrad")
def tanh_grad(op, ctx):
    return _flat(_tanh_grad_nb, _tanh_grad_np)


def _sqrt_grad(y, dy):  # dy * 0.5 / y
    out = dy / y
    out *= 0.5
    return out


def _rsqrt_grad(y, dy):  # dy * -0.5 * y^3
    out = y * y
    out *= y
    out *= dy
    out *= -0.5
    return out


def _reciprocal_grad(y, dy):  # -dy * y^2
    out = y * y
    out *= dy
    out *= -1
    return out


@KERNELS.register("SqrtGrad")
def sqrt_grad(op, ctx):
    return _sqrt_grad


@KERNELS.register("RsqrtGrad")
def rsqrt_grad(op, ctx):
    return _rsqrt_grad


@KERNELS.register("ReciprocalGrad")
def reciprocal_grad(op, ctx):
    return _reciprocal_grad


# -- Cast ---------------------------------------------------------------------------------------------
@KERNELS.register("Cast")
def cast(op, ctx):
    dst = op.get_attr("DstT").as_numpy_dtype
    return lambda x: x.astype(dst)


# -- AddN: the sum of gradient contributions, accumulated in place into one fresh buffer ---------------
@KERNELS.register("AddN")
def add_n(op, ctx):
    name = op.name

    def run(*xs):
        shape = xs[0].shape
        for i, x in enumerate(xs):
            if x.shape != shape:
                raise ValueError(f"Inputs to operation {name} of type AddN must have the same "
                                 f"size and shape.  Input 0: {list(shape)} != input {i}: "
                                 f"{list(x.shape)}")
        out = np.add(xs[0], xs[1])
        if type(out) is not np.ndarray:  # a numpy scalar: 0-D inputs
            for x in xs[2:]:
                out = out + x
            return out
        for x in xs[2:]:
            np.add(out, x, out=out)
        return out
    return run


# -- SumToShape: a broadcast gradient summed back to the shape of the input --------------------------------
def _sum_axes(grad_dims, target) -> tuple:
    """The axes of a gradient of shape ``grad_dims`` to sum (keeping dims) to get ``target``:
    the leading extra axes and those where the target has 1 but the gradient may not."""
    lead = len(grad_dims) - len(target)
    return tuple(range(lead)) + tuple(lead + i for i, d in enumerate(target)
                                      if d == 1 and grad_dims[lead + i] != 1)


@KERNELS.register("SumToShape")
def sum_to_shape(op, ctx):
    grad_t, target_t = op.inputs
    dtype = _np_dtype(grad_t)
    acc = np.float32 if dtype == np.float16 else dtype
    name = op.name

    def reduce(g, axes, target):
        out = np.add.reduce(g, axis=axes, dtype=acc, keepdims=True).reshape(target)
        if acc is not dtype:
            out = out.astype(dtype)
        return out if target else out[()]

    static_target = _shapes.constant_value(target_t)
    if static_target is not None and grad_t.shape.ndims is not None:
        target = tuple(int(d) for d in static_target)
        axes = _sum_axes(grad_t.shape.as_list(), target)
        if not axes:
            return lambda g, _shape: g
        return lambda g, _shape: reduce(g, axes, target)

    def run(g, shape):
        target = tuple(shape.tolist())
        if g.shape == target:
            return g
        lead = g.ndim - len(target)
        if lead < 0 or any(d != 1 and d != g.shape[lead + i] for i, d in enumerate(target)):
            raise ValueError(f"{name}: cannot sum a gradient of shape {list(g.shape)} to shape "
                             f"{list(target)}")
        return reduce(g, _sum_axes(g.shape, target), target)
    return run


@KERNELS.register("BroadcastGradientArgs")
def broadcast_gradient_args(op, ctx):
    """TensorFlow's reduction axes for the gradients of two broadcast operands: after padding
    both shapes with leading 1s, the axes where an operand has 1 (none when the shapes are
    equal)."""
    name = op.name

    def run(s0, s1):
        a, b = s0.tolist(), s1.tolist()
        if a == b:
            empty = np.zeros(0, s0.dtype)
            return empty, empty.copy()
        rank = max(len(a), len(b))
        a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
        if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
            raise ValueError(f"{name}: Incompatible shapes: {s0.tolist()} vs. {s1.tolist()}")
        return (np.array([i for i, x in enumerate(a) if x == 1], s0.dtype),
                np.array([i for i, y in enumerate(b) if y == 1], s0.dtype))
    return run


# -- MatMul, BatchMatMul --------------------------------------------------------------------------------
def matmul_2d(a: np.ndarray, b: np.ndarray, out_dtype,
              epilogue: Optional[Callable[[np.ndarray, slice], None]] = None) -> np.ndarray:
    """a @ b for 2-D arrays (transposes are views: BLAS flags), then ``epilogue(part,
    columns)`` on each part of the product, in place while it is in cache (a fused bias and
    activation; ``columns``: which of the product's columns the part holds)."""
    m, k = a.shape
    n = b.shape[1]
    if 2.0 * m * k * n < PARALLEL_MIN_FLOPS or max(m, n) < 2 or not WORKERS.active():
        out = np.matmul(a, b)
        if epilogue is not None:
            epilogue(out, slice(None))
        return out
    out = np.empty((m, n), dtype=out_dtype)
    # Steps run the BLAS on one thread (kernels/cpu/_threads.py), so a big product is split
    # over the cores here, along its longer side: split by rows, a wide product's few rows
    # would make each core stream all of b (a 100 x 3136 @ 3136 x 512 fully-connected layer:
    # 1.6x faster split by columns).
    if m >= n:
        def part(lo: int, hi: int) -> None:
            np.matmul(a[lo:hi], b, out=out[lo:hi])
            if epilogue is not None:
                epilogue(out[lo:hi], slice(None))
        WORKERS.map(part, m, big=True)
    else:
        def part(lo: int, hi: int) -> None:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
            if epilogue is not None:
                epilogue(out[:, lo:hi], slice(lo, hi))
        WORKERS.map(part, n, big=True)
    return out


@KERNELS.register("MatMul")
def matmul(op, ctx):
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    out_dtype = op.outputs[0].dtype.as_numpy_dtype

    def run(a, b):
        return matmul_2d(a.T if ta else a, b.T if tb else b, out_dtype)
    return run


@KERNELS.register("BatchMatMul", "BatchMatMulV2")
def batch_matmul(op, ctx):
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    # BatchMatMul (unlike V2) needs equal batch dimensions; check when not known statically.
    x_t, y_t = op.inputs
    check = op.type == "BatchMatMul" and not (
        x_t.shape.is_fully_defined() and y_t.shape.is_fully_defined())

    def run(x, y):
        if check and x.shape[:-2] != y.shape[:-2]:
            raise ValueError(f"In[0] and In[1] must have compatible batch dimensions: "
                             f"{list(x.shape)} vs. {list(y.shape)}")
        return np.matmul(np.swapaxes(x, -1, -2) if adj_x else x,
                         np.swapaxes(y, -1, -2) if adj_y else y)
    return run


# Reductions, ArgMax/ArgMin, Cumsum/Cumprod and Range (imported here to register them).
from . import reduction_kernels  # noqa: E402,F401


@KERNELS.register("Qr")
def qr(op, ctx):
    mode = "complete" if op.get_attr("full_matrices") else "reduced"
    return lambda x: tuple(np.linalg.qr(x, mode=mode))

"""GPU kernels for elementwise ops: unary and binary math, comparisons, logic, Cast, Select,
AddN, SumToShape, ZerosLike/OnesLike/Fill, and the tf.nn activations (Relu, Relu6, Elu, Softplus)
and their gradients.

Every op is a small device function (``f(v)`` or ``f(x, y)``) made per compute dtype, so that its
constants have the tensor's dtype (a float64 literal would turn float32 math into float64 math),
and wrapped in one of a few grid-stride kernel shapes:

- same-shape operands: one flat loop, ``out[i] = f(x[i], y[i])``;
- a one-element operand (a scalar, or shape [1, 1]): it is read once per thread;
- general numpy broadcasting: the output shape is first collapsed (size-1 dims dropped, adjacent
  dims merged where every operand is contiguous across them), then the collapsed shape and the
  operands' element strides (0 on broadcast dims) go to the kernel as tuples of scalars.  Numba
  specializes on the tuple length, so nothing is uploaded per call.  (The index division is
  64-bit in Numba; NVVM emits a 32-bit fast path for operands that fit, so it stays cheap.)

Kernels are compiled lazily, once per (op, dtype, shape kind); the layouts of a kernel's operand
shapes are cached in its factory, so a step costs one dict lookup and one launch.

int32 arithmetic is shape bookkeeping and runs on the host (TensorFlow's GPU kernels keep int32
in host memory); comparisons, Cast and Select of int32/bool data run on the device.  Integer
division by zero on the device gives 0 (TensorFlow's GPU kernels do not check it either); int32
division, which runs on the host, raises as on the CPU.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
from numba import cuda

from tfjupyter.framework import errors
from tfjupyter.ops import _shapes

from ..cpu.math_kernels import _sum_axes
from . import KERNELS, _runtime, host_memory, run_on_host
from ._runtime import flat

__all__ = ["broadcast_layout", "launch_fill", "dims_text"]

if _runtime.SIMULATOR:
    # The simulator runs device functions as Python: math.log(0), math.sqrt(-1), math.pow(-1,
    # 0.5) would raise there, where the GPU's libdevice (and the CPU kernels) give -inf or NaN.
    # numpy's ufuncs on numpy scalars give those values (pow: C's, as numpy's takes x ** 0.5 for
    # sqrt(x)).
    from ..cpu.math_kernels import c_pow
    _M = SimpleNamespace(exp=np.exp, expm1=np.expm1, log=np.log, log1p=np.log1p, sqrt=np.sqrt,
                         sin=np.sin, cos=np.cos, tan=np.tan, asin=np.arcsin, acos=np.arccos,
                         atan=np.arctan, tanh=np.tanh, pow=c_pow, fmod=np.fmod)
else:
    _M = math


def dims_text(dims: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def _compute_type(dtype: np.dtype):
    """The numpy scalar type device functions compute in: float16 computes in float32."""
    return np.float32 if dtype == np.float16 else dtype.type


def _np_dtype(tensor) -> np.dtype:
    return np.dtype(tensor.dtype.as_numpy_dtype)


# -- device functions, made per compute type -------------------------------------------------------
# Each maker takes the numpy scalar type T the function computes in and returns a plain Python
# function; _device() turns it into a CUDA device function.

def _m_neg(T):
    return lambda v: -v


def _m_abs(T):
    return lambda v: abs(v)


def _m_square(T):
    return lambda v: v * v


def _m_sign(T):
    zero, one = T(0), T(1)

    def f(v):
        if v > zero:
            return one
        if v < zero:
            return -one
        return v  # 0 stays 0; NaN stays NaN (as np.sign)
    return f


def _m_sqrt(T):
    sqrt = _M.sqrt
    return lambda v: sqrt(v)


def _m_rsqrt(T):
    one = T(1)
    sqrt = _M.sqrt
    return lambda v: one / sqrt(v)


def _m_reciprocal(T):
    one, zero = T(1), T(0)
    if np.dtype(T).kind == "f":
        return lambda v: one / v

    def f(v):  # C integer division: 1/v truncates; division by zero gives 0 on the device
        if v == 0:
            return zero
        if v == one or v == -one:
            return v
        return zero
    return f


def _finite_floor(v):
    # inf and NaN are their own floor (Python's math.floor, which the simulator runs, raises).
    if math.isinf(v) or math.isnan(v):
        return v
    return math.floor(v)


def _finite_ceil(v):
    if math.isinf(v) or math.isnan(v):
        return v
    return math.ceil(v)


_d_floor = cuda.jit(device=True)(_finite_floor)
_d_ceil = cuda.jit(device=True)(_finite_ceil)


def _m_floor(T):
    return lambda v: _d_floor(v)


def _m_ceil(T):
    return lambda v: _d_ceil(v)


def _m_round(T):
    zero, one, half, two = T(0), T(1), T(0.5), T(2)

    def f(v):
        # Half to even, as np.rint and TensorFlow's Round; v - floor(v) is exact.
        if math.isinf(v) or math.isnan(v):
            return v
        r = math.floor(v)
        d = v - r
        if d > half or (d == half and math.fmod(r, two) != zero):
            r += one
        return r
    return f


def _simple(fn):
    def make(T):
        return lambda v: fn(v)
    return make


def _m_sigmoid(T):
    zero, one = T(0), T(1)
    exp = _M.exp

    def f(v):
        if v >= zero:
            return one / (one + exp(-v))
        e = exp(v)  # exp of a negative number cannot overflow
        return e / (one + e)
    return f


def _m_isfinite(T):
    return lambda v: not (math.isinf(v) or math.isnan(v))


def _m_isinf(T):
    return lambda v: math.isinf(v)


def _m_isnan(T):
    return lambda v: math.isnan(v)


def _m_logical_not(T):
    return lambda v: not v


def _m_identity(T):
    return lambda v: v


# Unary ops: maker, dtype kinds run on the device ("f" floats, "i" signed ints, "b" bool).
_UNARY: Dict[str, Tuple[Callable, str]] = {
    "Neg": (_m_neg, "fi"), "Abs": (_m_abs, "fi"), "Square": (_m_square, "fi"),
    "Sign": (_m_sign, "fi"), "Sqrt": (_m_sqrt, "f"), "Rsqrt": (_m_rsqrt, "f"),
    "Reciprocal": (_m_reciprocal, "fi"), "Round": (_m_round, "f"),
    "Exp": (_simple(_M.exp), "f"), "Expm1": (_simple(_M.expm1), "f"),
    "Log": (_simple(_M.log), "f"), "Log1p": (_simple(_M.log1p), "f"),
    "Sin": (_simple(_M.sin), "f"), "Cos": (_simple(_M.cos), "f"),
    "Tan": (_simple(_M.tan), "f"), "Asin": (_simple(_M.asin), "f"),
    "Acos": (_simple(_M.acos), "f"), "Atan": (_simple(_M.atan), "f"),
    "Tanh": (_simple(_M.tanh), "f"), "Sigmoid": (_m_sigmoid, "f"),
    "Floor": (_m_floor, "f"), "Ceil": (_m_ceil, "f"),
    "IsFinite": (_m_isfinite, "f"), "IsInf": (_m_isinf, "f"), "IsNan": (_m_isnan, "f"),
    "LogicalNot": (_m_logical_not, "b"),
}

_BOOL_OUTPUT = {"IsFinite", "IsInf", "IsNan", "LogicalNot", "Equal", "NotEqual", "Less",
                "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr"}


def _m_add(T):
    return lambda x, y: x + y


def _m_sub(T):
    return lambda x, y: x - y


def _m_mul(T):
    return lambda x, y: x * y


def _m_realdiv(T):
    return lambda x, y: x / y


def _m_div(T):
    if np.dtype(T).kind == "f":
        return lambda x, y: x / y
    zero, one = T(0), T(1)

    def f(x, y):  # C semantics: rounds toward zero
        if y == zero:
            return zero
        q = x // y
        if q * y != x and (x < zero) != (y < zero):
            q += one
        return q
    return f


def _m_floordiv(T):
    if np.dtype(T).kind != "f":
        zero = T(0)

        def f(x, y):
            if y == zero:
                return zero
            return x // y  # Numba's integer // floors, as Python's
        return f
    zero, one, half = T(0), T(1), T(0.5)
    fmod = _M.fmod

    def g(x, y):
        # numpy's npy_divmod, so the result is the CPU kernel's bit for bit.
        if y == zero:
            return x / y
        mod = fmod(x, y)
        div = (x - mod) / y
        if mod != zero and (y < zero) != (mod < zero):
            div -= one
        if div != zero:
            fl = _d_floor(div)
            if div - fl > half:
                fl += one
            return fl
        return math.copysign(zero, x / y)
    return g


def _m_floormod(T):
    if np.dtype(T).kind != "f":
        zero = T(0)

        def f(x, y):
            if y == zero:
                return zero
            return x % y  # Numba's integer % takes the divisor's sign, as Python's
        return f
    zero = T(0)
    fmod = _M.fmod

    def g(x, y):
        if y == zero:
            return fmod(x, y)  # NaN, as np.remainder
        mod = fmod(x, y)
        if mod != zero:
            if (y < zero) != (mod < zero):
                mod += y
        else:
            mod = math.copysign(zero, y)
        return mod
    return g


def _m_maximum(T):
    def f(x, y):  # NaN wins, as np.maximum
        if x >= y or x != x:
            return x
        return y
    return f


def _m_minimum(T):
    def f(x, y):
        if x <= y or x != x:
            return x
        return y
    return f


def _m_pow(T):
    if np.dtype(T).kind == "f":
        power = _M.pow
        return lambda x, y: power(x, y)
    zero, one = T(0), T(1)

    def f(x, y):
        if y < zero:  # C truncation of 1 / x**-y
            if x == one:
                return one
            if x == -one:
                return one if y % 2 == 0 else -one
            return zero
        result = one
        base = x
        e = y
        while e > zero:
            if e & one:
                result *= base
            base *= base
            e >>= one
        return result
    return f


def _m_squared_difference(T):
    def f(x, y):
        d = x - y
        return d * d
    return f


def _cmp(fn):
    def make(T):
        return fn
    return make


# Binary ops: maker, dtype kinds run on the device.  Arithmetic excludes int32 (host).
_BINARY: Dict[str, Tuple[Callable, str]] = {
    "Add": (_m_add, "fi"), "AddV2": (_m_add, "fi"), "Sub": (_m_sub, "fi"),
    "Mul": (_m_mul, "fi"), "Div": (_m_div, "fi"), "RealDiv": (_m_realdiv, "f"),
    "FloorDiv": (_m_floordiv, "fi"), "FloorMod": (_m_floormod, "fi"),
    "Maximum": (_m_maximum, "fi"), "Minimum": (_m_minimum, "fi"), "Pow": (_m_pow, "fi"),
    "SquaredDifference": (_m_squared_difference, "fi"),
    "Equal": (_cmp(lambda x, y: x == y), "fiub"), "NotEqual": (_cmp(lambda x, y: x != y), "fiub"),
    "Less": (_cmp(lambda x, y: x < y), "fiu"), "LessEqual": (_cmp(lambda x, y: x <= y), "fiu"),
    "Greater": (_cmp(lambda x, y: x > y), "fiu"),
    "GreaterEqual": (_cmp(lambda x, y: x >= y), "fiu"),
    "LogicalAnd": (_cmp(lambda x, y: x and y), "b"), "LogicalOr": (_cmp(lambda x, y: x or y), "b"),
}
_COMPARISONS = {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"}


def _m_sqrt_grad(T):
    half = T(0.5)
    return lambda y, dy: (dy / y) * half


def _m_rsqrt_grad(T):
    mhalf = T(-0.5)
    return lambda y, dy: y * y * y * dy * mhalf


def _m_reciprocal_grad(T):
    return lambda y, dy: -(y * y * dy)


def _m_tanh_grad(T):
    one = T(1)
    return lambda y, dy: dy * (one - y * y)


def _m_sigmoid_grad(T):
    one = T(1)
    return lambda y, dy: dy * y * (one - y)


# -- activations (tf.nn), made per compute type as the others ---------------------------------------
def _m_relu(T):
    zero = T(0)
    return lambda v: v if v > zero else zero


def _m_relu6(T):
    zero, six = T(0), T(6)
    return lambda v: min(max(v, zero), six)


def _m_elu(T):
    zero = T(0)
    expm1 = _M.expm1
    return lambda v: v if v > zero else expm1(v)


def _m_softplus(T):
    zero = T(0)
    exp, log1p = _M.exp, _M.log1p
    # log(1 + e^v) = max(v, 0) + log1p(e^-|v|): no overflow for large |v|.
    return lambda v: max(v, zero) + log1p(exp(-abs(v)))


def _m_relu_grad(T):
    zero = T(0)
    return lambda g, f: g if f > zero else zero


def _m_relu6_grad(T):
    zero, six = T(0), T(6)
    return lambda g, f: g if zero < f < six else zero


def _m_elu_grad(T):
    zero, one = T(0), T(1)
    return lambda g, y: g * (y + one) if y < zero else g


def _m_softplus_grad(T):
    half = T(0.5)
    tanh = _M.tanh
    # sigmoid via tanh: finite for any feature value.
    return lambda g, f: g * (half + half * tanh(half * f))


_UNARY.update({"Relu": (_m_relu, "fiu"), "Relu6": (_m_relu6, "fiu"), "Elu": (_m_elu, "f"),
               "Softplus": (_m_softplus, "f")})

# Gradient ops (y or features, dy or gradients in the op's input order): maker, dtype kinds run on
# the device.
_GRADS: Dict[str, Tuple[Callable, str]] = {
    "SqrtGrad": (_m_sqrt_grad, "f"), "RsqrtGrad": (_m_rsqrt_grad, "f"),
    "ReciprocalGrad": (_m_reciprocal_grad, "f"), "TanhGrad": (_m_tanh_grad, "f"),
    "SigmoidGrad": (_m_sigmoid_grad, "f"),
    "ReluGrad": (_m_relu_grad, "fiu"), "Relu6Grad": (_m_relu6_grad, "fiu"),
    "EluGrad": (_m_elu_grad, "fiu"), "SoftplusGrad": (_m_softplus_grad, "fiu"),
}

# The tf.nn activations run int32 on the device too (they are data, not shapes), and their
# gradients report mismatched shapes as the other nn kernels (InvalidArgumentError).
_ACTIVATIONS = {"Relu", "Relu6", "Elu", "Softplus", "ReluGrad", "Relu6Grad", "EluGrad",
                "SoftplusGrad"}


# -- kernel shapes ---------------------------------------------------------------------------------
# Each builder takes device functions and returns an @_runtime.kernel; kernels are cached by key.
_kernels: Dict[tuple, Callable] = {}


def _cached(key: tuple, build: Callable[[], Callable]) -> Callable:
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = _kernels[key] = build()
    return kernel


def _device(fn: Callable) -> Callable:
    return cuda.jit(device=True)(fn)


def _loader(dtype: np.dtype) -> Callable:
    """The device function a kernel reads an element through (float16 -> float32)."""
    if dtype == np.float16:
        return _device(lambda v: np.float32(v))
    return _device(lambda v: v)


def _build_unary(f, load):
    @_runtime.kernel
    def unary(x, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = f(load(x[i]))
    return unary


def _build_binary_same(f, load):
    @_runtime.kernel
    def binary_same(x, y, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = f(load(x[i]), load(y[i]))
    return binary_same


def _build_binary_scalar_y(f, load):
    @_runtime.kernel
    def binary_scalar_y(x, y, out):
        s = load(y[0])
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = f(load(x[i]), s)
    return binary_scalar_y


def _build_binary_scalar_x(f, load):
    @_runtime.kernel
    def binary_scalar_x(x, y, out):
        s = load(x[0])
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = f(s, load(y[i]))
    return binary_scalar_x


def _build_binary_bcast(f, load):
    # shape: the collapsed output dims; xs, ys: the operands' element strides (0 = broadcast).
    @_runtime.kernel
    def binary_bcast(x, y, out, shape, xs, ys):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            rem = i
            xi = 0
            yi = 0
            for d in range(len(shape) - 1, 0, -1):
                q = rem // shape[d]
                c = rem - q * shape[d]
                xi += c * xs[d]
                yi += c * ys[d]
                rem = q
            xi += rem * xs[0]
            yi += rem * ys[0]
            out[i] = f(load(x[xi]), load(y[yi]))
    return binary_bcast


def _build_select_bcast():
    @_runtime.kernel
    def select_bcast(c, t, e, out, shape, cs, ts, es):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            rem = i
            ci = 0
            ti = 0
            ei = 0
            for d in range(len(shape) - 1, 0, -1):
                q = rem // shape[d]
                k = rem - q * shape[d]
                ci += k * cs[d]
                ti += k * ts[d]
                ei += k * es[d]
                rem = q
            ci += rem * cs[0]
            ti += rem * ts[0]
            ei += rem * es[0]
            out[i] = t[ti] if c[ci] else e[ei]
    return select_bcast


@_runtime.kernel
def _select_same(c, t, e, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = t[i] if c[i] else e[i]


@_runtime.kernel
def _fill_kernel(value, out):
    v = value[0]
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = v


def _build_fill_bits(bits):
    @_runtime.kernel
    def fill_bits(out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = bits
    return fill_bits


def _build_cast(to_bool: bool, src: np.dtype):
    if to_bool:
        # A zero of the source's compute type (float32 for float16, see _compute_type): with a
        # Python 0, Numba would compare float32 (and uint64) in float64.
        zero = _compute_type(src)(0)

        @_runtime.kernel
        def cast_bool(x, out):
            for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
                out[i] = x[i] != zero
        return cast_bool

    @_runtime.kernel
    def cast(x, out):
        for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
            out[i] = x[i]
    return cast


@_runtime.kernel
def _add2(a, b, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = a[i] + b[i]


@_runtime.kernel
def _add3(a, b, c, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = a[i] + b[i] + c[i]


@_runtime.kernel
def _add4(a, b, c, d, out):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = a[i] + b[i] + c[i] + d[i]


def _device_function(table: Dict[str, Tuple[Callable, str]], op_type: str, dtype: np.dtype):
    maker = table[op_type][0]
    return _cached(("fn", op_type, dtype.str), lambda: _device(maker(_compute_type(dtype))))


# -- broadcasting layouts --------------------------------------------------------------------------
def broadcast_layout(out_shape: Sequence[int],
                     shapes: Sequence[Sequence[int]]) -> Tuple[tuple, List[tuple]]:
    """The collapsed output shape and each operand's element strides (0 where it broadcasts),
    as tuples of int64 for a broadcasting kernel.  Size-1 output dims are dropped and
    adjacent dims merged where every operand is contiguous across them."""
    ndim = len(out_shape)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    strides = []
    for s in padded:
        st, acc = [0] * ndim, 1
        for d in range(ndim - 1, -1, -1):
            st[d] = 0 if s[d] == 1 else acc
            acc *= s[d]
        strides.append(st)
    dims: List[int] = []
    merged: List[List[int]] = [[] for _ in shapes]
    for d in range(ndim):
        if out_shape[d] == 1:
            continue
        if dims and all(m[-1] == st[d] * out_shape[d] for m, st in zip(merged, strides)):
            dims[-1] *= out_shape[d]
            for m, st in zip(merged, strides):
                m[-1] = st[d]
            continue
        dims.append(out_shape[d])
        for m, st in zip(merged, strides):
            m.append(st[d])
    if not dims:
        dims, merged = [1], [[0] for _ in shapes]
    return (tuple(np.int64(d) for d in dims),
            [tuple(np.int64(v) for v in m) for m in merged])


def _broadcast_shape(name: str, *shapes: Tuple[int, ...]) -> Tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{name}: Incompatible shapes: "
                         f"{' vs. '.join(dims_text(s) for s in shapes)}") from None


def _out_dtype(op) -> np.dtype:
    return np.dtype(op.outputs[0].dtype.as_numpy_dtype)


def launch_fill(ctx, out, value) -> None:
    """Fills a device array with a constant.  It writes the value's bit pattern through an
    unsigned-integer view, so one kernel per (width, pattern) serves every dtype (and float16
    constants, which NVVM rejects as kernel literals, never appear)."""
    if out.size == 0:
        return
    dtype = out.dtype
    if dtype.itemsize not in (1, 2, 4, 8):
        raise TypeError(f"cannot fill a {dtype} device array")
    uint = np.dtype(f"u{dtype.itemsize}")
    bits = np.array(value, dtype=dtype).view(uint)[()]
    kernel = _cached(("fill", uint.str, int(bits)), lambda: _build_fill_bits(bits))
    _runtime.launch(ctx, kernel, out.size)(flat(out).view(uint))


def _on_device(kinds: str, dtype: np.dtype, int32_on_host: bool = True) -> bool:
    if dtype == np.int32 and int32_on_host:
        return False
    kind = dtype.kind
    return (kind == "f" and "f" in kinds) or (kind == "i" and "i" in kinds) or \
        (kind == "u" and "u" in kinds) or (kind == "b" and "b" in kinds)


# -- unary -----------------------------------------------------------------------------------------
@KERNELS.register(*_UNARY)
def unary(op, ctx):
    dtype = _np_dtype(op.inputs[0])
    if not _on_device(_UNARY[op.type][1], dtype, int32_on_host=op.type not in _ACTIVATIONS):
        return run_on_host(op, ctx)
    out_dtype = _out_dtype(op)
    f = _device_function(_UNARY, op.type, dtype)
    load = _cached(("load", dtype.str), lambda: _loader(dtype))
    kernel = _cached(("unary", op.type, dtype.str), lambda: _build_unary(f, load))

    def run(x):
        out = _runtime.empty(ctx, x.shape, out_dtype)
        if x.size:
            _runtime.launch(ctx, kernel, x.size)(flat(x), flat(out))
        return out
    return run


@KERNELS.register(*_GRADS)
def unary_grad(op, ctx):
    dtype = _np_dtype(op.inputs[0])
    activation = op.type in _ACTIVATIONS
    if not _on_device(_GRADS[op.type][1], dtype, int32_on_host=not activation):
        return run_on_host(op, ctx)
    f = _device_function(_GRADS, op.type, dtype)
    load = _cached(("load", dtype.str), lambda: _loader(dtype))
    kernel = _cached(("same", op.type, dtype.str), lambda: _build_binary_same(f, load))
    name = op.name

    def run(y, dy):
        if y.shape != dy.shape and activation:
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} op '{name}': inputs must have the same shape, got "
                          f"{list(y.shape)} and {list(dy.shape)}.")
        if y.shape != dy.shape:
            raise ValueError(f"{name}: Inputs must have the same shape: {dims_text(y.shape)} vs. "
                             f"{dims_text(dy.shape)}")
        out = _runtime.empty(ctx, y.shape, dtype)
        if y.size:
            _runtime.launch(ctx, kernel, y.size)(flat(y), flat(dy), flat(out))
        return out
    return run


# -- binary ----------------------------------------------------------------------------------------
def _binary_runner(ctx, name: str, key: str, f, dtype: np.dtype, out_dtype: np.dtype):
    """``run(x, y)`` for a broadcasting binary device function ``f``."""
    load = _cached(("load", dtype.str), lambda: _loader(dtype))
    same = _cached(("same", key, dtype.str), lambda: _build_binary_same(f, load))
    scalar_x = _cached(("sx", key, dtype.str), lambda: _build_binary_scalar_x(f, load))
    scalar_y = _cached(("sy", key, dtype.str), lambda: _build_binary_scalar_y(f, load))
    layouts: Dict[tuple, tuple] = {}

    def plan(xs: tuple, ys: tuple) -> tuple:
        out_shape = _broadcast_shape(name, xs, ys)
        n = int(np.prod(out_shape, dtype=np.int64))
        x_n, y_n = int(np.prod(xs, dtype=np.int64)), int(np.prod(ys, dtype=np.int64))
        if xs == ys:
            return out_shape, n, same, ()
        if y_n == 1 and x_n == n:
            return out_shape, n, scalar_y, ()
        if x_n == 1 and y_n == n:
            return out_shape, n, scalar_x, ()
        shape, (xst, yst) = broadcast_layout(out_shape, (xs, ys))
        kernel = _cached(("bcast", key, dtype.str), lambda: _build_binary_bcast(f, load))
        return out_shape, n, kernel, (shape, xst, yst)

    def run(x, y):
        key_shapes = (x.shape, y.shape)
        entry = layouts.get(key_shapes)
        if entry is None:
            entry = plan(*key_shapes)
            if len(layouts) < 64:
                layouts[key_shapes] = entry
        out_shape, n, kernel, extra = entry
        out = _runtime.empty(ctx, out_shape, out_dtype)
        if n:
            _runtime.launch(ctx, kernel, n)(flat(x), flat(y), flat(out), *extra)
        return out
    return run


@KERNELS.register(*_BINARY)
def binary(op, ctx):
    dtype = _np_dtype(op.inputs[0])
    kinds = _BINARY[op.type][1]
    if not _on_device(kinds, dtype, int32_on_host=op.type not in _COMPARISONS):
        return run_on_host(op, ctx)
    f = _device_function(_BINARY, op.type, dtype)
    return _binary_runner(ctx, op.name, op.type, f, dtype, _out_dtype(op))


# -- Cast ------------------------------------------------------------------------------------------
@KERNELS.register("Cast")
def cast(op, ctx):
    src = _np_dtype(op.inputs[0])
    dst = _out_dtype(op)
    if src == dst:
        return lambda x: x
    if src.kind not in "fiub" or dst.kind not in "fiub":
        return run_on_host(op, ctx)
    to_bool = dst == np.bool_
    # Casts to bool are built per source type (their zero), the others once.
    kernel = _cached(("cast", to_bool, src.str if to_bool else None),
                     lambda: _build_cast(to_bool, src))

    def run(x):
        out = _runtime.empty(ctx, x.shape, dst)
        if x.size:
            _runtime.launch(ctx, kernel, x.size)(flat(x), flat(out))
        return out
    return run


# -- Select, SelectV2 ------------------------------------------------------------------------------
def _select_runner(ctx, out_dtype: np.dtype, shapes_of: Callable):
    """``run(cond, t, e)``; ``shapes_of(c, t, e)`` checks the shapes and returns the output
    shape and the (broadcastable) shapes the three operands are read with."""
    layouts: Dict[tuple, tuple] = {}

    def plan(cs, ts, es):
        out_shape, shapes = shapes_of(cs, ts, es)
        n = int(np.prod(out_shape, dtype=np.int64))
        if all(s == out_shape for s in shapes):
            return out_shape, n, _select_same, ()
        shape, strides = broadcast_layout(out_shape, shapes)
        kernel = _cached(("select",), _build_select_bcast)
        return out_shape, n, kernel, (shape, *strides)

    def run(c, t, e):
        key = (c.shape, t.shape, e.shape)
        entry = layouts.get(key)
        if entry is None:
            entry = plan(*key)
            if len(layouts) < 64:
                layouts[key] = entry
        out_shape, n, kernel, extra = entry
        out = _runtime.empty(ctx, out_shape, out_dtype)
        if n:
            _runtime.launch(ctx, kernel, n)(flat(c), flat(t), flat(e), flat(out), *extra)
        return out
    return run


@KERNELS.register("Select")
def select(op, ctx):
    def shapes_of(cs, ts, es):
        # TF's Select: cond is the shape of t, a vector over t's first dim, or a scalar.
        if ts != es:
            raise ValueError(f"'then' and 'else' must have the same size.  but received: "
                             f"{dims_text(ts)} vs. {dims_text(es)}")
        if len(cs) == len(ts):
            if cs != ts:
                raise ValueError(f"'condition' and 'then' must have the same shape: "
                                 f"{dims_text(cs)} vs. {dims_text(ts)}")
            return ts, (cs, ts, es)
        if len(cs) == 1:
            if cs[0] != ts[0]:
                raise ValueError(f"Number of batches of 'then' must match size of 'condition', "
                                 f"but saw: {ts[0]} vs. {cs[0]}")
            return ts, (cs + (1,) * (len(ts) - 1), ts, es)
        if len(cs) != 0:
            raise ValueError(f"'condition' must be a scalar, a vector or of the shape of 'then', "
                             f"but saw shape: {dims_text(cs)}")
        return ts, (cs, ts, es)
    return _select_runner(ctx, _out_dtype(op), shapes_of)


@KERNELS.register("SelectV2")
def select_v2(op, ctx):
    name = op.name

    def shapes_of(cs, ts, es):
        return _broadcast_shape(name, cs, ts, es), (cs, ts, es)
    return _select_runner(ctx, _out_dtype(op), shapes_of)


# -- AddN ------------------------------------------------------------------------------------------
@KERNELS.register("AddN")
def add_n(op, ctx):
    dtype = _np_dtype(op.inputs[0])
    if not _on_device("fi", dtype):
        return run_on_host(op, ctx)
    name = op.name
    adders = {2: _add2, 3: _add3, 4: _add4}

    def run(*xs):
        shape = xs[0].shape
        for i, x in enumerate(xs):
            if x.shape != shape:
                raise ValueError(f"Inputs to operation {name} of type AddN must have the same "
                                 f"size and shape.  Input 0: {dims_text(shape)} != input {i}: "
                                 f"{dims_text(x.shape)}")
        if len(xs) == 1:
            return xs[0]
        out = _runtime.empty(ctx, shape, dtype)
        n = out.size
        if not n:
            return out
        flats = [flat(x) for x in xs]
        o = flat(out)
        # Up to four inputs per pass; later passes add into the running sum, which keeps the
        # CPU kernel's left-to-right order of additions.
        first = flats[:4]
        _runtime.launch(ctx, adders[len(first)], n)(*first, o)
        rest = flats[4:]
        while rest:
            group, rest = rest[:3], rest[3:]
            _runtime.launch(ctx, adders[len(group) + 1], n)(o, *group, o)
        return out
    return run


# -- ZerosLike, OnesLike, Fill ---------------------------------------------------------------------
def _device_dtype(dtype: np.dtype) -> bool:
    return dtype.kind in "fiub" and dtype != np.int32


@KERNELS.register("ZerosLike", "OnesLike")
def zeros_or_ones_like(op, ctx):
    dtype = _out_dtype(op)
    if not _device_dtype(dtype):
        return run_on_host(op, ctx)
    value = 1 if op.type == "OnesLike" else 0

    def run(x):
        out = _runtime.empty(ctx, x.shape, dtype)
        launch_fill(ctx, out, value)
        return out
    return run


@KERNELS.register("Fill")
def fill(op, ctx):
    dtype = _out_dtype(op)
    if not _device_dtype(dtype):
        return run_on_host(op, ctx)
    static = _shapes.constant_value(op.inputs[0])
    static_dims = None if static is None else tuple(int(d) for d in np.ravel(static))
    name = op.name

    def run(dims, value):
        dims = static_dims if static_dims is not None else \
            tuple(int(d) for d in np.ravel(dims).tolist())
        if any(d < 0 for d in dims):
            raise ValueError(f"{name}: Fill dimensions must be >= 0, got {dims_text(dims)}")
        if value.size != 1 or value.ndim != 0:
            raise ValueError(f"{name}: value must be a scalar, got shape {dims_text(value.shape)}")
        out = _runtime.empty(ctx, dims, dtype)
        if out.size:
            _runtime.launch(ctx, _fill_kernel, out.size)(flat(value), flat(out))
        return out
    return host_memory(run, inputs=(0,))


# -- SumToShape ------------------------------------------------------------------------------------
@KERNELS.register("SumToShape")
def sum_to_shape(op, ctx):
    from .reduction_kernels import Reducer

    grad_t, target_t = op.inputs
    dtype = _np_dtype(grad_t)
    if not _on_device("fi", dtype):
        return run_on_host(op, ctx)
    reducer = Reducer(ctx, "Sum", dtype)
    name = op.name
    static_target = _shapes.constant_value(target_t)
    fixed = None if static_target is None else tuple(int(d) for d in np.ravel(static_target))

    def run(g, shape):
        target = fixed if fixed is not None else tuple(int(d) for d in np.ravel(shape).tolist())
        if g.shape == target:
            return g
        lead = g.ndim - len(target)
        if lead < 0 or any(d != 1 and d != g.shape[lead + i] for i, d in enumerate(target)):
            raise ValueError(f"{name}: cannot sum a gradient of shape {dims_text(g.shape)} to "
                             f"shape {dims_text(target)}")
        axes = _sum_axes(g.shape, target)
        if not axes:  # only leading 1s differ: the same elements
            return g.reshape(target)
        return reducer(g, axes, target)
    return host_memory(run, inputs=(1,))

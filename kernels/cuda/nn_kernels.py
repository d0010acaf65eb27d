"""GPU kernels for the neural-network ops: convolution, pooling, bias, softmax, losses and LRN.
NHWC throughout, with TensorFlow's (and the CPU kernels') semantics.  The activations (Relu,
Relu6, Elu, Softplus and their gradients) are elementwise_kernels' unary and gradient ops.

Convolutions are im2col + GEMM (matmul_kernels): a gather kernel writes the patch matrix of a
chunk of the batch (one row per output pixel, its columns ordered like the HWIO filter
flattened) and the GEMM multiplies it with the filter, writing straight into the output.  The
input gradient multiplies the output gradient with the transposed filter into a patch matrix and
a second gather kernel sums each input pixel's patch entries (no atomics: deterministic); the
filter gradient accumulates patch-matrix^T @ output-gradient over the chunks.  1x1 stride-1
convolutions are a single GEMM on the images themselves.

Pooling gradients are gathers too: every input pixel sums over the few windows that cover it
(MaxPoolGrad first records each window's argmax, the first maximum in row-major order, as TF).

Row-wise ops (softmax, log-softmax, the cross-entropies) give each row to one block, which reduces
the row's max and sum in shared memory, in the row's type (as TF); the column sums (BiasAddGrad),
L2Loss and LRN accumulate in float64.  Sparse labels out of
[0, classes) cannot raise from the device: their row's loss and gradient are NaN, as TF's GPU
kernel does.

float16 tensors are computed in float32 (converted on the device by a copy kernel); bookkeeping
inputs (sizes, shapes) are host memory.

Constants in the kernels have the tensor's type (``x.dtype.type(0)``, or ``T(0)`` in a kernel
built per dtype): Numba types float32 combined with a Python int or float as float64, and float64
arithmetic runs at a fraction of the float32 rate on most GPUs.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from numba import cuda, float64
from numba.np import numpy_support

from tfjupyter.framework import errors

from ..cpu.nn_kernels import _ConvGeometry, _check_nhwc, _conv_params, _pool_params
from . import KERNELS, _runtime, host_memory
from ._device import REDUCE_THREADS, block_max, block_sum, fill_zero
from .matmul_kernels import gemm_product

__all__ = ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"]

# Threads of the blocks that reduce one row (softmax, cross-entropy) or partial sums (L2Loss):
# the block reductions' size.  Blocks of the column sums of BiasAddGrad: _COL_X columns by
# _COL_Y row-threads.
_ROW_THREADS = REDUCE_THREADS
_COL_X = 8 if _runtime.SIMULATOR else 32
_COL_Y = 4 if _runtime.SIMULATOR else 8
# Byte budget of one chunk's patch matrix: big enough for the GEMM to fill the GPU.
_COLS_BYTES = (1 << 16) if _runtime.SIMULATOR else (256 << 20)


def _launch_rows(ctx, kernel, rows: int):
    """``kernel`` with one block per row (grid-striding past the GPU's resident blocks)."""
    state = ctx.state
    return kernel[max(1, min(rows, state.max_blocks)), _ROW_THREADS, state.stream]


def _bad(op, message: str) -> Exception:
    return errors.InvalidArgumentError(None, op, f"{op.type} op '{op.name}': {message}")


def _static_host_value(op, index: int) -> Optional[np.ndarray]:
    """The value of input ``index`` when a Const produces it (known at plan time)."""
    src = op.inputs[index].op
    if src.type == "Const":
        return np.asarray(src.get_attr("value"))
    return None


# ---------------------------------------------------------------------------------------------
# float16 through float32


@_runtime.kernel
def _convert(src, dst):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dst.size, stride):
        dst[i] = src[i]


def _cast(ctx, array, dtype):
    out = _runtime.empty(ctx, array.shape, dtype)
    if array.size:
        _runtime.launch(ctx, _convert, array.size)(array.reshape(array.size),
                                                   out.reshape(out.size))
    return out


def _half_as_float32(op, ctx, run: Callable, index: int = 0) -> Callable:
    """Wraps ``run`` to compute in float32 when the op's input ``index`` is float16 (its
    float16 inputs are converted, its outputs converted back)."""
    if np.dtype(op.inputs[index].dtype.as_numpy_dtype) != np.float16:
        return run

    def run_half(*args):
        args = [_cast(ctx, a, np.float32) if getattr(a, "dtype", None) == np.float16 else a
                for a in args]
        result = run(*args)
        if isinstance(result, tuple):
            return tuple(_cast(ctx, r, np.float16) for r in result)
        return _cast(ctx, result, np.float16)
    for attr in ("host_inputs", "host_outputs"):
        if hasattr(run, attr):
            setattr(run_half, attr, getattr(run, attr))
    return run_half


# ---------------------------------------------------------------------------------------------
# Convolution


@cuda.jit(device=True)
def _nhwc_index(e, h, w, c):
    """(image, row, column, channel) of flat element e of an NHWC tensor of h x w pixels:
    one decode for the gathers that give a thread one output (or input) element."""
    ch = e % c
    p = e // c
    x = p % w
    p //= w
    return p // h, p % h, x, ch


@_runtime.kernel
def _im2col(x, b0, h, w, c, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, items, cols):
    """Patch rows of images b0.. into cols: one work item per (row, window row, window column)
    copies that pixel's c channels (zeros in the padding)."""
    k = kh * kw * c
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for item in range(start, items, stride):
        row = item // (kh * kw)
        tap = item - row * (kh * kw)
        a = tap // kw
        q = tap - a * kw
        img = row // (oh * ow)
        pix = row - img * (oh * ow)
        i = pix // ow
        j = pix - i * ow
        y = i * sh + a * dh - pt
        xx = j * sw + q * dw - pl
        dst = row * k + tap * c
        if 0 <= y < h and 0 <= xx < w:
            src = (((b0 + img) * h + y) * w + xx) * c
            for ch in range(c):
                cols[dst + ch] = x[src + ch]
        else:
            for ch in range(c):
                cols[dst + ch] = 0


@_runtime.kernel
def _col2im(cols, b0, h, w, c, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, size, dx):
    """dx of images b0.. = the sum of each pixel's entries in the patch matrix: im2col's
    adjoint, as a gather over the windows that read the pixel."""
    k = kh * kw * c
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, size, stride):
        img, y, xx, ch = _nhwc_index(e, h, w, c)
        total = cols.dtype.type(0)  # (see the module docstring on constants)
        for a in range(kh):
            ty = y + pt - a * dh
            if ty < 0 or ty % sh != 0:
                continue
            i = ty // sh
            if i >= oh:
                continue
            for q in range(kw):
                tx = xx + pl - q * dw
                if tx < 0 or tx % sw != 0:
                    continue
                j = tx // sw
                if j >= ow:
                    continue
                total += cols[((img * oh + i) * ow + j) * k + (a * kw + q) * c + ch]
        dx[((b0 + img) * h + y) * w * c + xx * c + ch] = total


class _Conv:
    """A convolution's geometry, from the input and filter shapes."""

    def __init__(self, op, input_shape: Sequence[int], filter_shape: Sequence[int],
                 strides, same: bool, dilations):
        self.n, self.h, self.w, self.c = (int(d) for d in input_shape)
        self.kh, self.kw, ci, self.co = (int(d) for d in filter_shape)
        if ci != self.c:
            raise _bad(op, f"the input has depth {self.c} but the filter {ci}.")
        self.sh, self.sw = strides
        self.dh, self.dw = dilations
        try:
            geo = _ConvGeometry(self.h, self.w, self.kh, self.kw, self.sh, self.sw,
                                self.dh, self.dw, same)
        except ValueError as e:
            raise _bad(op, str(e)) from None
        self.oh, self.ow, self.pt, self.pl = geo.oh, geo.ow, geo.pt, geo.pl
        self.rows = self.oh * self.ow  # patch rows per image
        self.k = self.kh * self.kw * self.c  # patch columns
        self.pointwise = (self.kh == self.kw == self.sh == self.sw == 1)

    def chunk(self, itemsize: int) -> int:
        """Images per patch-matrix chunk."""
        return max(1, min(self.n, _COLS_BYTES // max(1, self.rows * self.k * itemsize)))

    def args(self):
        return (self.h, self.w, self.c, self.kh, self.kw, self.sh, self.sw, self.dh, self.dw,
                self.pt, self.pl, self.oh, self.ow)


def conv2d(ctx, op, x, w, strides, same: bool, dilations):
    """TF's Conv2D: NHWC input * HWIO filter -> NHWC output."""
    g = _Conv(op, x.shape, w.shape, strides, same, dilations)
    y = _runtime.empty(ctx, (g.n, g.oh, g.ow, g.co), x.dtype)
    if y.size == 0:
        return y
    xf, wf, yf = _runtime.flat(x), _runtime.flat(w), _runtime.flat(y)
    if g.pointwise:
        gemm_product(ctx, xf, wf, yf, g.n * g.h * g.w, g.co, g.c)
        return y
    step = g.chunk(x.dtype.itemsize)
    cols = _runtime.empty(ctx, (step * g.rows * g.k,), x.dtype)
    for b0 in range(0, g.n, step):
        nb = min(step, g.n - b0)
        items = nb * g.rows * g.kh * g.kw
        _runtime.launch(ctx, _im2col, items)(xf, b0, *g.args(), items, cols)
        gemm_product(ctx, cols, wf, yf, nb * g.rows, g.co, g.k, c_offset=b0 * g.rows * g.co)
    return y


def conv2d_backprop_input(ctx, op, input_sizes, w, dy, strides, same: bool, dilations):
    """TF's Conv2DBackpropInput: the gradient of conv2d with respect to its input."""
    g = _Conv(op, input_sizes, w.shape, strides, same, dilations)
    if tuple(dy.shape) != (g.n, g.oh, g.ow, g.co):
        raise _bad(op, f"out_backprop has shape {list(dy.shape)}, expected "
                       f"{[g.n, g.oh, g.ow, g.co]}.")
    dx = _runtime.empty(ctx, (g.n, g.h, g.w, g.c), dy.dtype)
    if dx.size == 0:
        return dx
    wf, dyf, dxf = _runtime.flat(w), _runtime.flat(dy), _runtime.flat(dx)
    if g.co == 0 or g.k == 0:
        _runtime.launch(ctx, fill_zero, dx.size)(dxf)
        return dx
    if g.pointwise:
        gemm_product(ctx, dyf, wf, dxf, g.n * g.h * g.w, g.c, g.co, trans_b=True)
        return dx
    step = g.chunk(dy.dtype.itemsize)
    cols = _runtime.empty(ctx, (step * g.rows * g.k,), dy.dtype)
    for b0 in range(0, g.n, step):
        nb = min(step, g.n - b0)
        gemm_product(ctx, dyf, wf, cols, nb * g.rows, g.k, g.co, trans_b=True,
                     a_offset=b0 * g.rows * g.co)
        size = nb * g.h * g.w * g.c
        _runtime.launch(ctx, _col2im, size)(cols, b0, *g.args(), size, dxf)
    return dx


def conv2d_backprop_filter(ctx, op, x, filter_sizes, dy, strides, same: bool, dilations):
    """TF's Conv2DBackpropFilter: the gradient of conv2d with respect to its filter."""
    g = _Conv(op, x.shape, filter_sizes, strides, same, dilations)
    if tuple(dy.shape) != (g.n, g.oh, g.ow, g.co):
        raise _bad(op, f"out_backprop has shape {list(dy.shape)}, expected "
                       f"{[g.n, g.oh, g.ow, g.co]}.")
    dw = _runtime.empty(ctx, (g.kh, g.kw, g.c, g.co), x.dtype)
    if dw.size == 0:
        return dw
    xf, dyf, dwf = _runtime.flat(x), _runtime.flat(dy), _runtime.flat(dw)
    if g.n * g.rows == 0:
        _runtime.launch(ctx, fill_zero, dw.size)(dwf)
        return dw
    if g.pointwise:
        gemm_product(ctx, xf, dyf, dwf, g.c, g.co, g.n * g.h * g.w, trans_a=True)
        return dw
    step = g.chunk(x.dtype.itemsize)
    cols = _runtime.empty(ctx, (step * g.rows * g.k,), x.dtype)
    for b0 in range(0, g.n, step):
        nb = min(step, g.n - b0)
        items = nb * g.rows * g.kh * g.kw
        _runtime.launch(ctx, _im2col, items)(xf, b0, *g.args(), items, cols)
        gemm_product(ctx, cols, dyf, dwf, g.k, g.co, nb * g.rows, trans_a=True,
                     b_offset=b0 * g.rows * g.co, accumulate=b0 > 0)
    return dw


def _shape_input(op, index: int, name: str) -> Callable[[object], Tuple[int, ...]]:
    """Reads a host-memory shape input (static when a Const feeds it)."""
    static = _static_host_value(op, index)

    def value(runtime) -> Tuple[int, ...]:
        shape = static if static is not None else np.asarray(runtime)
        if shape.shape != (4,):
            raise _bad(op, f"{name} must be a 4-element vector, got {shape.tolist()}.")
        return tuple(int(d) for d in shape)
    return value


@KERNELS.register("Conv2D")
def conv2d_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)

    def run(x, w):
        return conv2d(ctx, op, x, w, strides, same, dilations)
    return _half_as_float32(op, ctx, run)


@KERNELS.register("Conv2DBackpropInput")
def conv2d_backprop_input_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)
    sizes = _shape_input(op, 0, "input_sizes")

    def run(input_sizes, w, dy):
        return conv2d_backprop_input(ctx, op, sizes(input_sizes), w, dy, strides, same,
                                     dilations)
    return _half_as_float32(op, ctx, host_memory(run, inputs=(0,)), index=1)


@KERNELS.register("Conv2DBackpropFilter")
def conv2d_backprop_filter_kernel(op, ctx):
    strides, same, dilations = _conv_params(op)
    sizes = _shape_input(op, 1, "filter_sizes")

    def run(x, filter_sizes, dy):
        return conv2d_backprop_filter(ctx, op, x, sizes(filter_sizes), dy, strides, same,
                                      dilations)
    return _half_as_float32(op, ctx, host_memory(run, inputs=(1,)))


# ---------------------------------------------------------------------------------------------
# Pooling (one thread per output element, channels fastest: coalesced)


@cuda.jit(device=True)
def _window(i, stride, pad, k, size):
    """[lo, hi) of the window of output i along one axis, clipped to the image."""
    lo = i * stride - pad
    return max(lo, 0), min(lo + k, size)


@cuda.jit(device=True)
def _covering(y, stride, pad, k, out_size):
    """[lo, hi) of the outputs along one axis whose window covers input y: the i with
    i * stride - pad <= y < i * stride - pad + k (the pooling gradients' gathers)."""
    return max(0, (y + pad - k) // stride + 1), min(out_size, (y + pad) // stride + 1)


@_runtime.kernel
def _max_pool(x, n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow, out, argmax):
    """MaxPool; with a non-empty ``argmax`` also records each window's first maximum (the
    flat y * w + x of the pixel)."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    record = argmax.size > 0
    for e in range(start, out.size, stride):
        b, i, j, ch = _nhwc_index(e, oh, ow, c)
        ya, yb = _window(i, sh, pt, kh, h)
        xa, xb = _window(j, sw, pl, kw, w)
        base = b * h * w * c + ch
        best = x[base + (ya * w + xa) * c]
        at = ya * w + xa
        for y in range(ya, yb):
            for xx in range(xa, xb):
                v = x[base + (y * w + xx) * c]
                if v > best:
                    best = v
                    at = y * w + xx
        out[e] = best
        if record:
            argmax[e] = at


@_runtime.kernel
def _max_pool_grad(argmax, grad, n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow, dx):
    """dx[pixel] = sum of the gradients of the windows whose argmax is the pixel."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, dx.size, stride):
        b, y, xx, ch = _nhwc_index(e, h, w, c)
        here = y * w + xx
        i_lo, i_hi = _covering(y, sh, pt, kh, oh)
        j_lo, j_hi = _covering(xx, sw, pl, kw, ow)
        total = grad.dtype.type(0)  # (see the module docstring on constants)
        for i in range(i_lo, i_hi):
            for j in range(j_lo, j_hi):
                o = ((b * oh + i) * ow + j) * c + ch
                if argmax[o] == here:
                    total += grad[o]
        dx[e] = total


@_runtime.kernel
def _avg_pool(x, n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow, out):
    """AvgPool: SAME padding averages over the pixels inside the image only."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, out.size, stride):
        b, i, j, ch = _nhwc_index(e, oh, ow, c)
        ya, yb = _window(i, sh, pt, kh, h)
        xa, xb = _window(j, sw, pl, kw, w)
        base = b * h * w * c + ch
        T = x.dtype.type  # (see the module docstring on constants)
        total = T(0)
        for y in range(ya, yb):
            for xx in range(xa, xb):
                total += x[base + (y * w + xx) * c]
        out[e] = total / T((yb - ya) * (xb - xa))


@_runtime.kernel
def _avg_pool_grad(grad, n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow, dx):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, dx.size, stride):
        b, y, xx, ch = _nhwc_index(e, h, w, c)
        i_lo, i_hi = _covering(y, sh, pt, kh, oh)
        j_lo, j_hi = _covering(xx, sw, pl, kw, ow)
        T = grad.dtype.type  # (see the module docstring on constants)
        total = T(0)
        for i in range(i_lo, i_hi):
            ya, yb = _window(i, sh, pt, kh, h)
            for j in range(j_lo, j_hi):
                xa, xb = _window(j, sw, pl, kw, w)
                total += grad[((b * oh + i) * ow + j) * c + ch] / T((yb - ya) * (xb - xa))
        dx[e] = total


class _Pool:
    def __init__(self, op, shape: Sequence[int], ksize, strides, same: bool):
        if len(shape) != 4:
            raise _bad(op, f"input must be 4-dimensional, got shape {list(shape)}.")
        self.n, self.h, self.w, self.c = (int(d) for d in shape)
        self.kh, self.kw = ksize
        self.sh, self.sw = strides
        try:
            geo = _ConvGeometry(self.h, self.w, self.kh, self.kw, self.sh, self.sw, 1, 1, same)
        except ValueError as e:
            raise _bad(op, str(e)) from None
        self.oh, self.ow, self.pt, self.pl = geo.oh, geo.ow, geo.pt, geo.pl

    @property
    def out_shape(self) -> Tuple[int, int, int, int]:
        return (self.n, self.oh, self.ow, self.c)

    def args(self):
        return (self.n, self.h, self.w, self.c, self.kh, self.kw, self.sh, self.sw,
                self.pt, self.pl, self.oh, self.ow)


def _no_argmax(ctx):
    return _runtime.empty(ctx, (0,), np.int32)


def _check_grad_shape(op, grad, expected) -> None:
    if tuple(grad.shape) != tuple(expected):
        raise _bad(op, f"the gradient has shape {list(grad.shape)}, expected "
                       f"{list(expected)}.")


@KERNELS.register("MaxPool")
def max_pool_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(x):
        p = _Pool(op, x.shape, ksize, strides, same)
        out = _runtime.empty(ctx, p.out_shape, x.dtype)
        if out.size:
            _runtime.launch(ctx, _max_pool, out.size)(_runtime.flat(x), *p.args(), _runtime.flat(out),
                                                      _no_argmax(ctx))
        return out
    return _half_as_float32(op, ctx, run)


@KERNELS.register("MaxPoolGrad")
def max_pool_grad_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(orig_input, orig_output, grad):
        p = _Pool(op, orig_input.shape, ksize, strides, same)
        _check_grad_shape(op, grad, p.out_shape)
        dx = _runtime.empty(ctx, orig_input.shape, orig_input.dtype)
        if dx.size == 0:
            return dx
        if grad.size == 0:
            _runtime.launch(ctx, fill_zero, dx.size)(_runtime.flat(dx))
            return dx
        # The window maxima are recomputed (orig_output cannot tell where they are).
        best = _runtime.empty(ctx, (grad.size,), orig_input.dtype)
        argmax = _runtime.empty(ctx, (grad.size,), np.int64)
        _runtime.launch(ctx, _max_pool, grad.size)(_runtime.flat(orig_input), *p.args(), best, argmax)
        _runtime.launch(ctx, _max_pool_grad, dx.size)(argmax, _runtime.flat(grad), *p.args(),
                                                      _runtime.flat(dx))
        return dx
    return _half_as_float32(op, ctx, run)


@KERNELS.register("AvgPool")
def avg_pool_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)

    def run(x):
        p = _Pool(op, x.shape, ksize, strides, same)
        out = _runtime.empty(ctx, p.out_shape, x.dtype)
        if out.size:
            _runtime.launch(ctx, _avg_pool, out.size)(_runtime.flat(x), *p.args(), _runtime.flat(out))
        return out
    return _half_as_float32(op, ctx, run)


@KERNELS.register("AvgPoolGrad")
def avg_pool_grad_kernel(op, ctx):
    ksize, strides, same = _pool_params(op)
    shape_of = _shape_input(op, 0, "orig_input_shape")

    def run(orig_input_shape, grad):
        shape = shape_of(orig_input_shape)
        p = _Pool(op, shape, ksize, strides, same)
        _check_grad_shape(op, grad, p.out_shape)
        dx = _runtime.empty(ctx, shape, grad.dtype)
        if dx.size == 0:
            return dx
        if grad.size == 0:
            _runtime.launch(ctx, fill_zero, dx.size)(_runtime.flat(dx))
            return dx
        _runtime.launch(ctx, _avg_pool_grad, dx.size)(_runtime.flat(grad), *p.args(), _runtime.flat(dx))
        return dx
    return _half_as_float32(op, ctx, host_memory(run, inputs=(0,)), index=1)


# ---------------------------------------------------------------------------------------------
# Bias


@_runtime.kernel
def _bias_add(value, bias, c, out):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] = value[i] + bias[i % c]


@_runtime.kernel
def _column_partial_sums(a, rows, cols, parts):
    """parts[g, col] = sum of rows g*Y + ty, (g + G)*Y + ty, ... of column col over the block's
    Y row-threads (G = gridDim.y): columns along threadIdx.x, so the reads coalesce."""
    shared = cuda.shared.array((_COL_Y, _COL_X), float64)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    groups = cuda.gridDim.y
    for col0 in range(cuda.blockIdx.x * _COL_X, cols, cuda.gridDim.x * _COL_X):
        col = col0 + tx
        total = 0.0
        if col < cols:
            for r in range(cuda.blockIdx.y * _COL_Y + ty, rows, groups * _COL_Y):
                total += a[r * cols + col]
        shared[ty, tx] = total
        cuda.syncthreads()
        if ty == 0 and col < cols:
            for t in range(1, _COL_Y):
                total += shared[t, tx]
            parts[cuda.blockIdx.y * cols + col] = total
        cuda.syncthreads()


@_runtime.kernel
def _sum_parts(parts, groups, cols, out):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for col in range(start, cols, stride):
        total = 0.0
        for g in range(groups):
            total += parts[g * cols + col]
        out[col] = total


def column_sums(ctx, a, rows: int, cols: int, out) -> None:
    """out[col] = sum over the rows of the row-major (rows, cols) flat array ``a`` (float64
    accumulation, deterministic: partial sums per row group, then one pass over them)."""
    if cols == 0:
        return
    if rows == 0:
        _runtime.launch(ctx, fill_zero, cols)(out)
        return
    state = ctx.state
    col_blocks = min(math.ceil(cols / _COL_X), state.max_blocks)
    # Enough row groups to fill the GPU, each at least a few hundred rows.
    groups = max(1, min(state.max_blocks // col_blocks, rows // (16 * _COL_Y)))
    parts = _runtime.empty(ctx, (groups * cols,), np.float64)
    _column_partial_sums[(col_blocks, groups), (_COL_X, _COL_Y), state.stream](
        a, rows, cols, parts)
    _runtime.launch(ctx, _sum_parts, cols)(parts, groups, cols, out)


@KERNELS.register("BiasAdd", "BiasAddV1")
def bias_add_kernel(op, ctx):
    _check_nhwc(op)

    def run(value, bias):
        if value.ndim < 1 or bias.ndim != 1 or bias.shape[0] != tuple(value.shape)[-1]:
            raise _bad(op, f"Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {list(value.shape)}")
        out = _runtime.empty(ctx, value.shape, value.dtype)
        if out.size:
            _runtime.launch(ctx, _bias_add, out.size)(_runtime.flat(value), bias, bias.shape[0],
                                                      _runtime.flat(out))
        return out
    return _half_as_float32(op, ctx, run)


@KERNELS.register("BiasAddGrad")
def bias_add_grad_kernel(op, ctx):
    _check_nhwc(op)

    def run(grad):
        if grad.ndim < 1:
            raise _bad(op, f"input must be at least 1-D, got shape {list(grad.shape)}.")
        cols = tuple(grad.shape)[-1]
        out = _runtime.empty(ctx, (cols,), grad.dtype)
        column_sums(ctx, _runtime.flat(grad), grad.size // cols if cols else 0, cols, out)
        return out
    return _half_as_float32(op, ctx, run)


# ---------------------------------------------------------------------------------------------
# Kernels built per compute dtype (the activations are elementwise_kernels' unary and gradient
# ops: Relu, Relu6, Elu, Softplus and their gradients)


def _compute_type(dtype) -> type:
    """The numpy scalar type a kernel computes in for tensors of ``dtype``: float16 in float32
    (Numba's float16 arithmetic and comparisons need its C++ float16 shim at link time)."""
    dtype = np.dtype(dtype)
    return np.float32 if dtype == np.float16 else dtype.type


def _per_dtype(maker: Callable) -> Callable:
    """``kernel_for(dtype)``: what ``maker(T)`` builds for compute type T, built once per T.

    The makers take their constants from T (``zero = T(0)``): a Python int or float constant
    makes Numba compute float32 in float64, which is slow on most GPUs.
    """
    build = functools.lru_cache(maxsize=None)(maker)
    return lambda dtype: build(_compute_type(dtype))


# ---------------------------------------------------------------------------------------------
# Softmax and losses (one block per row)


class _RowKernels(NamedTuple):
    softmax: Callable
    softmax_xent: Callable
    sparse_softmax_xent: Callable


@_per_dtype
def _row_kernels(T) -> _RowKernels:
    """The row kernels for compute type T.  They exponentiate and sum in T, as TF (float32 sums
    for float32): the tree reduction keeps the rounding error small, and float64 would cost a
    conversion and a double add per element (1/32 to 1/64 of the float32 rate on consumer
    GPUs)."""
    ACC = numpy_support.from_dtype(np.dtype(T))
    zero, one, minus_inf, nan = T(0), T(1), T(-math.inf), T(math.nan)

    @cuda.jit(device=True)
    def row_max_and_sum(x, base, cols, shared):
        """(max, sum of exp(x - max)) of the row x[base:base + cols] across the block."""
        tid = cuda.threadIdx.x
        best = minus_inf
        for j in range(tid, cols, cuda.blockDim.x):
            v = x[base + j]
            if v > best:
                best = v
        best = block_max(shared, best)
        total = zero
        for j in range(tid, cols, cuda.blockDim.x):
            total += math.exp(x[base + j] - best)
        return best, block_sum(shared, total)

    @_runtime.kernel
    def softmax(x, rows, cols, log, out):
        shared = cuda.shared.array(_ROW_THREADS, ACC)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            base = r * cols
            best, total = row_max_and_sum(x, base, cols, shared)
            if log:
                shift = best + math.log(total)
                for j in range(tid, cols, cuda.blockDim.x):
                    out[base + j] = x[base + j] - shift
            else:
                scale = one / total
                for j in range(tid, cols, cuda.blockDim.x):
                    out[base + j] = math.exp(x[base + j] - best) * scale

    @_runtime.kernel
    def softmax_xent(x, labels, rows, cols, loss, backprop):
        shared = cuda.shared.array(_ROW_THREADS, ACC)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            base = r * cols
            best, total = row_max_and_sum(x, base, cols, shared)
            log_total = math.log(total)
            part = zero
            for j in range(tid, cols, cuda.blockDim.x):
                shifted = x[base + j] - best
                lab = labels[base + j]
                # -sum(labels * log_softmax), log_softmax = shifted - log(total).
                part += lab * (log_total - shifted)
                backprop[base + j] = math.exp(shifted) / total - lab
            part = block_sum(shared, part)
            if tid == 0:
                loss[r] = part

    @_runtime.kernel
    def sparse_softmax_xent(x, labels, rows, cols, loss, backprop):
        shared = cuda.shared.array(_ROW_THREADS, ACC)
        tid = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            base = r * cols
            label = labels[r]
            if label < 0 or label >= cols:
                # No exception from the device: a NaN row, as TF's GPU kernel.
                for j in range(tid, cols, cuda.blockDim.x):
                    backprop[base + j] = nan
                if tid == 0:
                    loss[r] = nan
                continue
            best, total = row_max_and_sum(x, base, cols, shared)
            for j in range(tid, cols, cuda.blockDim.x):
                p = math.exp(x[base + j] - best) / total
                backprop[base + j] = p - one if j == label else p
            if tid == 0:
                loss[r] = math.log(total) - (x[base + label] - best)

    return _RowKernels(softmax, softmax_xent, sparse_softmax_xent)


def _rows_and_cols(op, x) -> Tuple[int, int]:
    if x.ndim < 1:
        raise _bad(op, f"logits must have rank >= 1, got shape {list(x.shape)}.")
    shape = tuple(x.shape)  # simulator shapes take no negative index
    cols = shape[-1]
    return (x.size // cols if cols else math.prod(shape[:-1])), cols


def _softmax_kernel_for(log: bool):
    def factory(op, ctx):
        def run(x):
            rows, cols = _rows_and_cols(op, x)
            out = _runtime.empty(ctx, x.shape, x.dtype)
            if out.size:
                kernel = _row_kernels(x.dtype).softmax
                _launch_rows(ctx, kernel, rows)(_runtime.flat(x), rows, cols, log, _runtime.flat(out))
            return out
        return _half_as_float32(op, ctx, run)
    return factory


KERNELS.register("Softmax")(_softmax_kernel_for(False))
KERNELS.register("LogSoftmax")(_softmax_kernel_for(True))


@KERNELS.register("SoftmaxCrossEntropyWithLogits")
def softmax_cross_entropy_kernel(op, ctx):
    def run(features, labels):
        if features.ndim != 2 or labels.shape != features.shape:
            raise _bad(op, f"logits and labels must be 2-D and of the same shape: logits "
                           f"{list(features.shape)}, labels {list(labels.shape)}")
        rows, cols = features.shape
        loss = _runtime.empty(ctx, (rows,), features.dtype)
        backprop = _runtime.empty(ctx, features.shape, features.dtype)
        if rows and cols:
            kernel = _row_kernels(features.dtype).softmax_xent
            _launch_rows(ctx, kernel, rows)(_runtime.flat(features), _runtime.flat(labels), rows, cols, loss,
                                            _runtime.flat(backprop))
        elif rows:
            _runtime.launch(ctx, fill_zero, rows)(loss)
        return loss, backprop
    return _half_as_float32(op, ctx, run)


@KERNELS.register("SparseSoftmaxCrossEntropyWithLogits")
def sparse_softmax_cross_entropy_kernel(op, ctx):
    def run(features, labels):
        if features.ndim != 2 or labels.ndim != 1 or labels.shape[0] != features.shape[0]:
            raise _bad(op, f"logits must be 2-D and labels 1-D with as many rows: logits "
                           f"{list(features.shape)}, labels {list(labels.shape)}")
        rows, cols = features.shape
        loss = _runtime.empty(ctx, (rows,), features.dtype)
        backprop = _runtime.empty(ctx, features.shape, features.dtype)
        if rows and cols:
            kernel = _row_kernels(features.dtype).sparse_softmax_xent
            _launch_rows(ctx, kernel, rows)(_runtime.flat(features), labels, rows, cols, loss,
                                            _runtime.flat(backprop))
        elif rows:
            raise _bad(op, "Received a label value outside the valid range of [0, 0): the "
                           "logits have no classes.")
        return loss, backprop
    return _half_as_float32(op, ctx, run)


# ---------------------------------------------------------------------------------------------
# L2Loss


@_runtime.kernel
def _square_partial_sums(x, parts):
    shared = cuda.shared.array(_ROW_THREADS, float64)
    total = 0.0
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, stride):
        v = float64(x[i])
        total += v * v
    total = block_sum(shared, total)
    if cuda.threadIdx.x == 0:
        parts[cuda.blockIdx.x] = total


@_runtime.kernel
def _half_sum(parts, out):
    shared = cuda.shared.array(_ROW_THREADS, float64)
    total = 0.0
    for i in range(cuda.threadIdx.x, parts.size, cuda.blockDim.x):
        total += parts[i]
    total = block_sum(shared, total)
    if cuda.threadIdx.x == 0:
        out[0] = total / 2


@KERNELS.register("L2Loss")
def l2_loss_kernel(op, ctx):
    def run(t):
        out = _runtime.empty(ctx, (1,), t.dtype)
        state = ctx.state
        blocks = max(1, min(math.ceil(t.size / _ROW_THREADS), state.max_blocks))
        parts = _runtime.empty(ctx, (blocks,), np.float64)
        if t.size:
            _square_partial_sums[blocks, _ROW_THREADS, state.stream](_runtime.flat(t), parts)
        else:
            fill_zero[1, 1, state.stream](parts)
        _half_sum[1, _ROW_THREADS, state.stream](parts, out)
        return out.reshape(())
    return _half_as_float32(op, ctx, run)


# ---------------------------------------------------------------------------------------------
# LRN


@_runtime.kernel
def _lrn_norm(x, c, radius, bias, alpha, norm):
    """norm = bias + alpha * sum of x**2 over the channels within radius."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, norm.size, stride):
        ch = e % c
        base = e - ch
        total = 0.0
        for d in range(max(0, ch - radius), min(c, ch + radius + 1)):
            v = float64(x[base + d])
            total += v * v
        norm[e] = bias + alpha * total


@_runtime.kernel
def _lrn(x, norm, beta, out):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, out.size, stride):
        out[e] = x[e] * norm[e] ** -beta


@_runtime.kernel
def _lrn_grad(g, x, y, norm, c, radius, alpha, beta, dx):
    """dx = g * N**-beta - 2 * alpha * beta * x * sum over the window of g * y / N."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for e in range(start, dx.size, stride):
        ch = e % c
        base = e - ch
        spread = 0.0
        for d in range(max(0, ch - radius), min(c, ch + radius + 1)):
            spread += float64(g[base + d]) * y[base + d] / norm[base + d]
        dx[e] = g[e] * norm[e] ** -beta - 2 * alpha * beta * x[e] * spread


def _lrn_attrs(op):
    return (int(op.get_attr("depth_radius")), float(op.get_attr("bias")),
            float(op.get_attr("alpha")), float(op.get_attr("beta")))


def _lrn_norm_of(ctx, op, x, radius, bias, alpha):
    if x.ndim != 4:
        raise _bad(op, f"input must be 4-dimensional, got shape {list(x.shape)}.")
    norm = _runtime.empty(ctx, (x.size,), np.float64)
    _runtime.launch(ctx, _lrn_norm, x.size)(_runtime.flat(x), x.shape[3], radius, bias, alpha, norm)
    return norm


@KERNELS.register("LRN")
def lrn_kernel(op, ctx):
    radius, bias, alpha, beta = _lrn_attrs(op)

    def run(x):
        out = _runtime.empty(ctx, x.shape, x.dtype)
        if x.size:
            norm = _lrn_norm_of(ctx, op, x, radius, bias, alpha)
            _runtime.launch(ctx, _lrn, x.size)(_runtime.flat(x), norm, beta, _runtime.flat(out))
        return out
    return _half_as_float32(op, ctx, run)


@KERNELS.register("LRNGrad")
def lrn_grad_kernel(op, ctx):
    radius, bias, alpha, beta = _lrn_attrs(op)

    def run(grads, x, y):
        if not grads.shape == x.shape == y.shape:
            raise _bad(op, f"grads, input and output must have the same shape, got "
                           f"{list(grads.shape)}, {list(x.shape)}, {list(y.shape)}.")
        dx = _runtime.empty(ctx, x.shape, x.dtype)
        if x.size:
            norm = _lrn_norm_of(ctx, op, x, radius, bias, alpha)
            _runtime.launch(ctx, _lrn_grad, x.size)(_runtime.flat(grads), _runtime.flat(x), _runtime.flat(y), norm,
                                                    x.shape[3], radius, alpha, beta,
                                                    _runtime.flat(dx))
        return dx
    return _half_as_float32(op, ctx, run, index=1)

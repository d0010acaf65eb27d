"""GPU kernels for the random ops: RandomUniform, RandomStandardNormal, TruncatedNormal and
RandomUniformInt, drawn with Numba's xoroshiro128+ device generators.

Each (session, op) pair owns one array of generator states, one per thread of the largest
launch the kernel makes, seeded from the op's (seed, seed2) attrs as the CPU kernels seed their
Philox generators ((0, 0): fresh OS entropy). The states stay on the device and advance with
every run, so runs continue the sequence and a new session starts it again; the numbers differ
from the CPU kernels' (another generator), their distributions do not.

Thread ``t`` draws the elements ``t, t + T, t + 2T, ...`` (T threads launched) from its own
state, so a given op, shape and GPU always draw the same numbers for the same seeds.
"""
from __future__ import annotations

import math
import weakref
from typing import Callable, Dict, Tuple

import numpy as np
from numba import cuda
from numba.cuda.random import (xoroshiro128p_dtype, xoroshiro128p_next,
                               xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                               xoroshiro128p_uniform_float32, xoroshiro128p_uniform_float64)

from ..cpu.array_kernels import as_int, static_input
from ..cpu.random_kernels import _dims
from . import KERNELS, _runtime, host_memory

# ResourceManager (one per device per session) -> {op name: device array of generator states}
_STATES: "weakref.WeakKeyDictionary[object, Dict[str, object]]" = weakref.WeakKeyDictionary()

# Truncated normals keep values within this many standard deviations (TensorFlow's rule).
_TRUNCATE = 2.0


def _seed(op) -> int:
    seed, seed2 = op.get_attr("seed"), op.get_attr("seed2")
    if seed == 0 and seed2 == 0:
        sequence = np.random.SeedSequence()
    else:
        sequence = np.random.SeedSequence([int(seed), int(seed2)])
    return int(sequence.generate_state(1, np.uint64)[0])


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (wrapping uint64 arithmetic, as numpy arrays do)."""
    z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _initial_states(n: int, seed: int) -> np.ndarray:
    """``n`` xoroshiro128+ states seeded from consecutive SplitMix64 outputs, as the
    generator's authors recommend. Numba's own initializer jumps each state 2**64 steps past
    the previous one, serially on the host: that costs a CPU compile per process and ~4 us per
    state; with a 2**128 period, overlapping streams from these seeds are not a practical risk."""
    with np.errstate(over="ignore"):
        steps = np.arange(1, 2 * n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        words = _splitmix64(steps + np.uint64(seed))
    states = np.empty(n, dtype=xoroshiro128p_dtype)
    states["s0"] = words[0::2]
    states["s1"] = words[1::2]
    dead = (states["s0"] | states["s1"]) == 0  # the one state the generator cannot leave
    states["s1"][dead] = 1
    return states


def generator_states(op, ctx):
    """The generator states of ``op`` in the session that ``ctx`` (a device) belongs to."""
    states = _STATES.get(ctx.resources)
    if states is None:
        states = _STATES[ctx.resources] = {}
    found = states.get(op.name)
    if found is None:
        # Thread t draws from state t. Four blocks per multiprocessor keep the stores of a big
        # draw (dropout masks) in flight; a full launch's worth (8 per SM) would hold ~4 MB of
        # states per random op, most of them initializers that run once.
        blocks = min(ctx.state.max_blocks, 4 * ctx.state.physical.multiprocessors)
        n = max(1, blocks) * _runtime.THREADS
        found = states[op.name] = cuda.to_device(_initial_states(n, _seed(op)),
                                                 stream=ctx.state.stream)
    return found


def _launch(ctx, kernel, states, n: int):
    # Never more threads than states: thread t owns state t.
    blocks = max(1, min(math.ceil(n / _runtime.THREADS), states.size // _runtime.THREADS))
    return kernel[blocks, _runtime.THREADS, ctx.state.stream]


# ---------------------------------------------------------------------------------------------
# Device kernels


def _drawing(draw: Callable) -> Callable:
    """The kernel filling ``out`` with ``draw(states, t)``: thread t draws the elements t,
    t + T, ... from its own state t."""
    @_runtime.kernel
    def kernel(states, out):  # pragma: no cover - device code
        t = cuda.grid(1)
        for i in range(t, out.size, cuda.gridsize(1)):
            out[i] = draw(states, t)
    return kernel


@cuda.jit(device=True)
def _uniform_half(states, t):  # pragma: no cover - device code
    # 10 random mantissa bits, k / 1024, as the CPU kernel: rounding a float32 in [0, 1) to
    # float16 could give 1.0.
    k = np.int32(xoroshiro128p_uniform_float32(states, t) * np.float32(1024.0))
    return np.float32(k) * np.float32(1.0 / 1024.0)


def _truncated(normal: Callable, bound) -> Callable:
    """A device function drawing ``normal`` until |v| <= ``bound`` (a constant of the draw's
    precision, so float32 draws compare in float32)."""
    @cuda.jit(device=True)
    def draw(states, t):  # pragma: no cover - device code
        v = normal(states, t)
        while abs(v) > bound:  # redrawn: P(|v| > 2) is 4.6%, so rarely more than once
            v = normal(states, t)
        return v
    return draw


_uniform16 = _drawing(_uniform_half)
_uniform32 = _drawing(xoroshiro128p_uniform_float32)
_uniform64 = _drawing(xoroshiro128p_uniform_float64)
_normal32 = _drawing(xoroshiro128p_normal_float32)
_normal64 = _drawing(xoroshiro128p_normal_float64)
_truncated32 = _drawing(_truncated(xoroshiro128p_normal_float32, np.float32(_TRUNCATE)))
_truncated64 = _drawing(_truncated(xoroshiro128p_normal_float64, _TRUNCATE))


@_runtime.kernel
def _uniform_int(states, lo, span, out):  # pragma: no cover - device code
    # 64 random bits modulo the span: the bias is at most span / 2**64, far below what a
    # test or a model can see (int32 spans are < 2**32).
    t = cuda.grid(1)
    for i in range(t, out.size, cuda.gridsize(1)):
        out[i] = lo + np.int64(xoroshiro128p_next(states, t) % span)


# float16 normals are drawn in float32 and rounded on the store.
_UNIFORM = {np.dtype(np.float16): _uniform16, np.dtype(np.float32): _uniform32,
            np.dtype(np.float64): _uniform64}
_NORMAL = {np.dtype(np.float16): _normal32, np.dtype(np.float32): _normal32,
           np.dtype(np.float64): _normal64}
_TRUNCATED = {np.dtype(np.float16): _truncated32, np.dtype(np.float32): _truncated32,
              np.dtype(np.float64): _truncated64}


def _drawer(op, ctx, kernels: Dict[np.dtype, Callable]) -> Callable:
    dtype = np.dtype(op.get_attr("dtype").as_numpy_dtype)
    kernel = kernels.get(dtype)
    if kernel is None:
        raise TypeError(f"{op.type} has no GPU kernel for dtype {dtype.name}")
    states = generator_states(op, ctx)
    static = static_input(op, 0)
    fixed = None if static is None else _dims(np.reshape(static, -1))

    def run(shape):
        dims = fixed if shape is static else _dims(np.reshape(shape, -1))
        out = _runtime.empty(ctx, dims, dtype)
        n = int(out.size)
        if n:
            _launch(ctx, kernel, states, n)(states, out.reshape(n))
        return out
    return host_memory(run, inputs=(0,))


@KERNELS.register("RandomUniform")
def random_uniform(op, ctx):
    return _drawer(op, ctx, _UNIFORM)


@KERNELS.register("RandomStandardNormal")
def random_standard_normal(op, ctx):
    return _drawer(op, ctx, _NORMAL)


@KERNELS.register("TruncatedNormal")
def truncated_normal(op, ctx):
    return _drawer(op, ctx, _TRUNCATED)


@KERNELS.register("RandomUniformInt")
def random_uniform_int(op, ctx):
    dtype = np.dtype(op.get_attr("Tout").as_numpy_dtype)
    states = generator_states(op, ctx)
    s_shape, s_lo, s_hi = (static_input(op, i) for i in range(3))
    fixed = None
    if s_shape is not None and s_lo is not None and s_hi is not None:
        fixed = (_dims(np.reshape(s_shape, -1)), as_int(s_lo), as_int(s_hi))

    def bounds(shape, lo, hi) -> Tuple[tuple, int, int]:
        if fixed is not None and shape is s_shape and lo is s_lo and hi is s_hi:
            return fixed
        dims, lo, hi = _dims(np.reshape(shape, -1)), as_int(lo), as_int(hi)
        if lo >= hi:
            raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
        return dims, lo, hi

    def run(shape, lo, hi):
        dims, lo, hi = bounds(shape, lo, hi)
        out = _runtime.empty(ctx, dims, dtype)
        n = int(out.size)
        if n:
            _launch(ctx, _uniform_int, states, n)(states, np.int64(lo), np.uint64(hi - lo),
                                                  out.reshape(n))
        return out
    # The bounds are scalars the host reads (minval < maxval is checked there).
    return host_memory(run, inputs=(0, 1, 2))

"""CPU kernels for the random ops.

Each (session, op) pair owns one numpy Generator (Philox, as TensorFlow), seeded from the op's
(seed, seed2) attrs; (0, 0) means "no seed": fresh OS entropy. The generators live beside the
session's device resources, so every execution plan of a session that contains the op draws
from the same stream (runs continue the sequence) and a new session starts it again.
"""
from __future__ import annotations

import weakref
from typing import Callable, Dict

import numpy as np

from . import KERNELS
from .array_kernels import as_int, dims_text, static_input

# ResourceManager (one per device per session) -> {op name: Generator}
_STREAMS: "weakref.WeakKeyDictionary[object, Dict[str, np.random.Generator]]" = \
    weakref.WeakKeyDictionary()


def generator(op, ctx) -> np.random.Generator:
    """The generator of ``op`` in the session that ``ctx`` (a device) belongs to."""
    streams = _STREAMS.get(ctx.resources)
    if streams is None:
        streams = _STREAMS[ctx.resources] = {}
    gen = streams.get(op.name)
    if gen is None:
        seed, seed2 = op.get_attr("seed"), op.get_attr("seed2")
        if seed == 0 and seed2 == 0:
            bits = np.random.Philox()
        else:
            bits = np.random.Philox(np.random.SeedSequence([int(seed), int(seed2)]))
        gen = streams[op.name] = np.random.Generator(bits)
    return gen


def _dims(shape_arr) -> tuple:
    dims = tuple(shape_arr.tolist())
    for d in dims:
        if d < 0:
            raise ValueError(f"Dimension {d} must be >= 0 (shape {dims_text(dims)})")
    return dims


def _with_shape(op, draw: Callable[[tuple], np.ndarray]):
    """A run(shape) that calls draw(dims); the dims are read once when constant."""
    static = static_input(op, 0)
    fixed = None if static is None else _dims(static)
    return lambda shape: draw(fixed if shape is static else _dims(shape))


@KERNELS.register("RandomUniform")
def random_uniform(op, ctx):
    gen = generator(op, ctx)
    dtype = np.dtype(op.get_attr("dtype").as_numpy_dtype)
    if dtype == np.float16:
        # 10 random mantissa bits: k / 1024, never rounded up to 1.0.
        scale = np.float16(1.0 / 1024)
        return _with_shape(op, lambda dims: gen.integers(0, 1024, dims, dtype=np.int16)
                           .astype(np.float16) * scale)
    return _with_shape(op, lambda dims: gen.random(dims, dtype=dtype))


@KERNELS.register("RandomUniformInt")
def random_uniform_int(op, ctx):
    gen = generator(op, ctx)
    dtype = np.dtype(op.get_attr("Tout").as_numpy_dtype)
    s_shape, s_lo, s_hi = (static_input(op, i) for i in range(3))
    fixed = None
    if s_shape is not None and s_lo is not None and s_hi is not None:
        fixed = (_dims(s_shape), as_int(s_lo), as_int(s_hi))   # minval < maxval: shape rule

    def run(shape, lo, hi):
        if fixed is not None and shape is s_shape and lo is s_lo and hi is s_hi:
            dims, lo, hi = fixed
        else:
            dims, lo, hi = _dims(shape), as_int(lo), as_int(hi)
            if lo >= hi:
                raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
        return gen.integers(lo, hi, dims, dtype=dtype)
    return run


def _normal_draw(gen: np.random.Generator, dtype: np.dtype):
    if dtype == np.float16:
        return lambda n: gen.standard_normal(n, dtype=np.float32).astype(np.float16)
    return lambda n: gen.standard_normal(n, dtype=dtype)


@KERNELS.register("RandomStandardNormal")
def random_standard_normal(op, ctx):
    draw = _normal_draw(generator(op, ctx), np.dtype(op.get_attr("dtype").as_numpy_dtype))
    return _with_shape(op, draw)


@KERNELS.register("TruncatedNormal")
def truncated_normal(op, ctx):
    draw = _normal_draw(generator(op, ctx), np.dtype(op.get_attr("dtype").as_numpy_dtype))

    def truncated(dims):
        out = draw(dims)
        flat = out.reshape(-1)
        redo = np.flatnonzero(np.abs(flat) > 2)
        while redo.size:
            fresh = draw(redo.size)
            flat[redo] = fresh
            redo = redo[np.abs(fresh) > 2]
        return out
    return _with_shape(op, truncated)


@KERNELS.register("RandomShuffle")
def random_shuffle(op, ctx):
    gen = generator(op, ctx)
    return lambda x: gen.permutation(x) if np.ndim(x) else np.array(x)


@KERNELS.register("Multinomial")
def multinomial(op, ctx):
    gen = generator(op, ctx)
    out_dtype = np.dtype(op.get_attr("output_dtype").as_numpy_dtype)
    def run(logits, num_samples):
        n = as_int(num_samples)
        if np.ndim(logits) != 2:
            raise ValueError(f"logits should be a matrix, got shape {dims_text(np.shape(logits))}")
        if n < 0:
            raise ValueError(f"num_samples should be nonnegative, got {n}")
        batch, classes = logits.shape
        if classes == 0 and batch and n:
            raise ValueError("num_classes should be positive, got 0")
        if not batch or not n:
            return np.zeros((batch, n), dtype=out_dtype)
        lg = logits.astype(np.float64)
        p = np.exp(lg - np.max(lg, axis=1, keepdims=True))
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]
        # One sorted search for all rows: row b's cdf is shifted into [b, b + 1].
        rows = np.arange(batch, dtype=np.float64)[:, None]
        keys = (cdf + rows).reshape(-1)
        queries = (gen.random((batch, n)) + rows).reshape(-1)
        picks = np.searchsorted(keys, queries, side="right").reshape(batch, n)
        picks -= (np.arange(batch) * classes)[:, None]
        return np.minimum(picks, classes - 1).astype(out_dtype)
    return run

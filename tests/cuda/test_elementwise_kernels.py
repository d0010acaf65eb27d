"""Elementwise GPU kernels against the CPU kernels: unary and binary math with broadcasting,
comparisons, logic, Cast, Select, AddN, SumToShape (through gradients), fills, edge cases."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.ops.array_index_ops import _select_v2 as where_v2

from gpu_compare import compare

RNG = np.random.RandomState(0)


def signed(shape, dtype=np.float32):
    return (RNG.uniform(0.1, 2.0, shape) * RNG.choice([-1, 1], shape)).astype(dtype)


def positive(shape, dtype=np.float32):
    return RNG.uniform(0.1, 2.0, shape).astype(dtype)


def unit(shape, dtype=np.float32):
    return RNG.uniform(-0.9, 0.9, shape).astype(dtype)


UNARY = {
    "abs": (tf.abs, signed), "negative": (tf.negative, signed), "sign": (tf.sign, signed),
    "square": (tf.square, signed), "sqrt": (tf.sqrt, positive), "rsqrt": (tf.rsqrt, positive),
    "reciprocal": (tf.reciprocal, signed), "exp": (tf.exp, signed), "expm1": (tf.expm1, signed),
    "log": (tf.log, positive), "log1p": (tf.log1p, unit), "sin": (tf.sin, signed),
    "cos": (tf.cos, signed), "tan": (tf.tan, unit), "asin": (tf.asin, unit),
    "acos": (tf.acos, unit), "atan": (tf.atan, signed), "tanh": (tf.tanh, signed),
    "sigmoid": (tf.sigmoid, signed), "floor": (tf.floor, signed), "ceil": (tf.ceil, signed),
    "round": (tf.round, signed),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float_ops_match_the_cpu(name, dtype):
    fn, values = UNARY[name]
    x = values((3, 5), dtype)
    s = values((), dtype)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    compare(lambda: [fn(tf.constant(x)), fn(tf.constant(s))], rtol=rtol, atol=rtol)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's numpy log(0) ...
def test_unary_special_values():
    specials = np.array([0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 3.49, np.inf, -np.inf, np.nan],
                        np.float32)

    def build():
        x = tf.constant(specials)
        return [tf.is_finite(x), tf.is_inf(x), tf.is_nan(x), tf.sign(x), tf.round(x),
                tf.floor(x), tf.ceil(x), tf.abs(x), tf.sigmoid(x * 100.0),
                tf.logical_not(tf.is_nan(x)), tf.log(tf.abs(x)), tf.sqrt(x), tf.rsqrt(x),
                tf.log1p(-tf.abs(x)), tf.exp(x), tf.tanh(x), tf.pow(x, 0.5), tf.reciprocal(x)]
    compare(build)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_unary_integer_ops(dtype):
    x = np.array([[-3, 0, 2], [5, -7, 1]], dtype)

    def build():
        t = tf.constant(x)
        return [tf.negative(t), tf.abs(t), tf.square(t), tf.sign(t)]
    compare(build)


def test_float16_unary_and_binary():
    x = signed((2, 3), np.float16)
    y = positive((3,), np.float16)
    compare(lambda: [tf.exp(tf.constant(x)), tf.sigmoid(tf.constant(x)),
                     tf.constant(x) * tf.constant(y), tf.maximum(tf.constant(x), tf.constant(y))],
            rtol=1e-3, atol=1e-3)


BINARY = {
    "add": tf.add, "subtract": tf.subtract, "multiply": tf.multiply, "div": tf.div,
    "realdiv": tf.realdiv, "floordiv": tf.floordiv, "floormod": tf.floormod,
    "maximum": tf.maximum, "minimum": tf.minimum, "pow": tf.pow,
    "squared_difference": tf.squared_difference, "equal": tf.equal, "not_equal": tf.not_equal,
    "less": tf.less, "less_equal": tf.less_equal, "greater": tf.greater,
    "greater_equal": tf.greater_equal,
}

# (x shape, y shape): same, both broadcast, trailing vector, scalars, 0-d, leading 1s, size 0.
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3)), ((2, 3), ()),
          ((), ()), ((1, 1), (2, 3)), ((2, 1, 4), (3, 1)), ((0, 3), (3,)), ((5,), (1,)),
          ((2, 3, 4, 5), (3, 1, 5))]


def operands(name, xs, ys, dtype):
    if name == "pow":
        return positive(xs, dtype), RNG.uniform(-2, 2, ys).astype(dtype)
    x, y = signed(xs, dtype), signed(ys, dtype)
    if name in ("equal", "not_equal", "less_equal", "greater_equal", "maximum", "minimum"):
        x = np.round(x).astype(dtype)  # equal elements occur
        y = np.round(y).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float_ops_broadcast_like_the_cpu(name, dtype):
    fn = BINARY[name]
    cases = [operands(name, xs, ys, dtype) for xs, ys in SHAPES]
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    compare(lambda: [fn(tf.constant(x), tf.constant(y)) for x, y in cases], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_binary_integer_ops(dtype):
    x = np.array([[7, -7, 3, 0], [-9, 8, -1, 5]], dtype)
    y = np.array([2, -3, -4, 5], dtype)

    def build():
        a, b = tf.constant(x), tf.constant(y)
        return [a + b, a - b, a * b, tf.div(a, b), tf.floordiv(a, b), tf.floormod(a, b),
                tf.maximum(a, b), tf.minimum(a, b), tf.squared_difference(a, b),
                tf.pow(a, tf.constant(np.array([0, 1, 2, 3], dtype))), tf.less(a, b),
                tf.equal(a, b), tf.greater_equal(a, 3 * tf.ones_like(a))]
    compare(build)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's numpy x / 0
def test_floor_div_and_mod_edge_values():
    x = np.array([1.0, -1.0, 7.5, -7.5, 0.0, -0.0, 5.0, 1e-3], np.float64)
    y = np.array([0.1, 0.1, -2.0, 2.0, 3.0, -3.0, 0.0, -1e3], np.float64)

    def build():
        a, b = tf.constant(x), tf.constant(y)
        return [tf.floordiv(a, b), tf.floormod(a, b)]
    gpu, cpu = compare(build)
    assert np.signbit(gpu[1]).tolist() == np.signbit(cpu[1]).tolist()


def test_comparisons_and_logic_on_int32_and_bool():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    b = np.array([True, False, True])

    def build():
        t = tf.constant(a)
        m = tf.constant(b)
        return [tf.less(t, 3), tf.equal(t, tf.constant([[1], [5]])), tf.logical_and(m, t > 2),
                tf.logical_or(m, tf.constant(False)), tf.logical_not(m), tf.equal(m, t < 4),
                tf.not_equal(m, tf.constant(True))]
    compare(build)


def test_incompatible_shapes_raise():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32)
        y = tf.placeholder(tf.float32)
        z = x + y
        w = tf.where(x > 0, x, y)
        c = tf.placeholder(tf.bool)
        v = tf.where(c, tf.ones((3, 2)), tf.zeros((3, 2)))
        with tf.Session() as sess:
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="ncompatible"):
                sess.run(z, {x: np.ones((2, 3)), y: np.ones((4,))})
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
                sess.run(w, {x: np.ones((2, 3)), y: np.ones((3, 2))})
            with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="batches"):
                sess.run(v, {c: np.ones((2,), bool)})
            assert sess.run(z, {x: np.ones((2, 3)), y: np.ones((3,))}).shape == (2, 3)
            assert sess.run(v, {c: np.array([True, False, True])}).tolist() == \
                [[1, 1], [0, 0], [1, 1]]


CAST_PAIRS = [(np.float32, np.int32), (np.float32, np.int64), (np.int32, np.float32),
              (np.int64, np.float64), (np.float32, np.bool_), (np.bool_, np.float32),
              (np.bool_, np.int32), (np.float64, np.float32), (np.float32, np.float16),
              (np.float16, np.float64), (np.int64, np.int32), (np.int32, np.bool_),
              (np.float32, np.float32)]


def test_cast_between_numeric_and_bool():
    values = np.array([[-2.7, -0.5, 0.0, 0.4], [1.0, 2.5, 3.9, 100.2]])

    def build():
        out = []
        for src, dst in CAST_PAIRS:
            v = values > 0 if src is np.bool_ else values.astype(src)
            out.append(tf.cast(tf.constant(v), dst))
        return out
    compare(build, rtol=1e-3)


def test_clip_by_value():
    x = signed((4, 5))
    compare(lambda: [tf.clip_by_value(tf.constant(x), -0.5, 0.75),
                     tf.clip_by_value(tf.constant(x), tf.constant(-1.0), tf.constant(x[0] * 0.5))])


def test_select_and_select_v2():
    t, e = signed((3, 4)), signed((3, 4))
    c = RNG.rand(3, 4) > 0.5
    row = np.array([True, False, True])

    def build():
        ct, tt, et = tf.constant(c), tf.constant(t), tf.constant(e)
        return [tf.where(ct, tt, et), tf.where(tf.constant(row), tt, et),
                tf.where(tf.constant(True), tt, et),
                where_v2(tf.constant(c[0]), tt, et),              # cond broadcast over rows
                where_v2(tf.constant(row[:, None]), tt, tf.constant(0.0)),
                tf.where(tt > et, tf.cast(tt > 0, tf.int32), tf.zeros_like(tt, tf.int32)),
                tf.where(tf.constant(np.zeros((0, 2), bool)), tf.zeros((0, 2)), tf.ones((0, 2)))]
    compare(build)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_add_n(n):
    xs = [signed((2, 3)) for _ in range(n)]
    compare(lambda: [tf.add_n([tf.constant(x) for x in xs]),
                     tf.add_n([tf.constant(x[0, 0]) for x in xs])])


def test_fills():
    def build():
        x = tf.constant(signed((2, 3)))
        return [tf.zeros_like(x), tf.ones_like(x), tf.fill([2, 2], 7.5), tf.fill([0, 3], 1.0),
                tf.fill([], tf.constant(2.0)), tf.ones_like(x > 0), tf.zeros_like(x > 0),
                tf.ones([2, 2], tf.int64), tf.fill([3], tf.constant(-4, tf.int64)),
                tf.zeros([2], tf.int32), tf.ones_like(tf.constant(np.ones(2, np.float16)))]
    compare(build)


def test_size_zero_and_scalar_tensors():
    def build():
        e = tf.constant(np.zeros((0, 4), np.float32))
        s = tf.constant(np.float32(3.0))
        return [tf.exp(e), e + 1.0, e * tf.constant(np.ones(4, np.float32)), tf.sqrt(s), s * s,
                tf.cast(e, tf.int64), tf.equal(e, 0.0), tf.add_n([e, e, e])]
    compare(build)


def gradients_of(f, *shapes, dtype=np.float64):
    values = [signed(s, dtype) for s in shapes]

    def build():
        xs = [tf.constant(v) for v in values]
        y = f(*xs)
        return [y] + tf.gradients(y, xs)
    return build


@pytest.mark.parametrize("name,f,shapes", [
    ("mse", lambda x, y: tf.reduce_mean(tf.square(x - y)), [(3, 4), (4,)]),
    ("sigmoid", lambda x: tf.reduce_sum(tf.sigmoid(x) * x), [(2, 3)]),
    ("tanh", lambda x, b: tf.reduce_sum(tf.tanh(x + b)), [(2, 3), (2, 1)]),
    ("sqrt_rsqrt_reciprocal", lambda x: tf.reduce_sum(tf.sqrt(tf.abs(x)) + tf.rsqrt(tf.abs(x)) +
                                                      tf.reciprocal(x)), [(5,)]),
    ("broadcast_mul_div", lambda x, y, z: tf.reduce_sum(x * y / (z * z + 1.0)),
     [(2, 1, 3), (4, 1), ()]),
    ("max_clip", lambda x, y: tf.reduce_sum(tf.maximum(x, y) + tf.clip_by_value(x, -0.5, 0.5)),
     [(3, 3), (3,)]),
])
def test_gradients_match_the_cpu(name, f, shapes):
    compare(gradients_of(f, *shapes), rtol=1e-10, atol=1e-12)


# Cast to bool compares with a zero of the source's type: Numba compares float32 (and uint64)
# with a Python 0 in float64.  The simulator cannot see Numba's typing, so a process without it
# lowers the kernels (no GPU needed) and looks for double arithmetic in their LLVM IR (see
# test_nn_kernels.test_float32_kernels_do_no_double_arithmetic).
_LOWER_CASTS = r'''
import numpy as np
from numba import from_dtype, types
from numba.cuda import dispatcher
from numba.cuda.compiler import compile_cuda
from tfjupyter.kernels.cuda.elementwise_kernels import _build_cast

class Hopper:
    compute_capability = (9, 0)
dispatcher.get_current_device = Hopper  # nothing is launched: no driver needed
for src in (np.float32, np.float16, np.uint64):
    kernel = _build_cast(True, np.dtype(src))
    argtypes = (from_dtype(np.dtype(src))[::1], types.boolean[::1])
    ir = compile_cuda(kernel.py_func, types.void, argtypes, cc=(9, 0)).library.get_llvm_str()
    print(np.dtype(src).name, "double" in ir.split("define", 1)[1])
'''


def test_cast_to_bool_compares_in_the_source_type():
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _LOWER_CASTS], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode and ("ImportError" in done.stderr or "CudaSupportError" in done.stderr):
        pytest.skip("this numba-cuda cannot lower kernels without a GPU: " + done.stderr[-300:])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["float32", "False", "float16", "False", "uint64", "False"]

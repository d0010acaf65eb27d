"""GPU neural-network kernels against the CPU kernels: values, gradients, edge cases, errors."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import InvalidArgumentError

from gpu_compare import compare, placements, run_on

rng = np.random.default_rng(5)


def values(shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def with_grads(y, xs, dtype=np.float64):
    """y and dy/dx for each x under a non-uniform upstream gradient (the same in the GPU and
    the CPU graph: its own seeded generator)."""
    w = tf.constant(np.random.default_rng(1).standard_normal(y.shape.as_list()).astype(dtype))
    return [y] + tf.gradients(tf.reduce_sum(y * w), xs)


def _tol(dtype):
    return {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-10}[dtype]


# -- Convolution ---------------------------------------------------------------------------------
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_and_gradients(padding, stride):
    x0, w0 = values((1, 5, 5, 2)), values((3, 3, 2, 3))

    def build():
        x, w = tf.constant(x0), tf.constant(w0)
        y = tf.nn.conv2d(x, w, [1, stride, stride, 1], padding)
        return with_grads(y, [x, w])
    compare(build, rtol=1e-10, atol=1e-10)


def test_conv2d_batch_rectangular_float32():
    # Two images, a 2x3 filter, uneven strides: the patch matrix has rows of 2 images.
    x0, w0 = values((2, 6, 7, 3), np.float32), values((2, 3, 3, 4), np.float32)

    def build():
        x, w = tf.constant(x0), tf.constant(w0)
        y = tf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME")
        return with_grads(y, [x, w], np.float32)
    compare(build, rtol=1e-4, atol=1e-4)


def test_conv2d_dilated():
    x0, w0 = values((1, 7, 6, 2)), values((2, 2, 2, 2))

    def build():
        x, w = tf.constant(x0), tf.constant(w0)
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
        return with_grads(y, [x, w])
    compare(build, rtol=1e-10, atol=1e-10)


def test_conv2d_pointwise_is_one_gemm():
    x0, w0 = values((2, 3, 4, 5)), values((1, 1, 5, 3))

    def build():
        x, w = tf.constant(x0), tf.constant(w0)
        return with_grads(tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), [x, w])
    compare(build, rtol=1e-10, atol=1e-10)


def test_conv2d_float16():
    x0, w0 = values((1, 4, 4, 2), np.float16), values((3, 3, 2, 2), np.float16)
    compare(lambda: tf.nn.conv2d(tf.constant(x0), tf.constant(w0), [1, 1, 1, 1], "SAME"),
            rtol=2e-2, atol=2e-2)


def test_conv2d_backprop_ops_with_fed_sizes():
    """The size inputs are host memory, fed at run time (not Consts)."""
    x0, w0, dy0 = values((1, 5, 5, 2)), values((3, 3, 2, 3)), values((1, 3, 3, 3))

    def build():
        sizes_in = tf.placeholder(tf.int32, [4])
        sizes_w = tf.placeholder(tf.int32, [4])
        dx = tf.nn.conv2d_backprop_input(sizes_in, tf.constant(w0), tf.constant(dy0),
                                         [1, 2, 2, 1], "SAME")
        dw = tf.nn.conv2d_backprop_filter(tf.constant(x0), sizes_w, tf.constant(dy0),
                                          [1, 2, 2, 1], "SAME")
        return [dx, dw], {sizes_in: [1, 5, 5, 2], sizes_w: [3, 3, 2, 3]}
    compare(build, rtol=1e-10, atol=1e-10)


def test_conv2d_backprop_ops_with_const_sizes():
    """Const size inputs are read once, when the kernel is made."""
    x0, w0, dy0 = values((1, 5, 5, 2)), values((3, 3, 2, 3)), values((1, 3, 3, 3))
    compare(lambda: [
        tf.nn.conv2d_backprop_input(tf.constant([1, 5, 5, 2]), tf.constant(w0),
                                    tf.constant(dy0), [1, 2, 2, 1], "SAME"),
        tf.nn.conv2d_backprop_filter(tf.constant(x0), tf.constant([3, 3, 2, 3]),
                                     tf.constant(dy0), [1, 2, 2, 1], "SAME")],
        rtol=1e-10, atol=1e-10)


def test_conv2d_depth_mismatch_raises():
    with tf.Graph().as_default():
        with tf.device("/gpu:0"):
            x = tf.placeholder(tf.float32, None)
            y = tf.nn.conv2d(x, tf.constant(values((3, 3, 2, 3), np.float32)), [1, 1, 1, 1],
                             "SAME")
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError, match="depth"):
                sess.run(y, {x: np.zeros((1, 5, 5, 4), np.float32)})


def test_conv2d_empty_batch():
    x0 = np.zeros((0, 4, 4, 2))
    compare(lambda: tf.nn.conv2d(tf.constant(x0), tf.constant(values((3, 3, 2, 3))),
                                 [1, 1, 1, 1], "SAME"))


# -- Pooling ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("padding,k,s", [("SAME", 2, 2), ("VALID", 2, 2), ("SAME", 3, 1),
                                         ("VALID", 3, 2), ("SAME", 3, 2)])
def test_pools_and_gradients(pool, padding, k, s):
    x0 = values((2, 5, 6, 3))
    x0[0, 0, :2, 0] = 7.0  # a tie: the gradient goes to the first maximum

    def build():
        x = tf.constant(x0)
        fn = tf.nn.max_pool if pool == "max" else tf.nn.avg_pool
        return with_grads(fn(x, [1, k, k, 1], [1, s, s, 1], padding), [x])
    compare(build, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_pools_float32_and_float16(pool):
    fn = tf.nn.max_pool if pool == "max" else tf.nn.avg_pool
    for dtype in (np.float32, np.float16):
        x0 = values((1, 4, 5, 2), dtype)
        compare(lambda: fn(tf.constant(x0), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
                rtol=_tol(dtype), atol=_tol(dtype))


# -- Bias -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 7), (4, 3), (2, 3, 5, 4)])
def test_bias_add_and_gradients(shape):
    x0, b0 = values(shape), values(shape[-1:])

    def build():
        x, b = tf.constant(x0), tf.constant(b0)
        return with_grads(tf.nn.bias_add(x, b), [x, b])
    compare(build, rtol=1e-10, atol=1e-10)


def test_bias_add_grad_many_rows_float32():
    g0 = values((300, 11), np.float32)

    def build():
        b = tf.constant(values((11,), np.float32))
        y = tf.nn.bias_add(tf.constant(np.zeros((300, 11), np.float32)), b)
        return tf.gradients(y, [b], grad_ys=[tf.constant(g0)])
    compare(build, rtol=1e-5, atol=1e-5)


# -- Activations ---------------------------------------------------------------------------------
ACTIVATIONS = {"relu": tf.nn.relu, "relu6": tf.nn.relu6, "elu": tf.nn.elu,
               "softplus": tf.nn.softplus}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations_and_gradients(name, dtype):
    x0 = (values((4, 9), dtype) * 4).astype(dtype)
    x0[0, :4] = [0.0, 6.0, -50.0, 50.0]  # kinks and saturation

    def build():
        x = tf.constant(x0)
        return with_grads(ACTIVATIONS[name](x), [x], dtype)
    compare(build, rtol=_tol(dtype), atol=_tol(dtype))


def test_activations_float16_int_and_size_0():
    half0 = values((3, 4), np.float16)

    def build():
        half = tf.constant(half0)
        ints = tf.constant(np.arange(-3, 9, dtype=np.int32))
        empty = tf.constant(np.zeros((0, 3), np.float32))
        return [tf.nn.elu(half), tf.nn.softplus(half), tf.nn.relu(half), tf.nn.relu(ints),
                tf.nn.relu6(ints), tf.nn.relu(empty), tf.nn.softplus(empty)]
    compare(build, rtol=2e-3, atol=2e-3)


# -- Softmax and losses ---------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [tf.nn.softmax, tf.nn.log_softmax])
def test_softmax_and_gradients(fn):
    x0 = values((5, 37))
    x0[1] += 800.0  # stable for huge logits

    def build():
        x = tf.constant(x0)
        return with_grads(fn(x), [x])
    compare(build, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_softmax_3d_and_low_precision(dtype):
    x0 = values((2, 3, 7), dtype)
    compare(lambda: [tf.nn.softmax(tf.constant(x0)), tf.nn.log_softmax(tf.constant(x0))],
            rtol=_tol(dtype), atol=_tol(dtype))


def test_softmax_cross_entropy_and_gradients():
    logits0 = values((6, 10))
    labels0 = rng.dirichlet(np.ones(10), 6)

    def build():
        logits, labels = tf.constant(logits0), tf.constant(labels0)
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return with_grads(loss, [logits])
    compare(build, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy_and_gradients(label_dtype):
    logits0 = values((8, 5), np.float32)
    labels0 = rng.integers(0, 5, 8).astype(label_dtype)

    def build():
        logits = tf.constant(logits0)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels0),
                                                              logits=logits)
        return with_grads(loss, [logits], np.float32)
    compare(build, rtol=1e-5, atol=1e-5)


def test_sparse_softmax_cross_entropy_bad_label_is_nan_on_gpu():
    logits0 = values((3, 4), np.float32)

    def build():
        logits = tf.constant(logits0)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant(np.array([1, 7, -1], np.int32)), logits=logits)
        return [loss] + tf.gradients(loss, [logits])
    (loss, grad), _ = run_on("/gpu:0", build)
    assert np.isfinite(loss[0]) and np.isnan(loss[1:]).all()
    assert np.isfinite(grad[0]).all() and np.isnan(grad[1:]).all()


def test_l2_loss_and_gradient():
    x0 = values((3, 4, 5))

    def build():
        x = tf.constant(x0)
        loss = tf.nn.l2_loss(x)
        return [loss, tf.nn.l2_loss(tf.constant(2.5)),
                tf.nn.l2_loss(tf.constant(np.zeros((0, 2))))] + tf.gradients(loss * 3.0, [x])
    gpu, _ = compare(build, rtol=1e-12, atol=1e-12)
    assert np.shape(gpu[0]) == ()


def test_l2_loss_float32_many_elements():
    x0 = values((1000,), np.float32)
    compare(lambda: tf.nn.l2_loss(tf.constant(x0)), rtol=1e-5)


# -- LRN -----------------------------------------------------------------------------------------
def test_lrn_and_gradient():
    x0 = values((2, 3, 2, 7))

    def build():
        x = tf.constant(x0)
        y = tf.nn.local_response_normalization(x, depth_radius=2, bias=1.5, alpha=0.3,
                                               beta=0.75)
        return with_grads(y, [x])
    compare(build, rtol=1e-10, atol=1e-10)


# -- A small network end to end ------------------------------------------------------------------
def test_lenet_like_training_gradients_match():
    x0 = values((2, 8, 8, 1), np.float32)
    labels0 = np.array([3, 1], np.int32)
    w1_0, w2_0 = values((3, 3, 1, 4), np.float32), values((16, 5), np.float32)

    def build():
        x = tf.constant(x0)
        w1, w2 = tf.constant(w1_0), tf.constant(w2_0)
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME"),
                                      tf.constant(np.zeros(4, np.float32))))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 4, 4, 1], "VALID")
        logits = tf.matmul(tf.reshape(h, [2, 16]), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant(labels0), logits=logits))
        return [loss] + tf.gradients(loss, [w1, w2])
    gpu, _ = compare(build, rtol=1e-4, atol=1e-5)
    assert np.isfinite(gpu[0])


def test_nn_ops_are_placed_on_the_gpu():
    def build():
        x = tf.constant(values((1, 4, 4, 2), np.float32))
        return tf.nn.softmax(tf.reshape(tf.nn.max_pool(tf.nn.relu(x), [1, 2, 2, 1],
                                                       [1, 2, 2, 1], "VALID"), [1, 8]))
    _, sess = run_on("/gpu:0", build)
    where = placements(sess)
    assert all("GPU" in d for name, d in where.items() if "Softmax" in name or "Pool" in name)


# -- float32 kernels do float32 arithmetic --------------------------------------------------------
# Numba types float32 combined with a Python int or float constant as float64: double arithmetic
# on the GPU (a fraction of the float32 rate on most GPUs).  The simulator runs kernels as Python
# and cannot see it, so a process without the simulator types and lowers the kernels (no GPU
# needed) and counts the double arithmetic and float16-shim calls in their LLVM IR.
_LOWERING = r'''
import json, re
import numpy as np
from numba import types
from numba.cuda import dispatcher
from numba.cuda.compiler import compile_cuda
from tfjupyter.kernels.cuda import nn_kernels as nn
from tfjupyter.kernels.cuda import elementwise_kernels as ew

class Hopper:  # device functions compile for the current device's compute capability
    compute_capability = (9, 0)
dispatcher.get_current_device = Hopper  # nothing is launched: no driver needed

F32, F16, I64 = types.float32[::1], types.float16[::1], types.int64
POOL = (I64,) * 12
CASES = {
    "col2im": (nn._col2im, (F32,) + (I64,) * 15 + (F32,)),
    "max_pool_grad": (nn._max_pool_grad, (types.int64[::1], F32) + POOL + (F32,)),
    "avg_pool": (nn._avg_pool, (F32,) + POOL + (F32,)),
    "avg_pool_grad": (nn._avg_pool_grad, (F32,) + POOL + (F32,)),
    "softmax": (nn._row_kernels(np.float32).softmax, (F32, I64, I64, types.boolean, F32)),
    "softmax_xent": (nn._row_kernels(np.float32).softmax_xent, (F32, F32, I64, I64, F32, F32)),
    "sparse_softmax_xent": (nn._row_kernels(np.float32).sparse_softmax_xent,
                            (F32, types.int32[::1], I64, I64, F32, F32)),
}

def activation(op_type, dtype):
    # The activations are elementwise_kernels' unary and gradient ops.
    d = np.dtype(dtype)
    grad = op_type.endswith("Grad")
    f = ew._device((ew._GRADS if grad else ew._UNARY)[op_type][0](ew._compute_type(d)))
    return (ew._build_binary_same if grad else ew._build_unary)(f, ew._loader(d))

for op_type in ("Relu", "Relu6", "Elu", "Softplus"):
    for dtype, arr in ((np.float32, F32), (np.float16, F16)):
        suffix = "" if dtype == np.float32 else " float16"
        CASES[op_type + suffix] = (activation(op_type, dtype), (arr, arr))
        CASES[op_type + "Grad" + suffix] = (activation(op_type + "Grad", dtype), (arr, arr, arr))

def ir_of(library, seen):
    if id(library) in seen:
        return ""
    seen.add(id(library))
    return library.get_llvm_str() + "".join(
        ir_of(lib, seen) for lib in getattr(library, "_linking_libraries", ()))

DOUBLE = re.compile(r"= (?:fadd|fsub|fmul|fdiv|frem|fcmp \w+) double|to double|call double @")
found = {}
for name, (kernel, argtypes) in CASES.items():
    ir = ir_of(compile_cuda(kernel.py_func, types.void, argtypes, cc=(9, 0)).library, set())
    found[name] = [m for m in DOUBLE.findall(ir) + re.findall(r"@\W?_Z\w*half\w*", ir)]
print(json.dumps(found))
'''


def test_float32_kernels_do_no_double_arithmetic():
    import json
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _LOWERING], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode and ("ImportError" in done.stderr or "CudaSupportError" in done.stderr):
        pytest.skip("this numba-cuda cannot lower kernels without a GPU: " + done.stderr[-300:])
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {name: ops for name, ops in found.items() if ops} == {}

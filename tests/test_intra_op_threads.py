"""ConfigProto(intra_op_parallelism_threads=N) bounds every pool an op can run on: numpy's BLAS,
Numba's parallel loops and the pool big CPU kernels split their work over.

Each case runs in its own process: the limits are process-wide."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, sys, threading
    import numpy as np
    import tfjupyter as tf
    from threadpoolctl import threadpool_info
    import numba
    from tfjupyter.kernels.cpu import _threads

    n = int(sys.argv[1])
    config = tf.ConfigProto(intra_op_parallelism_threads=n) if n else None
    rng = np.random.RandomState(0)
    a, b = rng.rand(400, 800).astype(np.float32), rng.rand(800, 600).astype(np.float32)
    x, w = tf.constant(a), tf.constant(b)
    images = tf.constant(rng.rand(8, 32, 32, 16).astype(np.float32))
    kernel = tf.constant(rng.rand(3, 3, 16, 16).astype(np.float32))
    # The convolution makes the step run the BLAS on one thread, so that big kernels split.
    product = tf.matmul(x, w)
    conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], "SAME")
    with tf.Session(config=config) as sess:
        got = sess.run(product)
        sess.run(conv)
    print(json.dumps({
        "max_rel_error": float(np.abs(got - a.astype(np.float64) @ b).max() / np.abs(got).max()),
        "split_threads": sum(t.name.startswith("nn_kernels") for t in threading.enumerate()),
        "blas_threads": [lib["num_threads"] for lib in threadpool_info()
                         if lib["user_api"] == "blas"],
        "numba_threads": numba.get_num_threads(),
        "blas_control": _threads._blas_control() is not None,
        "cores": _threads._cpu_count(),
    }))
""")


def _run(n: int) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(n)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_intra_op_thread_means_no_split_and_one_blas_and_numba_thread():
    got = _run(1)
    assert got["max_rel_error"] < 1e-5
    assert got["split_threads"] == 0
    assert got["blas_threads"] and set(got["blas_threads"]) == {1}
    assert got["numba_threads"] == 1


def test_without_a_limit_big_kernels_split_over_the_cores():
    got = _run(0)
    if got["cores"] < 2 or not got["blas_control"]:
        pytest.skip("needs 2 cores and the OpenBLAS bundled with numpy")
    assert got["max_rel_error"] < 1e-5
    assert got["split_threads"] >= 1

"""GPU variable kernels and optimizer apply kernels against the CPU kernels."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.errors import FailedPreconditionError, InvalidArgumentError
from tfjupyter.train.optimizers import apply_adam, apply_momentum

from gpu_compare import assert_same, placements


def run_steps(device: str, build, steps: int):
    """Builds ``build() -> (train_op, fetches)`` under ``device``, initializes, runs
    ``train_op`` ``steps`` times and returns the fetches after each step, and the session."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(device):
            train_op, fetches = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            history = []
            for _ in range(steps):
                sess.run(train_op)
                history.append(sess.run(fetches))
            where = placements(sess)
    if device.startswith("/gpu"):
        assert all("GPU" in d for d in where.values()), \
            [n for n, d in where.items() if "GPU" not in d]
    return history, sess


def compare_steps(build, steps: int = 4, rtol: float = 1e-5, atol: float = 1e-7):
    gpu, _ = run_steps("/gpu:0", build, steps)
    cpu, _ = run_steps("/cpu:0", build, steps)
    assert_same(gpu, cpu, rtol, atol)
    return gpu


def gpu_device(sess):
    return next(d for d in sess.devices if d.device_type == "GPU")


# -- Variables ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_variable_init_assign_add_sub(dtype):
    def build():
        v = tf.Variable(np.arange(6, dtype=dtype).reshape(2, 3), name="v")
        s = tf.Variable(np.array(5, dtype), name="s")
        step = tf.group(tf.assign_add(v, tf.constant(np.full((2, 3), 2, dtype))),
                        tf.assign_sub(s, tf.constant(np.array(1, dtype))))
        return step, [tf.identity(v), tf.identity(s), v + v]
    history = compare_steps(build, steps=3)
    np.testing.assert_array_equal(history[-1][0], np.arange(6).reshape(2, 3) + 6)
    assert history[-1][1] == 2


def test_assign_writes_in_place_and_reallocates_for_a_new_shape():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        v = tf.Variable(tf.zeros([2, 2], tf.float32), name="v")
        same = tf.assign(v, tf.constant([[1.0, 2.0], [3.0, 4.0]]))
        other = tf.assign(v, tf.constant([1.0, 2.0, 3.0]), validate_shape=False)
        with tf.Session() as sess:
            sess.run(v.initializer)
            store = gpu_device(sess).resources.variables
            buffer = store["v"]
            np.testing.assert_array_equal(sess.run(same), [[1, 2], [3, 4]])
            assert store["v"] is buffer
            np.testing.assert_array_equal(sess.run(other), [1, 2, 3])
            assert store["v"] is not buffer and store["v"].shape == (3,)
            np.testing.assert_array_equal(sess.run(v), [1, 2, 3])


def test_assign_shape_mismatch_is_an_error():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        v = tf.Variable(tf.zeros([2], tf.float32), name="v", validate_shape=False)
        x = tf.placeholder(tf.float32, [None])
        grow = tf.assign(v, x, validate_shape=True)
        with tf.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(InvalidArgumentError, match=r"Assign requires shapes of both tensors "
                               r"to match. lhs shape= \[2\] rhs shape= \[3\]"):
                sess.run(grow, {x: np.zeros(3, np.float32)})


def test_uninitialized_variables():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        v = tf.Variable(tf.ones([3]), name="weights")
        w = tf.Variable(tf.ones([2]), name="bias")
        flag = tf.is_variable_initialized(v)
        report = tf.report_uninitialized_variables()
        add = tf.assign_add(w, tf.ones([2]))
        with tf.Session() as sess:
            with pytest.raises(FailedPreconditionError,
                               match="Attempting to use uninitialized value weights"):
                sess.run(v * 2.0)
            with pytest.raises(FailedPreconditionError,
                               match="Attempting to use uninitialized value bias"):
                sess.run(add)
            assert sess.run(flag) == False  # noqa: E712 (a numpy bool)
            assert sorted(sess.run(report).tolist()) == [b"bias", b"weights"]
            sess.run(v.initializer)
            assert sess.run(flag) == True  # noqa: E712
            assert sess.run(report).tolist() == [b"bias"]
            assert "GPU" in placements(sess)[v.op.name]


# -- Optimizers --------------------------------------------------------------------------------------
C = np.array([[1.0, 0.5, 2.0, 0.1], [3.0, 1.5, 0.7, 1.0], [0.2, 2.5, 1.0, 0.8]])
T = np.array([[0.3, -1.0, 2.0, 0.5], [1.5, 0.0, -0.7, 1.1], [0.9, 0.4, -2.0, -0.3]])


def quadratic():
    """A small float64 quadratic in a matrix and a scalar variable."""
    w = tf.Variable(np.zeros((3, 4)), name="w")
    b = tf.Variable(np.array(2.0), name="b")
    loss = tf.reduce_sum(tf.constant(C) * tf.square(w - tf.constant(T))) + 3.0 * tf.square(b - 1.0)
    return w, b, loss


OPTIMIZERS = {
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.3),
    "rmsprop": lambda: tf.train.RMSPropOptimizer(0.05, momentum=0.5),
    "centered_rmsprop": lambda: tf.train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.3, centered=True),
    "adam": lambda: tf.train.AdamOptimizer(0.2),
    "adadelta": lambda: tf.train.AdadeltaOptimizer(5.0, rho=0.9, epsilon=1e-3),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_match_the_cpu(name):
    def build():
        w, b, loss = quadratic()
        opt = OPTIMIZERS[name]()
        train = opt.minimize(loss)
        slots = [opt.get_slot(var, s) for var in (w, b) for s in opt.get_slot_names()]
        return train, [w, b, loss] + [tf.identity(s) for s in slots]
    history = compare_steps(build, steps=4)
    assert history[-1][2] < history[0][2]  # the loss went down


def test_adam_with_nesterov_and_float32():
    def build(use_nesterov, dtype):
        def make():
            var = tf.Variable(T.astype(dtype), name="var")
            m = tf.Variable(np.full((3, 4), 0.1, dtype), name="m")
            v = tf.Variable(np.full((3, 4), 0.2, dtype), name="v")
            scalars = [tf.constant(np.array(x, dtype)) for x in (0.9 ** 2, 0.999 ** 2, 0.1, 0.9, 0.999, 1e-8)]
            grad = tf.constant(C.astype(dtype))
            return apply_adam(var, m, v, *scalars, grad, use_nesterov=use_nesterov), [var, m, v]
        return make
    compare_steps(build(True, np.float64), steps=3)
    compare_steps(build(False, np.float32), steps=3, rtol=2e-6, atol=1e-6)


def test_momentum_float32_and_a_fed_learning_rate():
    def build():
        var = tf.Variable(T.astype(np.float32), name="var")
        accum = tf.Variable(np.zeros((3, 4), np.float32), name="accum")
        lr = tf.placeholder_with_default(np.float32(0.25), [])
        return apply_momentum(var, accum, lr, tf.constant(C.astype(np.float32)), tf.constant(np.float32(0.5)),
                              use_nesterov=True, use_locking=True), [var, accum]
    compare_steps(build, steps=3, rtol=1e-6, atol=1e-6)


def test_apply_on_an_uninitialized_slot_and_a_bad_gradient():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0"):
        var = tf.Variable(np.zeros(3), name="var")
        accum = tf.Variable(np.zeros(3), name="accum")
        grad = tf.placeholder(tf.float64, [None])
        step = apply_momentum(var, accum, tf.constant(0.1, tf.float64), grad, tf.constant(0.9, tf.float64))
        with tf.Session() as sess:
            sess.run(var.initializer)
            with pytest.raises(FailedPreconditionError, match="Attempting to use uninitialized value accum"):
                sess.run(step, {grad: np.ones(3)})
            sess.run(accum.initializer)
            with pytest.raises(InvalidArgumentError, match=r"var and grad do not have the same shape\[3\] \[2\]"):
                sess.run(step, {grad: np.ones(2)})
            np.testing.assert_allclose(sess.run(step, {grad: np.ones(3)}), [-0.1] * 3)


def test_float16_gradient_descent_and_initialized_value():
    def build():
        var = tf.Variable(T.astype(np.float16), name="var")
        twice = tf.Variable(var.initialized_value() * np.float16(2), name="twice")
        from tfjupyter.train.optimizers import apply_gradient_descent
        return apply_gradient_descent(var, tf.constant(np.float16(0.1)), tf.constant(C.astype(np.float16))), \
            [var, twice]
    compare_steps(build, steps=2, rtol=1e-3, atol=1e-3)

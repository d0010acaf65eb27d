"""Global step, learning-rate schedules and moving averages."""
import math

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.train.moving_averages import assign_moving_average


# -- global step ----------------------------------------------------------------------------------
def test_create_and_get_global_step():
    assert tf.train.get_global_step() is None
    with tf.name_scope("somewhere"):
        step = tf.train.create_global_step()
    assert step.op.name == "global_step" and step.dtype is tf.int64
    assert step.get_shape().ndims == 0 and not step.trainable
    assert step in tf.global_variables() and step not in tf.trainable_variables()
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert tf.train.get_global_step() is step
    assert tf.train.get_or_create_global_step() is step
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        tf.train.create_global_step()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, step) == 0
        sess.run(step.assign_add(5))
        value = tf.train.global_step(sess, step)
        assert value == 5 and type(value) is int


def test_get_or_create_in_another_graph():
    g = tf.Graph()
    step = tf.train.get_or_create_global_step(g)
    assert step.graph is g and tf.train.get_global_step() is None
    assert tf.train.get_global_step(g) is step


def test_global_step_found_by_name():
    # The classic tutorials: tf.Variable(0, name='global_step', trainable=False).
    step = tf.Variable(0, name="global_step", trainable=False)
    found = tf.train.get_global_step()
    assert found is step._ref()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert tf.train.global_step(sess, found) == 0
        assert tf.train.global_step(sess, "global_step:0") == 0


def test_assert_global_step():
    tf.train.assert_global_step(tf.Variable(0, name="ok"))
    with pytest.raises(TypeError, match="does not have integer type"):
        tf.train.assert_global_step(tf.Variable(0.0))
    with pytest.raises(TypeError, match="is not scalar"):
        tf.train.assert_global_step(tf.Variable([0, 1]))
    with pytest.raises(TypeError, match="must be a Variable or Tensor"):
        tf.train.assert_global_step(3)
    tf.Variable(1.5, name="global_step")
    with pytest.raises(TypeError, match="does not have integer type"):
        tf.train.get_global_step()


# -- learning-rate schedules ---------------------------------------------------------------------
def _values(rate_fn, steps, step_dtype=tf.int32):
    step = tf.placeholder(step_dtype, [], name="step")
    rate = rate_fn(step)
    with tf.Session() as sess:
        return rate, [float(sess.run(rate, {step: s})) for s in steps]


STEPS = [0, 1, 5, 9, 10, 11, 25, 100]


def test_exponential_decay():
    rate, got = _values(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5), STEPS)
    np.testing.assert_allclose(got, [0.1 * 0.5 ** (s / 10) for s in STEPS], rtol=1e-6)
    assert rate.op.name == "ExponentialDecay" and rate.dtype is tf.float32
    _, got = _values(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5, staircase=True),
                     STEPS)
    np.testing.assert_allclose(got, [0.1 * 0.5 ** (s // 10) for s in STEPS], rtol=1e-6)


def test_exponential_decay_float64_rate_and_global_step_variable():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(tf.constant(0.2, tf.float64), step, 3, 0.9, name="lr")
    assert lr.dtype is tf.float64 and lr.op.name == "lr"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step.assign(7))
        np.testing.assert_allclose(sess.run(lr), 0.2 * 0.9 ** (7 / 3), rtol=1e-12)
    with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
        tf.train.exponential_decay(0.1, None, 10, 0.5)


def test_natural_exp_and_inverse_time_decay():
    _, got = _values(lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5), STEPS)
    np.testing.assert_allclose(got, [0.1 * math.exp(-0.5 * s / 10) for s in STEPS], rtol=1e-6)
    _, got = _values(lambda s: tf.train.natural_exp_decay(0.1, s, 10, 0.5, staircase=True), STEPS)
    np.testing.assert_allclose(got, [0.1 * math.exp(-0.5 * (s // 10)) for s in STEPS], rtol=1e-6)
    _, got = _values(lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5), STEPS)
    np.testing.assert_allclose(got, [0.1 / (1 + 0.5 * s / 10) for s in STEPS], rtol=1e-6)
    _, got = _values(lambda s: tf.train.inverse_time_decay(0.1, s, 10, 0.5, staircase=True),
                     STEPS)
    np.testing.assert_allclose(got, [0.1 / (1 + 0.5 * (s // 10)) for s in STEPS], rtol=1e-6)


def test_polynomial_decay():
    def ref(s, cycle=False, lr=0.1, end=0.01, power=2.0, decay_steps=10):
        if cycle:
            decay_steps = decay_steps * max(1, math.ceil(s / decay_steps))
        else:
            s = min(s, decay_steps)
        return (lr - end) * (1 - s / decay_steps) ** power + end
    _, got = _values(lambda s: tf.train.polynomial_decay(0.1, s, 10, 0.01, power=2.0), STEPS)
    np.testing.assert_allclose(got, [ref(s) for s in STEPS], rtol=1e-5)
    _, got = _values(lambda s: tf.train.polynomial_decay(0.1, s, 10, 0.01, power=2.0,
                                                         cycle=True), STEPS)
    np.testing.assert_allclose(got, [ref(s, cycle=True) for s in STEPS], rtol=1e-5)


def test_cosine_decay():
    _, got = _values(lambda s: tf.train.cosine_decay(0.1, s, 20, alpha=0.1), STEPS)
    expected = [0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 20) / 20)) + 0.1)
                for s in STEPS]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_schedules_are_differentiable_in_the_learning_rate():
    step = tf.constant(7, tf.int32)
    lr = tf.placeholder(tf.float64, [], name="lr")
    for rate in (tf.train.exponential_decay(lr, step, 3, 0.9),
                 tf.train.polynomial_decay(lr, step, 10, 0.01, power=2.0),
                 tf.train.inverse_time_decay(lr, step, 3, 0.5)):
        theoretical, numerical = tf.test.compute_gradient(lr, [], rate, [], x_init_value=0.3)
        np.testing.assert_allclose(theoretical, numerical, rtol=1e-6)
    decayed = tf.train.exponential_decay(lr, step, 3, 0.9)
    theoretical, _ = tf.test.compute_gradient(lr, [], decayed, [], x_init_value=0.3)
    np.testing.assert_allclose(theoretical, [[0.9 ** (7 / 3)]], rtol=1e-12)


def test_piecewise_constant():
    rate, got = _values(lambda s: tf.train.piecewise_constant(s, [5, 10], [1.0, 0.5, 0.1]),
                        [0, 4, 5, 6, 10, 11, 1000])
    assert got == pytest.approx([1.0, 1.0, 1.0, 0.5, 0.5, 0.1, 0.1])
    assert rate.op.name == "PiecewiseConstant" and rate.dtype is tf.float32
    # Python int boundaries work with an int64 step (the global step).
    _, got = _values(lambda s: tf.train.piecewise_constant(s, [3], [0.1, 0.01]), [3, 4],
                     step_dtype=tf.int64)
    assert got == pytest.approx([0.1, 0.01])
    with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
        tf.train.piecewise_constant(tf.constant(1), [1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="must have the same dtype as x"):
        tf.train.piecewise_constant(tf.constant(1.0), [1], [0.1, 0.2])
    with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
        tf.train.piecewise_constant(tf.constant(1), [1], [0.1, 2])


def test_decayed_rate_feeds_an_optimizer():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(1.0, step, 1, 0.5, staircase=True)
    w = tf.Variable([0.0], name="w")
    g = tf.placeholder(tf.float32, [1])
    train = tf.train.GradientDescentOptimizer(lr).apply_gradients([(g, w)], global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {g: [1.0]})
        # steps use rates 1, 0.5, 0.25
        np.testing.assert_allclose(sess.run(w), [-1.75])
        assert sess.run(step) == 3


# -- moving averages ----------------------------------------------------------------------------------
def test_ema_shadow_variables_and_updates():
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(10.0, dtype=tf.float64, name="b")
    ema = tf.train.ExponentialMovingAverage(0.9)
    update = ema.apply([w, b])
    assert update.name == "ExponentialMovingAverage" and update.type == "NoOp"
    sw, sb = ema.average(w), ema.average(b)
    assert sw.op.name == "w/ExponentialMovingAverage" == ema.average_name(w)
    assert sb.op.name == "b/ExponentialMovingAverage" and sb.dtype is tf.float64
    assert sw.op.colocation_groups() == [b"loc:@w"]
    assert not sw.trainable and sw in tf.global_variables()
    assert tf.moving_average_variables() == [w, b]
    assert ema.average(tf.Variable(0.0, name="other")) is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(sw), [1.0, 2.0])  # starts at the initial value
        shadow_w, shadow_b = np.array([1.0, 2.0]), 10.0
        for value_w, value_b in [([3.0, 0.0], 0.0), ([-1.0, 4.0], 5.0)]:
            sess.run([w.assign(value_w), b.assign(value_b)])
            sess.run(update)
            shadow_w -= 0.1 * (shadow_w - np.array(value_w))
            shadow_b -= 0.1 * (shadow_b - value_b)
            np.testing.assert_allclose(sess.run(sw), shadow_w, rtol=1e-6)
            np.testing.assert_allclose(sess.run(sb), shadow_b, rtol=1e-12)
    with pytest.raises(ValueError, match="Moving average already computed for: w:0"):
        ema.apply([w])
    with pytest.raises(TypeError, match="must be half, float, or double: i:0"):
        ema.apply([tf.Variable(1, name="i")])


def test_ema_num_updates_caps_the_decay():
    w = tf.Variable(0.0, name="w")
    step = tf.Variable(0, name="step", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.999, num_updates=step)
    update = ema.apply([w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        shadow = 0.0
        for s, value in [(0, 10.0), (5, 20.0), (100000, 30.0)]:
            sess.run([w.assign(value), step.assign(s)])
            sess.run(update)
            decay = min(0.999, (1.0 + s) / (10.0 + s))
            shadow -= (1 - decay) * (shadow - value)
            np.testing.assert_allclose(sess.run(ema.average(w)), shadow, rtol=1e-5)


def test_ema_of_tensors_with_zero_debias():
    x = tf.placeholder(tf.float32, [], name="x")
    loss = tf.multiply(x, 2.0, name="loss")
    ema = tf.train.ExponentialMovingAverage(0.9, zero_debias=True, name="avg")
    update = ema.apply([loss])
    shadow = ema.average(loss)
    assert shadow.op.name == "loss/avg" and ema.average_name(loss) == "loss/avg"
    assert tf.moving_average_variables() == []  # only Variables are collected
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        biased = 0.0
        for t, value in enumerate([1.0, 3.0, 2.0], start=1):
            sess.run(update, {x: value})
            biased = 0.9 * biased + 0.1 * (2 * value)
            np.testing.assert_allclose(sess.run(shadow), biased / (1 - 0.9 ** t), rtol=1e-5)


def test_ema_of_tensors_without_debias_starts_at_zero():
    x = tf.placeholder(tf.float32, [2], name="x")
    ema = tf.train.ExponentialMovingAverage(0.5)
    t = tf.identity(x, name="t")
    update = ema.apply([t])
    assert ema.average(t).op.name == "t/ExponentialMovingAverage"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update, {x: [4.0, 8.0]})
        np.testing.assert_allclose(sess.run(ema.average(t)), [2.0, 4.0])


def test_ema_works_under_a_reusing_root_variable_scope():
    with tf.variable_scope("conv1"):
        w = tf.get_variable("weights", [2], initializer=tf.constant_initializer(3.0))
    tf.get_variable_scope().reuse_variables()
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply(tf.trainable_variables())
    assert ema.average(w).op.name == "conv1/weights/ExponentialMovingAverage"


def test_variables_to_restore():
    w = tf.Variable(1.0, name="w")
    b = tf.Variable(2.0, name="b")
    step = tf.Variable(0, name="global_step", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.99)
    ema.apply([w])
    restore = ema.variables_to_restore()
    # Averaged (trainable) variables load from their average's checkpoint name; the rest from
    # their own. Shadows are not restored under their own names.
    assert restore == {"w/ExponentialMovingAverage": w, "b/ExponentialMovingAverage": b,
                       "global_step": step}
    restore = ema.variables_to_restore(moving_avg_variables=[w])
    assert restore == {"w/ExponentialMovingAverage": w, "b": b, "global_step": step}


def test_assign_moving_average():
    v = tf.Variable([0.0, 10.0], dtype=tf.float64, name="moving_mean")
    value = tf.placeholder(tf.float64, [2])
    update = assign_moving_average(v, value, 0.8, zero_debias=False)
    assert update.op.name == "AssignMovingAvg" and update.op.type == "AssignSub"
    debiased_v = tf.Variable([0.0, 0.0], dtype=tf.float64, name="debiased")
    update_debiased = assign_moving_average(debiased_v, value, 0.8)
    names = {v.op.name for v in tf.global_variables()}
    assert {"debiased/biased", "debiased/local_step"} <= names
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = np.array([0.0, 10.0])
        biased = np.zeros(2)
        for t, x in enumerate([[1.0, 2.0], [3.0, 4.0]], start=1):
            sess.run([update, update_debiased], {value: x})
            expected = expected - 0.2 * (expected - np.array(x))
            biased = 0.8 * biased + 0.2 * np.array(x)
            np.testing.assert_allclose(sess.run(v), expected, rtol=1e-12)
            np.testing.assert_allclose(sess.run(debiased_v), biased / (1 - 0.8 ** t), rtol=1e-12)

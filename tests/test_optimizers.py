"""Optimizers: update math against numpy references of TensorFlow's documented rules, slots
and their names, the train op's structure, minimize() on a least-squares problem, errors."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors

RNG = np.random.RandomState(42)
W0 = RNG.uniform(-1, 1, (2, 3))
B0 = RNG.uniform(-1, 1, (3,))
GRADS = [(RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (3,))) for _ in range(5)]


# -- numpy references: TensorFlow's update rules, one step at a time ------------------------------
def ref_sgd(lr):
    def step(var, grad, state, t):
        var -= lr * grad
    return step, {}


def ref_momentum(lr, momentum, nesterov=False):
    def step(var, grad, state, t):
        accum = state.setdefault("momentum", np.zeros_like(var))
        accum[...] = momentum * accum + grad
        if nesterov:
            var -= lr * grad + lr * momentum * accum
        else:
            var -= lr * accum
    return step, {}


def ref_adagrad(lr, init=0.1):
    def step(var, grad, state, t):
        accum = state.setdefault("accumulator", np.full_like(var, init))
        accum += grad * grad
        var -= lr * grad / np.sqrt(accum)
    return step, {}


def ref_rmsprop(lr, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False):
    def step(var, grad, state, t):
        ms = state.setdefault("rms", np.ones_like(var))
        mom = state.setdefault("momentum", np.zeros_like(var))
        ms[...] = decay * ms + (1 - decay) * grad * grad
        if centered:
            mg = state.setdefault("mg", np.zeros_like(var))
            mg[...] = decay * mg + (1 - decay) * grad
            denom = ms - mg * mg + epsilon
        else:
            denom = ms + epsilon
        mom[...] = momentum * mom + lr * grad / np.sqrt(denom)
        var -= mom
    return step, {}


def ref_adam(lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
    def step(var, grad, state, t):
        m = state.setdefault("m", np.zeros_like(var))
        v = state.setdefault("v", np.zeros_like(var))
        lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        m[...] = beta1 * m + (1 - beta1) * grad
        v[...] = beta2 * v + (1 - beta2) * grad * grad
        var -= lr_t * m / (np.sqrt(v) + epsilon)
    return step, {}


def ref_adadelta(lr=0.001, rho=0.95, epsilon=1e-8):
    def step(var, grad, state, t):
        accum = state.setdefault("accum", np.zeros_like(var))
        accum_update = state.setdefault("accum_update", np.zeros_like(var))
        accum[...] = rho * accum + (1 - rho) * grad * grad
        update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
        var -= lr * update
        accum_update[...] = rho * accum_update + (1 - rho) * update * update
    return step, {}


CASES = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.3), ref_sgd(0.3)),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.2, 0.9), ref_momentum(0.2, 0.9)),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.2, 0.9, use_nesterov=True),
                 ref_momentum(0.2, 0.9, nesterov=True)),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.3),
                ref_adagrad(0.5, 0.3)),
    "rmsprop": (lambda: tf.train.RMSPropOptimizer(0.01), ref_rmsprop(0.01)),
    "rmsprop_momentum": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                           epsilon=1e-3),
                         ref_rmsprop(0.01, 0.8, 0.5, 1e-3)),
    "rmsprop_centered": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                           epsilon=1e-3, centered=True),
                         ref_rmsprop(0.01, 0.8, 0.5, 1e-3, centered=True)),
    "adam": (lambda: tf.train.AdamOptimizer(0.1), ref_adam(0.1)),
    "adam_hyper": (lambda: tf.train.AdamOptimizer(0.05, beta1=0.5, beta2=0.7, epsilon=1e-3),
                   ref_adam(0.05, 0.5, 0.7, 1e-3)),
    "adadelta": (lambda: tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-3),
                 ref_adadelta(1.0, 0.9, 1e-3)),
}


def run_steps(make_opt, dtype, steps=5):
    """Applies GRADS (fed through placeholders) to variables w, b; returns (session, opt,
    w, b, train_op) after ``steps`` steps."""
    w = tf.Variable(W0.astype(dtype), name="w")
    b = tf.Variable(B0.astype(dtype), name="b")
    gw = tf.placeholder(w.dtype, [2, 3], name="gw")
    gb = tf.placeholder(b.dtype, [3], name="gb")
    opt = make_opt()
    train = opt.apply_gradients([(gw, w), (gb, b)])
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for t in range(steps):
        sess.run(train, {gw: GRADS[t][0].astype(dtype), gb: GRADS[t][1].astype(dtype)})
    return sess, opt, w, b, train


def reference(ref, steps=5):
    step, _ = ref
    out = []
    for var0, k in ((W0, 0), (B0, 1)):
        var, state = var0.copy(), {}
        for t in range(steps):
            step(var, GRADS[t][k], state, t + 1)
        out.append((var, state))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_update_math_matches_reference(case, dtype):
    make_opt, ref = CASES[case]
    sess, opt, w, b, _ = run_steps(make_opt, dtype)
    (w_ref, w_state), (b_ref, b_state) = reference(ref)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    w_val, b_val = sess.run([w, b])
    assert w_val.dtype == dtype
    np.testing.assert_allclose(w_val, w_ref, **tol)
    np.testing.assert_allclose(b_val, b_ref, **tol)
    for slot_name, expected in w_state.items():
        np.testing.assert_allclose(sess.run(opt.get_slot(w, slot_name)), expected, **tol)
    for slot_name, expected in b_state.items():
        np.testing.assert_allclose(sess.run(opt.get_slot(b, slot_name)), expected, **tol)
    assert sorted(w_state) == opt.get_slot_names()


def test_adam_beta_powers_track_the_step():
    sess, opt, w, b, _ = run_steps(lambda: tf.train.AdamOptimizer(0.1, 0.8, 0.95), np.float64,
                                   steps=3)
    beta1_power, beta2_power = opt._get_beta_accumulators()
    assert beta1_power.op.name == "beta1_power" and beta2_power.op.name == "beta2_power"
    np.testing.assert_allclose(sess.run([beta1_power, beta2_power]), [0.8 ** 4, 0.95 ** 4])
    # Placed with the first variable by name ("b" < "w").
    assert beta1_power.op.colocation_groups() == [b"loc:@b"]


def test_float16_variables_are_updated():
    sess, opt, w, b, _ = run_steps(lambda: tf.train.AdamOptimizer(0.1), np.float16, steps=3)
    (w_ref, _), (b_ref, _) = reference(ref_adam(0.1), steps=3)
    w_val = sess.run(w)
    assert w_val.dtype == np.float16
    np.testing.assert_allclose(w_val, w_ref, rtol=1e-2, atol=2e-3)


def test_use_locking_gives_the_same_result():
    sess, _, w, _, _ = run_steps(lambda: tf.train.MomentumOptimizer(0.2, 0.9, use_locking=True),
                                 np.float64)
    (w_ref, _), _ = reference(ref_momentum(0.2, 0.9))
    np.testing.assert_allclose(sess.run(w), w_ref, rtol=1e-10)


# -- slots and names -------------------------------------------------------------------------------
@pytest.mark.parametrize("make_opt, names", [
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": "w/Momentum"}),
    (lambda: tf.train.AdamOptimizer(), {"m": "w/Adam", "v": "w/Adam_1"}),
    (lambda: tf.train.AdagradOptimizer(0.1), {"accumulator": "w/Adagrad"}),
    (lambda: tf.train.RMSPropOptimizer(0.1), {"rms": "w/RMSProp", "momentum": "w/RMSProp_1"}),
    (lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
     {"rms": "w/RMSProp", "mg": "w/RMSProp_1", "momentum": "w/RMSProp_2"}),
    (lambda: tf.train.AdadeltaOptimizer(), {"accum": "w/Adadelta",
                                            "accum_update": "w/Adadelta_1"}),
    (lambda: tf.train.GradientDescentOptimizer(0.1), {}),
])
def test_slot_names_and_placement(make_opt, names):
    with tf.device("/cpu:0"):
        w = tf.Variable(np.zeros((2, 2), np.float32), name="w")
    g = tf.placeholder(tf.float32, [2, 2])
    opt = make_opt()
    with tf.name_scope("outer"):  # slots are named after their variable, not the scope
        opt.apply_gradients([(g, w)])
    assert opt.get_slot_names() == sorted(names)
    for slot_name, var_name in names.items():
        slot = opt.get_slot(w, slot_name)
        assert slot.op.name == var_name
        assert slot.op.colocation_groups() == [b"loc:@w"]
        assert slot.device == w.device
        assert not slot.trainable
        assert slot in tf.global_variables() and slot not in tf.trainable_variables()
        assert slot.get_shape().as_list() == [2, 2] and slot.dtype is tf.float32
    assert opt.get_slot(w, "nope") is None
    slot_vars = sorted(v.name for v in opt.variables())
    expected = sorted(n + ":0" for n in names.values())
    if isinstance(opt, tf.train.AdamOptimizer):
        expected = sorted(expected + ["outer/beta1_power:0", "outer/beta2_power:0"])
    assert slot_vars == expected


def test_slots_reused_by_a_second_minimize_and_separate_per_optimizer():
    w = tf.Variable([1.0, 2.0], name="w")
    g = tf.placeholder(tf.float32, [2])
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    opt.apply_gradients([(g, w)])
    slot = opt.get_slot(w, "momentum")
    opt.apply_gradients([(g, w)])
    assert opt.get_slot(w, "momentum") is slot
    other = tf.train.MomentumOptimizer(0.1, 0.9)
    other.apply_gradients([(g, w)])
    assert other.get_slot(w, "momentum").op.name == "w/Momentum_1"
    assert opt.get_slot(w.value().op.inputs[0], "momentum") is slot  # by the ref tensor too


def test_slots_created_under_a_reusing_variable_scope():
    # The 0.x multi-GPU tutorial sets reuse on the root scope before apply_gradients.
    with tf.variable_scope("conv1"):
        w = tf.get_variable("weights", [3], initializer=tf.constant_initializer(1.0))
    tf.get_variable_scope().reuse_variables()
    g = tf.placeholder(tf.float32, [3])
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.apply_gradients([(g, w)])
    assert opt.get_slot(w, "m").op.name == "conv1/weights/Adam"
    assert opt.get_slot(w, "v").op.name == "conv1/weights/Adam_1"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {g: [1.0, -1.0, 0.0]})
        np.testing.assert_allclose(sess.run(w), [0.9, 1.1, 1.0], rtol=1e-5)


def test_train_op_structure_and_global_step():
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(0.5, name="b")
    gw, gb = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [])
    step = tf.Variable(0, name="global_step", trainable=False)
    opt = tf.train.GradientDescentOptimizer(0.5)
    train = opt.apply_gradients([(gw, w), (None, step), (gb, b)], global_step=step)
    assert isinstance(train, tf.Operation)
    assert train.name == "GradientDescent" and train.type == "AssignAdd"
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    g = tf.get_default_graph()
    update_w = g.get_operation_by_name("GradientDescent/update_w/ApplyGradientDescent")
    assert update_w.type == "ApplyGradientDescent" and update_w.colocation_groups() == [b"loc:@w"]
    assert not update_w.get_attr("use_locking")
    # The step increments only after every update ran.
    finish = train.control_inputs
    assert [op.name for op in finish] == ["GradientDescent/update"]
    assert update_w in finish[0].control_inputs
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {gw: [1.0, -2.0], gb: 1.0})
        assert tf.train.global_step(sess, step) == 3
        np.testing.assert_allclose(sess.run(w), [-0.5, 5.0])
        np.testing.assert_allclose(sess.run(b), -1.0)


def test_without_global_step_the_train_op_is_a_group_named_after_the_optimizer():
    w = tf.Variable([1.0], name="w")
    g = tf.placeholder(tf.float32, [1])
    train = tf.train.AdamOptimizer().apply_gradients([(g, w)])
    assert train.name == "Adam" and train.type == "NoOp"
    train2 = tf.train.AdamOptimizer().apply_gradients([(g, w)], name="my_train")
    assert train2.name == "my_train"
    train3 = tf.train.AdamOptimizer().apply_gradients([(g, w)])
    assert train3.name == "Adam_1"
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("my_train/update_w/ApplyAdam").type == "ApplyAdam"
    assert graph.get_operation_by_name("Adam_1/update_w/ApplyAdam").type == "ApplyAdam"
    # Each Adam keeps its own beta powers.
    assert graph.get_operation_by_name("beta1_power_2").type == "VariableV2"


def test_learning_rate_tensor_and_callable():
    w = tf.Variable([1.0, 1.0], name="w")
    g = tf.placeholder(tf.float32, [2])
    lr = tf.placeholder(tf.float32, [], name="lr")
    train = tf.train.GradientDescentOptimizer(lr).apply_gradients([(g, w)])
    w2 = tf.Variable([1.0, 1.0], dtype=tf.float64, name="w2")
    g2 = tf.placeholder(tf.float64, [2])
    train2 = tf.train.MomentumOptimizer(lambda: lr, 0.5).apply_gradients([(g2, w2)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {g: [1.0, 2.0], lr: 0.5})
        sess.run(train, {g: [1.0, 2.0], lr: 0.25})
        np.testing.assert_allclose(sess.run(w), [0.25, -0.5])
        sess.run(train2, {g2: [1.0, 2.0], lr: 0.5})
        sess.run(train2, {g2: [1.0, 2.0], lr: 0.5})
        # accum: 1 then 1.5 (x grad); var -= 0.5 * accum
        np.testing.assert_allclose(sess.run(w2), [1 - 0.5 * 2.5, 1 - 0.5 * 5.0])


# -- compute_gradients / minimize ---------------------------------------------------------------------
def test_minimize_least_squares_drives_loss_down():
    rng = np.random.RandomState(0)
    x_data = rng.randn(64, 3).astype(np.float32)
    true_w = np.array([[1.5], [-2.0], [0.5]], np.float32)
    y_data = x_data @ true_w + 0.3
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    results = {}
    for name, opt in [("sgd", tf.train.GradientDescentOptimizer(0.1)),
                      ("momentum", tf.train.MomentumOptimizer(0.05, 0.9)),
                      ("adagrad", tf.train.AdagradOptimizer(0.5)),
                      ("rmsprop", tf.train.RMSPropOptimizer(0.05)),
                      ("adam", tf.train.AdamOptimizer(0.1))]:
        with tf.name_scope(name):
            w = tf.Variable(tf.zeros([3, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            step = tf.Variable(0, trainable=False, name="step")
            train = opt.minimize(loss, global_step=step)
        results[name] = (loss, train, step, w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: x_data, y: y_data}
        for name, (loss, train, step, w) in results.items():
            first = sess.run(loss, feed)
            for _ in range(150):
                sess.run(train, feed)
            last = sess.run(loss, feed)
            assert last < 0.01 * first, (name, first, last)
            assert sess.run(step) == 150
        np.testing.assert_allclose(sess.run(results["adam"][3]), true_w, atol=0.05)


def test_updates_use_gradients_from_before_any_update():
    # y = x @ w1 @ w2: the gradient of w1 reads w2. Listing w2 first must not let w2's update
    # run before w1's gradient is computed.
    x = tf.constant([[1.0, 2.0]], dtype=tf.float64)
    w1_0 = np.array([[0.5, -1.0], [2.0, 1.0]])
    w2_0 = np.array([[1.0], [3.0]])
    w1 = tf.Variable(w1_0, name="w1")
    w2 = tf.Variable(w2_0, name="w2")
    y = tf.matmul(tf.matmul(x, w1), w2)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(y, var_list=[w2, w1])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        xv = np.array([[1.0, 2.0]])
        gw2 = (xv @ w1_0).T
        gw1 = xv.T @ w2_0.T
        np.testing.assert_allclose(sess.run(w2), w2_0 - 0.1 * gw2)
        np.testing.assert_allclose(sess.run(w1), w1_0 - 0.1 * gw1)


def test_compute_gradients_pairs_and_none():
    a = tf.Variable([1.0, 2.0], name="a")
    unused = tf.Variable([3.0], name="unused")
    loss = tf.multiply(a, a)
    opt = tf.train.GradientDescentOptimizer(0.1)
    gv = opt.compute_gradients(loss)
    assert [v for _, v in gv] == [a, unused]
    assert gv[1][0] is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gv[0][0]), [2.0, 4.0])
    gv_graph = opt.compute_gradients(loss, var_list=[a], gate_gradients=opt.GATE_GRAPH)
    assert len(gv_graph) == 1
    # grad_loss weights the loss's elements.
    gv_weighted = opt.compute_gradients(loss, var_list=[a], grad_loss=tf.constant([1.0, 0.5]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gv_weighted[0][0]), [2.0, 2.0])


def test_errors():
    opt = tf.train.GradientDescentOptimizer(0.1)
    c = tf.constant(1.0)
    with pytest.raises(ValueError, match="No variables to optimize."):
        opt.minimize(c)
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="No gradients provided for any variable, check your "
                                         "graph for ops that do not support gradients"):
        opt.minimize(tf.add(c, c))
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, v)])
    with pytest.raises(ValueError, match="No variables provided."):
        opt.apply_gradients([])
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(tf.multiply(v, v), gate_gradients=7)
    i = tf.Variable(1, name="i")
    with pytest.raises(ValueError, match="Invalid type tf.int32 for"):
        opt.compute_gradients(tf.multiply(i, i), var_list=[i])
    with pytest.raises(TypeError, match="unsupported type"):
        opt.apply_gradients([(c, c)])
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")


def test_graph_time_shape_and_dtype_errors_name_the_op():
    w = tf.Variable(np.zeros((2, 3), np.float32), name="w")
    with pytest.raises(ValueError, match=r"var and delta do not have the same shape.*\[2,3\] vs "
                                         r"\[3\].*ApplyGradientDescent"):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([(tf.zeros([3]), w)])
    with pytest.raises(TypeError, match="float64 that does not match type float32"):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients(
            [(tf.constant(np.zeros((2, 3))), w)])
    with pytest.raises(ValueError, match="alpha is not a scalar"):
        from tfjupyter.train.optimizers import apply_gradient_descent
        apply_gradient_descent(w, tf.constant([0.1, 0.2]), tf.zeros([2, 3]))


def test_run_time_errors_name_the_variable_and_op():
    w = tf.Variable(np.zeros((2, 3), np.float32), name="w")
    g = tf.placeholder(tf.float32, None, name="g")  # unknown shape: checked when run
    train = tf.train.MomentumOptimizer(0.1, 0.9).apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(w.initializer)
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value w/Momentum"):
            sess.run(train, {g: np.zeros((2, 3), np.float32)})
        sess.run(tf.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"var and grad do not have the same shape\[2,3\] \[3,2\]") as e:
            sess.run(train, {g: np.zeros((3, 2), np.float32)})
        assert e.value.op.type == "ApplyMomentum"
        np.testing.assert_array_equal(sess.run(w), np.zeros((2, 3)))  # nothing was written


def test_feeding_the_computed_gradients():
    # Gradient accumulation: compute the gradients in one run, feed them to the train op in
    # another (the inputs of the loss are not fed then).
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable([[1.0], [2.0]], name="w")
    b = tf.Variable([0.5], name="b")
    loss = tf.reduce_sum(tf.matmul(x, w) + b)
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads_and_vars = opt.compute_gradients(loss)
    train = opt.apply_gradients(grads_and_vars)
    (gw, _), (gb, _) = grads_and_vars
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_w, got_b = sess.run([gw, gb], {x: [[1.0, 2.0], [3.0, 4.0]]})
        np.testing.assert_allclose(got_w, [[4.0], [6.0]])
        np.testing.assert_allclose(got_b, [2.0])
        sess.run(train, {gw: got_w * 0.5, gb: got_b * 0.5})
        np.testing.assert_allclose(sess.run(w), [[0.0], [0.5]])
        np.testing.assert_allclose(sess.run(b), [0.0])


def test_user_defined_optimizer_in_tensorflow_style():
    class ScaledSGD(tf.train.Optimizer):
        def __init__(self, learning_rate):
            super().__init__(False, "ScaledSGD")
            self._lr = learning_rate

        def _create_slots(self, var_list):
            for v in var_list:
                self._zeros_slot(v, "steps", self._name)

        def _prepare(self):
            self._lr_t = tf.convert_to_tensor(self._lr, name="learning_rate")

        def _apply_dense(self, grad, var):
            steps = self.get_slot(var, "steps")
            return tf.group(var.assign_sub(tf.multiply(grad, self._lr_t)),
                            steps.assign_add(tf.ones_like(steps)))

    w = tf.Variable([1.0, -1.0], name="w")
    step = tf.train.get_or_create_global_step()
    train = ScaledSGD(0.25).minimize(tf.multiply(w, w), global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.25, -0.25])
        np.testing.assert_allclose(sess.run("w/ScaledSGD:0"), [2.0, 2.0])
        assert sess.run(step) == 2


def test_learning_rate_variable_changed_between_steps():
    # The PTB tutorial: lr = tf.Variable(0.0, trainable=False), assigned before each epoch.
    lr = tf.Variable(0.0, trainable=False, name="lr")
    w = tf.Variable([1.0], name="w")
    g = tf.placeholder(tf.float32, [1])
    train = tf.train.GradientDescentOptimizer(lr).apply_gradients([(g, w)])
    new_lr = tf.placeholder(tf.float32, [])
    set_lr = tf.assign(lr, new_lr)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for rate in (1.0, 0.5):
            sess.run(set_lr, {new_lr: rate})
            sess.run(train, {g: [1.0]})
        np.testing.assert_allclose(sess.run(w), [-0.5])


def test_fetched_update_is_a_snapshot():
    from tfjupyter.train.optimizers import apply_gradient_descent
    w = tf.Variable([1.0, 2.0], name="w")
    g = tf.placeholder(tf.float32, [2])
    update = apply_gradient_descent(w, 0.5, g)
    with tf.Session() as sess:
        sess.run(w.initializer)
        first = sess.run(update, {g: [1.0, 1.0]})
        sess.run(update, {g: [1.0, 1.0]})
        np.testing.assert_allclose(first, [0.5, 1.5])


def test_variable_of_unknown_static_shape_gets_slots_of_its_runtime_shape():
    init = tf.placeholder_with_default(np.ones((2, 2), np.float32), [None, None])
    w = tf.Variable(init, validate_shape=False, name="w")
    g = tf.placeholder(tf.float32, None)
    opt = tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5)
    train = opt.apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {g: np.full((2, 2), 2.0, np.float32)})
        np.testing.assert_allclose(sess.run(opt.get_slot(w, "accumulator")), np.full((2, 2), 4.5))
        np.testing.assert_allclose(sess.run(w), np.full((2, 2), 1 - 0.1 * 2 / np.sqrt(4.5)),
                                   rtol=1e-6)

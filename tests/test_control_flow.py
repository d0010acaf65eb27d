"""tf.cond, tf.case and tf.while_loop (functional If/While ops): TF 1.x semantics, side effects
of the taken branch only, and gradients checked against central-difference Jacobians."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from cluster_util import token_env  # noqa: F401 - the fixture


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def numeric_grad(sess, y, x, value, feed=None, eps=1e-3):
    """d(sum y)/dx by central differences, in float64 around ``value``."""
    value = np.asarray(value, np.float64)
    grad = np.zeros_like(value)
    for idx in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[idx] += eps
        down[idx] -= eps
        f_up = np.sum(sess.run(y, {**(feed or {}), x: up}).astype(np.float64))
        f_down = np.sum(sess.run(y, {**(feed or {}), x: down}).astype(np.float64))
        grad[idx] = (f_up - f_down) / (2 * eps)
    return grad


def check_grad(sess, y, x, value, feed=None, rtol=2e-3, atol=2e-3):
    (analytic,) = sess.run(tf.gradients(y, [x]), {**(feed or {}), x: value})
    np.testing.assert_allclose(analytic, numeric_grad(sess, y, x, value, feed), rtol=rtol,
                               atol=atol)


# -- cond ------------------------------------------------------------------------------------------
def test_cond_values_structures_and_shapes():
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [None, 3])
    out = tf.cond(p, lambda: {"a": x * 2.0, "b": (x, tf.constant(1))},
                  lambda: {"a": x - 1.0, "b": (tf.zeros([2, 3]), tf.constant(2))})
    assert out["a"].shape.as_list() == [None, 3]
    assert out["b"][0].shape.as_list() == [None, 3]          # (?, 3) vs (2, 3)
    single = tf.cond(p, lambda: [x], lambda: [x + 1.0])
    strict = tf.cond(p, lambda: [x], lambda: [x + 1.0], strict=True)
    assert isinstance(single, tf.Tensor) and isinstance(strict, list)
    old_names = tf.cond(p, fn1=lambda: tf.constant(1.0), fn2=lambda: tf.constant(2.0))
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as s:
        a, (b0, b1), o = s.run([out["a"], out["b"], old_names], {p: True, x: value})
        np.testing.assert_array_equal(a, value * 2)
        np.testing.assert_array_equal(b0, value)
        assert b1 == 1 and o == 1.0
        a, (b0, b1), o = s.run([out["a"], out["b"], old_names], {p: False, x: value})
        np.testing.assert_array_equal(a, value - 1)
        np.testing.assert_array_equal(b0, np.zeros((2, 3)))
        assert b1 == 2 and o == 2.0


def test_cond_errors_name_both_branches():
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(TypeError, match="must not be a Python bool"):
        tf.cond(True, lambda: 1.0, lambda: 2.0)
    with pytest.raises(ValueError, match="Received float32 from 'true_fn' and int32 from "
                                         "'false_fn'"):
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2))
    with pytest.raises(ValueError, match="same nested structure"):
        tf.cond(p, lambda: (tf.constant(1.0), tf.constant(1.0)), lambda: tf.constant(2.0))
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(p, 1.0, lambda: 2.0)
    with pytest.raises(ValueError, match="bool scalar"):
        tf.cond(tf.constant([True, False]), lambda: 1.0, lambda: 2.0)


def test_only_the_taken_branch_has_side_effects():
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(1.0)
    counter = tf.Variable(0)
    out = tf.cond(p, lambda: v.assign_add(1.0), lambda: tf.identity(v))

    def counted():
        with tf.control_dependencies([counter.assign_add(1)]):
            return tf.identity(v) * 10.0
    dep = tf.cond(p, lambda: tf.identity(v), counted)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out, {p: False}) == 1.0
        assert s.run(out, {p: True}) == 2.0
        assert s.run(out, {p: True}) == 3.0
        assert s.run(v) == 3.0
        assert s.run(dep, {p: True}) == 3.0 and s.run(counter) == 0
        assert s.run(dep, {p: False}) == 30.0 and s.run(counter) == 1


def test_optimizer_inside_cond_and_variables_created_in_a_branch():
    p = tf.placeholder(tf.bool, [])
    w = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(w * w)
    opt = tf.train.GradientDescentOptimizer(0.25)
    step = tf.cond(p, lambda: opt.minimize(loss), lambda: tf.no_op())

    def make():
        b = tf.get_variable("b", [], initializer=tf.constant_initializer(5.0))
        return b + 1.0
    made = tf.cond(p, make, lambda: tf.constant(0.0))
    assert [v.op.name for v in tf.global_variables()] == ["Variable", "b"]
    assert tf.global_variables()[1].graph is tf.get_default_graph()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(step, {p: False})
        np.testing.assert_allclose(s.run(w), [1.0, 2.0])
        s.run(step, {p: True})
        np.testing.assert_allclose(s.run(w), [0.5, 1.0])
        assert s.run(made, {p: True}) == 6.0


def test_cond_gradient_with_captured_variable():
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float64, [3])
    w = tf.Variable(np.array([0.5, -1.0, 2.0]))
    y = tf.cond(p, lambda: tf.tanh(x * w) * x, lambda: tf.sin(x) + w * w)
    gw, = tf.gradients(y, [w])
    value = np.array([0.3, -0.7, 1.1])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for pred in (True, False):
            check_grad(s, y, x, value, {p: pred})
        wv = np.array([0.5, -1.0, 2.0])
        np.testing.assert_allclose(s.run(gw, {p: True, x: value}),
                                   (1 - np.tanh(value * wv) ** 2) * value * value)
        np.testing.assert_allclose(s.run(gw, {p: False, x: value}), 2 * wv)


def test_nested_cond_gradient():
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float64, [2])
    y = tf.cond(p, lambda: tf.cond(q, lambda: x * x * x, lambda: tf.exp(x)),
                lambda: x * 3.0)
    with tf.Session() as s:
        for pv in (True, False):
            for qv in (True, False):
                check_grad(s, y, x, [0.4, -1.2], {p: pv, q: qv})


def test_case_order_default_and_exclusive():
    x = tf.placeholder(tf.int32, [])
    f = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                 (tf.less(x, 10), lambda: tf.constant(1))], default=lambda: tf.constant(100))
    ex = tf.case({tf.less(x, 0): lambda: tf.constant(-1), tf.less(x, 10): lambda: tf.constant(1)},
                 default=lambda: tf.constant(100), exclusive=True)
    no_default = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                          (tf.less(x, 10), lambda: tf.constant(1))])
    listed = tf.case([(tf.less(x, 0), lambda: [tf.constant(-1)])], default=lambda: [x])
    strict = tf.case([(tf.less(x, 0), lambda: [tf.constant(-1)])], default=lambda: [x],
                     strict=True)
    assert isinstance(listed, tf.Tensor) and isinstance(strict, list)
    with tf.Session() as s:
        assert [s.run(f, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 100]
        assert s.run(ex, {x: 5}) == 1 and s.run(ex, {x: 50}) == 100
        with pytest.raises(errors.InvalidArgumentError, match="more than 1 conditions"):
            s.run(ex, {x: -5})
        assert [s.run(no_default, {x: v}) for v in (-5, 5)] == [-1, 1]
        with pytest.raises(errors.InvalidArgumentError, match="None of conditions evaluated"):
            s.run(no_default, {x: 50})
        assert s.run([listed, strict], {x: 7}) == [7, [7]]


# -- while_loop ------------------------------------------------------------------------------------
def test_while_loop_structures_and_maximum_iterations():
    i = tf.constant(0)
    out = tf.while_loop(lambda i, acc: i < 5, lambda i, acc: (i + 1, {"s": acc["s"] + i}),
                        (i, {"s": tf.constant(0)}))
    single = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i])
    same = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i], return_same_structure=True)
    capped = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [i], maximum_iterations=7)
    assert isinstance(single, tf.Tensor) and isinstance(same, list)
    with tf.Session() as s:
        (n, acc), one, two, three = s.run([out, single, same, capped])
        assert n == 5 and acc == {"s": 10} and one == 3 and two == [3] and three == 7


def test_while_loop_shape_invariants():
    x = tf.constant([1.0])
    with pytest.raises(ValueError, match="enters the loop with shape \\(1,\\), but has shape "
                                         "\\(2,\\) after one iteration"):
        tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x])
    grown = tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x],
                          shape_invariants=[tf.TensorShape([None])],
                          parallel_iterations=1, swap_memory=True)
    assert grown.shape.as_list() == [None]
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(grown), np.ones(8))


def test_while_gradient_power_with_captured_weight():
    x = tf.placeholder(tf.float64, [2])
    w = tf.Variable(np.array([[0.9, 0.2], [-0.3, 0.8]]))
    n = tf.placeholder(tf.int32, [])
    # y = x (W^n) by repeated multiplication, then an elementwise power: x**n.
    _, y, z = tf.while_loop(lambda i, y, z: i < n,
                            lambda i, y, z: (i + 1, tf.matmul(y, w), z * x),
                            [tf.constant(0), tf.reshape(x, [1, 2]), tf.ones([2], tf.float64)])
    gw, = tf.gradients(y, [w])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        value = np.array([0.7, -1.3])
        for steps in (0, 1, 4):
            check_grad(s, y, x, value, {n: steps})
            check_grad(s, z, x, value, {n: steps})
            np.testing.assert_allclose(s.run(z, {x: value, n: steps}), value ** steps)
        wv = s.run(w)
        eps, numeric = 1e-6, np.zeros((2, 2))
        for idx in np.ndindex(2, 2):
            for sign in (1, -1):
                d = np.zeros((2, 2))
                d[idx] = sign * eps
                numeric[idx] += sign * np.sum(value @ np.linalg.matrix_power(wv + d, 3)) / (2 * eps)
        np.testing.assert_allclose(s.run(gw, {x: value, n: 3}), numeric, rtol=1e-5)


def test_while_gradient_with_data_dependent_iterations():
    x = tf.placeholder(tf.float64, [])
    # Double until above 10: the number of iterations depends on x.
    y = tf.while_loop(lambda y: y < 10.0, lambda y: y * 2.0 + tf.sin(y), [x])
    with tf.Session() as s:
        for value in (0.7, 3.0, 12.0):
            check_grad(s, y, x, np.array(value))


def test_back_prop_false_gives_no_gradient():
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, x], back_prop=False)[1]
    assert tf.gradients(y, [x]) == [None]


def test_nested_loops_and_conds_gradients():
    x = tf.placeholder(tf.float64, [2])

    def outer_body(i, y):
        inner = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, tf.sin(z) * x), [0, y])[1]
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: inner * y, lambda: inner + y)
    y = tf.while_loop(lambda i, y: i < 3, outer_body, [0, x])[1]
    looped_cond = tf.cond(tf.reduce_sum(x) > 0,
                          lambda: tf.while_loop(lambda k, a: k < 3, lambda k, a: (k + 1, a * x),
                                                [0, tf.ones([2], tf.float64)])[1],
                          lambda: x)
    with tf.Session() as s:
        check_grad(s, y, x, [0.3, -0.6])
        check_grad(s, looped_cond, x, [0.3, 0.6])
        check_grad(s, looped_cond, x, [-0.3, -0.6])


def test_while_loop_side_effects_and_errors():
    v = tf.Variable(0.0)
    out = tf.while_loop(lambda i: i < 4,
                        lambda i: tf.tuple([i + 1], control_inputs=[v.assign_add(2.0)])[0], [0])
    with pytest.raises(TypeError, match="cond must be callable"):
        tf.while_loop(1, lambda i: i, [0])
    with pytest.raises(ValueError, match="enters the loop with type int32, but has type float32"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [0])
    with pytest.raises(ValueError, match="bool scalar"):
        tf.while_loop(lambda i: i, lambda i: i, [0])
    grow = tf.while_loop(lambda x: tf.size(x) < 4, lambda x: tf.concat([x, x], 0),
                         [tf.placeholder_with_default([1.0], [None])])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out) == 4 and s.run(v) == 8.0
        assert s.run(grow).tolist() == [1.0] * 4


# -- distributed -----------------------------------------------------------------------------------
def test_cond_and_while_in_a_cluster(token_env):
    from cluster_util import loopback_cluster
    cluster = loopback_cluster(ps=1, worker=1)
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([[0.5, -0.2], [0.1, 0.9]], name="w")
            count = tf.Variable(0.0, name="count")
        p = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [1, 2])
        with tf.device("/job:worker/task:0"):
            _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.tanh(tf.matmul(y, w))),
                                 [0, x])
            c = tf.cond(p, lambda: y * 2.0, lambda: y - 1.0)
            gw, = tf.gradients(tf.reduce_sum(c), [w])
        # Writes a ps variable: the If runs with the variable, on the ps task.
        bump = tf.cond(p, lambda: count.assign_add(1.0), lambda: tf.identity(count))
        xv = np.array([[0.3, -0.8]], np.float32)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as local:
            local.run(tf.global_variables_initializer())
            expected = [local.run([c, gw], {p: pv, x: xv}) for pv in (True, False)]
        with tf.Session(servers[1].target) as sess:
            sess.run(tf.global_variables_initializer())
            for (c_want, g_want), pv in zip(expected, (True, False)):
                c_got, g_got = sess.run([c, gw], {p: pv, x: xv})
                np.testing.assert_allclose(c_got, c_want, rtol=1e-6)
                np.testing.assert_allclose(g_got, g_want, rtol=1e-5)
            assert sess.run(bump, {p: True}) == 1.0 and sess.run(bump, {p: False}) == 1.0
            assert sess.run(count) == 1.0
            while_op = next(o for o in tf.get_default_graph().get_operations() if o.type == "While")
            assert "/job:worker/" in sess.placer.assigned[while_op].name
            assert "/job:ps/" in sess.placer.assigned[bump.op].name
    finally:
        for server in servers:
            server.stop()


def test_initialized_value_is_a_cond_on_is_variable_initialized():
    w = tf.Variable([5.0, 5.0], name="w")
    init = w.initialized_value()
    assert init.op.type == "If"
    w2 = tf.Variable(init * 2.0, name="w2")
    with tf.Session() as s:
        s.run(w2.initializer)                       # w itself is not initialized
        assert s.run(w2).tolist() == [10.0, 10.0]
        s.run(w.assign([1.0, 2.0]))
        assert s.run(init).tolist() == [1.0, 2.0]


def test_graph_def_and_meta_graph_carry_the_functions(tmp_path):
    from tfjupyter.framework.graph_io import export_graph_def, rebuild_graph
    p = tf.placeholder(tf.bool, [], name="p")
    x = tf.placeholder(tf.float32, [2], name="x")
    v = tf.Variable([1.0, 2.0], name="v")
    loop = lambda: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, x])[1]  # noqa
    y = tf.identity(tf.cond(p, lambda: x * v, loop), name="y")
    tf.identity(tf.gradients(y, x)[0], name="g")
    tf.identity(tf.cond(p, lambda: v.assign_add([1.0, 1.0]), lambda: tf.identity(v)), name="inc")
    graph_def = export_graph_def(tf.get_default_graph())
    names = {f.signature.name for f in graph_def.library.function}
    assert {"cond_true", "cond_false", "cond_while_body", "cond_while_body_grad"} <= names
    if_node = next(n for n in graph_def.node if n.op == "If")
    assert if_node.attr["then_branch"].func.name == "cond_true"
    path = str(tmp_path / "model.meta")
    tf.train.export_meta_graph(path)
    feeds = {"p:0": False, "x:0": [2.0, 3.0]}
    for build in (lambda: rebuild_graph(graph_def), None):
        with tf.Graph().as_default() as g:
            prefix = ""
            if build is None:
                tf.train.import_meta_graph(path, import_scope="imp")
                prefix = "imp/"
            else:
                g = build()
            with tf.Session(graph=g) as s:
                s.run(prefix + "v/Assign")
                y_v, g_v = s.run([prefix + "y:0", prefix + "g:0"],
                                 {prefix + k: val for k, val in feeds.items()})
                np.testing.assert_allclose(y_v, [16.0, 81.0])      # x**4
                np.testing.assert_allclose(g_v, [32.0, 108.0])
                s.run(prefix + "inc:0", {prefix + "p:0": True})
                np.testing.assert_allclose(s.run(prefix + "v:0"), [2.0, 3.0])


def test_queue_ops_inside_branches_and_loops():
    q = tf.FIFOQueue(10, [tf.float32], shapes=[[]])
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [])
    maybe = tf.cond(p, lambda: tf.group(q.enqueue(x)), lambda: tf.no_op())
    fill = tf.while_loop(lambda i: i < 3,
                         lambda i: tf.tuple([i + 1], control_inputs=[
                             q.enqueue(tf.cast(i, tf.float32) * 10.0)])[0],
                         [0])
    with tf.Session() as s:
        s.run(maybe, {p: True, x: 1.0})
        s.run(maybe, {p: False, x: 2.0})
        s.run(fill)
        assert s.run(q.size()) == 4
        assert [s.run(q.dequeue()) for _ in range(4)] == [1.0, 0.0, 10.0, 20.0]


def test_layers_dropout_switches_with_cond_on_a_training_tensor():
    training = tf.placeholder(tf.bool, [])
    x = tf.ones([1000])
    y = tf.layers.dropout(x, rate=0.25, training=training, seed=3)
    assert y.op.type == "If"
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(y, {training: False}), np.ones(1000))
        dropped = s.run(y, {training: True})
        assert set(np.unique(dropped)) <= {0.0, np.float32(1 / 0.75)}
        assert 0.18 < np.mean(dropped == 0) < 0.32


def test_run_time_errors_name_the_op_inside_the_function_and_loops_obey_deadlines():
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [None])
    bad = tf.cond(p, lambda: tf.reshape(x, [5]), lambda: tf.zeros([5]))
    forever = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [0])
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=300)) as s:
        assert s.run(bad, {p: False, x: [1.0]}).shape == (5,)
        with pytest.raises(errors.InvalidArgumentError) as info:
            s.run(bad, {p: True, x: [1.0]})
        assert info.value.op is not None and info.value.op.name == "cond/Reshape"
        with pytest.raises(errors.DeadlineExceededError, match="while loop while"):
            s.run(forever)

"""tf.variable_scope / tf.get_variable (TF 1.x semantics) and tf.contrib.layers.fully_connected."""
import threading

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient


def op_names():
    return [op.name for op in tf.get_default_graph().get_operations()]


# -- names -----------------------------------------------------------------------------------------
def test_nested_scopes_name_variables_and_ops():
    with tf.variable_scope("foo") as foo:
        v = tf.get_variable("v", [1])
        a = tf.add(v, 1.0, name="a")
        with tf.variable_scope("bar") as bar:
            w = tf.get_variable("w", [1])
    assert (foo.name, foo.original_name_scope) == ("foo", "foo/")
    assert (bar.name, bar.original_name_scope) == ("foo/bar", "foo/bar/")
    assert (v.name, w.name, a.name) == ("foo/v:0", "foo/bar/w:0", "foo/a:0")
    assert {"foo/v", "foo/v/Assign", "foo/v/read"} <= set(op_names())
    # Re-opening the same name opens a new (unique) name scope but the same variable scope.
    with tf.variable_scope("foo", reuse=True) as again:
        b = tf.add(v, 1.0, name="a")
        assert tf.get_variable("v") is v
    assert again.name == "foo" and b.name == "foo_1/a:0"


def test_reentering_a_captured_scope():
    with tf.variable_scope("foo") as foo:
        v = tf.get_variable("v", [1])
    with tf.variable_scope("other"):
        with tf.variable_scope(foo) as same:
            assert same.name == "foo" and same.original_name_scope == "foo/"
            x = tf.add(v, 1.0, name="x")
            with tf.variable_scope("sub") as sub:
                u = tf.get_variable("u", [1])
        with tf.variable_scope(foo, reuse=True):
            assert tf.get_variable("v") is v
            with tf.variable_scope("sub") as sub_again:
                assert sub_again.reuse is True and tf.get_variable("u") is u
    # Variables follow the captured scope; other ops a fresh name scope under the current one.
    assert x.name == "other/foo/x:0"
    assert sub.name == "foo/sub" and u.name == "foo/sub/u:0"
    assert tf.get_variable_scope().name == ""


def test_default_name_is_made_unique():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="dense") as s:
            names.append((s.name, s.original_name_scope, tf.get_variable("w", [1]).name))
    assert names == [("dense", "dense/", "dense/w:0"), ("dense_1", "dense_1/", "dense_1/w:0"),
                     ("dense_2", "dense_2/", "dense_2/w:0")]
    with tf.variable_scope("outer"):
        with tf.variable_scope(None, default_name="inner") as i1:
            pass
        with tf.variable_scope(None, default_name="inner") as i2:
            pass
    with tf.variable_scope("outer"):
        with tf.variable_scope(None, default_name="inner") as i3:
            pass
    # Sub-scope counts restart when the parent scope is re-entered, as in TensorFlow.
    assert (i1.name, i2.name, i3.name) == ("outer/inner", "outer/inner_1", "outer/inner")
    assert i3.original_name_scope == "outer_1/inner/"


def test_name_scope_does_not_change_variable_names():
    with tf.name_scope("ns"):
        with tf.variable_scope("vs") as vs:
            v = tf.get_variable("v", [1])
            c = tf.add(v, v, name="c")
        plain = tf.get_variable("plain", [1])
    assert vs.original_name_scope == "ns/vs/"
    assert v.name == "vs/v:0" and v.op.name == "vs/v" and plain.name == "plain:0"
    assert c.name == "ns/vs/c:0"
    assert "vs/v/Initializer/random_uniform" in op_names()


def test_tower_pattern_shares_variables_across_name_scopes():
    def inference(x):
        with tf.variable_scope("layer1"):
            w = tf.get_variable("weights", [3, 2],
                                initializer=tf.truncated_normal_initializer(stddev=0.1))
            b = tf.get_variable("biases", [2], initializer=tf.constant_initializer(0.5))
            return tf.nn.relu(tf.matmul(x, w) + b)

    x = tf.placeholder(tf.float32, [None, 3])
    outputs, scopes = [], []
    for i in range(2):
        with tf.device("/cpu:0"):
            with tf.name_scope("GPU_%d" % i) as scope:
                outputs.append(inference(x))
                tf.get_variable_scope().reuse_variables()
                scopes.append(scope)
    assert scopes == ["GPU_0/", "GPU_1/"]
    assert [v.name for v in tf.global_variables()] == ["layer1/weights:0", "layer1/biases:0"]
    assert [v.name for v in tf.trainable_variables()] == ["layer1/weights:0", "layer1/biases:0"]
    assert "GPU_0/layer1/MatMul" in op_names() and "GPU_1/layer1/MatMul" in op_names()
    assert outputs[0].op.name == "GPU_0/layer1/Relu" and outputs[1].op.name == "GPU_1/layer1/Relu"
    assert tf.get_variable_scope().reuse is True
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first, second = sess.run(outputs, feed)
    np.testing.assert_array_equal(first, second)


# -- reuse -----------------------------------------------------------------------------------------
def test_creating_an_existing_variable_is_an_error_naming_where_it_was_made():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [2, 3])
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("foo"):
            tf.get_variable("v", [2, 3])
    message = str(e.value)
    assert message.startswith("Variable foo/v already exists, disallowed. Did you mean to set "
                              "reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally "
                              "defined at:")
    assert "test_variable_scope.py" in message


def test_reusing_a_missing_variable_is_an_error():
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("foo", reuse=True):
            tf.get_variable("v", [1])
    assert str(e.value) == ("Variable foo/v does not exist, or was not created with "
                            "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                            "VarScope?")
    tf.Variable(1.0, name="plain")  # tf.Variable does not register with get_variable
    with pytest.raises(ValueError, match="Variable plain does not exist"):
        with tf.variable_scope("", reuse=True):
            tf.get_variable("plain", [])


def test_shape_and_dtype_mismatch_on_reuse():
    with tf.variable_scope("foo"):
        tf.get_variable("v", [3, 3])
    with tf.variable_scope("foo", reuse=True):
        with pytest.raises(ValueError) as e:
            tf.get_variable("v", [2, 3])
        assert str(e.value) == ("Trying to share variable foo/v, but specified shape (2, 3) and "
                                "found shape (3, 3).")
        with pytest.raises(ValueError, match="Trying to share variable foo/v, but specified "
                                             "dtype float64 and found dtype float32."):
            tf.get_variable("v", [3, 3], dtype=tf.float64)
        # A partially known shape that is compatible is fine.
        assert tf.get_variable("v", tf.TensorShape([None, 3])).name == "foo/v:0"


def test_auto_reuse_creates_then_returns():
    def make():
        with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [2])

    first, second = make(), make()
    assert first is second and len(tf.global_variables()) == 1
    with tf.variable_scope("net", reuse=tf.AUTO_REUSE) as s:
        assert s.reuse is tf.AUTO_REUSE
        with tf.variable_scope("sub") as sub:
            assert sub.reuse is tf.AUTO_REUSE
            assert tf.get_variable("x", [1]) is tf.get_variable("x", [1])


def test_reuse_is_inherited_and_reuse_false_inherits():
    with tf.variable_scope("a") as a:
        tf.get_variable("v", [1])
        assert a.reuse is False
        a.reuse_variables()
        with tf.variable_scope("b") as b:
            assert b.reuse is True
        with tf.variable_scope("c", reuse=False) as c:
            assert c.reuse is True  # False means "inherit" in TF 1.x
        assert tf.get_variable("v", [1]).name == "a/v:0"
    with tf.variable_scope("a") as a2:  # a fresh scope object: reuse is not sticky by name
        assert a2.reuse is False


def test_root_scope_and_reuse_variables_at_root():
    root = tf.get_variable_scope()
    assert root.name == "" and root.original_name_scope == "" and root.reuse is False
    v = tf.get_variable("v", [1])
    root.reuse_variables()
    assert tf.get_variable("v", [1]) is v
    with tf.variable_scope("child") as child:
        assert child.reuse is True


# -- initializers, dtypes, shapes ------------------------------------------------------------------
def test_initializer_from_value():
    c = tf.get_variable("c", initializer=tf.constant([1.0, 2.0]))
    d = tf.get_variable("d", initializer=[1, 2, 3])
    e = tf.get_variable("e", initializer=np.zeros((2, 2)))
    assert c.get_shape().as_list() == [2] and c.dtype is tf.float32
    assert d.dtype is tf.int32 and e.dtype is tf.float64
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(d), [1, 2, 3])
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("f", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="Initializer type '<dtype: 'float32'>' and explicit "
                                         "dtype '<dtype: 'float64'>' don't match."):
        tf.get_variable("g", dtype=tf.float64, initializer=[1.0, 2.0])


def test_default_initializers_and_missing_shape():
    i = tf.get_variable("i", [3], dtype=tf.int32)
    flag = tf.get_variable("flag", [2], dtype=tf.bool)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(i), [0, 0, 0])
        np.testing.assert_array_equal(sess.run(flag), [False, False])
    with pytest.raises(ValueError, match="Variable h did not get an initializer, so its `shape` "
                                         "argument must be specified."):
        tf.get_variable("h")
    with pytest.raises(TypeError, match=r"get_variable\('bad'\): shape must be a list"):
        tf.get_variable("bad", tf.constant([2]))


def test_custom_initializer_functions():
    def legacy(shape, dtype, partition_info=None):
        return tf.fill(shape, tf.constant(2.0, dtype))

    def no_partition_info(shape, dtype=tf.float32):
        return tf.ones(shape, dtype)

    a = tf.get_variable("a", [2], initializer=legacy)
    b = tf.get_variable("b", [2], dtype=tf.float64, initializer=no_partition_info)
    c = tf.get_variable("c", initializer=lambda: tf.constant([4.0, 5.0]))  # no shape: no args
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(a), [2.0, 2.0])
        assert sess.run(b).dtype == np.float64
        np.testing.assert_array_equal(sess.run(c), [4.0, 5.0])
    with pytest.raises(ValueError, match="initializer returned a value of shape"):
        tf.get_variable("wrong", [3], initializer=lambda shape, dtype, partition_info=None:
                        tf.zeros([2]))
    with pytest.raises(ValueError, match="initializer passed is not valid"):
        tf.get_variable("needs_shape", initializer=legacy)


def test_scope_defaults_are_inherited_and_overridable():
    with tf.variable_scope("s", initializer=tf.constant_initializer(3.0), dtype=tf.float64) as s:
        a = tf.get_variable("a", [2])
        with tf.variable_scope("deep"):
            b = tf.get_variable("b", [2])
            c = tf.get_variable("c", [2], initializer=tf.zeros_initializer(), dtype=tf.float32)
        s.set_initializer(tf.ones_initializer())
        d = tf.get_variable("d", [1])
    assert s.dtype is tf.float64 and a.dtype is tf.float64 and b.dtype is tf.float64
    assert c.dtype is tf.float32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(a).tolist() == [3.0, 3.0] and sess.run(b).tolist() == [3.0, 3.0]
        assert sess.run(c).tolist() == [0.0, 0.0] and sess.run(d).tolist() == [1.0]


# -- regularizers ----------------------------------------------------------------------------------
def test_get_variable_regularizer_adds_loss_to_collection():
    reg = tf.contrib.layers.l2_regularizer(0.1)
    with tf.name_scope("GPU_0"):
        with tf.variable_scope("layer1"):
            w = tf.get_variable("weights", [2, 2], regularizer=reg,
                                initializer=tf.constant_initializer([1.0, 2.0, 3.0, 4.0]))
            tf.add_to_collection("losses", reg(w))  # the tutorial's manual form
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert loss.op.name == "layer1/weights/Regularizer/l2_regularizer"
    (manual,) = tf.get_collection("losses", "GPU_0/")
    assert manual.op.name == "GPU_0/layer1/l2_regularizer"
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(loss) == pytest.approx(0.1 * 30 / 2)
        assert sess.run(manual) == pytest.approx(0.1 * 30 / 2)


def test_scope_regularizer_and_no_regularizer():
    reg = tf.contrib.layers.l1_regularizer(1.0)
    with tf.variable_scope("s", regularizer=reg):
        tf.get_variable("u", [3])
        tf.get_variable("v", [3], regularizer=tf.no_regularizer)
        tf.get_variable("z", [3], regularizer=tf.contrib.layers.l2_regularizer(0.0))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.op.name for t in losses] == ["s/u/Regularizer/l1_regularizer"]
    with tf.variable_scope("s", reuse=True):  # reusing does not add the loss again
        tf.get_variable("u", [3])
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1


# -- collections, devices, control dependencies, graphs --------------------------------------------
def test_collections_and_local_variables():
    nt = tf.get_variable("nt", [2], trainable=False)
    custom = tf.get_variable("custom", [1], collections=["mine"])
    lv = tf.get_local_variable("lv", [2])
    assert nt in tf.global_variables() and nt not in tf.trainable_variables()
    assert tf.get_collection("mine") == [custom] and custom not in tf.global_variables()
    assert custom in tf.trainable_variables()
    assert tf.local_variables() == [lv] and lv not in tf.trainable_variables()
    assert lv not in tf.global_variables()
    with tf.variable_scope("vs") as vs:
        a = tf.get_variable("a", [1])
        with tf.variable_scope("in"):
            b = tf.get_variable("b", [1], trainable=False)
    assert vs.global_variables() == [a, b] and vs.trainable_variables() == [a]


def test_variables_ignore_control_dependencies_but_keep_devices():
    dep = tf.no_op(name="dep")
    with tf.device("/cpu:0"), tf.control_dependencies([dep]):
        with tf.variable_scope("dev"):
            v = tf.get_variable("v", [1])
        after = tf.add(v, 1.0)
    assert v.device == "/device:CPU:0"
    assert v.initializer.control_inputs == [] and v.op.control_inputs == []
    assert after.op.control_inputs == [dep]


def test_values_select_the_graph():
    g = tf.Graph()
    with g.as_default():
        k = tf.constant(1.0)
    with tf.variable_scope("vals", values=[k]):
        assert tf.get_default_graph() is g
        v = tf.get_variable("v", [1])
    assert v.graph is g and tf.get_default_graph() is not g
    assert tf.global_variables() == []  # the default graph got nothing
    with g.as_default():
        assert tf.global_variables() == [v]


def test_each_graph_has_its_own_store_and_scopes():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        with tf.variable_scope("a"):
            v1 = tf.get_variable("v", [1])
            with g2.as_default():
                assert tf.get_variable_scope().name == ""
                v2 = tf.get_variable("v", [1])
    assert v1.name == "a/v:0" and v2.name == "v:0" and v2.graph is g2


def test_scopes_are_per_thread():
    seen = []
    graph = tf.get_default_graph()

    def worker():
        with graph.as_default():
            seen.append(tf.get_variable_scope().name)

    with tf.variable_scope("main_thread"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [""]


# -- custom getters, constructor checks, 0.x names -------------------------------------------------
def test_custom_getters_compose_inner_first():
    calls = []

    def outer(getter, name, *args, **kwargs):
        calls.append(("outer", name, kwargs["shape"], kwargs["trainable"]))
        return getter(name + "_outer", *args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append(("inner", name))
        return getter(name + "_inner", *args, **kwargs)

    with tf.variable_scope("cg", custom_getter=outer):
        with tf.variable_scope("in", custom_getter=inner):
            v = tf.get_variable("v", [1])
    assert calls == [("inner", "cg/in/v"), ("outer", "cg/in/v_inner", [1], True)]
    assert v.name == "cg/in/v_inner_outer:0"


def test_constructor_argument_errors():
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope is required"):
        tf.variable_scope(None)
    with pytest.raises(TypeError, match="name_or_scope must be a string or VariableScope"):
        tf.variable_scope(3)
    with pytest.raises(ValueError, match="The reuse parameter must be True or False or None."):
        tf.variable_scope("x", reuse=2)
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="d", reuse=True):
            pass
    with pytest.raises(TypeError, match="auxiliary_name_scope must be `True` or `False`"):
        tf.variable_scope("x", auxiliary_name_scope=1)
    with pytest.raises(ValueError, match="custom_getter which is not callable"):
        tf.variable_scope("x", custom_getter=3)
    with pytest.raises(ValueError, match="is not a valid scope name"):
        with tf.variable_scope("bad name!"):
            pass
    with pytest.raises(ValueError, match="Partitioner must be callable, but received: 3"):
        tf.get_variable("p", [4, 2], partitioner=3)
    assert tf.get_variable_scope().name == ""  # failed entries leave no scope behind


def test_auxiliary_name_scope_false_keeps_the_current_name_scope():
    with tf.name_scope("ns"):
        with tf.variable_scope("aux", auxiliary_name_scope=False) as s:
            c = tf.add(1.0, 2.0, name="c")
            v = tf.get_variable("v", [1])
    assert s.name == "aux" and s.original_name_scope == "ns/"
    assert c.name == "ns/c:0" and v.name == "aux/v:0"


def test_variable_op_scope_and_reentering_one_object():
    x = tf.constant(1.0)
    with tf.variable_op_scope([x], None, default_name="op") as s:
        assert s.name == "op" and tf.get_variable("w", [1]).name == "op/w:0"
    vs = tf.variable_scope("twice", reuse=tf.AUTO_REUSE)
    with vs as first:
        a = tf.get_variable("a", [1])
    with vs as second:
        assert tf.get_variable("a", [1]) is a
    assert first.name == second.name == "twice"


# -- tf.contrib.layers.fully_connected -------------------------------------------------------------
def test_fully_connected_values_names_and_reuse():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.contrib.layers.fully_connected(x, 3, weights_initializer=tf.constant_initializer(
        np.arange(12.0).reshape(4, 3) / 10), biases_initializer=tf.constant_initializer(-1.0))
    assert y.op.name == "fully_connected/Relu" and y.get_shape().as_list() == [None, 3]
    assert [v.name for v in tf.model_variables()] == ["fully_connected/weights:0",
                                                      "fully_connected/biases:0"]
    y2 = tf.contrib.layers.fully_connected(x, 3, activation_fn=None, scope="fully_connected",
                                           reuse=True)
    y3 = tf.contrib.layers.fully_connected(x, 2, activation_fn=tf.nn.sigmoid)
    # As in TF: variable scope 'fully_connected_1', but name scope 'fully_connected_2' (the
    # explicit scope= call above opened name scope 'fully_connected_1').
    assert y3.op.name == "fully_connected_2/Sigmoid"
    assert [v.name for v in tf.model_variables()][2:] == ["fully_connected_1/weights:0",
                                                          "fully_connected_1/biases:0"]
    assert len(tf.trainable_variables()) == 4
    xv = np.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, -1.0, 2.0]], np.float32)
    expected = xv @ (np.arange(12.0).reshape(4, 3) / 10) - 1.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_linear = sess.run([y, y2], {x: xv})
    np.testing.assert_allclose(got, np.maximum(expected, 0), rtol=1e-6)
    np.testing.assert_allclose(got_linear, expected, rtol=1e-6)


def test_fully_connected_rank3_regularizer_collections_and_errors():
    x = tf.placeholder(tf.float32, [2, 5, 3])
    y = tf.contrib.layers.fully_connected(
        x, 4, activation_fn=None, weights_regularizer=tf.contrib.layers.l2_regularizer(0.5),
        biases_initializer=None, variables_collections={"weights": ["my_weights"]},
        outputs_collections=["outs"], scope="fc")
    assert y.get_shape().as_list() == [2, 5, 4]
    (w,) = tf.get_collection("my_weights")
    assert w.name == "fc/weights:0" and len(tf.trainable_variables()) == 1
    assert tf.get_collection("outs") == [y]
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    xv = np.random.RandomState(0).randn(2, 5, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, wv, lv = sess.run([y, w, loss], {x: xv})
    np.testing.assert_allclose(got, xv @ wv, rtol=1e-5, atol=1e-6)
    assert lv == pytest.approx(0.5 * np.sum(wv ** 2) / 2, rel=1e-5)
    with pytest.raises(ValueError, match="num_outputs type should be one of"):
        tf.contrib.layers.fully_connected(x, 2.0)
    with pytest.raises(ValueError, match="last dimension of the inputs must be defined"):
        tf.contrib.layers.fully_connected(tf.placeholder(tf.float32, [2, None]), 2)


def test_fully_connected_gradient():
    x = tf.placeholder(tf.float64, [3, 4])
    y = tf.contrib.layers.fully_connected(x, 2, activation_fn=tf.nn.tanh,
                                          biases_initializer=tf.constant_initializer(0.1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        theoretical, numerical = compute_gradient(x, [3, 4], y, [3, 2], session=sess)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-6)


def test_flatten():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = tf.contrib.layers.flatten(x)
    assert flat.get_shape().as_list() == [None, 6] and flat.op.name.startswith("Flatten/")
    xv = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(flat, {x: xv}), xv.reshape(2, 6))
    z = tf.placeholder(tf.float32, [None, None, 3])
    dynamic = tf.contrib.layers.flatten(z)
    assert dynamic.get_shape().as_list() == [None, None]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dynamic, {z: xv}), xv.reshape(2, 6))
    with pytest.raises(ValueError, match="at least 2 dimensions|a least 2 dimensions"):
        tf.contrib.layers.flatten(tf.constant([1.0, 2.0]))

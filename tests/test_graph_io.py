"""GraphDef round trip: export_graph_def, rebuild_graph (exact) and tf.import_graph_def."""
import time

import numpy as np
import pytest
from tensorboard.compat.proto import attr_value_pb2, graph_pb2

import tfjupyter as tf
from tfjupyter.framework.graph_io import export_graph_def, import_graph_def, rebuild_graph
from tfjupyter.framework.registry import register_op
from tfjupyter.framework.tensor_shape import TensorShape


@register_op("GraphIoTestAttrs")
def _attrs_only_shape(op):
    return []


# -- helpers --------------------------------------------------------------------------------------
def strict_equal(a, b) -> bool:
    """Equal values of the same Python types throughout (list is not tuple, str is not bytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (a.dtype == b.dtype and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f")))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, TensorShape):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, float) and np.isnan(a):
        return bool(np.isnan(b))
    if isinstance(a, float):
        return a == b and np.copysign(1, a) == np.copysign(1, b)
    return a is b if isinstance(a, tf.DType) else a == b


def wire(graph_def: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """The GraphDef as a task receives it: serialized and parsed again."""
    return graph_pb2.GraphDef.FromString(graph_def.SerializeToString())


def round_trip(graph: tf.Graph) -> tf.Graph:
    return rebuild_graph(wire(export_graph_def(graph)))


def assert_same_graph(g1: tf.Graph, g2: tf.Graph) -> None:
    ops1, ops2 = g1.get_operations(), g2.get_operations()
    assert [op.name for op in ops1] == [op.name for op in ops2]
    for a, b in zip(ops1, ops2):
        assert b.graph is g2
        assert (a.type, a.device) == (b.type, b.device), a.name
        assert [t.name for t in a.inputs] == [t.name for t in b.inputs], a.name
        assert [c.name for c in a.control_inputs] == [c.name for c in b.control_inputs], a.name
        assert set(a._attrs) == set(b._attrs), a.name
        for key, value in a._attrs.items():
            assert strict_equal(b._attrs[key], value), (a.name, key, value, b._attrs[key])
        assert ([(t.dtype, t.shape.as_tuple()) for t in a.outputs]
                == [(t.dtype, t.shape.as_tuple()) for t in b.outputs]), a.name


def attrs_round_trip(attrs: dict) -> dict:
    with tf.Graph().as_default() as g:
        g.create_op("GraphIoTestAttrs", [], attrs, name="holder")
    return round_trip(g).get_operation_by_name("holder")._attrs


# -- representative graphs ------------------------------------------------------------------------
def test_mlp_with_momentum_saver_and_summaries(tmp_path):
    tf.set_random_seed(7)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    with tf.variable_scope("hidden"):
        w1 = tf.get_variable("weights", [4, 8],
                             initializer=tf.truncated_normal_initializer(stddev=0.5))
        b1 = tf.get_variable("biases", [8], initializer=tf.constant_initializer(0.1))
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.variable_scope("softmax"), tf.device("/cpu:0"):
        w2 = tf.get_variable("weights", [8, 3])
        logits = tf.matmul(hidden, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("hidden_weights", w1)
    merged = tf.summary.merge_all()
    global_step = tf.Variable(0, trainable=False, name="global_step")
    train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=global_step)
    with tf.control_dependencies([train]):
        step_loss = tf.identity(loss, name="step_loss")
    saver = tf.train.Saver()
    init = tf.global_variables_initializer()
    graph = tf.get_default_graph()

    rebuilt = round_trip(graph)
    assert_same_graph(graph, rebuilt)

    rng = np.random.RandomState(0)
    feeds = [(rng.randn(5, 4).astype(np.float32), rng.randint(0, 3, 5)) for _ in range(3)]
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        expected = [sess.run([step_loss, merged], {x: f, labels: l}) for f, l in feeds]
        path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        trained = sess.run([w1, b1, w2, global_step])
    with tf.Session(graph=rebuilt) as sess:
        sess.run(init.name)
        got = [sess.run([step_loss.name, merged.name], {"x:0": f, "labels:0": l})
               for f, l in feeds]
        for (loss_a, summary_a), (loss_b, summary_b) in zip(expected, got):
            assert loss_a == loss_b
            assert summary_a == summary_b
        sess.run(init.name)
        sess.run(saver.saver_def.restore_op_name, {saver.saver_def.filename_tensor_name: path})
        restored = sess.run([w1.name, b1.name, w2.name, global_step.name])
    for a, b in zip(trained, restored):
        np.testing.assert_array_equal(a, b)


def test_conv_net_with_adam_lrn_and_dropout():
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    targets = tf.placeholder(tf.float32, [None, 2], name="targets")
    kernel = tf.Variable(tf.truncated_normal([3, 3, 1, 4], stddev=0.3, seed=11), name="kernel")
    conv = tf.nn.relu(tf.nn.conv2d(images, kernel, [1, 1, 1, 1], "SAME"))
    pool = tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    norm = tf.nn.lrn(pool, depth_radius=2, bias=1.5, alpha=0.3, beta=0.6, name="norm")
    flat = tf.reshape(tf.nn.dropout(norm, keep_prob=0.75, seed=5), [-1, 4 * 4 * 4])
    dense = tf.Variable(tf.random_normal([64, 2], stddev=0.1, seed=12), name="dense")
    loss = tf.reduce_mean(tf.square(tf.matmul(flat, dense) - targets), name="loss")
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    init = tf.global_variables_initializer()
    graph = tf.get_default_graph()

    graph_def = export_graph_def(graph)
    lrn = next(n for n in graph_def.node if n.name == "norm")
    assert lrn.attr["alpha"].f == pytest.approx(0.3) and lrn.attr["alpha"].f != 0.3
    assert "alpha" in lrn.attr["_tfjupyter_attrs"].func.attr   # the exact float64 beside it
    assert "bias" not in lrn.attr["_tfjupyter_attrs"].func.attr  # 1.5 is exact in float32
    rebuilt = rebuild_graph(wire(graph_def))
    assert_same_graph(graph, rebuilt)
    assert rebuilt.get_operation_by_name("norm").get_attr("alpha") == 0.3

    rng = np.random.RandomState(1)
    batch = {"images:0": rng.rand(3, 8, 8, 1).astype(np.float32),
             "targets:0": rng.rand(3, 2).astype(np.float32)}
    results = []
    for g in (graph, rebuilt):
        with tf.Session(graph=g) as sess:
            sess.run(init.name)
            losses = [sess.run([loss.name, train.name], batch)[0] for _ in range(3)]
            results.append((losses, sess.run([kernel.name, dense.name])))
    (losses_a, vars_a), (losses_b, vars_b) = results
    assert losses_a == losses_b
    for a, b in zip(vars_a, vars_b):
        np.testing.assert_array_equal(a, b)


def test_seeded_random_ops_give_the_same_values():
    tf.set_random_seed(42)
    ops = [tf.random_normal([3, 2]), tf.random_uniform([4], -2, 3),
           tf.truncated_normal([2, 2], seed=9), tf.random_shuffle(tf.range(10)),
           tf.multinomial(tf.log([[0.2, 0.3, 0.5]]), 5),
           tf.random_uniform([3], 0, 100, dtype=tf.int64)]
    graph = tf.get_default_graph()
    rebuilt = round_trip(graph)
    assert_same_graph(graph, rebuilt)
    runs = []
    for g in (graph, rebuilt):
        with tf.Session(graph=g) as sess:
            runs.append([sess.run([t.name for t in ops]) for _ in range(2)])
    for a, b in zip(*runs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert not np.array_equal(runs[0][0][0], runs[0][1][0])   # the stream moves on


def test_string_constants_and_placeholders_with_partial_shapes():
    consts = [tf.constant(b"\xff\x00raw"), tf.constant(["a", "bc"]),
              tf.constant([["x"], ["y\xe9"]]), tf.constant(""), tf.constant([], tf.string),
              tf.constant(np.zeros((0, 3), np.float32)), tf.constant(np.float16(1.5))]
    tf.placeholder(tf.float32, [None, 3], name="partial")
    tf.placeholder(tf.int32, None, name="unknown_rank")
    tf.placeholder(tf.bool, [], name="scalar")
    with_default = tf.placeholder_with_default(tf.constant([[1., 2.]]), [None, None], name="pwd")
    refined = tf.placeholder(tf.float32, name="refined")
    refined.set_shape([2, 5])
    graph = tf.get_default_graph()
    rebuilt = round_trip(graph)
    assert_same_graph(graph, rebuilt)
    assert rebuilt.get_tensor_by_name("partial:0").shape.as_list() == [None, 3]
    assert rebuilt.get_tensor_by_name("unknown_rank:0").shape.ndims is None
    assert rebuilt.get_tensor_by_name("scalar:0").shape.as_list() == []
    assert rebuilt.get_tensor_by_name("pwd:0").shape.as_list() == [None, None]
    assert rebuilt.get_tensor_by_name("refined:0").shape.as_list() == [2, 5]
    names = [t.name for t in consts] + [with_default.name]
    with tf.Session(graph=graph) as sess:
        expected = sess.run(names)
    with tf.Session(graph=rebuilt) as sess:
        got = sess.run(names)
    for a, b in zip(expected, got):
        assert strict_equal(np.asarray(a), np.asarray(b))


def test_devices_control_inputs_and_colocation_are_kept():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([2]), name="w")
    with tf.device("/job:worker/replica:0/task:1/device:CPU:0"):
        a = tf.constant([1., 2.], name="a")
        with tf.colocate_with(w):
            near_w = tf.identity(a, name="near_w")
        with tf.control_dependencies([a.op, near_w]):
            gated = tf.no_op(name="gated")
    late = tf.constant(3., name="late")
    late.op._add_control_input(gated)
    graph = tf.get_default_graph()
    rebuilt = round_trip(graph)
    assert_same_graph(graph, rebuilt)
    assert rebuilt.get_operation_by_name("w").device == "/job:ps/task:0"
    assert rebuilt.get_operation_by_name("near_w").device == "/job:ps/task:0"
    assert rebuilt.get_operation_by_name("near_w").get_attr("_class") == [b"loc:@w"]
    assert rebuilt.get_operation_by_name("a").device == \
        "/job:worker/replica:0/task:1/device:CPU:0"
    assert [c.name for c in rebuilt.get_operation_by_name("late").control_inputs] == ["gated"]

    cleared = export_graph_def(graph, clear_devices=True)
    assert all(n.device == "" for n in cleared.node)
    assert list(next(n for n in cleared.node if n.name == "near_w").attr["_class"].list.s) \
        == [b"loc:@w"]


def test_names_are_marked_used_in_the_rebuilt_graph():
    with tf.name_scope("layer"):
        tf.constant(1., name="c")
    tf.constant(2., name="add")
    rebuilt = round_trip(tf.get_default_graph())
    with rebuilt.as_default():
        assert tf.constant(3., name="add").op.name == "add_1"
        with tf.name_scope("layer") as scope:
            assert scope == "layer_1/"


def test_graph_def_in_any_node_order_is_rebuilt_in_dependency_order():
    a = tf.constant(2., name="a")
    b = tf.square(a, name="b")
    c = tf.add(a, b, name="c")
    with tf.control_dependencies([c]):
        tf.no_op(name="d")
    graph_def = export_graph_def(tf.get_default_graph())
    shuffled = graph_pb2.GraphDef()
    shuffled.node.extend(reversed(graph_def.node))
    rebuilt = rebuild_graph(shuffled)
    assert [op.name for op in rebuilt.get_operations()] == ["a", "b", "c", "d"]
    with tf.Session(graph=rebuilt) as sess:
        assert sess.run("c:0") == 6.0


# -- attr encoding --------------------------------------------------------------------------------
ATTR_VALUES = [
    True, False, 0, -1, 2 ** 63 - 1, -2 ** 63, 1.5, 0.1, 1e300, -1e-320, float("inf"),
    float("nan"), -0.0, "SAME", "", "ünïcödé", b"", b"\xff\xfe", b"ascii",
    tf.float32, tf.float64, tf.float16, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8,
    tf.bool, tf.string, TensorShape(None), TensorShape([]), TensorShape([None, 3]),
    TensorShape([0, 7]),
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array(2.5), np.array([1, -2], np.int64),
    np.array([[255, 0]], np.uint8), np.array([-128], np.int8), np.array([7], np.int16),
    np.array([1.5, np.nan], np.float16), np.array([True, False]), np.array(True),
    np.zeros((0, 3), np.float32), np.array([[b"a", b""], [b"\xff", b"long" * 10]], dtype=object),
    np.array(b"scalar", dtype=object), np.array([], dtype=object),
    [], (), [1, 2], (1, 2, 2, 1), [True, False], [0.5, 0.25], [0.1, 0.2], ["a", "b"],
    [b"a", b"b"], ["a", b"b"], [tf.int32, tf.float64], [TensorShape([1]), TensorShape(None)],
    [[1, 2], [3]], [[]], [1, [2, [3, (4,)]]], [None], None, [np.zeros(2), np.ones((1,), np.int32)],
    [1, "a", None, 0.1, b"b", tf.string], ((),),
]


@pytest.mark.parametrize("value", ATTR_VALUES, ids=[repr(v)[:40] for v in ATTR_VALUES])
def test_every_attr_kind_round_trips_exactly(value):
    attrs = attrs_round_trip({"a": value, "_class": [b"loc:@holder"]})
    assert strict_equal(attrs["a"], value)
    assert strict_equal(attrs["_class"], [b"loc:@holder"])


def test_numpy_scalars_come_back_as_the_equal_python_scalars():
    attrs = attrs_round_trip({"f": np.float32(0.1), "d": np.float64(0.1), "i": np.int64(-3),
                              "b": np.bool_(True), "l": [np.int32(1), np.int64(2)]})
    assert strict_equal(attrs["f"], float(np.float32(0.1)))
    assert strict_equal(attrs["d"], 0.1)
    assert strict_equal(attrs["i"], -3)
    assert strict_equal(attrs["b"], True)
    assert strict_equal(attrs["l"], [1, 2])


def test_lossy_values_keep_their_tensorflow_form_beside_the_exact_one():
    with tf.Graph().as_default() as g:
        g.create_op("GraphIoTestAttrs", [], {"strides": (1, 2, 2, 1), "eps": 1e-8, "tag": b"t",
                                             "pad": "SAME", "none": None,
                                             "nested": [[1, 2], [3]]}, name="h")
    node = wire(export_graph_def(g)).node[0]
    assert list(node.attr["strides"].list.i) == [1, 2, 2, 1]
    assert node.attr["eps"].f == pytest.approx(1e-8)
    assert node.attr["tag"].s == b"t" and node.attr["pad"].s == b"SAME"
    assert node.attr["none"].WhichOneof("value") is None
    assert node.attr["nested"].func.name == "tfjupyter.list"
    assert sorted(node.attr["_tfjupyter_attrs"].func.attr) == ["eps", "strides", "tag"]
    assert "_output_shapes" not in node.attr       # the op has no outputs


class _Opaque:
    pass


@pytest.mark.parametrize("value", [lambda x: x, {"a": 1}, _Opaque(), 2 ** 64, -2 ** 63 - 1,
                                   np.array([1 + 2j], np.clongdouble), np.array(["unicode"]),
                                   np.array(["str"], dtype=object), np.array([None]),
                                   {1, 2}, [lambda: 0], np.zeros(2, ">f4")],
                         ids=["lambda", "dict", "object", "2**64", "-2**63-1", "complex256",
                              "unicode_array", "str_object_array", "none_array", "set",
                              "list_of_lambda", "big_endian"])
def test_unrepresentable_attrs_raise_naming_op_and_attr(value):
    with tf.Graph().as_default() as g:
        g.create_op("GraphIoTestAttrs", [], {"ok": 1, "bad_attr": value}, name="the_op")
    with pytest.raises(ValueError, match=r"'the_op'.*'bad_attr'"):
        export_graph_def(g)


def test_reserved_attr_names_are_refused():
    with tf.Graph().as_default() as g:
        g.create_op("GraphIoTestAttrs", [], {"_output_shapes": []}, name="h")
    with pytest.raises(ValueError, match="'h'.*'_output_shapes'.*reserved"):
        export_graph_def(g)


def test_registered_ops_of_representative_graphs_all_export():
    """Every attr the library's ops set in these graphs has a GraphDef form."""
    x = tf.placeholder(tf.float32, [2, 6, 6, 3])
    y = tf.nn.avg_pool(tf.nn.bias_add(x, tf.ones([3])), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    parts = tf.split(y, 3, axis=3)
    s = tf.squeeze(tf.concat(parts, 3)[:, :1, ::2], [1])
    tf.reduce_max(tf.cumsum(tf.nn.softmax(tf.reshape(s, [2, -1])), exclusive=True), 1)
    tf.one_hot(tf.argmax(tf.reshape(s, [2, -1]), 1), 4)
    tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    tf.gradients(tf.reduce_sum(tf.nn.conv2d(x, tf.ones([2, 2, 3, 1]), [1, 1, 1, 1], "SAME")),
                 [x])
    tf.train.ExponentialMovingAverage(0.99).apply([tf.Variable(1.0)])
    graph = tf.get_default_graph()
    assert_same_graph(graph, round_trip(graph))


# -- size and speed -------------------------------------------------------------------------------
def test_large_constant_travels_as_tensor_content_and_fast():
    value = np.random.RandomState(0).rand(1000, 1000).astype(np.float32)
    big = tf.constant(value, name="big")
    total = tf.reduce_sum(big, name="total")
    graph = tf.get_default_graph()
    start = time.perf_counter()
    data = export_graph_def(graph).SerializeToString()
    rebuilt = rebuild_graph(graph_pb2.GraphDef.FromString(data))
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, elapsed
    assert len(data) < value.nbytes + 4096
    tensor = graph_pb2.GraphDef.FromString(data).node[0].attr["value"].tensor
    assert len(tensor.tensor_content) == value.nbytes and not tensor.float_val
    rebuilt_value = rebuilt.get_operation_by_name("big").get_attr("value")
    np.testing.assert_array_equal(rebuilt_value, value)
    assert rebuilt_value.flags.writeable
    with tf.Session(graph=rebuilt) as sess:
        assert sess.run(total.name) == pytest.approx(float(value.sum(dtype=np.float64)), rel=1e-5)


# -- subsets --------------------------------------------------------------------------------------
def test_export_a_subset_in_creation_order():
    a = tf.constant(1., name="a")
    b = tf.constant(2., name="b")
    c = tf.add(a, b, name="c")
    d = tf.negative(c, name="d")
    graph_def = export_graph_def([d.op, c.op, c.op])
    assert [n.name for n in graph_def.node] == ["c", "d"]
    assert list(graph_def.node[0].input) == ["a", "b"]
    with pytest.raises(ValueError, match="Node 'c': Unknown input node 'a'"):
        rebuild_graph(graph_def)
    assert len(export_graph_def([]).node) == 0
    assert len(rebuild_graph(graph_pb2.GraphDef()).get_operations()) == 0
    with tf.Graph().as_default():
        other = tf.constant(0., name="other")
    with pytest.raises(ValueError, match="another graph"):
        export_graph_def([c.op, other.op])
    with pytest.raises(TypeError):
        export_graph_def(c)


def test_output_indices_beyond_zero_are_written_as_name_colon_index():
    parts = tf.split(tf.constant([1., 2., 3., 4.]), 2, name="split")
    tf.identity(parts[1], name="second")
    graph_def = export_graph_def(tf.get_default_graph())
    assert list(next(n for n in graph_def.node if n.name == "second").input) == ["split:1"]
    with tf.Session(graph=rebuild_graph(graph_def)) as sess:
        np.testing.assert_array_equal(sess.run("second:0"), [3., 4.])


# -- malformed GraphDefs --------------------------------------------------------------------------
def _node(graph_def, name, op, inputs=(), **attrs):
    node = graph_def.node.add(name=name, op=op)
    node.input.extend(inputs)
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    return node


def _float_const(graph_def, name, value=1.0, dtype=tf.float32):
    with tf.Graph().as_default() as g:
        tf.constant(value, dtype=dtype, name=name)
    graph_def.node.extend(export_graph_def(g).node)


def test_rebuild_errors_name_the_node():
    gd = graph_pb2.GraphDef()
    _node(gd, "n", "NoSuchOp")
    with pytest.raises(ValueError, match="Node 'n': Op type not registered 'NoSuchOp'"):
        rebuild_graph(gd)

    gd = graph_pb2.GraphDef()
    _float_const(gd, "a")
    _node(gd, "y", "Identity", ["a:2"])
    with pytest.raises(ValueError, match="Node 'y': Connecting to invalid output 2 of source "
                                         "node a which has 1 outputs"):
        rebuild_graph(gd)

    gd = graph_pb2.GraphDef()
    _float_const(gd, "f")
    _float_const(gd, "i", [[1]], tf.int32)
    _node(gd, "mm", "MatMul", ["f", "i"], transpose_a=attr_value_pb2.AttrValue(b=False),
          transpose_b=attr_value_pb2.AttrValue(b=False))
    with pytest.raises(ValueError, match="mm"):
        rebuild_graph(gd)

    gd = graph_pb2.GraphDef()
    _node(gd, "c", "Const")                       # no value, no dtype
    with pytest.raises(ValueError, match="'c'"):
        rebuild_graph(gd)


@pytest.mark.parametrize("build, message", [
    (lambda gd: (_float_const(gd, "a"), _float_const(gd, "a")), "Duplicate node name.*'a'"),
    (lambda gd: _node(gd, "bad name", "NoOp"), "'bad name'.*invalid characters"),
    (lambda gd: (_float_const(gd, "a"), _node(gd, "y", "Identity", ["a:x"])),
     "Node 'y': malformed input 'a:x'"),
    (lambda gd: (_float_const(gd, "a"), _node(gd, "y", "Identity", ["^a", "a"])),
     "Node 'y'.*control inputs must come last"),
    (lambda gd: _node(gd, "y", "NoOp", ["^ghost"]), "Node 'y': Unknown input node '\\^ghost'"),
    (lambda gd: _node(gd, "p", "Placeholder", dtype=attr_value_pb2.AttrValue(type=14),
                      shape=attr_value_pb2.AttrValue(shape={"unknown_rank": True})),
     "Node 'p': attr 'dtype' has DataType bfloat16"),
    (lambda gd: _node(gd, "p", "Placeholder", dtype=attr_value_pb2.AttrValue(placeholder="T")),
     "Node 'p': attr 'dtype'"),
    (lambda gd: _node(gd, "p", "NoOp", f=attr_value_pb2.AttrValue(func={"name": "my_fn"})),
     "Node 'p': attr 'f'.*function attrs are not supported"),
])
def test_malformed_graph_defs_raise_value_errors(build, message):
    gd = graph_pb2.GraphDef()
    build(gd)
    with pytest.raises(ValueError, match=message):
        rebuild_graph(gd)


def test_cycles_are_reported_with_their_nodes():
    gd = graph_pb2.GraphDef()
    _float_const(gd, "start")
    _node(gd, "c", "Identity", ["a"])
    _node(gd, "a", "Identity", ["b"])
    _node(gd, "b", "AddV2", ["start", "a"])
    with pytest.raises(ValueError, match="cycle: (a -> b -> a|b -> a -> b)"):
        rebuild_graph(gd)


def test_inconsistent_output_shapes_are_refused():
    with tf.Graph().as_default() as g:
        tf.constant([1., 2.], name="c")
    gd = export_graph_def(g)
    shapes = gd.node[0].attr["_output_shapes"].list.shape
    shapes[0].dim[0].size = 3
    with pytest.raises(ValueError, match="Node 'c'.*incompatible"):
        rebuild_graph(gd)


def test_not_a_graph_def_and_function_libraries():
    with pytest.raises(TypeError, match="GraphDef"):
        rebuild_graph(b"bytes")
    with pytest.raises(TypeError, match="GraphDef"):
        import_graph_def("text")
    # Library functions are read as the If/While ops that name them (tests/
    # test_tf_interop_control_flow.py); a node calling one as its op type is not supported.
    gd = graph_pb2.GraphDef()
    gd.library.function.add().signature.name = "f"
    gd.node.add(name="call", op="f")
    with pytest.raises(ValueError, match="Op type not registered 'f'"):
        rebuild_graph(gd)


def test_a_graph_def_written_by_tensorflow_reads_back():
    gd = graph_pb2.GraphDef()
    const = _node(gd, "filled", "Const")
    const.attr["dtype"].type = 1
    tensor = const.attr["value"].tensor
    tensor.dtype = 1
    tensor.tensor_shape.dim.add(size=2)
    tensor.tensor_shape.dim.add(size=3)
    tensor.float_val.append(1.5)                  # one value fills the tensor
    const.attr["_output_shapes"].list.shape.add().CopyFrom(tensor.tensor_shape)
    ints = _node(gd, "ints", "Const")
    ints.attr["dtype"].type = 3
    ints.attr["value"].tensor.dtype = 3
    ints.attr["value"].tensor.tensor_shape.dim.add(size=3)
    ints.attr["value"].tensor.int_val.extend([4, 5, 6])
    zeros = _node(gd, "zeros", "Const")
    zeros.attr["dtype"].type = 2
    zeros.attr["value"].tensor.dtype = 2
    zeros.attr["value"].tensor.tensor_shape.dim.add(size=2)
    words = _node(gd, "words", "Const")
    words.attr["dtype"].type = 7
    words.attr["value"].tensor.dtype = 7
    words.attr["value"].tensor.tensor_shape.dim.add(size=2)
    words.attr["value"].tensor.string_val.extend([b"hi", b"there"])
    var = _node(gd, "v", "VariableV2")
    var.attr["dtype"].type = 101                  # DT_FLOAT_REF
    var.attr["shape"].shape.dim.add(size=2)
    var.attr["shape"].shape.dim.add(size=3)
    var.attr["container"].s = b""
    var.attr["shared_name"].s = b""
    _node(gd, "sum", "Add", ["filled", "filled"], T=attr_value_pb2.AttrValue(type=1))
    graph = tf.Graph()
    with graph.as_default():
        assert import_graph_def(gd, name="") is None
    assert graph.get_operation_by_name("v").get_attr("dtype") is tf.float32
    assert graph.get_operation_by_name("v").get_attr("container") == ""
    assert graph.get_operation_by_name("sum").get_attr("T") is tf.float32
    with tf.Session(graph=graph) as sess:
        total, ints_v, zeros_v, words_v = sess.run(["sum:0", "ints:0", "zeros:0", "words:0"])
    np.testing.assert_array_equal(total, np.full((2, 3), 3.0, np.float32))
    assert strict_equal(ints_v, np.array([4, 5, 6], np.int32))
    assert strict_equal(zeros_v, np.zeros(2))
    assert list(words_v) == [b"hi", b"there"]


# -- tf.import_graph_def --------------------------------------------------------------------------
def _affine_graph_def() -> graph_pb2.GraphDef:
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.add(x * 2.0, 1.0, name="y")
        with tf.control_dependencies([y]):
            tf.no_op(name="after_y")
    return export_graph_def(g)


def test_import_prefixes_names_and_runs():
    graph_def = _affine_graph_def()
    names = [n.name for n in graph_def.node]
    import_graph_def(graph_def)
    import_graph_def(graph_def)
    graph = tf.get_default_graph()
    got = [op.name for op in graph.get_operations()]
    assert got == [f"import/{n}" for n in names] + [f"import_1/{n}" for n in names]
    assert [c.name for c in graph.get_operation_by_name("import/after_y").control_inputs] \
        == ["import/y"]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run("import_1/y:0", {"import_1/x:0": [1., 2.]}),
                                      [3., 5.])


def test_import_with_input_map_and_return_elements():
    c = tf.constant([3.], name="c")
    y, x_op, after = import_graph_def(_affine_graph_def(), input_map={"x:0": c},
                                      return_elements=["y:0", "x", "after_y"], name="net")
    assert isinstance(y, tf.Tensor) and y.name == "net/y:0"
    assert isinstance(x_op, tf.Operation) and x_op.name == "net/x"
    assert after.name == "net/after_y"
    assert y.op.inputs[0].op.inputs[0] is c           # net/mul(c, net/mul/y)
    (mapped,) = import_graph_def(_affine_graph_def(), input_map={"x": 4.0},
                                 return_elements=["x:0"], name="conv")
    assert mapped.op.name.startswith("conv/")           # the converted value, in the scope
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [7.])
        assert sess.run("conv/y:0") == 9.0


def test_import_with_empty_name_keeps_names_and_makes_clashes_unique():
    graph_def = _affine_graph_def()
    import_graph_def(graph_def, name="")
    assert tf.get_default_graph().get_operation_by_name("y").type in ("Add", "AddV2")
    (y,) = import_graph_def(graph_def, name="", return_elements=["y:0"])
    assert y.name == "y_1:0"
    x1 = tf.get_default_graph().get_tensor_by_name("x_1:0")
    assert y.op.inputs[0].op.inputs[0] is x1
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x1: [10.]}), [21.])
    assert tf.constant(0., name="y").op.name == "y_2"


def test_import_remaps_control_inputs():
    gate = tf.no_op(name="gate")
    with tf.Graph().as_default() as g:
        first = tf.no_op(name="first")
        with tf.control_dependencies([first]):
            tf.constant(1., name="gated")
    (gated,) = import_graph_def(export_graph_def(g), input_map={"^first": gate},
                                return_elements=["gated"])
    assert [c.name for c in gated.control_inputs] == ["gate"]


def test_import_devices_follow_enclosing_scopes_and_colocation():
    with tf.Graph().as_default() as g:
        with tf.device("/device:CPU:0"):
            w = tf.Variable([1.], name="w")
        free = tf.constant(1., name="free")
        with tf.colocate_with(w):
            tf.identity(free, name="by_w")
    graph_def = export_graph_def(g)
    with tf.device("/job:worker/task:1"):
        import_graph_def(graph_def, name="m")
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("m/w").device == "/job:worker/task:1/device:CPU:0"
    assert graph.get_operation_by_name("m/free").device == "/job:worker/task:1"
    by_w = graph.get_operation_by_name("m/by_w")
    assert by_w.get_attr("_class") == [b"loc:@m/w"]
    assert by_w.device == "/job:worker/task:1/device:CPU:0"


def test_import_errors_and_failed_imports_change_nothing():
    graph = tf.get_default_graph()
    c = tf.constant([1], name="c")
    before = [op.name for op in graph.get_operations()]
    with pytest.raises(ValueError, match=r"Input 0 of node import/mul was passed int32 from "
                                         r"c:0 incompatible with expected float32"):
        import_graph_def(_affine_graph_def(), input_map={"x:0": c})
    with pytest.raises(ValueError, match=r"Attempted to map inputs that were not found in "
                                         r"graph_def: \[nope:0\]"):
        import_graph_def(_affine_graph_def(), input_map={"nope:0": c})
    with pytest.raises(ValueError, match="Requested return_element 'ghost' not found"):
        import_graph_def(_affine_graph_def(), return_elements=["ghost"])
    with pytest.raises(ValueError, match="Requested return_element 'y:3' not found"):
        import_graph_def(_affine_graph_def(), return_elements=["y:3"])
    with pytest.raises(ValueError, match="requires a non-empty `name`"):
        import_graph_def(_affine_graph_def(), input_map={"x:0": 1.0}, name="")
    with pytest.raises(TypeError, match="input_map must be a dictionary"):
        import_graph_def(_affine_graph_def(), input_map=[("x:0", c)])
    with pytest.raises(TypeError, match="return_elements must be a list of strings"):
        import_graph_def(_affine_graph_def(), return_elements="y:0")
    gd = graph_pb2.GraphDef()
    _float_const(gd, "f")
    _float_const(gd, "i", [[1]], tf.int32)
    _node(gd, "mm", "MatMul", ["f", "i"], transpose_a=attr_value_pb2.AttrValue(b=False),
          transpose_b=attr_value_pb2.AttrValue(b=False))
    with pytest.raises(ValueError, match="import/mm"):
        import_graph_def(gd)
    assert [op.name for op in graph.get_operations()] == before
    assert c.consumers() == []
    assert tf.constant(0., name="f").op.name == "f"
    with tf.name_scope("import") as scope:
        assert scope == "import/"                    # no failed import kept the name
    graph.finalize()
    with pytest.raises(RuntimeError, match="finalized"):
        import_graph_def(_affine_graph_def())


def test_a_graph_reads_in_a_process_that_has_not_loaded_its_ops(tmp_path):
    # A program that only touched the graph reader (or tf.train) has not imported the modules
    # that define nn ops; reading a graph with a Relu must load them, not fail.
    import subprocess
    import sys
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.nn.relu(tf.nn.bias_add(x, tf.constant([1.0, -1.0])), name="y")
    path = tmp_path / "g.pb"
    path.write_bytes(g.as_graph_def().SerializeToString())
    script = (
        "from tensorboard.compat.proto import graph_pb2\n"
        "from tfjupyter.framework import graph_io\n"
        "from tfjupyter.framework.ops import Graph\n"
        f"gd = graph_pb2.GraphDef(); gd.ParseFromString(open({str(path)!r}, 'rb').read())\n"
        "with Graph().as_default() as g:\n"
        "    graph_io.import_graph_def(gd, name='')\n"
        "    print(sorted(op.type for op in g.get_operations()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == "['BiasAdd', 'Const', 'Placeholder', 'Relu']"

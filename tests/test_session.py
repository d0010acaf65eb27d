import collections

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework.registry import register_op
from tfjupyter.runtime import events


def test_fetch_structures():
    a = tf.constant(1.0, name="a")
    b = tf.constant([2.0, 3.0], name="b")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"a": a, "nested": [b, (a, Pair(a, b))], "op": a.op})
        assert out["a"] == 1.0 and out["op"] is None
        assert isinstance(out["nested"][1], tuple) and isinstance(out["nested"][1][1], Pair)
        assert out["nested"][1][1].y.tolist() == [2.0, 3.0]
        assert sess.run("b:0").tolist() == [2.0, 3.0]
        assert sess.run("a") is None
        assert sess.run([a, a]) == [1.0, 1.0]


def test_feeds_by_tensor_and_name_with_checks():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    y = tf.add(x, x)
    with tf.Session() as sess:
        assert sess.run(y, {x: [[1, 2]]}).tolist() == [[2, 4]]
        assert sess.run(y, {"x:0": np.ones((3, 2))}).shape == (3, 2)
        assert sess.run(y, {"x:0": np.ones((1, 2))}).dtype == np.float32
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 3\) for Tensor 'x:0', which has shape '\(\?, 2\)'"):
            sess.run(y, {x: np.ones((2, 3))})
        # TensorFlow converts with numpy: a string that is not a number is a ValueError.
        with pytest.raises(ValueError, match=r"Tensor 'x:0' of dtype float32: could not convert"):
            sess.run(y, {x: [["a", "b"]]})
        assert sess.run(y, {x: [["1.5", "2"]]}).tolist() == [[3.0, 4.0]]
        with pytest.raises(TypeError, match="n:0"):
            sess.run(n, {n: 1.5})
        assert sess.run(n, {n: 3.0}) == 3
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(y, {x: y})
        with pytest.raises(TypeError, match="nope:0"):
            sess.run(y, {"nope:0": 1})


def test_feeding_a_non_placeholder_overrides_it():
    a = tf.constant(2.0)
    b = tf.multiply(a, 3.0)
    with tf.Session() as sess:
        assert sess.run(b, {a: 10.0}) == 30.0
        assert sess.run(b) == 6.0


def test_unfed_placeholder_error_names_it():
    x = tf.placeholder(tf.float32, [None, 784], name="images")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"placeholder tensor 'images' with dtype float32 and shape \[\?,784\]"):
        sess.run(tf.add(x, x))


def test_uninitialized_variable_is_named():
    w = tf.Variable(np.ones((2, 2), np.float32), name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(w)
        sess.run(tf.global_variables_initializer())
        assert sess.run(w).sum() == 4


def test_fetched_variable_is_a_copy():
    w = tf.Variable([1.0, 2.0], name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)
        got = sess.run(w)
        got[0] = 99
        assert sess.run(w).tolist() == [1.0, 2.0]
        sess.run(w.assign_add([1.0, 1.0]))
        assert got.tolist() == [99.0, 2.0]


def test_variables_are_per_session():
    w = tf.Variable(1.0, name="w")
    inc = w.assign_add(1.0)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(w.initializer)
    s2.run(w.initializer)
    s1.run(inc)
    assert s1.run(w) == 2.0 and s2.run(w) == 1.0
    s1.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s1.run(w)
    s2.close()


def test_errors_hierarchy():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    assert issubclass(tf.errors.UnavailableError, tf.errors.OpError)
    e = tf.errors.NotFoundError(None, None, "gone")
    assert str(e) == "gone" and e.error_code == 5


def test_eval_and_run_use_default_session():
    a = tf.constant(3.0)
    init = tf.no_op()
    with pytest.raises(ValueError, match="No default session"):
        a.eval()
    with tf.Session() as sess:
        assert a.eval() == 3.0
        init.run()
    sess = tf.InteractiveSession()
    try:
        assert a.eval() == 3.0
    finally:
        sess.close()
    other = tf.Graph()
    with other.as_default():
        b = tf.constant(1.0)
    with tf.Session() as sess, pytest.raises(ValueError, match="graph is different"):
        b.eval(session=sess)


def test_tensor_from_other_graph_is_rejected():
    other = tf.Graph()
    with other.as_default():
        b = tf.constant(1.0)
    with tf.Session() as sess, pytest.raises(ValueError, match="not an element of this graph"):
        sess.run(b)


def test_cycle_is_reported():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    c = tf.identity(b, name="c")
    b.op._add_control_input(c.op)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="cycle"):
        sess.run(c)


def test_missing_kernel_is_named():
    @register_op("KernelLessTestOp")
    def _shape(op):
        return [(tf.float32, op.inputs[0].shape)]
    x = tf.constant(1.0)
    y = tf.get_default_graph().create_op("KernelLessTestOp", [x], name="orphan").outputs[0]
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="orphan.*no kernel for op type KernelLessTestOp"):
        sess.run(y)


def test_runtime_kernel_error_names_op():
    x = tf.placeholder(tf.float32, None, name="x")
    y = tf.placeholder(tf.float32, None, name="y")
    z = tf.add(x, y, name="bad_add")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="bad_add"):
        sess.run(z, {x: np.ones(2), y: np.ones(3)})


def test_log_device_placement_format(capsys):
    a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
    b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
    c = a + b
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    assert sess.run(c).tolist() == [2.0, 4.0, 6.0]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Device mapping: no known devices."
    assert "add: (Add): /job:localhost/replica:0/task:0/device:CPU:0" in out
    assert "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0" in out
    sess.run(c)
    assert capsys.readouterr().out == ""  # placed once


def test_explicit_missing_device_fails_and_soft_placement_falls_back():
    with tf.device("/cpu:0"):
        a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
        b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
    with tf.device("/gpu:1"):
        c = a + b
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(c)
    msg = str(info.value)
    assert "add" in msg and "/device:GPU:1" in msg and "/job:localhost/replica:0/task:0/device:CPU:0" in msg
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(c).tolist() == [2.0, 4.0, 6.0]
        record = {r.op: r for r in sess.placement}["add"]
        assert record.requested == "/device:GPU:1"
        assert record.assigned == "/job:localhost/replica:0/task:0/device:CPU:0"
        assert record.reason.startswith("soft placement")


def test_variable_ops_are_colocated():
    with tf.device("/cpu:0"):
        w = tf.Variable(1.0, name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)
        devices = {r.op: r.assigned for r in sess.placement}
    assert devices["w/Assign"] == devices["w"]
    assert w.initializer.colocation_groups() == [b"loc:@w"]


def test_device_count_makes_more_cpus():
    with tf.device("/cpu:1"):
        a = tf.constant(1.0, name="a")
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        sess.run(a)
        assert sess.placement[0].assigned.endswith("device:CPU:1")


def test_config_rejects_unknown_fields():
    with pytest.raises(ValueError, match="log_device_placment"):
        tf.ConfigProto(log_device_placment=True)


def test_events_and_trace():
    placements, steps = [], []
    events.subscribe("placement", placements.append)
    events.subscribe("step", steps.append)
    try:
        a = tf.constant(1.0, name="a")
        b = tf.add(a, a, name="b")
        with tf.Session() as sess:
            meta = tf.RunMetadata()
            sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
            sess.run(b)
        assert [r.op for r in placements[0]] == ["a", "b"]
        assert [s.step for s in steps] == [1, 2] and steps[0].duration >= 0
        stats = meta.step_stats.dev_stats["/job:localhost/replica:0/task:0/device:CPU:0"]
        assert [s["node_name"] for s in stats] == ["a", "b"]
    finally:
        events.unsubscribe("placement", placements.append)
        events.unsubscribe("step", steps.append)


def test_plans_are_cached_and_graph_can_grow():
    a = tf.constant(1.0)
    with tf.Session() as sess:
        sess.run(a)
        n = len(sess._plans)
        sess.run(a)
        assert len(sess._plans) == n
        b = tf.add(a, 1.0)
        assert sess.run(b) == 2.0


def test_fetching_a_variable_reuses_its_plan(monkeypatch):
    """``sess.run(w)``, the tutorials' way to read weights, compiled a new plan every call
    (12x the cost of ``sess.run([w])`` locally; a graph registration per call on a cluster)."""
    w = tf.Variable([1.0, 2.0], name="w")
    compiled = []
    real = tf.Session._compile
    monkeypatch.setattr(tf.Session, "_compile",
                        lambda self, *a: compiled.append(a[0]) or real(self, *a))
    with tf.Session() as sess:
        sess.run(w.initializer)
        for expected in ([1.0, 2.0], [3.0, 4.0]):
            assert sess.run(w).tolist() == expected
            assert sess.run(w).tolist() == expected
            sess.run(w.assign([3.0, 4.0]))
    assert compiled.count(w) == 1


def test_colocated_readers_with_conflicting_requests_follow_the_variable():
    with tf.device("/cpu:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/cpu:1"):
        ready = tf.is_variable_initialized(v)
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        assert not sess.run(ready)
        placed = {r.op: r.assigned for r in sess.placement}
    assert placed[ready.op.name] == placed["v"] == "/job:localhost/replica:0/task:0/device:CPU:0"


def test_initialized_value_reads_without_reinitializing():
    w = tf.Variable([1.0, 2.0], name="w")
    w2 = tf.Variable(w.initialized_value() * 2.0, name="w2")  # the Variables how-to's pattern
    with tf.Session() as sess:
        sess.run(w2.initializer)                     # w itself not initialized: initial value
        assert sess.run(w2).tolist() == [2.0, 4.0]
        sess.run(w.initializer)
        sess.run(w.assign([5.0, 5.0]))
        assert sess.run(w.initialized_value()).tolist() == [5.0, 5.0]
        assert sess.run(w).tolist() == [5.0, 5.0]   # reading did not re-initialize it

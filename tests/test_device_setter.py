"""replica_device_setter: round robin and greedy ps placement, worker ops, merging with inner
device scopes, variables' companion ops and optimizer slots, the cluster forms, placement
records of a local session, and errors for bad arguments."""
import logging
from types import SimpleNamespace

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.train.device_setter import (STANDARD_PS_OPS, GreedyLoadBalancingStrategy,
                                           byte_size_load_fn, replica_device_setter)


def devices(*variables):
    return [v.op.device for v in variables]


def companion_devices(v):
    """Devices of the ops TensorFlow builds with a variable: the state, its Assign and read."""
    graph = v.op.graph
    return {graph.get_operation_by_name(v.op.name + suffix).device
            for suffix in ("", "/Assign", "/read")}


class FakeClusterSpec:
    """Anything with as_dict() is accepted as a ClusterSpec."""

    def __init__(self, jobs):
        self._jobs = jobs

    def as_dict(self):
        return self._jobs


# -- round robin ----------------------------------------------------------------------------------
def test_round_robin_over_three_ps_tasks_with_companion_ops():
    with tf.device(replica_device_setter(ps_tasks=3)):
        vs = [tf.Variable(tf.zeros([2]), name=f"v{i}") for i in range(7)]
    assert devices(*vs) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                            "/job:ps/task:0"]
    for v in vs:
        assert companion_devices(v) == {v.op.device}


def test_round_robin_two_tasks_mixing_variable_and_get_variable():
    with tf.device(replica_device_setter(ps_tasks=2)):
        a = tf.Variable(1.0, name="a")
        with tf.variable_scope("layer"):
            w = tf.get_variable("w", [3, 4], initializer=tf.random_normal_initializer())
            b = tf.get_variable("b", [4], initializer=tf.zeros_initializer())
        c = tf.Variable(tf.ones([4]), name="c")
    assert devices(a, w, b, c) == ["/job:ps/task:0", "/job:ps/task:1",
                                   "/job:ps/task:0", "/job:ps/task:1"]
    assert companion_devices(w) == {"/job:ps/task:1"}
    # get_variable's initializer ops ignore device functions and are colocated with the variable.
    graph = tf.get_default_graph()
    init_ops = [op for op in graph.get_operations() if op.name.startswith("layer/w/Initializer")]
    assert init_ops and all(op.colocation_groups() == [b"loc:@layer/w"] for op in init_ops)


def test_each_setter_has_its_own_round_robin():
    setter_a = replica_device_setter(ps_tasks=2)
    setter_b = replica_device_setter(ps_tasks=2)
    with tf.device(setter_a):
        a0 = tf.Variable(0.0)
        a1 = tf.Variable(0.0)
    with tf.device(setter_b):
        b0 = tf.Variable(0.0)
    with tf.device(setter_a):
        a2 = tf.Variable(0.0)
    assert devices(a0, a1, b0, a2) == ["/job:ps/task:0", "/job:ps/task:1",
                                       "/job:ps/task:0", "/job:ps/task:0"]


def test_ps_device_fields_are_kept_and_task_is_chosen():
    setter = replica_device_setter(ps_tasks=2, ps_device="/job:ps/device:CPU:0",
                                   worker_device="/job:worker/task:3/device:CPU:0")
    with tf.device(setter):
        v0 = tf.Variable(0.0)
        v1 = tf.Variable(0.0)
        y = v0 + v1
    assert devices(v0, v1) == ["/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0"]
    assert y.op.device == "/job:worker/task:3/device:CPU:0"


def test_ps_device_without_job_gets_no_task():
    # As TensorFlow: the strategy only picks a task when ps_device names a job.
    calls = []
    with tf.device(replica_device_setter(ps_tasks=2, ps_device="/device:CPU:0",
                                         ps_strategy=lambda op: calls.append(op) or 1)):
        v = tf.Variable(0.0)
    assert v.op.device == "/device:CPU:0"
    assert calls == []


# -- worker ops -----------------------------------------------------------------------------------
def test_non_variable_ops_get_worker_device():
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.ones([3, 2]), name="w")
        y = tf.nn.relu(tf.matmul(x, w))
        loss = tf.reduce_mean(y)
    graph = tf.get_default_graph()
    for name in ("x", "MatMul", "Relu"):
        assert graph.get_operation_by_name(name).device == "/job:worker/task:1"
    assert loss.op.device == "/job:worker/task:1"
    # The initial value tensor of tf.Variable is an ordinary op built by the user: a worker op.
    assert w.initial_value.op.device == "/job:worker/task:1"
    assert w.op.device == "/job:ps/task:0"


def test_empty_worker_device_leaves_other_ops_unplaced():
    with tf.device(replica_device_setter(ps_tasks=1, worker_device=None)):
        v = tf.Variable(0.0)
        y = v * 2.0
    assert v.op.device == "/job:ps/task:0"
    assert y.op.device == ""


def test_custom_ps_ops():
    with tf.device(replica_device_setter(ps_tasks=2, ps_ops=["VariableV2", "MatMul"])):
        w = tf.Variable(tf.ones([2, 2]))
        y = tf.matmul(w, w)
        z = y + 1.0
    assert w.op.device == "/job:ps/task:0"
    assert y.op.device == "/job:ps/task:1"
    assert z.op.device == "/job:worker"

    tf.reset_default_graph()
    with tf.device(replica_device_setter(ps_tasks=2, ps_ops=[])):
        v = tf.Variable(0.0)
    assert v.op.device == "/job:worker"
    assert companion_devices(v) == {"/job:worker"}


def test_standard_ps_ops_are_tensorflows():
    assert set(STANDARD_PS_OPS) == {
        "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
        "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
        "MutableDenseHashTableV2", "VarHandleOp"}


# -- merging with devices already on the op ---------------------------------------------------------
def test_inner_gpu_scope_merges_into_ps_and_worker_devices():
    with tf.device(replica_device_setter(ps_tasks=2)):
        with tf.device("/gpu:0"):
            v = tf.Variable(tf.ones([2]), name="v")
            y = v * 3.0
        u = tf.Variable(0.0, name="u")
    assert v.op.device == "/job:ps/task:0/device:GPU:0"
    assert companion_devices(v) == {"/job:ps/task:0/device:GPU:0"}
    assert y.op.device == "/job:worker/device:GPU:0"
    assert u.op.device == "/job:ps/task:1"


def test_explicit_ps_task_inside_the_setter_wins():
    with tf.device(replica_device_setter(ps_tasks=3)):
        with tf.device("/job:ps/task:2"):
            pinned = tf.Variable(0.0, name="pinned")
        next_one = tf.Variable(0.0, name="next_one")
    assert pinned.op.device == "/job:ps/task:2"
    assert companion_devices(pinned) == {"/job:ps/task:2"}
    # TensorFlow still consults the strategy for the pinned variable: its turn (task 0) is used.
    assert next_one.op.device == "/job:ps/task:1"


def test_variable_pinned_to_another_job_skips_the_strategy():
    with tf.device(replica_device_setter(ps_tasks=2)):
        with tf.device("/job:worker/task:0"):
            local = tf.Variable(0.0, name="local")
        first = tf.Variable(0.0, name="first")
    assert local.op.device == "/job:worker/task:0"
    assert first.op.device == "/job:ps/task:0"


def test_merge_devices_false_keeps_existing_devices_unchanged():
    with tf.device(replica_device_setter(ps_tasks=2, merge_devices=False)):
        with tf.device("/gpu:1"):
            v = tf.Variable(0.0, name="v")
            y = v + 1.0
        u = tf.Variable(0.0, name="u")
        z = u + 1.0
    assert v.op.device == "/device:GPU:1"
    assert y.op.device == "/device:GPU:1"
    assert u.op.device == "/job:ps/task:0"
    assert z.op.device == "/job:worker"


def test_merge_devices_false_logs_tensorflows_deprecation_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        replica_device_setter(ps_tasks=1, merge_devices=False)
    assert "It is recommended to set merge_devices=true" in caplog.text


def test_outer_device_scope_fills_fields_the_setter_leaves_open():
    with tf.device("/device:CPU:0"):
        with tf.device(replica_device_setter(ps_tasks=2)):
            v = tf.Variable(0.0)
            y = v + 1.0
    assert v.op.device == "/job:ps/task:0/device:CPU:0"
    assert y.op.device == "/job:worker/device:CPU:0"


def test_device_none_inside_the_setter_clears_it():
    with tf.device(replica_device_setter(ps_tasks=2)):
        with tf.device(None):
            v = tf.Variable(0.0)
    assert v.op.device == ""


# -- optimizer slots and other optimizer variables ----------------------------------------------------
def test_momentum_slots_land_with_their_variable():
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        w = tf.Variable(tf.ones([3, 2]), name="w")
        b = tf.Variable(tf.zeros([2]), name="b")
        x = tf.placeholder(tf.float32, [None, 3])
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b))
        opt = tf.train.MomentumOptimizer(0.1, momentum=0.9)
        train_op = opt.minimize(loss)
        after = tf.Variable(0.0, name="after")
    graph = tf.get_default_graph()
    for var in (w, b):
        slot = opt.get_slot(var, "momentum")
        assert slot.op.device == var.op.device
        assert slot.op.colocation_groups() == [f"loc:@{var.op.name}".encode()]
        assert companion_devices(slot) == {var.op.device}
        apply_op = graph.get_operation_by_name(f"Momentum/update_{var.op.name}/ApplyMomentum")
        assert apply_op.device == var.op.device
    assert devices(w, b) == ["/job:ps/task:0", "/job:ps/task:1"]
    # Slots do not take a turn of the round robin.
    assert after.op.device == "/job:ps/task:0"
    assert train_op.device == "/job:worker/task:0"


def test_adam_non_slot_variables_and_global_step():
    with tf.device(replica_device_setter(ps_tasks=3)):
        global_step = tf.train.get_or_create_global_step()
        a = tf.Variable(tf.ones([2]), name="a")
        b = tf.Variable(tf.ones([2]), name="b")
        opt = tf.train.AdamOptimizer(0.01)
        opt.minimize(tf.reduce_sum(a * b), global_step=global_step)
    assert devices(global_step, a, b) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2"]
    ps_devices = {a.op.device, b.op.device}
    for v in opt.variables():
        assert v.op.device in ps_devices, v.name
    assert {opt.get_slot(a, "m").op.device, opt.get_slot(a, "v").op.device} == {a.op.device}


# -- greedy load balancing --------------------------------------------------------------------------
def test_greedy_by_bytes_puts_small_variables_on_the_least_loaded_task():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = tf.Variable(tf.zeros([100, 10]), name="big")      # 4000 bytes
        small = [tf.Variable(tf.zeros([10]), name=f"s{i}") for i in range(3)]  # 40 bytes each
        medium = tf.Variable(tf.zeros([1000], tf.float64), name="medium")      # 8000 bytes
        last = tf.Variable(tf.zeros([2]), name="last")
    assert big.op.device == "/job:ps/task:0"
    assert devices(*small) == ["/job:ps/task:1"] * 3
    # Loads are now 4000 vs 120: medium goes to task 1, then last to task 0 (4000 < 8120).
    assert medium.op.device == "/job:ps/task:1"
    assert last.op.device == "/job:ps/task:0"


def test_greedy_ties_go_to_the_lowest_task_and_use_the_load_fn():
    seen = []

    def load(op):
        seen.append(op.name)
        return 1
    with tf.device(replica_device_setter(
            ps_tasks=3, ps_strategy=GreedyLoadBalancingStrategy(3, load))):
        vs = [tf.Variable(0.0, name=f"v{i}") for i in range(5)]
        tf.reduce_sum(vs[0] + vs[1])
    assert devices(*vs) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                            "/job:ps/task:0", "/job:ps/task:1"]
    assert seen == [f"v{i}" for i in range(5)]  # only the ps ops are measured


def test_byte_size_load_fn_values():
    w = tf.Variable(tf.zeros([3, 4]), name="w")
    d = tf.Variable(tf.zeros([2, 5], tf.float64), name="d")
    s = tf.Variable(7, name="s")
    g = tf.get_variable("g", [6], dtype=tf.int64, initializer=tf.zeros_initializer())
    c = tf.constant(np.zeros([5, 2], np.int32))
    assert byte_size_load_fn(w.op) == 3 * 4 * 4
    assert byte_size_load_fn(d.op) == 2 * 5 * 8
    assert byte_size_load_fn(s.op) == 4
    assert byte_size_load_fn(g.op) == 6 * 8
    assert byte_size_load_fn(c.op) == 5 * 2 * 4


def test_byte_size_load_fn_errors_name_the_op():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with pytest.raises(ValueError, match="Op x .*fully defined"):
        byte_size_load_fn(x.op)
    no_output = tf.no_op(name="nothing")
    with pytest.raises(ValueError, match="Op nothing .*single output"):
        byte_size_load_fn(no_output)
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        with pytest.raises(ValueError, match="Op unknown .*fully defined"):
            tf.Variable(tf.placeholder(tf.float32), validate_shape=False, name="unknown")


def test_greedy_strategy_argument_errors():
    with pytest.raises(ValueError, match="num_tasks must be positive"):
        GreedyLoadBalancingStrategy(0, byte_size_load_fn)
    with pytest.raises(TypeError, match="num_tasks must be an integer"):
        GreedyLoadBalancingStrategy(2.0, byte_size_load_fn)
    with pytest.raises(TypeError, match="load_fn must be callable"):
        GreedyLoadBalancingStrategy(2, 5)
    strategy = GreedyLoadBalancingStrategy(2, lambda op: "heavy")
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        with pytest.raises(TypeError, match="load_fn returned 'heavy' for op 'v'"):
            tf.Variable(0.0, name="v")


# -- no ps tasks, cluster forms ------------------------------------------------------------------------
def test_no_ps_tasks_returns_none():
    assert replica_device_setter() is None
    assert replica_device_setter(ps_tasks=0, worker_device="/job:worker/task:1") is None
    assert replica_device_setter(cluster={"worker": ["w0:2222"]}) is None
    assert replica_device_setter(cluster={"ps": [], "worker": ["w0:2222"]}) is None
    # TF's idiom works with the None: tf.device(None) places nothing.
    with tf.device(replica_device_setter()):
        v = tf.Variable(0.0)
    assert v.op.device == ""


def test_cluster_dict_gives_the_number_of_ps_tasks():
    cluster = {"ps": ["ps0:2222", "ps1:2222", "ps2:2222"],
               "worker": ["worker0:2222", "worker1:2222"]}
    # ps_tasks is taken from the cluster, whatever was passed.
    setter = replica_device_setter(ps_tasks=1, cluster=cluster,
                                   worker_device="/job:worker/task:1")
    with tf.device(setter):
        vs = [tf.Variable(0.0) for _ in range(4)]
        y = vs[0] + vs[3]
    assert devices(*vs) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                            "/job:ps/task:0"]
    assert y.op.device == "/job:worker/task:1"


def test_cluster_spec_objects_and_custom_ps_job():
    cluster = FakeClusterSpec({"params": ["p0:1", "p1:1"], "worker": ["w0:1"]})
    with tf.device(replica_device_setter(cluster=cluster, ps_device="/job:params")):
        vs = [tf.Variable(0.0) for _ in range(3)]
    assert devices(*vs) == ["/job:params/task:0", "/job:params/task:1", "/job:params/task:0"]
    # The default ps job "ps" is not in this cluster: no device function.
    assert replica_device_setter(cluster=cluster) is None


def test_tfjupyter_cluster_spec():
    cluster_mod = pytest.importorskip("tfjupyter.distributed.cluster")
    cluster = cluster_mod.ClusterSpec({"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1", "w1:1"]})
    with tf.device(replica_device_setter(cluster=cluster, worker_device="/job:worker/task:1")):
        vs = [tf.Variable(0.0) for _ in range(3)]
        y = vs[0] * 2.0
    assert devices(*vs) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert y.op.device == "/job:worker/task:1"


def test_cluster_def_protocol_buffer_form():
    cluster_def = SimpleNamespace(job=[
        SimpleNamespace(name="ps", tasks={0: "ps0:1", 1: "ps1:1"}),
        SimpleNamespace(name="worker", tasks={0: "w0:1"})])
    with tf.device(replica_device_setter(cluster=cluster_def)):
        vs = [tf.Variable(0.0) for _ in range(3)]
    assert devices(*vs) == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_sparse_ps_task_ids_are_used():
    with tf.device(replica_device_setter(cluster={"ps": {1: "ps1:1", 4: "ps4:1"}})):
        vs = [tf.Variable(0.0) for _ in range(3)]
    assert devices(*vs) == ["/job:ps/task:1", "/job:ps/task:4", "/job:ps/task:1"]


# -- a local session honours the requests (soft placement) ------------------------------------------------
def test_placement_records_show_requested_devices_and_training_works():
    x_val = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    w_val = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]])
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        x = tf.constant(x_val, name="x")
        w = tf.Variable(w_val, name="w")
        b = tf.get_variable("b", [2], tf.float64, initializer=tf.zeros_initializer())
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w) + b))
        opt = tf.train.MomentumOptimizer(0.01, momentum=0.9)
        train_op = opt.minimize(loss)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(init)
        sess.run(train_op)
        w_new, b_new = sess.run([w, b])
        records = {r.op: r for r in sess.placement}
    expected = {"w": "/job:ps/task:0", "w/Assign": "/job:ps/task:0", "w/read": "/job:ps/task:0",
                "w/Momentum": "/job:ps/task:0",
                "Momentum/update_w/ApplyMomentum": "/job:ps/task:0",
                "b": "/job:ps/task:1", "b/read": "/job:ps/task:1",
                "b/Momentum": "/job:ps/task:1",
                "Momentum/update_b/ApplyMomentum": "/job:ps/task:1",
                "MatMul": "/job:worker/task:0", "x": "/job:worker/task:0",
                "init": "/job:worker/task:0"}
    for name, requested in expected.items():
        assert records[name].requested == requested, name
    local_cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert {r.assigned for r in records.values()} == {local_cpu}
    assert "soft placement" in records["w"].reason
    # One momentum step from zero accumulators: var -= lr * grad.
    residual = x_val @ w_val
    np.testing.assert_allclose(w_new, w_val - 0.01 * (x_val.T @ (2 * residual)), rtol=1e-12)
    np.testing.assert_allclose(b_new, -0.01 * (2 * residual).sum(axis=0), rtol=1e-12)


def test_without_soft_placement_the_missing_ps_job_is_an_error():
    with tf.device(replica_device_setter(ps_tasks=1)):
        # Its initializer is colocated with it: the initializer's ops request only the ps task.
        v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="/job:ps/task:0"):
            sess.run(v.initializer)


# -- argument errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, message", [
    ({"ps_tasks": 2, "ps_strategy": 3}, TypeError, "ps_strategy must be callable"),
    ({"cluster": ["ps0:2222"]}, TypeError, "`cluster` must be a dictionary"),
    ({"cluster": "ps0:2222"}, TypeError, "`cluster` must be a dictionary"),
    ({"cluster": {1: ["a:1"]}}, TypeError, "job name 1"),
    ({"cluster": {"ps": "a:1"}}, TypeError, "The tasks for job 'ps' must be a list"),
    ({"cluster": {"ps": {"x": "a:1"}}}, TypeError, "The tasks for job 'ps' must be a list"),
    ({"ps_tasks": -1}, ValueError, "ps_tasks must be non-negative"),
    ({"ps_tasks": 2.5}, TypeError, "ps_tasks must be an integer"),
    ({"ps_tasks": "2"}, TypeError, "ps_tasks must be an integer"),
    ({"ps_tasks": 2, "ps_device": "/job:ps/task:x"}, ValueError, "bad ps_device"),
    ({"ps_tasks": 2, "worker_device": "/gpu:one"}, ValueError, "bad worker_device"),
    ({"ps_tasks": 2, "worker_device": 3}, TypeError, "worker_device must be a device string"),
    ({"ps_tasks": 2, "ps_ops": "VariableV2"}, TypeError, "ps_ops must be a list"),
    ({"ps_tasks": 2, "ps_ops": ["VariableV2", 1]}, TypeError, "ps_ops must be a list"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        replica_device_setter(**kwargs)


@pytest.mark.parametrize("returned", [2, -1, "0", 1.0, None])
def test_strategy_returning_a_bad_task_names_the_op(returned):
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=lambda op: returned)):
        with pytest.raises(ValueError, match="ps_strategy returned .* for op 'bad'.*\\[0, 2\\)"):
            tf.Variable(0.0, name="bad")


def test_device_spec_arguments_are_accepted():
    from tfjupyter.framework.device import DeviceSpec
    setter = replica_device_setter(ps_tasks=2, ps_device=DeviceSpec(job="ps"),
                                   worker_device=DeviceSpec(job="worker", task=2))
    with tf.device(setter):
        v = tf.Variable(0.0)
        y = v + 1.0
    assert v.op.device == "/job:ps/task:0"
    assert y.op.device == "/job:worker/task:2"

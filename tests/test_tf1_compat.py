"""TF 1.x programs run unchanged (issue 14): dtype names, int shapes, gradients through
placeholders of unknown shape, tf.arg_max/arg_min, tf.compat, tf.NodeDef, and the
SyncReplicasOptimizer's init ops as mnist_replica's Supervisor uses them. Expected values are
TensorFlow's documented semantics, computed by hand or by central differences."""
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf


# -- 1. dtypes as tf.as_dtype accepts them --------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    ("float", tf.float32), ("float32", tf.float32), ("double", tf.float64),
    ("float64", tf.float64), ("half", tf.float16), ("float16", tf.float16),
    ("int8", tf.int8), ("int16", tf.int16), ("int32", tf.int32), ("int64", tf.int64),
    ("uint8", tf.uint8), ("uint16", tf.uint16), ("bool", tf.bool),
    ("string", tf.string), ("complex64", tf.complex64),
    ("complex128", tf.complex128),
    (np.float32, tf.float32), (np.dtype("float64"), tf.float64), (np.int64, tf.int64),
    (np.bool_, tf.bool), (np.complex64, tf.complex64), (float, tf.float32),
    (bool, tf.bool), (str, tf.string), (bytes, tf.string), (complex, tf.complex128),
    (1, tf.float32), (2, tf.float64), (3, tf.int32), (7, tf.string), (9, tf.int64),
    (tf.int32, tf.int32)])
def test_as_dtype_accepts_tensorflow_names_numpy_types_and_enums(value, expected):
    assert tf.as_dtype(value) is expected


@pytest.mark.parametrize("bad", ["flaot", "float32_", "", 99, 2.5, None, [tf.float32],
                                 np.dtype("datetime64[s]")])
def test_as_dtype_rejects_other_values_naming_them(bad):
    with pytest.raises(TypeError, match="Cannot convert value"):
        tf.as_dtype(bad)


def test_placeholder_with_a_dtype_name_is_fed_and_run():
    x = tf.placeholder("float", shape=[None])
    assert x.dtype is tf.float32
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x * 2, {x: [1.5, 2.0]}), [3.0, 4.0])


def test_every_api_taking_a_dtype_accepts_names():
    with tf.Graph().as_default():
        assert tf.constant(1, dtype="double").dtype is tf.float64
        assert tf.cast(tf.constant(1), "half").dtype is tf.float16
        assert tf.zeros([2], "float").dtype is tf.float32
        assert tf.ones([2], "int64").dtype is tf.int64
        assert tf.zeros_like(tf.constant(1), dtype="float").dtype is tf.float32
        assert tf.fill([2], tf.constant(1, "uint8")).dtype is tf.uint8
        assert tf.Variable(1, dtype="float").dtype is tf.float32
        assert tf.get_variable("v", [2], dtype="double").dtype is tf.float64
        assert tf.random_normal([2], dtype="float").dtype is tf.float32
        assert tf.random_uniform([2], dtype="double").dtype is tf.float64
        assert tf.random_uniform([2], maxval=5, dtype="int32").dtype is tf.int32
        assert tf.truncated_normal([2], dtype="half").dtype is tf.float16
        assert tf.argmax([1, 2], output_type="int32").dtype is tf.int32
        assert tf.FIFOQueue(2, ["float", "int32"]).dtypes == [tf.float32, tf.int32]
        with pytest.raises(TypeError, match="'flaot'"):
            tf.placeholder("flaot")


def test_dtypes_compare_equal_to_what_names_them():
    # As TensorFlow: x.dtype == np.float32 and tf.float32 == "float" hold.
    assert tf.float32 == "float" and tf.float32 == np.float32 and tf.float64 == "double"
    assert tf.float32 != tf.float64 and tf.float32 != "not a dtype" and tf.int32 != None  # noqa: E711
    assert {tf.float32: 1}[tf.as_dtype("float")] == 1
    assert tf.complex64.is_complex and tf.complex64.real_dtype is tf.float32
    assert tf.complex64.is_numeric and not tf.complex64.is_floating
    with pytest.raises(TypeError):
        tf.complex64.max


def test_python_complex_values_are_complex128_and_complex_tensors_feed():
    assert tf.constant(1 + 2j).dtype is tf.complex128
    x = tf.placeholder("complex64", [2])
    with tf.Session() as sess:
        got = sess.run(tf.identity(x), {x: np.array([1 + 1j, 2], np.complex64)})
    np.testing.assert_array_equal(got, [1 + 1j, 2])


# -- 2. an int is a 1-D shape ---------------------------------------------------------------------
def test_an_int_shape_is_the_vector_shape_of_that_length():
    batch_size = 5
    x = tf.placeholder(tf.int32, shape=(batch_size))   # no comma: the int 5
    assert x.shape.as_list() == [5]
    assert tf.TensorShape(3).as_list() == [3]
    assert tf.TensorShape(np.int64(4)).as_list() == [4]
    assert tf.TensorShape(tf.Dimension(2)).as_list() == [2]
    assert tf.TensorShape(None).ndims is None
    assert tf.TensorShape([None, 2.0]).as_list() == [None, 2]
    assert tf.get_variable("w", 3).shape.as_list() == [3]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x, {x: np.arange(5)}), np.arange(5))
        with pytest.raises(ValueError):
            sess.run(x, {x: np.arange(4)})


def test_bad_dimensions_raise_as_tensorflow():
    with pytest.raises(TypeError, match="ambiguous"):
        tf.TensorShape("3")
    with pytest.raises(ValueError, match="Ambiguous dimension"):
        tf.TensorShape([2.5])
    with pytest.raises(TypeError, match="integer or None"):
        tf.TensorShape([object()])


# -- 3. gradients through placeholders of unknown shape -------------------------------------------
def test_linear_regression_on_scalar_feeds_matches_hand_computed_steps():
    """The classic linear-regression tutorial: placeholders without a shape, fed one float at a
    time. cost = (X*W + b - Y)^2 / (2n): dW = (pred - Y) * X / n, db = (pred - Y) / n."""
    train_x = np.array([3.3, 4.4, 5.5], np.float32)
    train_y = np.array([1.7, 2.76, 2.09], np.float32)
    n, lr = len(train_x), 0.01
    X = tf.placeholder("float")
    Y = tf.placeholder("float")
    W = tf.Variable(0.3, name="weight")
    b = tf.Variable(0.1, name="bias")
    pred = tf.add(tf.multiply(X, W), b)
    cost = tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * n)
    optimizer = tf.train.GradientDescentOptimizer(lr).minimize(cost)

    w, bias = 0.3, 0.1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(2):
            for x, y in zip(train_x, train_y):
                sess.run(optimizer, feed_dict={X: x, Y: y})
                err = w * x + bias - y
                w, bias = w - lr * err * x / n, bias - lr * err / n
        got_w, got_b = sess.run([W, b])
        got_cost = sess.run(cost, {X: train_x, Y: train_y})    # whole vectors too
    np.testing.assert_allclose([got_w, got_b], [w, bias], rtol=1e-5)
    np.testing.assert_allclose(got_cost, np.sum((w * train_x + bias - train_y) ** 2) / (2 * n),
                               rtol=1e-5)


_UNKNOWN_SHAPE_LOSSES = {
    "reduce_sum": lambda x, y: tf.reduce_sum(tf.square(x * y)),
    "reduce_mean": lambda x, y: tf.reduce_mean(tf.square(x - y)),
    "reduce_mean_keepdims": lambda x, y: tf.reduce_mean(x * y, keepdims=True),
    "reduce_max": lambda x, y: tf.reduce_max(x * y),
    "reduce_prod": lambda x, y: tf.reduce_prod(x + y),
    "reduce_logsumexp": lambda x, y: tf.reduce_logsumexp(x * y),
    "broadcast_div": lambda x, y: tf.reduce_sum(x / (y + 3.0)),
    "squared_difference": lambda x, y: tf.reduce_sum(tf.squared_difference(x, y)),
    "l2_loss": lambda x, y: tf.nn.l2_loss(x - y),
}


@pytest.mark.parametrize("x_value, y_value", [
    (1.5, 0.5), (np.array([1.0, 2.0, 3.5]), 2.0), (2.0, np.array([1.0, -2.0])),
    (np.array([[1.0, 2.0, 3.5], [4.0, -5.0, 0.5]]), np.array([1.0, 2.0, 3.0]))],
    ids=["scalars", "vector_scalar", "scalar_vector", "matrix_vector"])
@pytest.mark.parametrize("loss_name", sorted(_UNKNOWN_SHAPE_LOSSES))
def test_gradients_of_unknown_shape_inputs_match_numerical_ones(loss_name, x_value, y_value):
    X = tf.placeholder(tf.float64)
    Y = tf.placeholder(tf.float64)
    loss = _UNKNOWN_SHAPE_LOSSES[loss_name](X, Y)
    grad_x, grad_y = tf.gradients(loss, [X, Y])
    with tf.Session() as sess:
        def f(x, y):
            return float(np.sum(sess.run(loss, {X: x, Y: y})))
        got_x, got_y = sess.run([grad_x, grad_y], {X: x_value, Y: y_value})
        eps = 1e-6
        for value, got, shift in ((x_value, got_x, lambda d: (x_value + d, y_value)),
                                  (y_value, got_y, lambda d: (x_value, y_value + d))):
            value = np.asarray(value, np.float64)
            assert np.shape(got) == value.shape
            numerical = np.zeros(value.shape)
            for i in np.ndindex(value.shape):
                d = np.zeros(value.shape)
                d[i] = eps
                numerical[i] = (f(*shift(d)) - f(*shift(-d))) / (2 * eps)
            np.testing.assert_allclose(got, numerical, rtol=1e-5, atol=1e-6)


# -- 4. tf.arg_max/arg_min, tf.compat, tf.NodeDef -------------------------------------------------
def test_arg_max_and_arg_min_take_the_axis_as_dimension():
    x = tf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.arg_max(x, 1)), [1, 0])
        np.testing.assert_array_equal(sess.run(tf.arg_min(x, dimension=0)), [0, 1, 0])
        got = sess.run(tf.arg_max(x, 0, output_type=tf.int32))
    np.testing.assert_array_equal(got, [1, 0, 1])
    assert got.dtype == np.int32 and tf.arg_max(x, 1).dtype is tf.int64


def test_compat_converts_between_bytes_and_text():
    assert tf.compat.as_bytes("héllo") == "héllo".encode("utf-8")
    assert tf.compat.as_bytes(b"x") == b"x" and tf.compat.as_bytes(bytearray(b"y")) == b"y"
    assert tf.compat.as_text(b"h\xc3\xa9") == "hé" and tf.compat.as_text("t") == "t"
    assert tf.compat.as_str(b"abc") == "abc"
    assert tf.compat.as_str_any(b"abc") == "abc" and tf.compat.as_str_any(12) == "12"
    assert tf.compat.as_bytes("é", encoding="latin-1") == b"\xe9"
    for convert in (tf.compat.as_bytes, tf.compat.as_text, tf.compat.as_str):
        with pytest.raises(TypeError, match="Expected binary or unicode string"):
            convert(3)


def test_node_def_is_the_protobuf_class_device_functions_test_for():
    """The multi-GPU tutorials' assign_to_device helper: variables to the ps device."""
    from tensorboard.compat.proto import node_def_pb2
    assert tf.NodeDef is node_def_pb2.NodeDef

    def assign_to_device(device, ps_device="/cpu:0"):
        def _assign(op):
            node_def = op if isinstance(op, tf.NodeDef) else op.node_def
            return ps_device if node_def.op in ("Variable", "VariableV2") else device
        return _assign

    with tf.device(assign_to_device("/gpu:0")):
        v = tf.Variable(1.0, name="v")
        y = tf.multiply(v, 2.0, name="y")
    assert v.device == "/device:CPU:0" and y.device == "/device:GPU:0"
    node = y.op.node_def
    assert isinstance(node, tf.NodeDef)
    assert (node.name, node.op, list(node.input)) == ("y", "Mul", ["v/read", "y/y"])
    assert isinstance(assign_to_device("/gpu:0")(node), str)   # a NodeDef works directly too


# -- 5. SyncReplicasOptimizer's init ops, as mnist_replica uses them ------------------------------
def _sync_model(num_workers):
    """loss = (w - 3)^2 on every worker, so that any aggregate of fresh gradients is
    2 (w - 3): with SGD at rate 0.1, w after k global steps is 3 - 2 * 0.8^k."""
    global_step = tf.Variable(0, name="global_step", trainable=False)
    w = tf.Variable(1.0, name="w")
    loss = tf.square(w - 3.0)
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=num_workers,
                                         total_num_replicas=num_workers)
    train = opt.minimize(loss, global_step=global_step)
    return global_step, w, opt, train


def test_sync_replicas_chief_init_and_ready_for_local_init_semantics():
    global_step, w, opt, _ = _sync_model(2)
    assert opt.local_step_init_op in opt.chief_init_op.control_inputs
    with tf.Session() as sess:
        reported = sorted(sess.run(opt.ready_for_local_init_op))
        # The global variables (model, global step), not the local step.
        assert reported == [b"global_step", b"w"]
        sess.run(tf.global_variables_initializer())
        assert sess.run(opt.ready_for_local_init_op).size == 0
        sess.run(global_step.assign(4))
        sess.run(opt.chief_init_op)      # initializes the local step, from the global step
        assert sess.run(tf.report_uninitialized_variables()).size == 0
        assert sess.run(opt._local_step) == 4


@pytest.fixture
def sync_cluster(monkeypatch, tmp_path):
    from cluster_util import loopback_cluster
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", "test-token-" + "0" * 20)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    cluster = loopback_cluster(ps=1, worker=2)
    servers = [tf.train.Server(cluster, job_name=job, task_index=task)
               for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]]
    yield cluster, servers
    for server in servers:
        server.stop(0)


def test_mnist_replica_sync_replicas_supervisor_recipe_trains(sync_cluster, tmp_path):
    """mnist_replica.py --sync_replicas on 1 ps + 2 workers: the chief's Supervisor gets
    chief_init_op as local_init_op and must find the model ready (no 'Variables not
    initialized: sync_rep_local_step'); both workers then train in lock step."""
    cluster, (_, chief_server, worker_server) = sync_cluster
    train_steps = 3
    failures, finished = [], {}

    def run_worker(task, server):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster)):
            global_step, w, opt, train = _sync_model(2)
            is_chief = task == 0
            local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()
            release_tokens = opt.get_init_tokens_op(2)   # frees a worker left waiting at the end
            init_op = tf.global_variables_initializer()
        sv = tf.train.Supervisor(graph=graph, is_chief=is_chief, logdir=str(tmp_path),
                                 init_op=init_op, local_init_op=local_init_op,
                                 ready_for_local_init_op=ready_for_local_init_op,
                                 recovery_wait_secs=0.05, global_step=global_step,
                                 save_model_secs=0, save_summaries_secs=0)
        sess = sv.prepare_or_wait_for_session(server.target)
        try:
            if is_chief:
                sess.run(sync_init_op)
                sv.start_queue_runners(sess, [chief_queue_runner])
            step = 0
            while step < train_steps:
                _, step = sess.run([train, global_step])
            finished[task] = True
            if is_chief:
                deadline = time.time() + 10
                while len(finished) < 2 and time.time() < deadline:
                    sess.run(release_tokens)
                    time.sleep(0.05)
                k = sess.run(global_step)
                np.testing.assert_allclose(sess.run(w), 3.0 - 2.0 * 0.8 ** k, rtol=1e-5)
                finished["steps"] = k
        finally:
            # Closing the session first cancels the chief's queue runner, which may be waiting
            # for gradients no worker will send any more; the Supervisor then joins it and
            # re-raises that cancelled wait, which is expected here.
            sess.close()
            try:
                sv.stop()
            except tf.errors.CancelledError:
                assert is_chief

    def guarded(task, server):
        try:
            run_worker(task, server)
        except Exception as e:  # reported to the main thread
            failures.append(e)

    worker = threading.Thread(target=guarded, args=(1, worker_server), daemon=True)
    worker.start()
    guarded(0, chief_server)
    worker.join(15)
    assert not worker.is_alive(), "the non-chief worker did not finish"
    assert not failures, failures
    assert finished[0] and finished[1] and finished["steps"] >= train_steps


def test_sync_replicas_hook_trains_two_workers_with_monitored_sessions(sync_cluster, tmp_path):
    """The hook path (make_session_run_hook): the chief's local init is chief_init_op."""
    cluster, (_, chief_server, worker_server) = sync_cluster
    failures, results = [], {}
    chief_done = threading.Event()

    def run_worker(task, server):
        # The non-chief trains until the chief is done, as a real one must: a worker leaving a
        # sync job early can leave the chief waiting for a gradient that never comes (a fast
        # worker may take two of a step's tokens, as in TensorFlow). Its steps are bounded, so
        # that one waiting for a token when the chief stops does not wait forever.
        chief = task == 0
        try:
            graph = tf.Graph()
            with graph.as_default():
                with tf.device(tf.train.replica_device_setter(
                        worker_device=f"/job:worker/task:{task}", cluster=cluster)):
                    global_step, w, opt, train = _sync_model(2)
                hooks = [opt.make_session_run_hook(is_chief=chief)]
                if chief:
                    hooks.append(tf.train.StopAtStepHook(last_step=3))
                bounded = tf.RunOptions(timeout_in_ms=1000)
                with tf.train.MonitoredTrainingSession(
                        master=server.target, is_chief=chief, hooks=hooks,
                        checkpoint_dir=None, max_wait_secs=15) as sess:
                    while not sess.should_stop() and (chief or not chief_done.is_set()):
                        try:
                            sess.run(train, options=None if chief else bounded)
                        except tf.errors.DeadlineExceededError:
                            pass
                if chief:
                    chief_done.set()
                    with tf.Session(server.target) as sess:
                        results[task] = sess.run([global_step, w])
        except Exception as e:  # reported to the main thread
            failures.append(e)
        finally:
            if chief:
                chief_done.set()

    worker = threading.Thread(target=run_worker, args=(1, worker_server), daemon=True)
    worker.start()
    run_worker(0, chief_server)
    worker.join(15)
    assert not worker.is_alive(), "the non-chief worker did not finish"
    assert not failures, failures
    k, w = results[0]
    assert k >= 3
    np.testing.assert_allclose(w, 3.0 - 2.0 * 0.8 ** k, rtol=1e-5)

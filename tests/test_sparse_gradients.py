"""Sparse gradients: a gather's gradient is an IndexedSlices; tf.gradients aggregates and
densifies them; the optimizers apply them to the touched rows only (locally, with a large
embedding, and with the variable on a ps task)."""
import tracemalloc
import warnings

import numpy as np
import pytest

import tfjupyter as tf
from cluster_util import loopback_cluster, token_env  # noqa: F401


P0 = np.arange(15, dtype=np.float32).reshape(5, 3)
COEFF = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)


# -- the gradient ---------------------------------------------------------------------------------
def test_gather_gradient_is_indexed_slices_of_the_looked_up_rows():
    p = tf.Variable(P0, name="p")
    rows = tf.nn.embedding_lookup(p, tf.constant([0, 2, 0]))
    loss = tf.reduce_sum(rows * COEFF)
    grad, = tf.gradients(loss, [p])
    assert isinstance(grad, tf.IndexedSlices)
    assert grad.dtype is tf.float32 and grad.shape.as_list() == [5, 3]
    assert grad.op is grad.values.op and grad.graph is p.graph and grad.name == grad.values.name
    with tf.Session() as sess:
        sess.run(p.initializer)
        value = sess.run(grad)
        dense = sess.run(tf.convert_to_tensor(grad))
    assert isinstance(value, tf.IndexedSlicesValue)
    np.testing.assert_array_equal(value.values, COEFF)          # d loss / d rows
    assert value.indices.tolist() == [0, 2, 0]
    assert value.dense_shape.tolist() == [5, 3]
    expected = np.zeros((5, 3), np.float32)
    expected[0] = COEFF[0] + COEFF[2]                             # row 0 looked up twice
    expected[2] = COEFF[1]
    np.testing.assert_array_equal(dense, expected)


def test_gather_with_matrix_indices_flattens_them():
    p = tf.Variable(P0, name="p")
    rows = tf.gather(p, tf.constant([[4, 1], [1, 3]]))           # [2, 2, 3]
    grad, = tf.gradients(tf.reduce_sum(rows * np.arange(12.0, dtype=np.float32).reshape(2, 2, 3)),
                         [p])
    with tf.Session() as sess:
        sess.run(p.initializer)
        value = sess.run(grad)
    assert value.indices.tolist() == [4, 1, 1, 3]
    np.testing.assert_array_equal(value.values, np.arange(12.0).reshape(4, 3))


def test_two_lookups_of_one_table_concatenate_their_slices():
    p = tf.Variable(P0, name="p")
    a = tf.nn.embedding_lookup(p, tf.constant([1, 4]))
    b = tf.nn.embedding_lookup(p, tf.constant([4]))
    loss = tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * 3.0)
    grad, = tf.gradients(loss, [p])
    assert isinstance(grad, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(p.initializer)
        value, dense = sess.run([grad, tf.convert_to_tensor(grad)])
    assert sorted(value.indices.tolist()) == [1, 4, 4]
    assert value.values.shape == (3, 3)
    expected = np.zeros((5, 3), np.float32)
    expected[1], expected[4] = 2.0, 5.0
    np.testing.assert_array_equal(dense, expected)


def test_a_sparse_and_a_dense_gradient_of_one_tensor_add_up_densely():
    p = tf.Variable(P0, name="p")
    loss = tf.reduce_sum(tf.gather(p, [3])) + tf.reduce_sum(p * p)
    grad, = tf.gradients(loss, [p])
    assert isinstance(grad, tf.Tensor)
    with tf.Session() as sess:
        sess.run(p.initializer)
        expected = 2 * P0
        expected[3] += 1
        np.testing.assert_allclose(sess.run(grad), expected)


def test_an_op_after_the_gather_gradient_gets_it_densified():
    """The sparse gradient of p flows on into the op that produced p (here a Mul), whose
    gradient function needs a dense tensor."""
    x = tf.constant(P0)
    p = x * 2.0
    grad, = tf.gradients(tf.reduce_sum(tf.gather(p, [1, 1])), [x])
    assert isinstance(grad, tf.Tensor)
    with tf.Session() as sess:
        expected = np.zeros((5, 3), np.float32)
        expected[1] = 4.0
        np.testing.assert_array_equal(sess.run(grad), expected)


def test_densified_gradient_equals_the_numerical_gradient():
    rng = np.random.RandomState(0)
    params0 = rng.uniform(-1, 1, (6, 4))
    weights = rng.uniform(-1, 1, (5, 4))
    ids = [5, 0, 5, 2, 5]
    params = tf.placeholder(tf.float64, [6, 4])
    loss = tf.reduce_sum(tf.sin(tf.nn.embedding_lookup(params, ids)) * weights)
    grad, = tf.gradients(loss, [params])
    assert isinstance(grad, tf.IndexedSlices)
    with tf.Session() as sess:
        analytic = sess.run(tf.convert_to_tensor(grad), {params: params0})
        numeric = np.zeros_like(params0)
        eps = 1e-6
        for i in np.ndindex(params0.shape):
            up, down = params0.copy(), params0.copy()
            up[i] += eps
            down[i] -= eps
            numeric[i] = (sess.run(loss, {params: up}) - sess.run(loss, {params: down})) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
    assert not analytic[[1, 3, 4]].any()


def test_densifying_warns_for_large_or_unknown_shapes():
    values = tf.placeholder(tf.float32, [None, 10])
    indices = tf.placeholder(tf.int32, [None])
    with pytest.warns(UserWarning, match="with 100000000 elements"):
        tf.convert_to_tensor(tf.IndexedSlices(values, indices, [10_000_000, 10]))
    with pytest.warns(UserWarning, match="of unknown shape"):
        tf.convert_to_tensor(tf.IndexedSlices(values, indices,
                                              tf.placeholder(tf.int32, [2])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.convert_to_tensor(tf.IndexedSlices(values, indices, [1000, 10]))
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(tf.IndexedSlices(values, indices))


def test_clipping_keeps_gradients_sparse():
    p = tf.Variable(P0, name="p")
    q = tf.Variable(np.ones(2, np.float32), name="q")
    loss = tf.reduce_sum(tf.gather(p, [0, 2]) * 3.0) + tf.reduce_sum(q * 4.0)
    grads = tf.gradients(loss, [p, q])
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    by_norm = tf.clip_by_norm(grads[0], 1.0)
    assert isinstance(clipped[0], tf.IndexedSlices) and isinstance(by_norm, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_norm, (out_p, out_q), out_by_norm = sess.run([norm, clipped, by_norm])
    expected_norm = np.sqrt(6 * 9.0 + 2 * 16.0)
    np.testing.assert_allclose(out_norm, expected_norm, rtol=1e-6)
    np.testing.assert_allclose(out_p.values, np.full((2, 3), 3.0) / expected_norm, rtol=1e-6)
    assert out_p.indices.tolist() == [0, 2]
    np.testing.assert_allclose(out_q, np.full(2, 4.0) / expected_norm, rtol=1e-6)
    np.testing.assert_allclose(out_by_norm.values, np.full((2, 3), 3.0) / np.sqrt(54), rtol=1e-6)


def test_unique_keeps_first_occurrence_order():
    y, idx = tf.unique(tf.constant([7, 3, 7, 9, 3, 3]))
    with tf.Session() as sess:
        out_y, out_idx = sess.run([y, idx])
    assert out_y.tolist() == [7, 3, 9] and out_idx.tolist() == [0, 1, 0, 2, 1, 1]


def test_scatter_add_and_sub_touch_the_indexed_rows():
    v = tf.Variable(np.zeros((4, 2), np.float32), name="v")
    add = tf.scatter_add(v, [1, 3, 1], [[1, 2], [3, 4], [5, 6]])
    sub = tf.scatter_sub(v, tf.constant([0], tf.int64), [[1, 1]])
    bad = tf.scatter_add(v, [4], [[1, 1]])
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(add)
        sess.run(sub)
        assert sess.run(v).tolist() == [[-1, -1], [6, 8], [0, 0], [3, 4]]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 4 is not in"):
            sess.run(bad)


# -- the optimizers -------------------------------------------------------------------------------
# ids per step: duplicates, and always the rows {1, 3, 4}, so that the dense update of the
# other rows is a no-op too (a row untouched in one step but not the one before would still
# move by its momentum in the dense update, and not in the sparse one, as in TensorFlow).
STEP_IDS = [[3, 1, 3, 4], [4, 4, 1, 3], [1, 3, 4, 1]]
ROWS, WIDTH = 6, 3

OPTIMIZERS = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), "ScatterSub"),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.1, 0.9), "SparseApplyMomentum"),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                 "SparseApplyMomentum"),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.1), "SparseApplyAdagrad"),
    "rmsprop": (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5), "SparseApplyRMSProp"),
    "centered": (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
                 "SparseApplyCenteredRMSProp"),
    "adadelta": (lambda: tf.train.AdadeltaOptimizer(1.0), "SparseApplyAdadelta"),
}


def _embedding_problem(name):
    """A table, a loss of its rows at fed ids with fed coefficients, its sparse gradient."""
    rng = np.random.RandomState(1)
    table = tf.Variable(rng.uniform(-1, 1, (ROWS, WIDTH)).astype(np.float32), name=name)
    ids = tf.placeholder(tf.int32, [4], name=name + "_ids")
    coeff = tf.placeholder(tf.float32, [4, WIDTH], name=name + "_coeff")
    loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids)) * coeff)
    return table, ids, coeff, loss


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_sparse_update_equals_dense_update_on_the_touched_rows(kind):
    make, sparse_op_type = OPTIMIZERS[kind]
    sparse_table, sparse_ids, sparse_coeff, sparse_loss = _embedding_problem("sparse")
    dense_table, dense_ids, dense_coeff, dense_loss = _embedding_problem("dense")
    sparse_train = make().minimize(sparse_loss)
    dense_opt = make()
    (grad, var), = dense_opt.compute_gradients(dense_loss, [dense_table])
    assert isinstance(grad, tf.IndexedSlices)
    dense_train = dense_opt.apply_gradients([(tf.convert_to_tensor(grad), var)])
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert sparse_op_type in op_types

    rng = np.random.RandomState(2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        initial = sess.run(sparse_table)
        for ids in STEP_IDS:
            coeff = rng.uniform(0.5, 1.5, (4, WIDTH)).astype(np.float32)
            sess.run([sparse_train, dense_train], {sparse_ids: ids, sparse_coeff: coeff,
                                                   dense_ids: ids, dense_coeff: coeff})
        sparse, dense = sess.run([sparse_table, dense_table])
    touched = [1, 3, 4]
    untouched = [0, 2, 5]
    np.testing.assert_allclose(sparse[touched], dense[touched], rtol=2e-5, atol=1e-6)
    assert not np.allclose(sparse[touched], initial[touched])
    np.testing.assert_array_equal(sparse[untouched], initial[untouched])


def test_adam_applies_sparse_gradients_as_tensorflow_1():
    """TF 1.x's AdamOptimizer._apply_sparse: repeated indices summed; m and v decay on every
    row and take the gradient on the touched ones; every row with a moment moves."""
    lr, beta1, beta2, eps = 0.1, 0.9, 0.999, 1e-8
    table, ids, coeff, loss = _embedding_problem("table")
    train = tf.train.AdamOptimizer(lr, beta1, beta2, eps).minimize(loss)
    steps = [[3, 1, 3, 3], [4, 4, 4, 4], [0, 3, 0, 3]]
    rng = np.random.RandomState(3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        var = sess.run(table).astype(np.float64)
        initial = var.copy()
        m, v = np.zeros_like(var), np.zeros_like(var)
        for t, step_ids in enumerate(steps, start=1):
            c = rng.uniform(0.5, 1.5, (4, WIDTH)).astype(np.float32)
            # The gradient rows of sum(rows^2 * c), summed per distinct id.
            summed = np.zeros_like(var)
            for i, row in enumerate(step_ids):
                summed[row] += 2 * var[row] * c[i]
            touched = sorted(set(step_ids))
            m *= beta1
            v *= beta2
            m[touched] += (1 - beta1) * summed[touched]
            v[touched] += (1 - beta2) * summed[touched] ** 2
            lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
            var -= lr_t * m / (np.sqrt(v) + eps)
            sess.run(train, {ids: step_ids, coeff: c})
            np.testing.assert_allclose(sess.run(table), var, rtol=1e-5, atol=1e-6)
    # Row 1 was touched in step 1 only and still moved in steps 2 and 3; rows 2, 5 never moved.
    np.testing.assert_array_equal(var[[2, 5]], initial[[2, 5]])


def test_sparse_apply_rejects_out_of_range_indices():
    table, ids, coeff, loss = _embedding_problem("table")
    opt = tf.train.AdagradOptimizer(0.1)
    grad = tf.IndexedSlices(tf.ones([2, WIDTH]), tf.constant([1, ROWS]), [ROWS, WIDTH])
    train = opt.apply_gradients([(grad, table)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"Index {ROWS} at offset 1 in indices is out of range"):
            sess.run(train)


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
def test_a_large_embedding_step_allocates_only_the_looked_up_rows(kind):
    """1,000,000 x 16 float32 (64 MB): a training step allocates nothing near that size (a
    dense gradient or update would allocate at least one such array)."""
    rows, width, batch = 1_000_000, 16, 64
    table = tf.Variable(tf.zeros([rows, width]), name="embedding")
    ids = tf.placeholder(tf.int32, [batch])
    loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids) - 1.0))
    make = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
            "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
            "adam": lambda: tf.train.AdamOptimizer(0.1)}[kind]
    train = make().minimize(loss)
    # No densification of the gradient in the graph (it would be an UnsortedSegmentSum into
    # the table's shape).
    assert not [op for op in train.graph.get_operations() if op.type == "UnsortedSegmentSum"
                and op.outputs[0].shape.as_list()[:1] == [rows]]
    rng = np.random.RandomState(4)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: rng.randint(0, rows, batch)})     # builds the plan, compiles
        step_ids = rng.randint(0, rows, batch)
        step_ids[:4] = step_ids[4]                                # duplicates
        tracemalloc.start()
        try:
            sess.run(train, {ids: step_ids})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        value = sess.run(tf.nn.embedding_lookup(table, step_ids))
    embedding_bytes = rows * width * 4
    assert peak < embedding_bytes // 16, f"a step allocated {peak} bytes at its peak"
    assert (value != 0).all()


# -- across tasks ---------------------------------------------------------------------------------
def test_ps_receives_only_the_gradient_rows(token_env):  # noqa: F811
    rows, width, batch = 20_000, 8, 6
    cluster = loopback_cluster(ps=1, worker=1)
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.device("/job:ps/task:0"):
            table = tf.Variable(tf.ones([rows, width]), name="embedding")
        with tf.device("/job:worker/task:0"):
            ids = tf.placeholder(tf.int32, [batch], name="ids")
            loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids) * 2.0)
            train = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=1.0).minimize(loss)
        step_ids = [7, 19_999, 7, 3, 3, 3]
        with tf.Session(servers[1].target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: step_ids})
            placement = {r.op: r.assigned for r in sess.placement}
            result = sess.run(tf.nn.embedding_lookup(table, [7, 3, 19_999, 0]))
            plan = next(entry[1] for entry in sess._plans.values()
                        if train in getattr(entry[1], "targets", ()))
            partitions = {part.task.job: part.graph for part in plan._partitions}
        apply_op = next(op for op in train.graph.get_operations()
                        if op.type == "SparseApplyAdagrad")
        assert placement[apply_op.name].startswith("/job:ps/")
        # Adagrad with summed duplicates: 2 * count, accumulator 1 + g^2.
        for row, count in ((7, 2), (3, 3), (19_999, 1)):
            g = 2.0 * count
            np.testing.assert_allclose(result[[7, 3, 19_999].index(row)],
                                       1.0 - 0.5 * g / np.sqrt(1.0 + g * g), rtol=1e-6)
        np.testing.assert_array_equal(result[3], np.ones(width))
        # What crossed between the tasks, as the partitions' receives declare it: the ids and
        # the looked-up rows one way, the gradient's rows and indices the other; never the
        # table (the shapes are static, so this is what travels).
        received = {job: [op.get_attr("tensor_shape") for op in graph.get_operations()
                          if op.type == "_Recv"] for job, graph in partitions.items()}
        assert received["ps"] and received["worker"]
        for shapes in received.values():
            for shape in shapes:
                assert shape.is_fully_defined() and shape.num_elements() <= batch * width, shape
        assert [batch, width] in [s.as_list() for s in received["ps"]]   # the gradient rows
    finally:
        for server in servers:
            server.stop(0)


def test_minimize_gates_several_gradients_without_running_the_fed_ids():
    """With several variables the optimizer gates the gradients together; an IndexedSlices is
    gated through its values, never its indices (here the fed ids placeholder)."""
    table = tf.Variable(np.ones((10, 2), np.float32), name="table")
    w = tf.Variable(np.ones((2, 1), np.float32), name="w")
    ids = tf.placeholder(tf.int32, [3])
    loss = tf.reduce_sum(tf.matmul(tf.nn.embedding_lookup(table, ids), w))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: [4, 4, 0]})
        out_table, out_w = sess.run([table, w])
    np.testing.assert_allclose(out_table[[4, 0, 1]], [[0, 0], [0.5, 0.5], [1, 1]])
    np.testing.assert_allclose(out_w, [[-0.5], [-0.5]])

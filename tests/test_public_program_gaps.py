"""Behaviours public TF 1.x programs needed (issue 14): tf.Print, tf.Assert and tf.assert_*,
tf.logging, the embedding projector's config, slim's prefetch_queue, contrib.framework's global
step, legacy_seq2seq's sequence losses, contrib.learn's MNIST import path, and strings with
trailing NUL bytes through parse_single_example + decode_raw (MNIST TFRecords).

Expected texts are TensorFlow's (checked with TensorFlow 2.21's tf.compat.v1 where it still has
the op); losses are computed with numpy.
"""
import logging
import os

import numpy as np
import pytest
from google.protobuf import text_format

import tfjupyter as tf


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# -- tf.Print --------------------------------------------------------------------------------------
def test_print_passes_input_through_and_writes_tensorflows_summary(capfd):
    x = tf.constant([[1.5, 2, 3], [4, 5, 6]])
    y = tf.Print(x, [x, tf.constant("hi"), tf.constant(7), tf.constant(list(range(10)))],
                 message="msg: ", summarize=4)
    np.testing.assert_array_equal(run(y), [[1.5, 2, 3], [4, 5, 6]])
    # TensorFlow 2.21 prints exactly this line for the same graph.
    assert capfd.readouterr().err.strip() == "msg: [[1.5 2 3][4...]...][hi][7][0 1 2 3...]"


def test_print_formats_values_as_tensorflow(capfd):
    data = [tf.constant([True, False]),
            tf.constant([0.1, 1234567.0, 1e20, 1.0 / 3], tf.float32),
            tf.constant([1.0 / 3, 1e-5], tf.float64), tf.constant(np.zeros((2, 0))),
            tf.constant([b"a", b"bc"]), tf.constant(np.arange(24).reshape(2, 3, 4))]
    run(tf.Print(tf.constant(1), data, summarize=30))
    assert capfd.readouterr().err.strip() == (
        "[1 0][0.1 1234567 1e+20 0.333333343][0.33333333333333331 1e-05][][a bc]"
        "[[[0 1 2 3][4 5 6 7][8 9 10 11]][[12 13 14 15][16 17 18 19][20 21 22 23]]]")


def test_print_first_n_and_gradient(capfd):
    x = tf.placeholder(tf.float32, [2])
    y = tf.Print(x, [x], message="x=", first_n=2)
    grad = tf.gradients(tf.reduce_sum(y * y), x)[0]
    with tf.Session() as sess:
        for i in range(4):
            g = sess.run(grad, {x: [i, 1.0]})
            np.testing.assert_allclose(g, [2.0 * i, 2.0])
    assert capfd.readouterr().err.split() == ["x=[0", "1]", "x=[1", "1]"]


# -- tf.Assert and tf.assert_* --------------------------------------------------------------------------
def test_assert_fails_the_step_with_the_data_summarized():
    flag = tf.placeholder(tf.bool, [])
    check = tf.Assert(flag, ["hello", tf.constant([[1.5, 2, 3], [4, 5, 6]]), tf.constant(7)],
                      summarize=2)
    run(check, {flag: True})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"assertion failed: \[hello\] \[\[1.5 2\.\.\.\]\.\.\.\] \[7\]"):
        run(check, {flag: False})
    with pytest.raises(TypeError, match="list of tensors"):
        tf.Assert(flag, "not a list")


def test_assert_positive_reports_like_tensorflow_1():
    v = tf.placeholder(tf.int32, [3], name="v")
    check = tf.assert_positive(v, message="must be pos")
    assert check.name == "assert_positive/assert_less/Assert/Assert"
    run(check, {v: [1, 2, 3]})
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(check, {v: [1, -2, 3]})
    assert ("assertion failed: [must be pos] [Condition x > 0 did not hold element-wise:] "
            "[x (v:0) = ] [1 -2 3]") in str(info.value)


@pytest.mark.parametrize("fn, good, bad, symbol", [
    (tf.assert_equal, ([1, 2], [1, 2]), ([1, 2], [1, 3]), "=="),
    (tf.assert_less, ([1, 2], [2, 3]), ([1, 2], [2, 2]), "<"),
    (tf.assert_less_equal, ([1, 2], [1, 2]), ([1, 3], [1, 2]), "<="),
    (tf.assert_greater, ([2, 3], [1, 2]), ([2, 2], [1, 2]), ">"),
    (tf.assert_greater_equal, ([1, 2], [1, 2]), ([0, 2], [1, 2]), ">="),
])
def test_binary_asserts(fn, good, bad, symbol):
    x, y = tf.placeholder(tf.int32, [2]), tf.placeholder(tf.int32, [2])
    check = fn(x, y)
    run(check, {x: good[0], y: good[1]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"Condition x {symbol} y did not hold element-wise"):
        run(check, {x: bad[0], y: bad[1]})


def test_sign_asserts_and_control_dependencies():
    v = tf.placeholder(tf.float32, [2])
    for fn, good, bad in ((tf.assert_negative, [-1, -2], [-1, 0]),
                          (tf.assert_non_negative, [0, 2], [-1, 0]),
                          (tf.assert_non_positive, [0, -2], [1, 0])):
        with tf.control_dependencies([fn(v)]):
            out = tf.identity(v)
        np.testing.assert_array_equal(run(out, {v: good}), good)
        with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold"):
            run(out, {v: bad})


def test_rank_type_and_scalar_checks():
    with pytest.raises(ValueError, match="must have rank 2"):
        tf.assert_rank(tf.zeros([3]), 2)
    p = tf.placeholder(tf.float32)
    check = tf.assert_rank_at_least(p, 2)
    run(check, {p: np.zeros((2, 3))})
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank at least"):
        run(check, {p: np.zeros(3)})
    with pytest.raises(TypeError, match="must be of type int32"):
        tf.assert_type(tf.zeros([2]), tf.int32)
    with pytest.raises(TypeError, match="integer"):
        tf.assert_integer(tf.zeros([2]))
    with pytest.raises(ValueError, match="Expected scalar"):
        tf.assert_scalar(tf.zeros([2]))
    assert run(tf.is_non_decreasing([1, 1, 2])) and not run(tf.is_strictly_increasing([1, 1, 2]))


# -- tf.logging ------------------------------------------------------------------------------------------
def test_logging_verbosity_and_every_n(capfd):
    old = tf.logging.get_verbosity()
    try:
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("hidden %d", 1)
        tf.logging.warn("shown %d", 2)
        tf.logging.set_verbosity(tf.logging.INFO)
        assert tf.logging.get_verbosity() == logging.INFO == tf.logging.INFO
        for i in range(5):
            tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
            tf.logging.log_first_n(tf.logging.INFO, "first %d", 1, i)
        err = capfd.readouterr().err.splitlines()
        assert err == ["WARNING:tfjupyter:shown 2", "INFO:tfjupyter:every 0",
                       "INFO:tfjupyter:first 0", "INFO:tfjupyter:every 2",
                       "INFO:tfjupyter:every 4"]
    finally:
        tf.logging.set_verbosity(old)


# -- contrib ------------------------------------------------------------------------------------------
def test_projector_writes_projector_config_pbtxt(tmp_path):
    from tfjupyter.contrib.tensorboard.plugins import projector
    writer = tf.summary.FileWriter(str(tmp_path))
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = "embedding:0"
    embedding.metadata_path = "metadata.tsv"
    projector.visualize_embeddings(writer, config)
    writer.close()
    text = (tmp_path / "projector_config.pbtxt").read_text()
    parsed = text_format.Parse(text, projector.ProjectorConfig())
    assert parsed == config and 'tensor_name: "embedding:0"' in text
    with pytest.raises(TypeError, match="ProjectorConfig"):
        projector.visualize_embeddings(writer, {"embeddings": []})


def test_prefetch_queue_hands_out_what_was_enqueued():
    counter = tf.Variable(0)
    step = tf.assign_add(counter, 1)
    images = tf.fill([2, 3], tf.cast(step, tf.float32))
    queue = tf.contrib.slim.prefetch_queue.prefetch_queue([images, step], capacity=4)
    got_images, got_step = queue.dequeue()
    assert got_images.shape.as_list() == [2, 3]
    assert any("fraction_of_4_full" in s.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        seen = [sess.run([got_images, got_step]) for _ in range(3)]
        coord.request_stop()
        sess.run(queue.close(cancel_pending_enqueues=True))
        coord.join(threads)
    assert [int(s) for _, s in seen] == [1, 2, 3]
    for img, s in seen:
        np.testing.assert_array_equal(img, np.full((2, 3), s))


def test_contrib_framework_global_step_and_learn_mnist_path():
    step = tf.contrib.framework.get_or_create_global_step()
    assert step is tf.train.get_global_step() and step.op.name == "global_step"
    from tfjupyter.contrib.learn.python.learn.datasets import mnist
    from tfjupyter.examples.tutorials.mnist import input_data
    assert mnist.read_data_sets is input_data.read_data_sets


def test_sequence_loss_by_example_and_sequence_loss():
    rng = np.random.RandomState(0)
    logits = [rng.randn(3, 5).astype(np.float32) for _ in range(2)]
    targets = [np.array([0, 4, 2], np.int32), np.array([1, 1, 3], np.int32)]
    weights = [np.ones(3, np.float32), np.array([1, 0, 1], np.float32)]
    by_example = tf.contrib.legacy_seq2seq.sequence_loss_by_example(
        [tf.constant(l) for l in logits], [tf.constant(t) for t in targets],
        [tf.constant(w) for w in weights])
    total = tf.contrib.legacy_seq2seq.sequence_loss(
        [tf.constant(l) for l in logits], [tf.constant(t) for t in targets],
        [tf.constant(w) for w in weights])
    got, got_total = run([by_example, total])

    def xent(l, t):
        l = l - l.max(axis=1, keepdims=True)
        return np.log(np.exp(l).sum(axis=1)) - l[np.arange(len(t)), t]
    expected = sum(xent(l, t) * w for l, t, w in zip(logits, targets, weights))
    expected /= sum(weights) + 1e-12
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(got_total, expected.sum() / 3, rtol=1e-5)
    with pytest.raises(ValueError, match="Lengths of logits, weights, and targets"):
        tf.contrib.legacy_seq2seq.sequence_loss_by_example(logits, targets[:1], weights)


# -- strings with trailing NUL bytes ------------------------------------------------------------------
def test_parsed_bytes_keep_trailing_nul_bytes_through_decode_raw():
    # An MNIST image whose last pixels are black ends in NUL bytes (convert_to_records.py).
    raw = bytes([1, 2, 0, 0])
    feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[raw]))
    example = tf.train.Example(features=tf.train.Features(feature={"b": feature}))
    serialized = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(serialized, {"b": tf.FixedLenFeature([], tf.string)})
    decoded = tf.decode_raw(parsed["b"], tf.uint8)
    got_bytes, got = run([parsed["b"], decoded], {serialized: example.SerializeToString()})
    assert got_bytes == raw
    np.testing.assert_array_equal(got, [1, 2, 0, 0])
    np.testing.assert_array_equal(run(tf.decode_raw(tf.constant([raw, raw]), tf.uint8)),
                                  [[1, 2, 0, 0]] * 2)


def test_public_names_exist():
    for name in ("Print", "Assert", "random_crop", "assert_positive", "assert_rank", "logging",
                 "image"):
        assert hasattr(tf, name), name
    assert os.path.basename(tf.contrib.tensorboard.plugins.projector.__file__) == "projector.py"


# -- tf.contrib.factorization.KMeans (aymericdamien/TensorFlow-Examples kmeans.py) ----------------
_KMEANS_X = np.random.RandomState(1).rand(12, 3).astype(np.float32)


def _kmeans_after_three_steps(metric, mini_batch):
    from tfjupyter.contrib.factorization import KMeans
    x = tf.placeholder(tf.float32, [None, 3])
    (all_scores, idx, scores, initialized, centers, init_op, train_op) = KMeans(
        x, 3, initial_clusters=_KMEANS_X[[0, 5, 9]], distance_metric=metric,
        use_mini_batch=mini_batch).training_graph()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert not sess.run(initialized)
        sess.run(init_op, {x: _KMEANS_X})
        for _ in range(3):
            sess.run(train_op, {x: _KMEANS_X[:8]})
        return sess.run([idx[0], scores[0], centers, initialized, all_scores[0]], {x: _KMEANS_X})


@pytest.mark.parametrize("metric, mini_batch, want_idx, want_scores, want_centers", [
    # TensorFlow 2.21's clustering_ops.KMeans (TF 1.x's contrib.factorization) on the same data.
    ("squared_euclidean", False, [0, 0, 2, 1, 0, 1, 2, 1, 0, 2, 2, 0],
     [0.03269, 0.19198, 0.04676, 0.03785, 0.09871, 0.01174, 0.04676, 0.06585, 0.42306, 0.1039,
      0.15548, 0.1388],
     [[0.30794, 0.58173, 0.03995], [0.72585, 0.38331, 0.64541], [0.16332, 0.27183, 0.59876]]),
    ("cosine", False, [0, 1, 1, 1, 0, 1, 2, 1, 0, 2, 2, 1],
     [0.01104, 0.07119, 0.07976, 0.01422, 0.01104, 0.0004, 0.0, 0.02563, 0.07946, 0.0091,
      0.01723, 0.07935],
     [[0.36791, 0.92973, 0.01542], [0.67334, 0.44909, 0.5873], [0.16778, 0.23675, 0.95697]]),
])
def test_kmeans_training_graph_matches_tensorflow(metric, mini_batch, want_idx, want_scores,
                                                  want_centers):
    idx, scores, centers, initialized, all_scores = _kmeans_after_three_steps(metric, mini_batch)
    assert initialized and idx.tolist() == want_idx
    np.testing.assert_allclose(scores, want_scores, atol=2e-5)
    np.testing.assert_allclose(centers, want_centers, atol=2e-5)
    np.testing.assert_allclose(all_scores.min(axis=1), scores, atol=1e-6)


@pytest.mark.parametrize("metric", ["squared_euclidean", "cosine"])
def test_kmeans_mini_batch_keeps_running_means(metric):
    # Each center is the mean of its initial value and every point ever assigned to it (counts
    # start at 1), computed here with numpy from the assignments of each step. (TF's own graph
    # reads the old counts unordered with their update, so its results vary run to run.)
    _, _, centers, _, _ = _kmeans_after_three_steps(metric, True)
    unit = (lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)) if metric == "cosine" else (
        lambda a: a)
    want, counts = unit(_KMEANS_X[[0, 5, 9]].astype(np.float64)), np.ones(3)
    batch = unit(_KMEANS_X[:8].astype(np.float64))
    for _ in range(3):
        if metric == "cosine":
            d = -batch @ unit(want).T
        else:
            d = ((batch[:, None, :] - want[None]) ** 2).sum(-1)
        assigned = d.argmin(1)
        for k in np.unique(assigned):
            rows = batch[assigned == k]
            want[k] = (want[k] * counts[k] + rows.sum(0)) / (counts[k] + len(rows))
            counts[k] += len(rows)
    np.testing.assert_allclose(centers, want, atol=1e-5)


def test_kmeans_random_init_picks_input_rows_once():
    from tfjupyter.contrib.factorization import KMeans
    x = tf.placeholder(tf.float32, [None, 3])
    graph = KMeans(x, 4, random_seed=3).training_graph()
    initialized, centers, init_op = graph[3], graph[4], graph[5]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(init_op, {x: _KMEANS_X})
        first = sess.run(centers)
        sess.run(init_op, {x: _KMEANS_X})  # already initialized: nothing changes
        assert sess.run(initialized) and first.shape == (4, 3)
        np.testing.assert_array_equal(sess.run(centers), first)
    assert all(any(np.array_equal(row, data) for data in _KMEANS_X) for row in first)
    with pytest.raises(NotImplementedError, match="kmeans_plus_plus"):
        KMeans(x, 2, initial_clusters="kmeans_plus_plus")


# -- lists holding tensors convert by packing them (TF's autopacking) ------------------------------
def test_lists_of_tensors_are_packed_like_tensorflow():
    a, b = tf.constant([1.0, 2.0]), tf.placeholder(tf.float32, [2])
    mean = tf.reduce_mean([a, b])                       # kmeans.py: tf.reduce_mean(scores)
    nested = tf.convert_to_tensor([[a[0], 3.0], [4, 5]])
    v = tf.Variable(7.0)
    with_variable = tf.convert_to_tensor([v, 1.0])
    # The names TensorFlow 2.21's tf.compat.v1 gives the same graph.
    assert mean.op.inputs[0].name == "Mean/input:0"
    assert mean.op.inputs[0].op.type == "Pack"
    assert nested.name == "packed:0" and nested.op.inputs[0].name == "packed/0:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        m, n, w = sess.run([mean, nested, with_variable], {b: [3.0, 4.0]})
    assert m == 2.5 and w.tolist() == [7.0, 1.0]
    np.testing.assert_array_equal(n, [[1, 3], [4, 5]])
    with pytest.raises(TypeError, match="list containing a tensor of dtype float32 to int32"):
        tf.convert_to_tensor([a, b], dtype=tf.int32)


# -- a one-shot iterator captures a dataset of another graph by value (TF 1.x samples) -------------
def test_one_shot_iterator_copies_a_dataset_built_in_another_graph(caplog):
    # samples/core/get_started's regression samples build the dataset outside the Estimator's
    # input_fn: `lambda: ds.make_one_shot_iterator().get_next()` runs in the Estimator's graph.
    features = {"a": np.arange(6.0)}
    ds = tf.data.Dataset.from_tensor_slices((features, np.arange(6))).batch(4).repeat()
    mapped = tf.data.Dataset.from_tensor_slices(np.arange(5)).map(lambda x: x * 2).filter(
        lambda x: x > 2)
    graph = tf.Graph()
    with graph.as_default():
        batch = ds.make_one_shot_iterator().get_next()
        element = mapped.make_one_shot_iterator().get_next()
        assert batch[0]["a"].graph is graph and element.graph is graph
        with tf.Session() as sess:
            first, second = sess.run(batch), sess.run(batch)
            evens = [sess.run(element) for _ in range(3)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(element)
    assert first[0]["a"].tolist() == [0, 1, 2, 3] and second[1].tolist() == [4, 5]
    assert evens == [4, 6, 8]
    assert "different from the graph" in caplog.text


def test_one_shot_iterator_cannot_copy_a_variable_of_another_graph():
    v = tf.Variable([1.0, 2.0], name="data")
    ds = tf.data.Dataset.from_tensor_slices(v.value())
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"stateful node \(name:data, type:VariableV2\)"):
            ds.make_one_shot_iterator()


# -- tf.layers.conv2d_transpose (aymericdamien/TensorFlow-Examples dcgan.py) ----------------------
def test_conv2d_transpose_layer_matches_tensorflow():
    x = tf.placeholder(tf.float32, [None, 3, 3, 2])
    same = tf.layers.conv2d_transpose(
        x, 4, 3, strides=2, padding="same",
        kernel_initializer=tf.constant_initializer(np.arange(72).reshape(3, 3, 4, 2) / 50.0),
        bias_initializer=tf.constant_initializer(0.5))
    valid = tf.layers.conv2d_transpose(
        x, 2, 3, strides=1, padding="valid",
        kernel_initializer=tf.constant_initializer(np.arange(36).reshape(3, 3, 2, 2) / 40.0))
    strided = tf.layers.conv2d_transpose(x, 1, 2, strides=2, activation=tf.nn.sigmoid)
    assert [same.shape.as_list(), valid.shape.as_list(), strided.shape.as_list()] == [
        [None, 6, 6, 4], [None, 5, 5, 2], [None, 6, 6, 1]]
    assert [v.name for v in tf.trainable_variables()][:3] == [
        "conv2d_transpose/kernel:0", "conv2d_transpose/bias:0", "conv2d_transpose_1/kernel:0"]
    assert tf.trainable_variables()[0].shape.as_list() == [3, 3, 4, 2]   # [kh, kw, out, in]
    grad = tf.gradients(tf.reduce_sum(same * same) + tf.reduce_sum(valid), x)[0]
    value = np.arange(36, dtype=np.float32).reshape(2, 3, 3, 2) / 10
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, g = sess.run([same, valid, grad], {x: value})
    # TensorFlow 2.21's nn.conv2d_transpose to the shapes TF 1.15's layer computes (+ bias).
    np.testing.assert_allclose(a[1, 0, :, 2], [0.834, 1.426, 2.388, 1.526, 2.588, 1.626],
                               rtol=1e-4)
    np.testing.assert_allclose(b[0, 2, :, 1], [0.6975, 2.22, 4.6875, 4.35, 2.8275], rtol=1e-4)
    np.testing.assert_allclose(g[1, :, :, 0], [[311.434, 411.079, 236.265],
                                               [434.535, 562.442, 307.792],
                                               [180.379, 219.091, 105.357]], rtol=1e-4)


def test_compat_v1_has_the_package_version():
    # Hvass-Labs TensorFlow-Tutorials print tf.__version__ after `import ...compat.v1 as tf`.
    import tfjupyter.compat.v1 as tf_v1
    assert tf_v1.__version__ == tf.__version__


# -- tf.keras.datasets.imdb / boston_housing, pad_sequences, GlobalAveragePooling1D ---------------
# (tensorflow/models samples/core/tutorials/keras: basic_text_classification, basic_regression)
def test_imdb_load_data_prepares_reviews_as_keras(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "datasets").mkdir()
    reviews = np.empty(2, dtype=object)
    reviews[:] = [[1, 2, 9], [4, 5]]
    tests = np.empty(2, dtype=object)
    tests[:] = [[6], [7, 8, 1, 2]]
    np.savez(tmp_path / "datasets" / "imdb.npz", x_train=reviews, y_train=np.array([0, 1]),
             x_test=tests, y_test=np.array([1, 0]))
    (tmp_path / "datasets" / "imdb_word_index.json").write_text('{"the": 1, "a": 2}')
    # Keras shuffles each split with np.random.seed(seed) then np.random.shuffle.
    np.random.seed(113)
    train_order = np.random.permutation(2)
    test_order = np.random.permutation(2)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.imdb.load_data(num_words=10)
    # start_char 1, then each word index + 3; indices >= num_words become oov_char 2.
    prepared_train = [[1, 4, 5, 2], [1, 7, 8]]
    prepared_test = [[1, 9], [1, 2, 2, 4, 5]]
    assert [list(x_train[i]) for i in range(2)] == [prepared_train[k] for k in train_order]
    assert [list(x_test[i]) for i in range(2)] == [prepared_test[k] for k in test_order]
    assert y_train.tolist() == [[0, 1][k] for k in train_order]
    assert y_test.tolist() == [[1, 0][k] for k in test_order]
    assert x_train.dtype == object        # ragged, as old numpy made it
    assert tf.keras.datasets.imdb.get_word_index() == {"the": 1, "a": 2}
    with pytest.raises(FileNotFoundError, match="never downloads"):
        tf.keras.datasets.imdb.load_data(path="missing.npz")


def test_boston_housing_load_data_splits_as_keras(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "datasets").mkdir()
    x, y = np.arange(20.0).reshape(10, 2), np.arange(10.0)
    np.savez(tmp_path / "datasets" / "boston_housing.npz", x=x, y=y)
    np.random.seed(113)
    order = np.random.permutation(10)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.boston_housing.load_data()
    assert y_train.tolist() == y[order[:8]].tolist() and y_test.tolist() == y[order[8:]].tolist()
    np.testing.assert_array_equal(x_test, x[order[8:]])


def test_pad_sequences_as_tensorflow_documents():
    pad = tf.keras.preprocessing.sequence.pad_sequences
    seqs = [[1], [2, 3], [4, 5, 6]]
    # The examples of TF's pad_sequences docstring.
    assert pad(seqs).tolist() == [[0, 0, 1], [0, 2, 3], [4, 5, 6]]
    assert pad(seqs, value=-1).tolist() == [[-1, -1, 1], [-1, 2, 3], [4, 5, 6]]
    assert pad(seqs, padding="post").tolist() == [[1, 0, 0], [2, 3, 0], [4, 5, 6]]
    assert pad(seqs, maxlen=2).tolist() == [[0, 1], [2, 3], [5, 6]]
    assert pad(seqs, maxlen=2, truncating="post").tolist() == [[0, 1], [2, 3], [4, 5]]
    assert pad(seqs).dtype == np.int32 and pad([[], [1.5]], dtype="float32").tolist() == [
        [0.0], [1.5]]
    with pytest.raises(ValueError, match='Padding type "middle" not understood'):
        pad(seqs, padding="middle")


def test_global_average_pooling_1d_averages_the_steps():
    x = tf.placeholder(tf.float32, [None, 3, 2])
    mean = tf.keras.layers.GlobalAveragePooling1D()(x)
    biggest = tf.keras.layers.GlobalMaxPooling1D()(x)
    first = tf.keras.layers.GlobalAveragePooling1D(data_format="channels_first")(x)
    value = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    with tf.Session() as sess:
        m, b, f = sess.run([mean, biggest, first], {x: value})
    assert mean.shape.as_list() == [None, 2]
    np.testing.assert_allclose(m, [[2, 3], [8, 9]])
    np.testing.assert_allclose(b, [[4, 5], [10, 11]])
    np.testing.assert_allclose(f, [[0.5, 2.5, 4.5], [6.5, 8.5, 10.5]])


def test_a_sequential_starting_with_an_embedding_is_built_at_once():
    # tensorflow/models' basic_text_classification calls model.summary() before fit: TF 1.x's
    # Embedding gives itself input_shape (input_length,), so the model is built when added.
    keras = tf.keras
    model = keras.Sequential()
    model.add(keras.layers.Embedding(100, 16))
    model.add(keras.layers.GlobalAveragePooling1D())
    model.add(keras.layers.Dense(1, activation=tf.nn.sigmoid))
    assert model.input_shape == (None, None)
    assert model.output_shape == (None, 1)
    model.summary()
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["acc"])
    x = np.random.RandomState(0).randint(0, 100, (8, 5))
    history = model.fit(x, np.arange(8) % 2, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "acc"}

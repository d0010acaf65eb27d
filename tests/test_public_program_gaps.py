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

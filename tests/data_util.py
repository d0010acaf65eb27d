"""What the tf.data tests share: a fresh default graph per test, and reading a dataset to its
end (the OutOfRangeError that ends every iterator)."""
import pytest

import tfjupyter as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def drain(sess, element, feed=None) -> list:
    """``element`` run until the iterator behind it ends."""
    out = []
    try:
        while True:
            out.append(sess.run(element, feed))
    except tf.errors.OutOfRangeError:
        return out


def values(dataset) -> list:
    """Every element of ``dataset`` through a one-shot iterator, in a fresh session."""
    element = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        return drain(sess, element)

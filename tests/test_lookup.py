"""Lookup tables (tf.contrib.lookup, tables_initializer) and tf.strings.to_hash_bucket_fast,
against TensorFlow: Fingerprint64 buckets and out-of-vocabulary ids TensorFlow computed
(pasted below), TF's errors and collections."""
import numpy as np
import pytest

import tfjupyter as tf

# tf.strings.to_hash_bucket_fast(WORDS, 2**63 - 1) and (WORDS, 10) in TensorFlow 2.21: every
# length class of farmhash's Fingerprint64 (0-16, 17-32, 33-64, longer) is covered.
WORDS = [b"", b"a", b"ab", b"abc", b"abcd", b"hello", b"abcdefgh", b"hello world!!", b"x" * 16,
         b"y" * 17, b"the quick brown fox jumps", b"z" * 32, b"q" * 33, b"0123456789" * 5,
         b"w" * 64, b"v" * 65, b"0123456789abcdef" * 8 + b"tail", bytes(range(256)) * 3]
TF_BIG_BUCKETS = [1936946117179621456, 3694432073954588132, 3066228220894225695,
                  2640714258260161385, 1897425971756105985, 3786372426573024489,
                  9145071594317031690, 6681298521578234837, 3320895591121647644,
                  426471879119003573, 6000648049570618899, 5529242935250131553,
                  337133943010535268, 5565497893534144777, 4555407945498560506,
                  978096718525207201, 1665621069435578492, 2092031361577642528]
TF_TEN_BUCKETS = [3, 9, 2, 5, 5, 6, 7, 4, 4, 3, 6, 3, 5, 4, 6, 8, 9, 8]


def test_hash_buckets_are_tensorflows():
    with tf.Graph().as_default(), tf.Session() as sess:
        words = tf.constant(np.array(WORDS, dtype=object))
        big, ten = sess.run([tf.string_to_hash_bucket_fast(words, 2 ** 63 - 1),
                             tf.strings.to_hash_bucket_fast(words, 10)])
    assert big.tolist() == TF_BIG_BUCKETS
    assert ten.tolist() == TF_TEN_BUCKETS


def test_index_table_with_oov_buckets_matches_tensorflow():
    with tf.Graph().as_default():
        table = tf.contrib.lookup.index_table_from_tensor(tf.constant(["a", "b", "c"]),
                                                          num_oov_buckets=3)
        ids = table.lookup(tf.constant(["a", "c", "zz", "hello", "world", "tfjupyter"]))
        size = table.size()
        (init,) = tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
        assert init.type == "InitializeTableV2" and table.init is init
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
                sess.run(ids)
            sess.run(tf.tables_initializer())
            assert sess.run(ids).tolist() == [0, 2, 4, 4, 4, 5]   # TensorFlow's ids
            assert sess.run(size) == 6
            sess.run(tf.tables_initializer())      # initializing again with the same data: fine


def test_default_values_reverse_tables_and_sparse_keys():
    with tf.Graph().as_default():
        to_id = tf.contrib.lookup.index_table_from_tensor(["a", "b"], default_value=-7)
        to_word = tf.contrib.lookup.index_to_string_table_from_tensor(["x", "y"])
        sparse = tf.SparseTensor([[0, 0], [1, 2]], tf.constant(["b", "nope"]), [2, 3])
        ids = to_id.lookup(tf.constant([["b", "q"], ["a", "a"]]))
        words = to_word.lookup(tf.constant([0, 1, 5], tf.int64))
        sparse_ids = to_id.lookup(sparse)
        table = tf.contrib.lookup.HashTable(
            tf.contrib.lookup.KeyValueTensorInitializer([1, 2], [10.0, 20.0], tf.int64,
                                                        tf.float32), -1.0)
        values = table.lookup(tf.constant([2, 3], tf.int64))
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            assert sess.run(ids).tolist() == [[1, -7], [0, 0]]
            assert sess.run(words).tolist() == [b"x", b"y", b"UNK"]
            assert sess.run(sparse_ids).values.tolist() == [1, -7]
            assert sess.run(values).tolist() == [20.0, -1.0]


def test_tables_from_vocabulary_files(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("cat\ndog\nbird\n")
    with tf.Graph().as_default():
        ids = tf.contrib.lookup.index_table_from_file(str(vocab), num_oov_buckets=1).lookup(
            tf.constant(["dog", "fish", "bird"]))
        words = tf.contrib.lookup.index_to_string_table_from_file(str(vocab)).lookup(
            tf.constant([2, 9], tf.int64))
        short = tf.contrib.lookup.index_table_from_file(str(vocab), vocab_size=2).lookup(
            tf.constant(["bird"]))
        too_long = tf.contrib.lookup.index_table_from_file(str(vocab), vocab_size=5)
        missing = tf.contrib.lookup.index_table_from_file(str(tmp_path / "none.txt"))
        with tf.Session() as sess:
            for init in tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)[:3]:
                sess.run(init)
            assert sess.run(ids).tolist() == [1, 3, 2]
            assert sess.run(words).tolist() == [b"bird", b"UNK"]
            assert sess.run(short).tolist() == [-1]
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Invalid vocab_size in .*: expected 5 but got 3"):
                sess.run(too_long.init)
            with pytest.raises(tf.errors.NotFoundError, match="none.txt"):
                sess.run(missing.init)


def test_conflicting_initialization_and_argument_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Can't specify both num_oov_buckets and "
                                             "default_value"):
            tf.contrib.lookup.index_table_from_tensor(["a"], num_oov_buckets=1, default_value=3)
        dup = tf.contrib.lookup.index_table_from_tensor(["a", "a"])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="HashTable has different value for same key"):
                sess.run(tf.tables_initializer())


def test_tables_made_inside_functions_live_outside(tmp_path):
    # As in TensorFlow: a table made in a Dataset.map function (or a cond branch) is made once
    # in the outer graph, where tables_initializer() fills it.
    with tf.Graph().as_default():
        def to_ids(words):
            table = tf.contrib.lookup.index_table_from_tensor(tf.constant(["a", "b"]),
                                                              num_oov_buckets=1)
            return table.lookup(words)
        ids = tf.data.Dataset.from_tensor_slices(tf.constant(["b", "a", "zz"])).map(to_ids)
        next_id = ids.make_one_shot_iterator().get_next()
        assert len(tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)) == 1
        flag = tf.placeholder(tf.bool, [])
        branch = tf.cond(flag, lambda: tf.contrib.lookup.index_to_string_table_from_tensor(
            ["x", "y"]).lookup(tf.constant([1], tf.int64)), lambda: tf.constant(["-"]))
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            assert [sess.run(next_id) for _ in range(3)] == [1, 0, 2]
            assert sess.run(branch, {flag: True}).tolist() == [b"y"]

        def computed_keys(words):
            keys = tf.strings.lower(tf.constant(["A"]))     # not a constant: refused
            return tf.contrib.lookup.index_table_from_tensor(keys).lookup(words)
        with pytest.raises(ValueError, match="must be constants"):
            tf.data.Dataset.from_tensor_slices(tf.constant(["a"])).map(computed_keys)

"""tf.data datasets (TF 1.15 semantics, graph mode): sources, transformations and their element
structures, checked against TensorFlow's documented behaviour and hand-computed values."""
import numpy as np
import pytest

import tfjupyter as tf
from data_util import drain, fresh_graph, values  # noqa: F401 - fresh_graph: the fixture

pytestmark = pytest.mark.timeout(60)


# -- sources and structures ------------------------------------------------------------------------
def test_from_tensor_slices_nested_structure_types_shapes_classes():
    ds = tf.data.Dataset.from_tensor_slices(
        ({"x": np.arange(6, dtype=np.float32).reshape(3, 2), "name": ["a", "b", "c"]},
         [7, 8, 9]))
    assert ds.output_types == ({"name": tf.string, "x": tf.float32}, tf.int32)
    assert ds.output_shapes[0]["x"].as_list() == [2]
    assert ds.output_shapes[1].as_list() == []
    assert ds.output_classes == ({"name": tf.Tensor, "x": tf.Tensor}, tf.Tensor)
    got = values(ds)
    assert len(got) == 3
    features, label = got[1]
    assert features["name"] == b"b" and label == 8
    np.testing.assert_array_equal(features["x"], [2.0, 3.0])


def test_a_list_is_one_component_not_a_structure():
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])
    assert ds.output_types == tf.int32
    assert ds.output_shapes.as_list() == [2]
    assert [v.tolist() for v in values(ds)] == [[1, 2], [3, 4]]


def test_from_tensor_slices_checks_the_first_dimension():
    with pytest.raises(ValueError, match="not compatible"):
        tf.data.Dataset.from_tensor_slices(([1, 2, 3], [1, 2]))
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.data.Dataset.from_tensor_slices(3)


def test_from_tensors_is_one_element():
    ds = tf.data.Dataset.from_tensors(([1, 2, 3], "s"))
    assert ds.output_shapes[0].as_list() == [3]
    (got,) = values(ds)
    assert got[0].tolist() == [1, 2, 3] and got[1] == b"s"


@pytest.mark.parametrize("args, expected", [((5,), [0, 1, 2, 3, 4]), ((2, 5), [2, 3, 4]),
                                            ((1, 5, 2), [1, 3]), ((5, 1, -2), [5, 3]),
                                            ((1, 5, -2), [])])
def test_range_is_pythons(args, expected):
    ds = tf.data.Dataset.range(*args)
    assert ds.output_types == tf.int64
    assert values(ds) == expected


def test_zip_nests_as_given_and_ends_with_the_shortest():
    a = tf.data.Dataset.range(1, 4)
    b = tf.data.Dataset.range(4, 8)
    c = tf.data.Dataset.from_tensor_slices(([1.0, 2.0], [b"p", b"q"]))
    ds = tf.data.Dataset.zip((a, (b, c)))
    assert ds.output_types == (tf.int64, (tf.int64, (tf.float32, tf.string)))
    assert values(ds) == [(1, (4, (1.0, b"p"))), (2, (5, (2.0, b"q")))]


def test_concatenate_and_its_type_check():
    a = tf.data.Dataset.range(3)
    assert values(a.concatenate(tf.data.Dataset.range(10, 12))) == [0, 1, 2, 10, 11]
    with pytest.raises(TypeError, match="different types"):
        a.concatenate(tf.data.Dataset.from_tensor_slices([1.0]))


def test_from_generator_values_and_errors():
    def gen():
        for i in range(3):
            yield i, [float(i)] * 2
    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.float32), ((), (2,)))
    assert ds.output_shapes[1].as_list() == [2]
    got = values(ds)
    assert [g[0] for g in got] == [0, 1, 2] and got[2][1].tolist() == [2.0, 2.0]

    def with_args(n):
        yield from range(int(n))
    assert values(tf.data.Dataset.from_generator(with_args, tf.int64, (), args=(4,))) == \
        [0, 1, 2, 3]

    def bad_shape():
        yield [1, 2, 3]
    element = tf.data.Dataset.from_generator(bad_shape, tf.int64, [2]) \
        .make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"shape \(3,\) where an element of shape "
                                                   r"\(2,\) was expected"):
        sess.run(element)

    def bad_type():
        yield "not a number"
    element = tf.data.Dataset.from_generator(bad_type, tf.int64).make_one_shot_iterator() \
        .get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="could not be converted to the expected "
                                                   "type. The expected type was int64"):
        sess.run(element)


# -- functions -------------------------------------------------------------------------------------
def test_map_spreads_a_tuple_over_arguments_and_a_dict_is_one():
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20])).map(lambda a, b: a + b)
    assert values(ds) == [11, 22]
    ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]}) \
        .map(lambda d: {"sum": d["a"] + d["b"], "a": d["a"]})
    assert ds.output_types == {"a": tf.int32, "sum": tf.int32}
    assert values(ds) == [{"a": 1, "sum": 4}, {"a": 2, "sum": 6}]


def test_map_list_result_is_a_tuple_and_captures_take_the_initializers_value():
    scale = tf.placeholder(tf.int32, [])
    ds = tf.data.Dataset.range(3).map(lambda x: [tf.cast(x, tf.int32) * scale, x])
    assert ds.output_types == (tf.int32, tf.int64)
    it = ds.make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {scale: 10})
        assert [e[0] for e in drain(sess, element)] == [0, 10, 20]
        sess.run(it.initializer, {scale: -1})
        assert [e[0] for e in drain(sess, element)] == [0, -1, -2]


def test_parallel_map_keeps_the_order():
    ds = tf.data.Dataset.range(50).map(lambda x: x * x, num_parallel_calls=4)
    assert values(ds) == [i * i for i in range(50)]
    ds = tf.data.Dataset.range(5).map(lambda x: x + 1,
                                      num_parallel_calls=tf.data.experimental.AUTOTUNE)
    assert values(ds) == [1, 2, 3, 4, 5]


def test_map_function_errors_name_the_dataset_op():
    ds = tf.data.Dataset.range(3)
    with pytest.raises(TypeError, match=r"Unsupported return value from function passed to "
                                        r"Dataset.map\(\) \(MapDataset\): None"):
        ds.map(lambda x: None)
    with pytest.raises(TypeError, match=r"Unsupported return value from function passed to "
                                        r"Dataset.map\(\) \(MapDataset\)"):
        ds.map(lambda x: object())
    with pytest.raises(ValueError, match="scalar boolean"):
        ds.filter(lambda x: x)
    with pytest.raises(TypeError, match=r"FlatMapDataset\) must return a `Dataset`"):
        ds.flat_map(lambda x: x)


def test_a_failing_map_function_fails_get_next_with_its_op():
    def reciprocal(x):
        if x == 0:
            raise ValueError("reciprocal of zero")
        return 1 / x
    ds = tf.data.Dataset.from_tensor_slices([1.0, 0.0]).map(
        lambda x: tf.py_func(reciprocal, [x], tf.float32))
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(element) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="reciprocal of zero"):
            sess.run(element)


def test_filter_and_flat_map():
    ds = tf.data.Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0))
    assert values(ds) == [0, 3, 6, 9]
    ds = tf.data.Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]) \
        .flat_map(lambda row: tf.data.Dataset.from_tensor_slices(row).take(2))
    assert values(ds) == [1, 2, 4, 5]


def test_interleave_order_is_tensorflows_documented_example():
    # tf.data.Dataset.interleave's docstring (TF 1.15).
    a = tf.data.Dataset.range(1, 6)
    ds = a.interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                      cycle_length=2, block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3,
                          4, 4, 5, 5, 5, 5, 5, 5]


def test_interleave_refills_an_ended_slot_in_place():
    # Datasets [1], [2, 2, 2], [3, 3]; cycle 2, block 1, by TF's algorithm: slot 0 gives 1,
    # slot 1 gives 2; slot 0 ends (the turn moves on), slot 1 gives 2; slot 0 opens [3, 3]
    # and gives 3; then 2, 3; both end.
    lengths = tf.constant([1, 3, 2], dtype=tf.int64)
    ds = tf.data.Dataset.range(3).interleave(
        lambda i: tf.data.Dataset.from_tensors(i + 1).repeat(tf.gather(lengths, i)),
        cycle_length=2, block_length=1)
    assert values(ds) == [1, 2, 2, 3, 2, 3]


# -- batching --------------------------------------------------------------------------------------
def test_batch_shapes_and_the_remainder():
    ds = tf.data.Dataset.from_tensor_slices(np.arange(14).reshape(7, 2)).batch(3)
    assert ds.output_shapes.as_list() == [None, 2]
    assert [b.shape for b in values(ds)] == [(3, 2), (3, 2), (1, 2)]
    ds = tf.data.Dataset.range(7).batch(3, drop_remainder=True)
    assert ds.output_shapes.as_list() == [3]
    assert [b.tolist() for b in values(ds)] == [[0, 1, 2], [3, 4, 5]]


def test_batch_of_unequal_shapes_is_tensorflows_error():
    ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n)).batch(2)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Cannot batch tensors with different shapes in component 0. First element "
                  r"had shape \[1\] and element 1 had shape \[2\]."):
        sess.run(element)


def test_padded_batch_pads_to_the_longest_or_the_given_shape():
    ds = tf.data.Dataset.range(1, 5).map(lambda n: tf.fill([n], n))
    got = values(ds.padded_batch(2, padded_shapes=[None]))
    assert [b.tolist() for b in got] == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    padded = ds.padded_batch(3, padded_shapes=[5], padding_values=tf.constant(-1, tf.int64))
    assert padded.output_shapes.as_list() == [None, 5]
    got = values(padded)
    assert got[1].tolist() == [[4, 4, 4, 4, -1]]
    too_small = ds.padded_batch(2, padded_shapes=[2]).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(too_small)
        with pytest.raises(tf.errors.InvalidArgumentError, match="pad to a smaller size"):
            sess.run(too_small)


def test_padded_batch_of_tuples_with_strings():
    ds = tf.data.Dataset.from_tensor_slices((["a", "b"], [[1, 2], [3, 4]])) \
        .map(lambda s, v: (tf.reshape(s, [1]), v)).padded_batch(2, ([2], [3]))
    (got,) = values(ds)
    assert got[0].tolist() == [[b"a", b""], [b"b", b""]]
    assert got[1].tolist() == [[1, 2, 0], [3, 4, 0]]


# -- shuffle, repeat, take, skip, cache ------------------------------------------------------------
def shuffled(seed, reshuffle=None, epochs=2, n=20, graph_seed=None):
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        ds = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=reshuffle)
        return values(ds.repeat(epochs))


def test_shuffle_is_a_permutation_reproducible_with_a_seed():
    got = shuffled(seed=42)
    first, second = got[:20], got[20:]
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != list(range(20))
    assert shuffled(seed=42) == got                 # the same orders in a new session
    assert first != second                          # reshuffled each epoch
    assert shuffled(seed=7)[:20] != first
    assert shuffled(seed=None, graph_seed=5) == shuffled(seed=None, graph_seed=5)


def test_shuffle_without_reshuffling_repeats_its_order():
    got = shuffled(seed=1, reshuffle=False)
    assert got[:20] == got[20:] and got[:20] != list(range(20))


def test_shuffle_with_a_buffer_of_one_keeps_the_order_and_small_buffers_stay_local():
    assert values(tf.data.Dataset.range(10).shuffle(1, seed=3)) == list(range(10))
    got = values(tf.data.Dataset.range(100).shuffle(2, seed=3))
    # With a buffer of 2, element i leaves at position >= i - 1 ... and the first output is
    # one of the first two elements.
    assert sorted(got) == list(range(100)) and got[0] in (0, 1)
    assert all(pos >= v - 1 for pos, v in enumerate(got))


def test_repeat_take_skip():
    ds = tf.data.Dataset.range(3)
    assert values(ds.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(ds.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(ds.skip(1)) == [1, 2]
    assert values(ds.skip(5)) == []
    assert values(ds.take(-1)) == [0, 1, 2]
    assert values(ds.skip(-1)) == []
    assert values(ds.take(0).repeat()) == []          # repeating nothing forever ends


def test_cache_reads_its_input_once(tmp_path):
    calls = []

    def count(x):
        calls.append(int(x))
        return x
    ds = tf.data.Dataset.range(4).map(lambda x: tf.py_func(count, [x], tf.int64)).cache()
    assert values(ds.repeat(3)) == [0, 1, 2, 3] * 3
    assert calls == [0, 1, 2, 3]

    path = str(tmp_path / "cache")
    with tf.Graph().as_default():
        first = tf.data.Dataset.range(4).map(lambda x: tf.py_func(count, [x], tf.int64))
        assert values(first.cache(path)) == [0, 1, 2, 3]
    calls.clear()
    with tf.Graph().as_default():  # another program: reads the file, not its input
        again = tf.data.Dataset.range(4).map(lambda x: tf.py_func(count, [x], tf.int64) * 100)
        assert values(again.cache(path)) == [0, 1, 2, 3]
    assert calls == []


def test_apply_and_experimental_helpers():
    ds = tf.data.Dataset.range(6).apply(lambda d: d.filter(lambda x: x > 2))
    assert values(ds) == [3, 4, 5]
    ds = tf.data.Dataset.range(5).apply(tf.data.experimental.map_and_batch(lambda x: x * 2, 2))
    assert [b.tolist() for b in values(ds)] == [[0, 2], [4, 6], [8]]
    with pytest.raises(TypeError, match="must return a Dataset"):
        tf.data.Dataset.range(2).apply(lambda d: 3)
    assert tf.data.experimental.AUTOTUNE == -1


def test_contrib_data_names_of_tf_1_4():
    # TF 1.4 programs read `tf.contrib.data.TextLineDataset(path)`; the contrib batching
    # transformations are batch(..., drop_remainder=True) (TF 1.10+'s argument)
    assert tf.contrib.data.TextLineDataset is tf.data.TextLineDataset
    assert tf.contrib.data.Dataset is tf.data.Dataset
    assert tf.contrib.data.Iterator is tf.data.Iterator
    batches = tf.data.Dataset.range(7).apply(tf.contrib.data.batch_and_drop_remainder(3))
    padded = tf.data.Dataset.range(1, 6).map(lambda n: tf.fill([n], n)).apply(
        tf.contrib.data.padded_batch_and_drop_remainder(2, [None]))
    first, second = (d.make_one_shot_iterator().get_next() for d in (batches, padded))
    with tf.Session() as sess:
        assert [list(sess.run(first)) for _ in range(2)] == [[0, 1, 2], [3, 4, 5]]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(first)
        assert sess.run(second).tolist() == [[1, 0], [2, 2]]
        assert sess.run(second).tolist() == [[3, 3, 3, 0], [4, 4, 4, 4]]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(second)

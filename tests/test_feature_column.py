"""tf.feature_column (TensorFlow 1.15's v1 API): input_layer and linear_model over every kind
of column, against values TensorFlow 2.21's tf.compat.v1.feature_column computed for the same
models (tests/feature_column_models.py; tests/data/make_feature_column_reference.py printed the
TF_* values pasted below), its variable names and collections, gradients through embedding
columns, bucket ids of hashed and crossed columns, parsing with make_parse_example_spec, and
TensorFlow's errors."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.python.feature_column import feature_column as fc_lib

from feature_column_models import build_combiner_model, build_model, write_vocabulary

fc = tf.feature_column

TF_VARIABLES = [("input_layer/color_embedding/embedding_weights:0", [5, 3]),
                ("input_layer/item_embedding/embedding_weights:0", [5, 2]),
                ("linear_model/age_bucketized/weights:0", [4, 2]),
                ("linear_model/age_bucketized_X_color/weights:0", [20, 2]),
                ("linear_model/animal/weights:0", [3, 2]),
                ("linear_model/city/weights:0", [10, 2]),
                ("linear_model/color/weights:0", [5, 2]),
                ("linear_model/color_weighted_by_wt/weights:0", [5, 2]),
                ("linear_model/item/weights:0", [5, 2]),
                ("linear_model/price/weights:0", [1, 2]),
                ("linear_model/bias_weights:0", [2])]
TF_NET = [
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
    1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
    0.30000001192092896, 0.4000000059604645, 0.5, 1.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.5, 0.0, 0.0,
    2.0, 3.0, 3.0],
    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
    0.30000001192092896, 0.4000000059604645, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
    8.0, 9.0, 10.0],
    [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0,
    0.44999998807907104, 0.550000011920929, 0.6499999761581421, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0,
    0.0, 3.0, 0.0, 0.0, 1.0, 20.0],
    [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 6.0],
]
TF_LOGITS = [
    [10.095000267028809, 10.239999771118164],
    [15.440000534057617, 15.64000129699707],
    [25.900001525878906, 26.220001220703125],
    [8.680000305175781, 8.799999237060547],
]
TF_GRAD = [
    [94.0, 95.0, 96.0],
    [94.0, 95.0, 96.0],
    [47.0, 47.5, 48.0],
    [47.0, 47.5, 48.0],
    [0.0, 0.0, 0.0],
]
TF_IDS = {
    'age_bucketized': [[[0, 0], [1, 0], [2, 0], [3, 0]], [0, 1, 3, 2], [4, 1]],
    'color': [[[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [0, 2, 1, 3, 0], [4, 2]],
    'item': [[[0, 0], [1, 0], [2, 0]], [1, 4, 0], [4, 1]],
    'city': [[[0, 0], [1, 0], [1, 1], [3, 0]], [7, 2, 8, 3], [4, 2]],
    'age_bucketized_X_color': [[[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1], [3, 0], [3, 1]],
                               [15, 13, 10, 19, 3, 9, 9, 9], [4, 2]],
    'color_weighted_by_wt': [[[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [0, 2, 1, 3, 0], [4, 2]],
    'animal': [[[0, 0], [1, 0], [2, 0], [3, 0]], [1, 1, 2, 0], [4, 1]],
    'city_X_color_X_item': [[[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [1, 3]],
                            [41, 13, 22, 36, 17, 24], [4, 4]],
    'code': [[[0, 0], [1, 0], [2, 0], [3, 0]], [4, 4, 4, 0], [4, 1]],
}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return build_model(tf, fc_lib._LazyBuilder, write_vocabulary(tmp_path_factory.mktemp("v")))


def test_variables_have_tensorflows_names_shapes_and_collections(model):
    with model["graph"].as_default():
        assert [(v.name, v.shape.as_list()) for v in tf.global_variables()] == TF_VARIABLES
        names = [name for name, _ in TF_VARIABLES]
        assert [v.name for v in tf.trainable_variables()] == names
        assert [v.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == names
    assert model["net_tensor"].name == "input_layer/concat:0"
    assert model["second"].name == "input_layer_1/concat:0"      # a second model: a new scope
    assert model["net_tensor"].shape.as_list() == [4, 109]
    by_column = {c.name: [v.name for v in vs] for c, vs in model["cols_to_vars"].items()
                 if c != "bias"}
    assert by_column["age_bucketized_X_color"] == ["linear_model/age_bucketized_X_color/weights:0"]
    assert [v.name for v in model["cols_to_vars"]["bias"]] == ["linear_model/bias_weights:0"]


def test_input_layer_is_tensorflows(model):
    np.testing.assert_allclose(model["net"], TF_NET, rtol=1e-6, atol=1e-6)


def test_linear_model_is_tensorflows(model):
    np.testing.assert_allclose(model["logits"], TF_LOGITS, rtol=1e-6, atol=1e-6)


def test_ids_of_every_categorical_column_are_tensorflows(model):
    """Vocabulary (list with hashed OOV buckets, file with a default), identity, hash buckets of
    strings and integers, bucketized ids, and the FingerprintCat64 crosses."""
    got = {name: [v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()]
           for name, v in model["ids"].items()}
    assert got == TF_IDS


def test_embedding_gradient_is_tensorflows_and_sparse(model):
    assert isinstance(model["grad_tensor"], tf.IndexedSlices)
    grad = model["grad"]
    dense = np.zeros((5, 3), np.float32)
    np.add.at(dense, grad.indices, grad.values)
    np.testing.assert_allclose(dense, TF_GRAD, rtol=1e-6, atol=1e-6)


# The same model with sparse_combiner / combiner "mean" and "sqrtn" (TensorFlow 2.21): weighted
# ids, an identity column with a default for out-of-range ids, a numeric column of shape (2,).
TF_COMBINERS = {
    'mean': {
        'logits': [[0.3199999928474426, 0.5199999809265137, 0.7200000286102295],
              [3.299999952316284, 4.050000190734863, 4.800000190734863],
              [1.274999976158142, 1.5750000476837158, 1.875],
              [2.5999999046325684, 3.4000000953674316, 4.199999809265137]],
        'net': [[0.800000011920929, 1.7999999523162842, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, -2.0],
              [2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 4.0],
              [4.5, 5.5, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
              [0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 3.0, 3.0]]},
    'sqrtn': {
        'logits': [[0.6567389965057373, 0.9194279909133911, 1.182116985321045],
              [3.7763450145721436, 4.567766189575195, 5.359188079833984],
              [1.6459920406341553, 2.013904094696045, 2.3818159103393555],
              [3.014214038848877, 3.855634927749634, 4.697056770324707]],
        'net': [[0.9701430201530457, 2.182821035385132, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, -2.0],
              [2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 4.0],
              [5.6921000480651855, 6.957009792327881, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
              [0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 3.0, 3.0]]},
}


@pytest.mark.parametrize("combiner", ["mean", "sqrtn"])
def test_combiners_are_tensorflows(combiner):
    got_logits, got_net = build_combiner_model(tf, combiner)
    np.testing.assert_allclose(got_logits, TF_COMBINERS[combiner]["logits"], rtol=1e-5)
    np.testing.assert_allclose(got_net, TF_COMBINERS[combiner]["net"], rtol=1e-5)


def test_training_moves_only_the_looked_up_embedding_rows():
    # On the CPU: sparse updates of a variable on a GPU (ScatterSub) have no GPU kernel yet.
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"])
        net = fc.input_layer({"color": tf.constant([["red"], ["blue"]])},
                             [fc.embedding_column(color, 4)])
        loss = tf.reduce_sum(tf.square(net - 1.0))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        table = tf.global_variables()[0]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
            before = sess.run(table)
            first = sess.run(loss)
            sess.run(step)
            after, second = sess.run([table, loss])
    assert second < first
    assert not np.allclose(before[[0, 2]], after[[0, 2]])
    np.testing.assert_array_equal(before[1], after[1])      # "green" was not looked up
    assert np.std(before) == pytest.approx(0.5, abs=0.25)   # truncated normal, 1/sqrt(4)


def test_import_paths_are_the_same_objects():
    from tfjupyter.python.feature_column import feature_column_lib
    assert fc_lib.input_layer is tf.feature_column.input_layer is feature_column_lib.input_layer
    assert tf.compat.v1.feature_column.linear_model is fc.linear_model


def test_parse_example_spec_feeds_the_columns():
    age = fc.numeric_column("age", default_value=30.0)
    words = fc.categorical_column_with_hash_bucket("words", 4)
    ids = fc.categorical_column_with_identity("ids", 3)
    spec = fc.make_parse_example_spec([age, fc.indicator_column(ids), words])
    assert spec == {"age": tf.FixedLenFeature((1,), tf.float32, (30.0,)),
                    "ids": tf.VarLenFeature(tf.int64), "words": tf.VarLenFeature(tf.string)}
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "age": tf.train.Feature(float_list=tf.train.FloatList(value=[41.0])),
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[2, 0, 2]))})),
        tf.train.Example(features=tf.train.Features(feature={
            "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}))]
    with tf.Graph().as_default(), tf.Session() as sess:
        parsed = tf.parse_example([e.SerializeToString() for e in examples], spec)
        net = fc.input_layer(parsed, [age, fc.indicator_column(ids)])
        got = sess.run(net)
    np.testing.assert_array_equal(got, [[41.0, 1.0, 0.0, 2.0], [30.0, 0.0, 1.0, 0.0]])


def test_sparse_cross_is_tensorflows():
    with tf.Graph().as_default(), tf.Session() as sess:
        a = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant(["a", "b", "c"]), [3, 2])
        i = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0]],
                            tf.constant([-5, 7, 123456789012, 0], tf.int64), [3, 2])
        d = tf.constant([[1], [2], [3]], dtype=tf.int64)
        full, keyed, text = sess.run([tf.sparse.cross_hashed([a, i, d]),
                                      tf.sparse.cross_hashed([a, i, d], 1000, hash_key=12345),
                                      tf.sparse.cross([a, i, d])])
    # Row 2 has no value of `a`: no cross. (TensorFlow 2.21's tf.compat.v1.sparse.cross*.)
    assert full.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert full.dense_shape.tolist() == [3, 2]
    assert full.values.tolist() == [5447600910418458636, 7396822908972873503,
                                    8722821103986859956, 2453088313357188403]
    assert keyed.values.tolist() == [923, 248, 845, 111]
    assert text.values.tolist() == [b"a_X_-5_X_1", b"a_X_7_X_1", b"b_X_123456789012_X_2",
                                    b"c_X_123456789012_X_2"]


def test_embedding_lookups_combine_weighted_ids():
    """Hand-computed: params row r is [3r, 3r+1, 3r+2]; id -1 and weight <= 0 are dropped."""
    with tf.Graph().as_default(), tf.Session() as sess:
        params = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
        ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0], [3, 0]],
                              tf.constant([1, 3, 2, -1], tf.int64), [5, 2])
        weights = tf.SparseTensor([[0, 0], [0, 1], [2, 0], [3, 0]], [1.0, 2.0, 0.5, 1.0], [5, 2])
        got = sess.run([tf.nn.safe_embedding_lookup_sparse(params, ids, weights, c)
                        for c in ("sum", "mean", "sqrtn")]
                       + [tf.nn.safe_embedding_lookup_sparse(params, ids, None, "mean",
                                                             default_id=0),
                          tf.nn.embedding_lookup_sparse(params, tf.SparseTensor(
                              [[0, 0], [1, 0], [1, 1]], tf.constant([0, 1, 2], tf.int64),
                              [4, 2]), None, combiner="sum")])
    row0_sum = 1 * np.array([3, 4, 5]) + 2 * np.array([9, 10, 11])
    np.testing.assert_allclose(got[0], [row0_sum, [0, 0, 0], [3, 3.5, 4], [0] * 3, [0] * 3])
    np.testing.assert_allclose(got[1][0], row0_sum / 3)
    np.testing.assert_allclose(got[2][0], row0_sum / np.sqrt(5), rtol=1e-6)
    np.testing.assert_allclose(got[3], [[6, 7, 8], [0, 1, 2], [6, 7, 8], [0, 1, 2], [0, 1, 2]])
    # embedding_lookup_sparse: rows up to the last one with an id, as TensorFlow's.
    np.testing.assert_allclose(got[4], [[0, 1, 2], [9, 11, 13]])


def test_sparse_reshape_and_retain():
    with tf.Graph().as_default(), tf.Session() as sess:
        sp = tf.SparseTensor([[0, 0, 1], [1, 1, 0], [1, 2, 1]], [1.0, 2.0, 3.0], [2, 3, 2])
        flat, wide, kept = sess.run([tf.sparse_reshape(sp, [-1, 2]), tf.sparse.reshape(sp, [2, -1]),
                                     tf.sparse.retain(sp, [True, False, True])])
    assert flat.indices.tolist() == [[0, 1], [4, 0], [5, 1]] and flat.dense_shape.tolist() == [6, 2]
    assert wide.indices.tolist() == [[0, 1], [1, 2], [1, 5]] and wide.dense_shape.tolist() == [2, 6]
    assert kept.indices.tolist() == [[0, 0, 1], [1, 2, 1]] and kept.values.tolist() == [1.0, 3.0]



def test_sparse_segment_reductions_and_their_gradients():
    """Hand-computed: segments {0: rows 0, 2, 2}, {1: none}, {2: row 1}."""
    with tf.Graph().as_default(), tf.Session() as sess:
        data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        indices, segments = tf.constant([0, 2, 2, 1]), tf.constant([0, 0, 0, 2])
        sums = [tf.sparse_segment_sum(data, indices, segments),
                tf.sparse_segment_mean(data, indices, segments),
                tf.sparse_segment_sqrt_n(data, indices, segments)]
        grads = [tf.gradients(tf.reduce_sum(s * [[1.0, 10.0]]), data)[0] for s in sums]
        got, got_grads = sess.run([sums, grads])
        with pytest.raises(tf.errors.InvalidArgumentError, match="segment ids are not increasing"):
            sess.run(tf.sparse_segment_sum(data, indices, tf.constant([1, 0, 0, 2])))
    np.testing.assert_allclose(got[0], [[11, 14], [0, 0], [3, 4]])
    np.testing.assert_allclose(got[1], [[11 / 3, 14 / 3], [0, 0], [3, 4]])
    np.testing.assert_allclose(got[2], [[11 / np.sqrt(3), 14 / np.sqrt(3)], [0, 0], [3, 4]],
                               rtol=1e-6)
    np.testing.assert_allclose(got_grads[0], [[1, 10], [1, 10], [2, 20]])
    np.testing.assert_allclose(got_grads[1], [[1 / 3, 10 / 3], [1, 10], [2 / 3, 20 / 3]],
                               rtol=1e-6)
    root3 = np.sqrt(3)
    np.testing.assert_allclose(got_grads[2], [[1 / root3, 10 / root3], [1, 10],
                                              [2 / root3, 20 / root3]], rtol=1e-6)

@pytest.mark.parametrize("make, error, message", [
    (lambda: fc.bucketized_column(fc.categorical_column_with_identity("a", 3), [1.0]),
     ValueError, "source_column must be a column generated with numeric_column"),
    (lambda: fc.bucketized_column(fc.numeric_column("a"), [2.0, 1.0]), ValueError,
     "boundaries must be a sorted list"),
    (lambda: fc.bucketized_column(fc.numeric_column("a", shape=(2, 2)), [1.0]), ValueError,
     "one-dimensional"),
    (lambda: fc.numeric_column("a", shape=(0,)), ValueError, "greater than 0"),
    (lambda: fc.numeric_column("a", dtype=tf.string), ValueError, "convertible to float"),
    (lambda: fc.categorical_column_with_vocabulary_list("a", ["x", "x"]), ValueError,
     "Duplicate keys in vocabulary_list"),
    (lambda: fc.categorical_column_with_vocabulary_list("a", ["x"], default_value=0,
                                                        num_oov_buckets=1),
     ValueError, "Can't specify both num_oov_buckets and default_value"),
    (lambda: fc.categorical_column_with_identity("a", 3, default_value=3), ValueError,
     "not in range"),
    (lambda: fc.categorical_column_with_hash_bucket("a", 0), ValueError, "at least 1"),
    (lambda: fc.crossed_column(["a"], 10), ValueError, "length > 1"),
    (lambda: fc.crossed_column([fc.categorical_column_with_hash_bucket("a", 3), "b"], 10),
     ValueError, "not supported for crossing"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("a", 3), 0), ValueError,
     "Invalid dimension"),
])
def test_constructors_raise_tensorflows_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_models_raise_tensorflows_errors():
    ids = fc.categorical_column_with_identity("a", 3)
    with tf.Graph().as_default():
        features = {"a": tf.constant([[1]], tf.int64), "s": tf.constant(1.0)}
        with pytest.raises(ValueError, match="must be a _DenseColumn"):
            fc.input_layer(features, [ids])
        with pytest.raises(ValueError, match="Duplicate feature column name"):
            fc.input_layer(features, [fc.numeric_column("a"), fc.numeric_column("a")])
        with pytest.raises(ValueError, match="feature_columns must not be empty"):
            fc.linear_model(features, [])
        with pytest.raises(ValueError, match="cannot have rank 0"):
            fc.input_layer(features, [fc.numeric_column("s")])
        with pytest.raises(ValueError, match="Feature missing is not in features dictionary"):
            fc.input_layer(features, [fc.numeric_column("missing")])
        with pytest.raises(ValueError, match="Column dtype and SparseTensors dtype"):
            fc.linear_model(features, [fc.categorical_column_with_hash_bucket("a", 3)])
    with pytest.raises(ValueError, match="different parse_spec for key a"):
        fc.make_parse_example_spec([fc.numeric_column("a"), ids])


def test_out_of_range_ids_fail_the_lookup_naming_it():
    """As in TensorFlow: an identity column without a default passes ids >= num_buckets on,
    and the embedding lookup fails naming its node (on a CPU: TF's GPU gather gives zeros)."""
    item = fc.categorical_column_with_identity("item", 3)
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        net = fc.input_layer({"item": [[1], [7]]}, [fc.embedding_column(item, 2)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"(?s)7 is not in \[0, 3\).*input_layer/item_embedding"):
                sess.run(net)


def test_rank_one_features_become_one_column():
    """A rank-1 feature (dense or sparse, as parse_single_example gives) is [batch, 1]."""
    words = fc.categorical_column_with_vocabulary_list("words", ["a", "b"])
    with tf.Graph().as_default(), tf.Session() as sess:
        features = {"x": tf.constant([1.0, 2.0, 3.0]),
                    "words": tf.SparseTensor([[0], [2]], tf.constant(["b", "a"]), [3])}
        net = fc.input_layer(features, [fc.numeric_column("x"), fc.indicator_column(words)])
        sess.run(tf.tables_initializer())
        # Columns in order of names: words_indicator, then x.
        np.testing.assert_array_equal(sess.run(net), [[0, 1, 1], [0, 0, 2], [1, 0, 3]])

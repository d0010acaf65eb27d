"""The models of tests/test_feature_column.py, built with a TensorFlow-like module: tfjupyter
in the test, TensorFlow's compat.v1 in tests/data/make_feature_column_reference.py, which
prints the reference values the test compares with. Needs only numpy besides that module."""
import os

import numpy as np


def make_features(tf):
    return {
        "price": tf.constant([[1.5], [5.0], [10.0], [3.0]]),
        "age": tf.constant([17.0, 25.0, 40.0, 30.0]),
        "color": tf.constant([["red", "blue"], ["green", ""], ["purple", "red"], ["", ""]]),
        "item": tf.constant([[1], [4], [0], [-1]], dtype=tf.int64),
        "city": tf.SparseTensor([[0, 0], [1, 0], [1, 1], [3, 0]],
                                tf.constant(["paris", "rome", "oslo", "lima"]), [4, 2]),
        "animal": tf.constant([["tiger"], ["cat"], ["bear"], ["lion"]]),
        "code": tf.constant([[7], [12], [7], [99]], dtype=tf.int64),
        "wt": tf.constant([[2.0, 0.5], [1.0, 0.0], [3.0, 1.0], [0.0, 0.0]]),
    }


def make_columns(tf, vocab_file):
    fc = tf.feature_column
    price = fc.numeric_column("price", normalizer_fn=lambda x: x * 2.0)
    age_b = fc.bucketized_column(fc.numeric_column("age"), [18.0, 26.0, 35.0])
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"],
                                                       num_oov_buckets=2)
    item = fc.categorical_column_with_identity("item", 5)
    city = fc.categorical_column_with_hash_bucket("city", 10)
    animal = fc.categorical_column_with_vocabulary_file("animal", vocab_file, default_value=1,
                                                        vocabulary_size=3)
    code = fc.categorical_column_with_hash_bucket("code", 6, dtype=tf.int64)
    cross = fc.crossed_column([age_b, "color"], 20)
    cross3 = fc.crossed_column(["city", item, "color"], 50)
    color_w = fc.weighted_categorical_column(color, "wt")
    emb = fc.embedding_column(color, 3, initializer=tf.constant_initializer(
        np.arange(15, dtype=np.float32).reshape(5, 3) / 10.0))
    emb_item = fc.embedding_column(item, 2, combiner="sqrtn", initializer=tf.constant_initializer(
        np.arange(10, dtype=np.float32).reshape(5, 2)))
    dense = [price, age_b, emb, emb_item, fc.indicator_column(color),
             fc.indicator_column(cross), fc.indicator_column(cross3),
             fc.indicator_column(city), fc.indicator_column(animal),
             fc.indicator_column(code), fc.indicator_column(color_w)]
    linear = [price, age_b, color, item, city, cross, color_w, animal]
    return dense, linear, [cross3, code]


def build_model(tf, lazy_builder, vocab_file) -> dict:
    """The reference model, built with ``tf`` (tfjupyter, or TensorFlow's compat.v1 in
    tests/data/make_feature_column_reference.py): input_layer over the dense columns,
    linear_model (2 units) over the others with weights set to 0.01 * (1 + position) + 0.1 *
    (variable index), the gradient of sum(net * [1, 2, ...]) for the color embedding, and the
    columns' ids (``lazy_builder``: the v1 _LazyBuilder)."""
    fc = tf.feature_column
    graph = tf.Graph()
    with graph.as_default():
        features = make_features(tf)
        dense, linear, extra = make_columns(tf, vocab_file)
        net = fc.input_layer(features, dense)
        cols_to_vars = {}
        logits = fc.linear_model(features, linear, units=2, cols_to_vars=cols_to_vars)
        second = fc.input_layer(features, dense[:1])
        table = [v for v in tf.global_variables() if "color_embedding" in v.name][0]
        weights = tf.range(1, 1 + tf.cast(tf.shape(net)[1], tf.float32))
        grad = tf.gradients(tf.reduce_sum(net * weights), table)[0]
        builder = lazy_builder(features)
        ids = {c.name: c._get_sparse_tensors(builder).id_tensor for c in linear[1:] + extra}
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
            sess.run([v.assign((0.01 * np.arange(1, 1 + v.shape.num_elements()) + 0.1 * i)
                               .reshape(v.shape.as_list()).astype(np.float32))
                      for i, v in enumerate(tf.global_variables())
                      if v.name.startswith("linear_model/")])
            values = sess.run({"net": net, "logits": logits, "grad": grad, "ids": ids})
    return dict(values, graph=graph, net_tensor=net, second=second, grad_tensor=grad,
                cols_to_vars=cols_to_vars)


def write_vocabulary(folder) -> str:
    path = os.path.join(str(folder), "animals.txt")
    with open(path, "w") as f:
        f.write("lion\ntiger\nbear\n")
    return path


def build_combiner_model(tf, combiner: str):
    """(logits, net) of the combiner model with ``tf`` (see build_model)."""
    fc = tf.feature_column
    with tf.Graph().as_default():
        features = {"color": tf.constant([["red", "blue"], ["green", ""], ["purple", "red"],
                                          ["", ""]]),
                    "wt": tf.constant([[2.0, 0.5], [1.0, 0.0], [3.0, 1.0], [0.0, 0.0]]),
                    "pair": tf.constant([[1.0, -2.0], [0.5, 4.0], [0.0, 0.0], [3.0, 3.0]]),
                    "item": tf.constant([[1, 7], [4, -3], [0, 2], [9, 9]], dtype=tf.int64)}
        color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"],
                                                           num_oov_buckets=2)
        weighted = fc.weighted_categorical_column(color, "wt")
        pair = fc.numeric_column("pair", shape=(2,))
        item = fc.categorical_column_with_identity("item", 5, default_value=3)
        logits = fc.linear_model(features, [weighted, pair, item], units=3,
                                 sparse_combiner=combiner)
        net = fc.input_layer(features, [pair, fc.indicator_column(item), fc.embedding_column(
            weighted, 2, combiner=combiner, initializer=tf.constant_initializer(
                np.arange(10, dtype=np.float32).reshape(5, 2)))])
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
            sess.run([v.assign((0.1 * np.arange(1, 1 + v.shape.num_elements()))
                               .reshape(v.shape.as_list()).astype(np.float32))
                      for v in tf.global_variables() if v.name.startswith("linear_model")])
            return sess.run([logits, net])

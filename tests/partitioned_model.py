"""The model of tests/test_partitioned_variables.py, built by the test with tfjupyter and by
tests/data/make_partitioned_golden.py with TensorFlow: partitioned variables read through a
matmul and embedding lookups, trained one Adagrad step."""
import numpy as np


def build(tf):
    """The model, with tensorflow.compat.v1 or tfjupyter as ``tf``; its tensors by name."""
    full_w = np.arange(40, dtype=np.float32).reshape(10, 4)

    def w_init(shape, dtype=None, partition_info=None):
        row = partition_info.var_offset[0]
        return tf.constant(full_w[row:row + shape[0]])

    with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(3)):
        w = tf.get_variable("w", [10, 4], initializer=w_init)
    big = tf.get_variable("big", [200, 2], partitioner=tf.fixed_size_partitioner(2),
                          initializer=tf.ones_initializer())
    b = tf.get_variable("b", [4], initializer=tf.zeros_initializer())
    ids = tf.constant([0, 3, 9, 5])
    e_mod = tf.nn.embedding_lookup(w, ids, partition_strategy="mod")
    e_div = tf.nn.embedding_lookup(w, ids, partition_strategy="div")
    y = tf.matmul(tf.ones([2, 10]), w) + b
    loss = (tf.reduce_sum(y) + tf.reduce_sum(e_div)
            + tf.reduce_sum(tf.matmul(tf.ones([1, 200]), big)))
    train = tf.train.AdagradOptimizer(0.1).minimize(loss)
    return {"w": w, "big": big, "b": b, "e_mod": e_mod, "e_div": e_div, "train": train}

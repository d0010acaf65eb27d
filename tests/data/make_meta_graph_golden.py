"""Writes the golden meta graph and checkpoint of tests/test_meta_graph.py with real TensorFlow
(any 2.x through ``tf.compat.v1``; 2.21 wrote the committed files), best in a virtual
environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_meta_graph_golden.py

The model is y = x @ W + b with a Saver; W and b are loaded with values other than their
initial ones before saving, so a test that gets these outputs has restored the checkpoint.

Files (in this directory):
- golden_meta_graph.meta: the MetaGraphDef ``saver.save`` wrote (binary);
- golden_meta_graph.index, golden_meta_graph.data-00000-of-00001: the V2 checkpoint;
- golden_meta_graph.json: the input fed to x, TensorFlow's y for it, the saved W and b.
"""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = os.path.join(HERE, "golden_meta_graph")

X_VALUE = [[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]]
W_SAVED = [[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]]
B_SAVED = [0.125, -2.0]


def main():
    tf.disable_v2_behavior()          # graph mode, reference (VariableV2) variables: TF 1.x
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.zeros([3, 2]), name="W")
        b = tf.Variable(tf.ones([2]), name="b")
        y = tf.add(tf.matmul(x, w), b, name="y")
        tf.add_to_collection("outputs", y)                  # a node_list collection
        tf.add_to_collection("input_names", b"x:0")        # a bytes_list collection
        tf.add_to_collection("sizes", 3)                     # an int64_list collection
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w.load(np.array(W_SAVED, np.float32), sess)
            b.load(np.array(B_SAVED, np.float32), sess)
            y_value = sess.run(y, {x: np.array(X_VALUE, np.float32)})
            saver.save(sess, PREFIX, write_state=False)
    with open(PREFIX + ".json", "w") as f:
        json.dump({"tensorflow_version": tf.VERSION,
                   "x": X_VALUE, "y": y_value.tolist(), "W": W_SAVED, "b": B_SAVED},
                  f, indent=1)


if __name__ == "__main__":
    main()

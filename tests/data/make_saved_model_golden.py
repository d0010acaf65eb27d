"""Writes the golden SavedModel of tests/test_saved_model.py with real TensorFlow (any 2.x
through ``tf.compat.v1``; 2.21 wrote the committed files), best in a virtual environment of its
own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_saved_model_golden.py

The model is y = x @ W + b. W and b are loaded with values other than their initial ones
before the export, so a load that gets these outputs has restored the variables. An asset
(vocab.txt) sits in the ASSET_FILEPATHS collection; the main op initializes a local variable
from the asset's path tensor, which the loader feeds with the asset's path in the SavedModel.

Files (in this directory):
- golden_saved_model/: saved_model.pb, variables/, assets/vocab.txt. Two MetaGraphs: tags
  ["serve"] (signatures "serving_default", a predict signature, and "regress") and tags
  ["train", "gpu"] (no signatures, added with add_meta_graph);
- golden_saved_model.json: the input fed to x, TensorFlow's y for it, the saved W and b.
"""
import json
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT_DIR = os.path.join(HERE, "golden_saved_model")

X_VALUE = [[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]]
W_SAVED = [[0.5, -1.0], [2.0, 0.25], [-1.5, 3.0]]
B_SAVED = [0.125, -2.0]
VOCAB = "apple\nbanana\n"


def export(tf, export_dir, vocab_path):
    """Builds the model with ``tf`` (TensorFlow's compat.v1 here; tests/test_saved_model.py
    runs the same code with tfjupyter), loads W and b, exports it; returns y for X_VALUE."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        examples = tf.placeholder(tf.string, [None], name="examples")
        w = tf.Variable(tf.zeros([3, 2]), name="W")
        b = tf.Variable(tf.ones([2]), name="b")
        y = tf.add(tf.matmul(x, w), b, name="y")
        asset = tf.constant(vocab_path, name="vocab_path")
        tf.add_to_collection(tf.GraphKeys.ASSET_FILEPATHS, asset)
        tf.Variable(asset, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                    name="vocab_file")
        init_op = tf.group(tf.local_variables_initializer(), tf.tables_initializer(),
                           name="legacy_init_op")
        signatures = {
            "serving_default": tf.saved_model.signature_def_utils.predict_signature_def(
                {"x": x}, {"y": y}),
            "regress": tf.saved_model.signature_def_utils.regression_signature_def(
                examples, y),
        }
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w.load(np.array(W_SAVED, np.float32), sess)
            b.load(np.array(B_SAVED, np.float32), sess)
            y_value = sess.run(y, {x: np.array(X_VALUE, np.float32)})
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(
                sess, [tf.saved_model.tag_constants.SERVING], signature_def_map=signatures,
                assets_collection=tf.get_collection(tf.GraphKeys.ASSET_FILEPATHS),
                legacy_init_op=init_op)
            builder.add_meta_graph([tf.saved_model.tag_constants.TRAINING,
                                    tf.saved_model.tag_constants.GPU])
            builder.save()
    return y_value


def main():
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()          # graph mode, reference (VariableV2) variables: TF 1.x
    if os.path.exists(EXPORT_DIR):
        shutil.rmtree(EXPORT_DIR)
    source_dir = os.path.join(HERE, "_vocab_source")
    os.makedirs(source_dir, exist_ok=True)
    vocab_path = os.path.join(source_dir, "vocab.txt")
    with open(vocab_path, "w") as f:
        f.write(VOCAB)
    y_value = export(tf, EXPORT_DIR, vocab_path)
    shutil.rmtree(source_dir)
    with open(EXPORT_DIR + ".json", "w") as f:
        json.dump({"tensorflow_version": tf.VERSION,
                   "x": X_VALUE, "y": y_value.tolist(), "W": W_SAVED, "b": B_SAVED},
                  f, indent=1)


if __name__ == "__main__":
    main()

"""Prints the TensorFlow reference values pasted into tests/test_feature_column.py (TF_NET,
TF_LOGITS, TF_GRAD, TF_IDS, TF_COMBINERS, TF_VARIABLES), with real TensorFlow (any 2.x through
``tf.compat.v1``, whose feature_column.input_layer/linear_model are TF 1.15's; 2.21 printed
the committed values), best in a virtual environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_feature_column_reference.py

The models are tests/feature_column_models.py's (build_model, build_combiner_model), given
TensorFlow's module instead of tfjupyter: both sides build the same model.
"""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tensorflow_2
from tensorflow.python.feature_column.feature_column import _LazyBuilder

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import feature_column_models as reference  # noqa: E402  (the test's models)

tf = tensorflow_2.compat.v1
tf.disable_eager_execution()


def main() -> None:
    model = reference.build_model(tf, _LazyBuilder, reference.write_vocabulary(
        tempfile.mkdtemp()))
    with model["graph"].as_default():
        variables = [(v.name, v.shape.as_list()) for v in tf.global_variables()]
    grad = model["grad"]     # an IndexedSlicesValue: its rows added into the table's shape
    dense_grad = np.zeros(grad.dense_shape, np.float32)
    np.add.at(dense_grad, grad.indices, grad.values)
    print("TF_VARIABLES =", variables)
    print("TF_NET =", json.dumps(model["net"].round(6).tolist()))
    print("TF_LOGITS =", json.dumps(model["logits"].round(6).tolist()))
    print("TF_GRAD =", json.dumps(dense_grad.round(6).tolist()))
    print("TF_IDS =", json.dumps({name: [v.indices.tolist(), v.values.tolist(),
                                         v.dense_shape.tolist()]
                                  for name, v in model["ids"].items()}))
    combiners = {}
    for combiner in ("mean", "sqrtn"):
        logits, net = reference.build_combiner_model(tf, combiner)
        combiners[combiner] = {"logits": logits.round(6).tolist(), "net": net.round(6).tolist()}
    print("TF_COMBINERS =", json.dumps(combiners))


if __name__ == "__main__":
    main()

"""Writes the golden checkpoint of tests/test_partitioned_variables.py with real TensorFlow (any
2.x through ``tf.compat.v1``, whose partitioned variables are TF 1.15's; 2.21 wrote the
committed files), best in a virtual environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_partitioned_golden.py

The model (tests/partitioned_model.py's, given TensorFlow's module): ``scope/w`` [10, 4] in 3
parts (fixed_size_partitioner), ``big`` [200, 2] in 2 parts (its second part starts at row
100: a two-byte key in TF's slice encoding), a plain ``b`` [4];
one Adagrad step on a loss that reads ``scope/w`` through a matmul and an embedding lookup, so
the checkpoint also holds the sliced Adagrad slots.

Files (in this directory):
- golden_partitioned.index, golden_partitioned.data-00000-of-00001: the V2 checkpoint;
- golden_partitioned.json: the variables' names and slice specs in TF's graph, the checkpoint's
  list_variables, the saved full tensors, the embedding lookups before the step.

With ``--check PREFIX`` it instead restores a checkpoint of the same model written by tfjupyter
(test_model_has_tensorflows_parts_lookups_and_checkpoint leaves one, ``model``, in its pytest
tmp_path) and prints the values TensorFlow reads: the variables whole, the slots by part.
"""
import json
import os
import sys

import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = os.path.join(HERE, "golden_partitioned")
sys.path.insert(0, os.path.dirname(HERE))
from partitioned_model import build  # noqa: E402  (the test's model)


def main():
    tf.disable_v2_behavior()
    if sys.argv[1:2] == ["--check"]:
        with tf.Graph().as_default():
            model = build(tf)
            with tf.Session() as sess:
                tf.train.Saver().restore(sess, sys.argv[2])
                print(json.dumps({name: sess.run(tf.convert_to_tensor(model[name])).tolist()
                                  for name in ("w", "big", "b")}))
                print(json.dumps({v.op.name: sess.run(v).tolist()
                                  for v in tf.global_variables() if "Adagrad" in v.op.name}))
        return
    with tf.Graph().as_default():
        model = build(tf)
        info = {"variables": [[v.op.name, v.shape.as_list(),
                               v._save_slice_info.full_name if v._save_slice_info else None,
                               v._save_slice_info.spec if v._save_slice_info else None]
                              for v in tf.global_variables()]}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            info["e_mod"], info["e_div"] = [x.tolist() for x in
                                            sess.run([model["e_mod"], model["e_div"]])]
            sess.run(model["train"])
            tf.train.Saver().save(sess, PREFIX, write_meta_graph=False, write_state=False)
    reader = tf.train.load_checkpoint(PREFIX)
    info["list_variables"] = tf.train.list_variables(PREFIX)
    info["saved"] = {name: reader.get_tensor(name).tolist() for name, _ in info["list_variables"]}
    with open(PREFIX + ".json", "w") as f:
        json.dump(info, f)
    print("wrote", PREFIX + ".*")


if __name__ == "__main__":
    main()

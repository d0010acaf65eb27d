"""Writes the golden control-flow meta graphs of tests/test_tf_interop_control_flow.py with real
TensorFlow (any 2.x through ``tf.compat.v1``; 2.21 wrote the committed files), best in a virtual
environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_cf_golden.py

The same model twice, in TF 1.x graph mode: with control flow v2 (``If``/``StatelessIf``,
``StatelessWhile`` with their functions in the GraphDef's library), and with control flow v1
(``Switch``/``Merge``/``Enter``/``Exit``/``NextIteration``/``LoopCond``). The model:

- ``cond_y``: ``tf.cond(sum(x) > 0, relu(x) * 2, x - 1)``;
- ``cond_print``: a cond whose true branch has a stateful op (an ``Assert``), so it is ``If``;
- ``loop_y``: ``tf.while_loop`` doubling ``x`` and adding ``b`` (a tensor captured from outside
  the loop) while ``i < n`` (``n`` fed), at most 5 iterations;
- ``nested_y``: a loop whose body holds a cond;
- ``grad_broadcast``: a broadcast product's gradient (TensorFlow's gradient graph sums it
  over the axes ``BroadcastGradientArgs`` gives). Not a cond's gradient: control flow v2 writes
  it with variant-typed ``Optional*`` ops, which tfjupyter does not have.

Files (in this directory): cf_golden_v2.meta, cf_golden_v1.meta (binary MetaGraphDefs) and
cf_golden.json: the feeds and TensorFlow's values of the fetches, for each.
"""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))
FEEDS = [{"x:0": [1.0, -2.0, 4.0], "n:0": 3}, {"x:0": [-1.0, -2.0, 0.5], "n:0": 10}]
FETCHES = ["cond_y:0", "cond_print:0", "loop_y:0", "loop_i:0", "nested_y:0", "grad_broadcast:0"]


def build():
    x = tf.placeholder(tf.float32, [3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    b = tf.constant([0.5, 0.25, 1.0], name="b")
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x) * 2.0, lambda: x - 1.0, name="c")
    tf.identity(y, name="cond_y")

    def checked():
        with tf.control_dependencies([tf.assert_less(tf.reduce_min(x), 100.0)]):
            return tf.identity(x + 1.0)
    tf.identity(tf.cond(tf.reduce_max(x) > 2, checked, lambda: x * 3.0, name="c2"),
                name="cond_print")
    i, a = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 2.0 + b), (0, x),
                         maximum_iterations=5, name="loop")
    tf.identity(a, name="loop_y")
    tf.identity(i, name="loop_i")

    def body(k, a):
        a = tf.cond(a[0] > 3.0, lambda: a - 1.0, lambda: a * 1.5)
        return k + 1, a
    _, nested = tf.while_loop(lambda k, a: k < 4, body, (0, x), name="nested")
    tf.identity(nested, name="nested_y")
    broadcast = x * tf.reshape(b, [3, 1])               # [3] times [3, 1]: a [3, 3] product
    tf.identity(tf.gradients(tf.reduce_sum(broadcast * broadcast), x)[0], name="grad_broadcast")


def write(version: str) -> dict:
    with tf.Graph().as_default():
        build()
        tf.train.export_meta_graph(os.path.join(HERE, f"cf_golden_{version}.meta"))
        with tf.Session() as sess:
            return {"feeds": FEEDS, "fetches": FETCHES,
                    "values": [[np.asarray(v).tolist() for v in sess.run(FETCHES, feeds)]
                               for feeds in FEEDS]}


def main():
    tf.disable_eager_execution()
    tf.enable_control_flow_v2()
    results = {"tensorflow_version": tf.__version__ if hasattr(tf, "__version__") else "",
               "v2": write("v2")}
    tf.disable_control_flow_v2()
    results["v1"] = write("v1")
    import tensorflow
    results["tensorflow_version"] = tensorflow.__version__
    with open(os.path.join(HERE, "cf_golden.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

"""Writes the golden control-flow-v1 graphs of tests/test_tf_v1_control_flow.py with real
TensorFlow (2.21 wrote the committed files, with ``tf.compat.v1.disable_control_flow_v2()``, so
conds are Switch/Merge frames and loops Enter/Merge/Switch/LoopCond/NextIteration/Exit frames):

    TF_USE_LEGACY_KERAS=1 /tmp/tfvenv/bin/python tests/data/make_cf_v1_golden.py

The models (meta graphs cf_v1_conds.meta and cf_v1_loop.meta):

- ``basic_y``: ``tf.cond(p, x * 2 + 1, x - 3)`` with ``p`` a fed boolean placeholder;
- ``nested_y``: ``tf.cond(p, tf.cond(q, x * x, x + 10), -x)``;
- ``const_y``: a cond whose branches are only constants (TensorFlow ties them to the branch by a
  control input from the branch's pivot);
- ``layer_y``: a small layer (``tf.layers.dense`` with constant initializers) followed by
  ``tf.layers.dropout(training=is_training)``, i.e. ``tf.cond(is_training, dropout, identity)``,
  then another dense layer; ``is_training`` defaults to False (deterministic values);
- ``loop_y``/``loop_i``: ``tf.while_loop`` doubling ``x`` and adding ``b`` (captured from
  outside the loop) while ``i < n``; ``nested_loops_y``: a loop whose body holds a loop;
  ``cond_loop_y``: a cond whose true branch holds a loop.

And a SavedModel (cf_v1_saved_model/) written by TF 1.x's ``SavedModelBuilder`` holding a cond
on a variable (signature ``serving_default``: inputs x, p; output y).

``train`` (cf_v1_train.meta): the conds' model with the gradients of its conds (TF 1.x writes
them as Switch/Merge frames on the same predicates) and a GradientDescent step.
cf_v1_loop_gradient.meta: a loop's gradient, whose stacks tfjupyter refuses.

cf_v1_golden.json: feeds and TensorFlow's values of the fetches.
"""
import json
import os
import shutil

import numpy as np
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # tf.layers needs tf_keras, not Keras 3
import tensorflow.compat.v1 as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
X = [1.0, -2.0, 4.0]
FEEDS = [{"x:0": X, "p:0": True, "q:0": True, "n:0": 3},
         {"x:0": X, "p:0": True, "q:0": False, "n:0": 0},
         {"x:0": [-1.0, 0.5, 3.0], "p:0": False, "q:0": True, "n:0": 5}]
FETCHES = {"conds": ["basic_y:0", "nested_y:0", "const_y:0", "layer_y:0"],
           "loop": ["loop_y:0", "loop_i:0", "nested_loops_y:0", "cond_loop_y:0"],
           "train": ["grad_kernel1:0", "grad_kernel2:0", "grad_basic:0", "grad_nested:0",
                     "loss:0"]}


def build_conds():
    x = tf.placeholder(tf.float32, [3], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    q = tf.placeholder(tf.bool, [], name="q")
    n = tf.placeholder(tf.int32, [], name="n")
    is_training = tf.placeholder_with_default(False, [], name="is_training")
    tf.identity(tf.cond(p, lambda: x * 2.0 + 1.0, lambda: x - 3.0, name="basic"), name="basic_y")
    inner = lambda: tf.cond(q, lambda: x * x, lambda: x + 10.0, name="inner")  # noqa: E731
    tf.identity(tf.cond(p, inner, lambda: -x, name="outer"), name="nested_y")
    tf.identity(tf.cond(p, lambda: tf.constant([1.0, 2.0, 3.0]),
                        lambda: tf.constant([4.0, 5.0, 6.0]), name="consts"), name="const_y")
    h = tf.layers.dense(tf.reshape(x, [1, 3]), 4, activation=tf.nn.relu, name="dense1",
                        kernel_initializer=tf.constant_initializer(
                            np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0 - 0.5),
                        bias_initializer=tf.constant_initializer(0.1))
    h = tf.layers.dropout(h, rate=0.5, training=is_training, name="drop")
    tf.identity(h, name="dropped")
    out = tf.layers.dense(h, 2, name="dense2",
                          kernel_initializer=tf.constant_initializer(
                              np.arange(8, dtype=np.float32).reshape(4, 2) / 8.0),
                          bias_initializer=tf.zeros_initializer())
    tf.identity(out, name="layer_y")
    tf.global_variables_initializer()                          # "init"


def build_train():
    """The conds' model with TF 1.x's gradients of its conds (Switch/Merge frames on the same
    predicates, reading the forward branches' values) and a training step."""
    build_conds()
    g = tf.get_default_graph()
    x, relu = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("dense1/Relu:0")
    loss = tf.reduce_sum(tf.square(g.get_tensor_by_name("layer_y:0")), name="loss")
    kernels = [g.get_tensor_by_name(f"dense{k}/kernel:0") for k in (1, 2)]
    for k, grad in enumerate(tf.gradients(loss, kernels), 1):
        tf.identity(grad, name=f"grad_kernel{k}")
    for name in ("basic", "nested"):
        y = g.get_tensor_by_name(f"{name}_y:0")
        tf.identity(tf.gradients(tf.reduce_sum(y * y), x)[0], name=f"grad_{name}")
    # In training, the gradient of the dropped units is the forward pass's mask (times 2).
    tf.identity(tf.gradients(tf.reduce_sum(g.get_tensor_by_name("dropped:0")), relu)[0],
                name="grad_dropped")
    tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train_op")


def build_loop_gradient():
    """A loop's gradient: TF 1.x keeps the forward values on stacks (StackV2 resources)."""
    x = tf.placeholder(tf.float32, [3], name="x")
    _, a = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * a), (0, x), name="loop")
    tf.identity(tf.gradients(tf.reduce_sum(a), x)[0], name="grad_loop")


def build_loop():
    x = tf.placeholder(tf.float32, [3], name="x")
    n = tf.placeholder(tf.int32, [], name="n")
    b = tf.constant([0.5, 0.25, 1.0], name="b")
    i, a = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 2.0 + b), (0, x),
                         name="loop")
    tf.identity(a, name="loop_y")
    tf.identity(i, name="loop_i")

    def outer_body(k, a):                  # a loop in a loop: a * (1 + ... ) k + 1 times
        _, a = tf.while_loop(lambda j, a: j < k, lambda j, a: (j + 1, a + 1.0), (0, a),
                             name="inner")
        return k + 1, a * 0.5
    _, nested = tf.while_loop(lambda k, a: k < 3, outer_body, (0, x), name="outer")
    tf.identity(nested, name="nested_loops_y")
    p = tf.placeholder(tf.bool, [], name="p")
    in_cond = lambda: tf.while_loop(lambda a: tf.reduce_sum(a) < 100.0,  # noqa: E731
                                    lambda a: a * 3.0, [x], name="grow")
    tf.identity(tf.cond(p, in_cond, lambda: x - 1.0, name="c"), name="cond_loop_y")


def write_meta_graph(kind: str, build) -> dict:
    fetches = FETCHES[kind]
    with tf.Graph().as_default() as graph:
        build()
        tf.train.export_meta_graph(os.path.join(HERE, f"cf_v1_{kind}.meta"))
        with tf.Session() as sess:
            if kind in ("conds", "train"):
                sess.run("init")
            names = {t.name for op in graph.get_operations() for t in op.outputs}
            feeds = [{k: v for k, v in f.items() if k in names} for f in FEEDS]
            return {"feeds": feeds, "fetches": fetches,
                    "values": [[np.asarray(v).tolist() for v in sess.run(fetches, f)]
                               for f in feeds]}


def write_saved_model() -> dict:
    export_dir = os.path.join(HERE, "cf_v1_saved_model")
    shutil.rmtree(export_dir, ignore_errors=True)
    feeds = [{"x": X, "p": True}, {"x": X, "p": False}]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        w = tf.Variable([1.5, -1.0, 0.5], name="w")
        y = tf.cond(p, lambda: x * w, lambda: x + w, name="c")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = [sess.run(y, {x: f["x"], p: f["p"]}).tolist() for f in feeds]
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            signature = tf.saved_model.signature_def_utils.predict_signature_def(
                {"x": x, "p": p}, {"y": y})
            builder.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
                                                 signature_def_map={"serving_default": signature})
            builder.save()
    return {"feeds": feeds, "values": values}


def main():
    tf.disable_eager_execution()
    tf.disable_control_flow_v2()
    tf.disable_resource_variables()              # TF 1.x's variables: VariableV2 (ref)
    import tensorflow
    results = {"tensorflow_version": tensorflow.__version__,
               "conds": write_meta_graph("conds", build_conds),
               "loop": write_meta_graph("loop", build_loop),
               "train": write_meta_graph("train", build_train),
               "saved_model": write_saved_model()}
    with tf.Graph().as_default():
        build_loop_gradient()
        tf.train.export_meta_graph(os.path.join(HERE, "cf_v1_loop_gradient.meta"))
    with open(os.path.join(HERE, "cf_v1_golden.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

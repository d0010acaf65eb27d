"""Checks by hand that what tfjupyter writes for TensorFlow runs in TensorFlow, and prints the
values that tests/test_tf_interop_control_flow.py pastes. Two steps, in two environments:

    /root/venv/bin/python tests/data/check_tf_interop.py write /tmp/interop   # tfjupyter
    /tmp/tfvenv/bin/python tests/data/check_tf_interop.py run /tmp/interop    # TensorFlow 2.x

``write`` builds the models below with tfjupyter, prints tfjupyter's values and writes a meta
graph per model and a SavedModel of the first; ``run`` imports them with
``tf.compat.v1.train.import_meta_graph`` / ``tf.compat.v1.saved_model.loader.load`` and prints
TensorFlow's values. The models take the ``tf`` module, so the test builds the same graphs.
"""
import os
import sys

import numpy as np

X = [1.0, -2.0, 4.0]
CONTROL_FLOW_FETCHES = ["y:0", "z:0", "z2:0", "nested:0", "inc:0", "v:0"]   # v after the run of inc
TRAIN_FEEDS = {"x:0": [[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], "ids:0": [1, 3]}
TRAIN_FETCHES = ["loss:0", "mapped:0", "emb:0", "b:0"]
TRAIN_STEPS = 3


def build_control_flow_model(tf):
    """tf.cond reading a variable, tf.while_loop capturing it, one with maximum_iterations
    inside a cond's branch, and a cond whose branch writes a variable."""
    x = tf.placeholder(tf.float32, [3], name="x")
    w = tf.Variable([1.0, 2.0, 3.0], name="w")
    tf.identity(tf.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - w, name="c"), name="y")
    i0 = tf.constant(0)
    _, z = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0 + w), (i0, x),
                         name="loop")
    tf.identity(z, name="z")
    _, z2 = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a + 1.0), (i0, x),
                          maximum_iterations=4, name="loop2")
    tf.identity(z2, name="z2")
    loop = lambda: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x),  # noqa: E731
                                 (i0, x), maximum_iterations=2)[1]
    tf.identity(tf.cond(tf.reduce_sum(x) < 0, lambda: x + 1.0, loop), name="nested")
    v = tf.Variable([1.0, 2.0], name="v")
    p = tf.reduce_sum(x) > 0
    tf.identity(tf.cond(p, lambda: v.assign_add([1.0, 1.0]), lambda: tf.identity(v)), name="inc")
    return x


def build_training_model(tf):
    """Adam on a dense layer (its bias's gradient sums a broadcast) and an embedding (a
    sparse update), with a map_fn."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    ids = tf.placeholder(tf.int32, [None], name="ids")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, name="w")
    b = tf.Variable([0.1, -0.2], name="b")
    emb = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2) / 8, name="emb")
    h = tf.matmul(x, w) + b + tf.nn.embedding_lookup(emb, ids)
    tf.identity(tf.map_fn(lambda r: r * r + 1.0, h), name="mapped")
    loss = tf.reduce_mean(h * h, name="loss")
    tf.train.AdamOptimizer(0.1).minimize(loss, name="train")


def build_report_model(tf):
    """Scaffold's ready ops: the uninitialized variables' report and its assertion."""
    tf.Variable([1.0, 2.0], name="a")
    tf.Variable(3, name="b")
    tf.identity(tf.report_uninitialized_variables(), name="report")
    tf.identity(tf.report_uninitialized_variables([]), name="empty_report")
    with tf.control_dependencies([tf.assert_variables_initialized()]):
        tf.constant(1, name="checked")


def run_report(tf, sess):
    """The reports before and after each initialization, and the check's error, if any."""
    def checked():
        try:
            return sess.run("checked:0")
        except tf.errors.OpError as e:
            return type(e).__name__
    values = [sess.run("report:0"), sess.run("empty_report:0"), checked()]
    sess.run("a/Assign")
    values.append(sess.run("report:0"))
    sess.run("b/Assign")
    return values + [sess.run("report:0"), checked()]


def build_case_model(tf):
    """tf.case, exclusive and without a default: its predicates are checked."""
    x = tf.placeholder(tf.int32, [], name="k")
    tf.identity(tf.case([(x > 0, lambda: tf.constant(1)), (x > 5, lambda: tf.constant(2)),
                         (x < -5, lambda: tf.constant(3))], exclusive=True), name="case_value")


def run_case(tf, sess):
    """The case's value for k in 1, 7 (two true), -7, 0 (none true), or the error's kind."""
    values = []
    for k in (1, 7, -7, 0):
        try:
            values.append(int(sess.run("case_value:0", {"k:0": k})))
        except tf.errors.OpError as e:
            values.append(type(e).__name__)
    return values


def run_control_flow(tf, sess):
    sess.run(tf.global_variables_initializer())
    values = sess.run(CONTROL_FLOW_FETCHES[:-1], {"x:0": X})
    return values + [sess.run("v:0")]


def run_training(tf, sess):
    sess.run(tf.global_variables_initializer())
    for _ in range(TRAIN_STEPS):
        sess.run("train", TRAIN_FEEDS)
    return sess.run(TRAIN_FETCHES, TRAIN_FEEDS)


def _print(what, names, values):
    for name, value in zip(names, values):
        print(f"{what} {name} {np.asarray(value).tolist()}")


def write(folder):
    import tfjupyter as tf
    os.makedirs(folder, exist_ok=True)
    with tf.Graph().as_default():
        x = build_control_flow_model(tf)
        with tf.Session() as sess:
            _print("tfjupyter", CONTROL_FLOW_FETCHES, run_control_flow(tf, sess))
            tf.train.export_meta_graph(os.path.join(folder, "control_flow.meta"))
            sess.run(tf.global_variables_initializer())
            builder = tf.saved_model.builder.SavedModelBuilder(os.path.join(folder, "saved"))
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={
                "serving_default": tf.saved_model.signature_def_utils.predict_signature_def(
                    {"x": x}, {"z": tf.get_default_graph().get_tensor_by_name("z:0")})})
            builder.save()
    with tf.Graph().as_default():
        build_training_model(tf)
        tf.train.export_meta_graph(os.path.join(folder, "training.meta"))
        with tf.Session() as sess:
            _print("tfjupyter", TRAIN_FETCHES, run_training(tf, sess))
    for name, build, runner in (("report", build_report_model, run_report),
                                ("case", build_case_model, run_case)):
        with tf.Graph().as_default():
            build(tf)
            tf.train.export_meta_graph(os.path.join(folder, f"{name}.meta"))
            with tf.Session() as sess:
                print(f"tfjupyter {name}", runner(tf, sess))


def run(folder):
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    for name, fetches, runner in (("control_flow", CONTROL_FLOW_FETCHES, run_control_flow),
                                  ("training", TRAIN_FETCHES, run_training)):
        with tf.Graph().as_default():
            tf.train.import_meta_graph(os.path.join(folder, f"{name}.meta"))
            with tf.Session() as sess:
                _print("tensorflow", fetches, runner(tf, sess))
    for name, runner in (("report", run_report), ("case", run_case)):
        with tf.Graph().as_default():
            tf.train.import_meta_graph(os.path.join(folder, f"{name}.meta"))
            with tf.Session() as sess:
                print(f"tensorflow {name}", runner(tf, sess))
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], os.path.join(folder, "saved"))
        signature = meta.signature_def["serving_default"]
        _print("tensorflow saved_model", ["z"], [sess.run(
            signature.outputs["z"].name, {signature.inputs["x"].name: X})])


if __name__ == "__main__":
    {"write": write, "run": run}[sys.argv[1]](sys.argv[2])

"""tf.cond and tf.while_loop with their functions' ops on /gpu:0: values and gradients equal to
the CPU run's, and the functions' ops really placed on the GPU."""
import numpy as np

import tfjupyter as tf


def build_and_run(device: str):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 3])
        p = tf.placeholder(tf.bool, [])
        with tf.device(device):
            w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
            c = tf.cond(p, lambda: tf.tanh(tf.matmul(x, w)), lambda: tf.matmul(x * x, w))
            _, y = tf.while_loop(lambda i, y: i < 3,
                                 lambda i, y: (i + 1, tf.sin(y) * tf.reduce_sum(w)),
                                 [tf.constant(0), c])
            bump = tf.cond(p, lambda: w.assign_add(tf.ones([3, 2])), lambda: tf.identity(w))
        grads = tf.gradients(tf.reduce_sum(y), [x, w])
        xv = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
            sess.run(tf.global_variables_initializer())
            results = [sess.run([y] + grads, {x: xv, p: pv}) for pv in (True, False)]
            results.append(sess.run(bump, {p: True}))
            plan_devices = set()
            for op_type in ("If", "While"):
                op = next(o for o in graph.get_operations() if o.type == op_type)
                plan_devices.add(sess.placer.assigned[op].device_type)
    return results, plan_devices


def test_cond_and_while_on_gpu_match_cpu(capsys):
    gpu, gpu_types = build_and_run("/gpu:0")
    log = capsys.readouterr().out
    cpu, cpu_types = build_and_run("/cpu:0")
    assert gpu_types == {"GPU"} and cpu_types == {"CPU"}
    # The functions' ops are placed (and logged) by the op's own plans: on the GPU too.
    for inner in ("cond/Tanh: (Tanh)", "cond/MatMul_1: (MatMul)", "while/Sin: (Sin)",
                  "cond_1/AssignAdd: (AssignAdd)"):
        line = next(x for x in log.splitlines() if x.startswith(inner))
        assert line.endswith("GPU:0"), line
    for g, c in zip(gpu, cpu):
        for a, b in zip(g if isinstance(g, list) else [g], c if isinstance(c, list) else [c]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

"""The ``tfjupyter`` command: ``tfjupyter demo`` trains a multi-tower digits classifier."""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from typing import List, Optional


def _tower_devices(n_towers: int) -> List[str]:
    return [f"/gpu:{i}" for i in range(n_towers)]


def build_demo_graph(n_towers: int, batch_size: int, hidden: int, learning_rate: float):
    """The in-graph replication pattern of the classic multi-GPU tutorial: one tower per GPU,
    variables and the input pipeline on the CPU, gradients averaged across towers."""
    import tfjupyter as tf

    data = tf.datasets.load_digits()
    n_inputs = data.train.images.shape[1]
    with tf.device("/cpu:0"):
        images = tf.constant(data.train.images, name="train_images")
        labels = tf.constant(data.train.labels.astype("int32"), name="train_labels")
        global_step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(learning_rate, global_step, 200, 0.9, staircase=True)
        opt = tf.train.MomentumOptimizer(lr, 0.9)
        regularizer = tf.contrib.layers.l2_regularizer(1e-4)

        def tower(x, y):
            with tf.variable_scope("model"):
                h = _dense(tf, x, hidden, tf.nn.relu, regularizer, "hidden")
                logits = _dense(tf, h, 10, None, regularizer, "logits")
            xent = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=logits))
            return xent, logits

        tower_grads, losses = [], []
        for i, device in enumerate(_tower_devices(n_towers)):
            with tf.device(device), tf.name_scope(f"tower_{i}") as scope:
                with tf.device("/cpu:0"):  # batches are drawn where the data are, not copied whole
                    index = tf.random_uniform([batch_size], 0, data.train.num_examples,
                                              dtype=tf.int32)
                    batch_x, batch_y = tf.gather(images, index), tf.gather(labels, index)
                xent, _ = tower(batch_x, batch_y)
                loss = tf.add(xent, tf.add_n(tf.get_collection("losses", scope) or [0.0]),
                              name="loss")
                tf.get_variable_scope().reuse_variables()
                tower_grads.append(opt.compute_gradients(loss))
                losses.append(loss)
        averaged = []
        for grad_and_vars in zip(*tower_grads):
            grads = tf.stack([g for g, _ in grad_and_vars])
            averaged.append((tf.reduce_mean(grads, 0), grad_and_vars[0][1]))
        train_op = opt.apply_gradients(averaged, global_step=global_step)
        mean_loss = tf.reduce_mean(tf.stack(losses), name="mean_loss")

        test_x = tf.placeholder(tf.float32, [None, n_inputs], name="test_images")
        test_y = tf.placeholder(tf.int64, [None], name="test_labels")
        with tf.variable_scope("", reuse=True):
            _, test_logits = tower(test_x, test_y)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(test_logits, 1), test_y), tf.float32))
    return data, train_op, mean_loss, accuracy, test_x, test_y


def _dense(tf, x, units, activation, regularizer, name):
    with tf.variable_scope(name):
        with tf.device("/cpu:0"):  # shared by the towers, as the tutorial's _variable_on_cpu
            w = tf.get_variable("weights", [x.get_shape()[1].value, units],
                                initializer=tf.truncated_normal_initializer(stddev=0.1))
            b = tf.get_variable("biases", [units], initializer=tf.constant_initializer(0.0))
        if not tf.get_variable_scope().reuse:
            tf.add_to_collection("losses", regularizer(w))
        y = tf.nn.bias_add(tf.matmul(x, w), b)
        return activation(y) if activation is not None else y


def placement_summary(records) -> str:
    by_device = collections.Counter(r.assigned for r in records)
    soft = collections.Counter(r.reason for r in records if r.reason.startswith("soft"))
    lines = ["Placement summary:"]
    for device, count in sorted(by_device.items()):
        lines.append(f"  {device}: {count} ops")
    for reason, count in sorted(soft.items()):
        lines.append(f"  {count} ops {reason}")
    return "\n".join(lines)


def demo(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tfjupyter demo",
                                     description="Train a digits classifier with one model "
                                                 "tower per GPU (in-graph replication).")
    parser.add_argument("--towers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--logdir", default=None, help="checkpoints go here (default: a temp dir)")
    args = parser.parse_args(argv)

    import tfjupyter as tf

    logdir = args.logdir or tempfile.mkdtemp(prefix="tfjupyter-demo-")
    with tf.Graph().as_default():
        data, train_op, loss, accuracy, test_x, test_y = build_demo_graph(
            args.towers, args.batch_size, args.hidden, args.learning_rate)
        saver = tf.train.Saver()
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([train_op, loss])
            print(placement_summary(sess.placement))
            examples_per_step = args.batch_size * args.towers
            for step in range(1, args.steps + 1):
                start = time.time()
                _, loss_value = sess.run([train_op, loss])
                duration = time.time() - start
                if step % 50 == 0 or step == args.steps:
                    print("step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)"
                          % (step, loss_value, examples_per_step / duration,
                             duration / args.towers))
            path = saver.save(sess, os.path.join(logdir, "model.ckpt"), global_step=args.steps)
            score = sess.run(accuracy, {test_x: data.test.images, test_y: data.test.labels})
    print(f"checkpoint: {path}")
    print(f"test accuracy = {score:.4f}")
    return 0 if score >= 0.9 else 1


def server(argv: Optional[List[str]] = None) -> int:
    """Runs one task of a cluster until it is killed (or --max-seconds pass)."""
    import json
    import signal
    parser = argparse.ArgumentParser(prog="tfjupyter server",
                                     description="Serve one task of a tfjupyter cluster.")
    parser.add_argument("--cluster", required=True,
                        help='JSON, e.g. \'{"ps": ["localhost:2222"], "worker": [...]}\'')
    parser.add_argument("--job", required=True)
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=None)
    args = parser.parse_args(argv)

    import tfjupyter as tf
    try:
        cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    except (ValueError, TypeError) as e:
        print(f"tfjupyter server: bad --cluster: {e}", file=sys.stderr)
        return 2
    srv = tf.train.Server(cluster, job_name=args.job, task_index=args.task)
    signal.signal(signal.SIGTERM, lambda *_: srv.stop(0))
    print(f"serving /job:{args.job}/task:{args.task} at {srv.target}", flush=True)
    srv.join(args.max_seconds)
    srv.stop(0)
    return 0


USAGE = """usage: tfjupyter demo [--towers N] [--steps N] [--batch-size N] [--logdir DIR]
       tfjupyter server --cluster JSON --job NAME [--task N]"""


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"demo": demo, "server": server}
    if not argv or argv[0] not in commands:
        print(USAGE, file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())

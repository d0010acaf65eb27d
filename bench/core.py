"""Core-engine benchmarks, run side by side with TensorFlow's own v1 Session.

    python bench/core.py                       # tfjupyter, and TensorFlow if importable
    python bench/core.py --tf-python /path/to/venv/bin/python   # TensorFlow from another venv

Each workload builds the same graph through the TF1 API of either library:
  mlp      784-500-10 MLP, batch 100, softmax cross-entropy, SGD step   -> examples/s
  cnn      LeNet-5 (conv5x5x32-pool-conv5x5x64-pool-fc512-fc10) on 28x28x1, batch 100 -> examples/s
  trivial  session.run of one constant                                   -> microseconds/run
  chain    1000 chained scalar adds fed from a placeholder               -> microseconds/op
Ratios are tfjupyter / TensorFlow for throughput, TensorFlow / tfjupyter for latency
(so > 1.0 always means tfjupyter is faster).

On a busy machine, ``--rounds R`` measures both libraries R times, alternately, and prints the
min and median of each (the ratio is of the medians, with the machine load of each round in
the mix on both sides).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def load(backend: str):
    if backend == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        return tf
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import tfjupyter as tf
    return tf


def tensorflow_python(given):
    """The Python to run TensorFlow's side with: ``given`` (--tf-python), else this one if
    it has TensorFlow, else None (the benchmark then runs tfjupyter alone)."""
    if given is not None:
        return given
    try:
        import tensorflow  # noqa: F401
        return sys.executable
    except ImportError:
        return None


def timed(fn, seconds: float, min_iters: int = 5) -> float:
    """Seconds per call: warm up, then repeat for about ``seconds``; best of three rounds."""
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while n < min_iters or time.perf_counter() - start < seconds / 3:
            fn()
            n += 1
        best = min(best, (time.perf_counter() - start) / n)
    return best


def xent_loss(tf, logits, labels):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def bench_mlp(tf, seconds):
    rng = np.random.RandomState(0)
    x_data = rng.rand(100, 784).astype(np.float32)
    y_data = rng.randint(0, 10, 100).astype(np.int32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int32, [None])
        w1 = tf.Variable(tf.truncated_normal([784, 500], stddev=0.1))
        b1 = tf.Variable(tf.zeros([500]))
        w2 = tf.Variable(tf.truncated_normal([500, 10], stddev=0.1))
        b2 = tf.Variable(tf.zeros([10]))
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        loss = xent_loss(tf, tf.matmul(h, w2) + b2, y)
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: x_data, y: y_data}
            t = timed(lambda: sess.run(step, feed), seconds)
    return 100 / t


def bench_cnn(tf, seconds):
    rng = np.random.RandomState(0)
    x_data = rng.rand(100, 28, 28, 1).astype(np.float32)
    y_data = rng.randint(0, 10, 100).astype(np.int32)

    def weight(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        y = tf.placeholder(tf.int32, [None])
        conv1 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, weight([5, 5, 1, 32]), [1, 1, 1, 1], "SAME"),
                                          tf.Variable(tf.zeros([32]))))
        pool1 = tf.nn.max_pool(conv1, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        conv2 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(pool1, weight([5, 5, 32, 64]), [1, 1, 1, 1], "SAME"),
                                          tf.Variable(tf.zeros([64]))))
        pool2 = tf.nn.max_pool(conv2, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        flat = tf.reshape(pool2, [-1, 7 * 7 * 64])
        fc1 = tf.nn.relu(tf.matmul(flat, weight([3136, 512])) + tf.Variable(tf.zeros([512])))
        logits = tf.matmul(fc1, weight([512, 10])) + tf.Variable(tf.zeros([10]))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(xent_loss(tf, logits, y))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: x_data, y: y_data}
            t = timed(lambda: sess.run(step, feed), seconds)
    return 100 / t


def bench_trivial(tf, seconds):
    with tf.Graph().as_default():
        c = tf.constant(1.0)
        with tf.Session() as sess:
            t = timed(lambda: sess.run(c), seconds, min_iters=100)
    return t * 1e6


def bench_chain(tf, seconds, length=1000):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        one = tf.constant(1.0)
        y = x
        for _ in range(length):
            y = tf.add(y, one)
        with tf.Session() as sess:
            t = timed(lambda: sess.run(y, {x: 0.0}), seconds)
    return t / length * 1e6


WORKLOADS = {"mlp": (bench_mlp, "examples/s", True), "cnn": (bench_cnn, "examples/s", True),
             "trivial": (bench_trivial, "us/run", False), "chain": (bench_chain, "us/op", False)}


def run_backend(backend: str, names, seconds: float) -> dict:
    tf = load(backend)
    return {name: WORKLOADS[name][0](tf, seconds) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["tfjupyter", "tensorflow"], help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--seconds", type=float, default=3.0, help="time per workload and backend")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure both libraries this many times, alternately")
    parser.add_argument("--tf-python", default=None,
                        help="a Python with tensorflow installed (default: this one, if it has it)")
    args = parser.parse_args()
    if args.backend:
        print(json.dumps(run_backend(args.backend, args.only, args.seconds)))
        return

    tf_python = tensorflow_python(args.tf_python)
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run_backend("tfjupyter", args.only, args.seconds))
        if tf_python:
            out = subprocess.run([tf_python, __file__, "--backend", "tensorflow", "--seconds",
                                  str(args.seconds), "--only", *args.only],
                                 capture_output=True, text=True, check=True)
            theirs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    if args.rounds == 1:
        _print_single(args.only, ours[0], theirs[0] if theirs else None)
    else:
        _print_rounds(args.only, ours, theirs)
    if not theirs:
        print("(TensorFlow not importable: pass --tf-python to compare)")


def _print_single(names, ours, theirs) -> None:
    print(f"{'workload':10s} {'tfjupyter':>14s} {'tensorflow':>14s} {'unit':>11s} {'ratio':>7s}")
    for name in names:
        _, unit, higher_better = WORKLOADS[name]
        mine = ours[name]
        if theirs:
            ref = theirs[name]
            ratio = mine / ref if higher_better else ref / mine
            print(f"{name:10s} {mine:14.2f} {ref:14.2f} {unit:>11s} {ratio:7.2f}x")
        else:
            print(f"{name:10s} {mine:14.2f} {'-':>14s} {unit:>11s}")


def _print_rounds(names, ours, theirs) -> None:
    """min (best) and median of each backend over the rounds."""
    from statistics import median
    print(f"{'workload':10s} {'tfjupyter best':>15s} {'median':>10s} {'tensorflow best':>16s}"
          f" {'median':>10s} {'unit':>11s} {'ratio':>7s}")
    for name in names:
        _, unit, higher_better = WORKLOADS[name]
        best = max if higher_better else min
        mine = [r[name] for r in ours]
        line = f"{name:10s} {best(mine):15.2f} {median(mine):10.2f}"
        if theirs:
            ref = [r[name] for r in theirs]
            ratio = median(mine) / median(ref) if higher_better else median(ref) / median(mine)
            line += f" {best(ref):16.2f} {median(ref):10.2f} {unit:>11s} {ratio:7.2f}x"
        else:
            line += f" {'-':>16s} {'-':>10s} {unit:>11s}"
        print(line)

if __name__ == "__main__":
    main()

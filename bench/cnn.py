"""The CNNs TF 1.x users train first, side by side with TensorFlow's own v1 Session.

    python bench/cnn.py --rounds 3                      # TensorFlow too, if importable
    python bench/cnn.py --rounds 3 --tf-python /path/to/venv/bin/python

Workloads (a training step each, plain SGD, random data fed from numpy):
  deep100   the "Deep MNIST" CNN: 5x5 convs 1->32 and 32->64 (SAME, ReLU, 2x2 max pools),
            fc 3136->512->10, batch 100
  deep50    the same at batch 50
  deep_tut  TensorFlow's tutorial variant: fc 1024 with dropout (keep 0.5), batch 50
  cifar10   tensorflow/models' cifar10.py: 24x24x3 crops; conv 5x5x64, pool 3x3/2, LRN,
            conv 5x5x64, LRN, pool 3x3/2, fc 384 and 192, 10 logits; batch 128

Each line gives examples/s for both libraries (best and median of the rounds, the rounds
alternating between them), their ratio (of the medians; > 1 means tfjupyter is faster), the
step's floating-point work, and that work as a share of this machine's peak, taken from a
GEMM of the same FLOP count on numpy's BLAS.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from statistics import median

import numpy as np

from core import load, tensorflow_python, timed, xent_loss

HERE = os.path.abspath(__file__)


def _conv_flops(n, h, w, k, cin, cout):
    return 2 * n * h * w * k * k * cin * cout


def _fc_flops(n, a, b):
    return 2 * n * a * b


def _deep(tf, batch, fc, dropout):
    """Returns (train op, feed) for the Deep MNIST CNN."""
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    y = tf.placeholder(tf.int32, [None])

    def weight(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias(n):
        return tf.Variable(tf.constant(0.1, shape=[n]))

    h = tf.nn.relu(tf.nn.conv2d(x, weight([5, 5, 1, 32]), [1, 1, 1, 1], "SAME") + bias(32))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.relu(tf.nn.conv2d(h, weight([5, 5, 32, 64]), [1, 1, 1, 1], "SAME") + bias(64))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 7 * 7 * 64]), weight([3136, fc])) + bias(fc))
    feed = {x: rng.rand(batch, 28, 28, 1).astype(np.float32),
            y: rng.randint(0, 10, batch).astype(np.int32)}
    if dropout:
        keep = tf.placeholder(tf.float32)
        h = tf.nn.dropout(h, keep)
        feed[keep] = 0.5
    logits = tf.matmul(h, weight([fc, 10])) + bias(10)
    step = tf.train.GradientDescentOptimizer(0.01).minimize(xent_loss(tf, logits, y))
    flops = 3 * (_conv_flops(batch, 28, 28, 5, 1, 32) + _conv_flops(batch, 14, 14, 5, 32, 64)
                 + _fc_flops(batch, 3136, fc) + _fc_flops(batch, fc, 10))
    # The first conv's input gradient is not computed: 2 of its 3 products run.
    flops -= _conv_flops(batch, 28, 28, 5, 1, 32)
    return step, feed, flops


def _cifar10(tf, batch=128):
    """cifar10.py's inference() + loss, as tensorflow/models wrote it (weight decay on fc)."""
    rng = np.random.RandomState(0)
    images = tf.placeholder(tf.float32, [batch, 24, 24, 3])
    labels = tf.placeholder(tf.int32, [batch])

    def var(shape, stddev, wd=None):
        v = tf.Variable(tf.truncated_normal(shape, stddev=stddev))
        if wd is not None:
            tf.add_to_collection("losses", tf.multiply(tf.nn.l2_loss(v), wd))
        return v

    conv = tf.nn.conv2d(images, var([5, 5, 3, 64], 5e-2), [1, 1, 1, 1], "SAME")
    conv1 = tf.nn.relu(tf.nn.bias_add(conv, tf.Variable(tf.zeros([64]))))
    pool1 = tf.nn.max_pool(conv1, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    conv = tf.nn.conv2d(norm1, var([5, 5, 64, 64], 5e-2), [1, 1, 1, 1], "SAME")
    conv2 = tf.nn.relu(tf.nn.bias_add(conv, tf.Variable(tf.fill([64], 0.1))))
    norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    pool2 = tf.nn.max_pool(norm2, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    flat = tf.reshape(pool2, [batch, -1])
    dim = 6 * 6 * 64
    local3 = tf.nn.relu(tf.matmul(flat, var([dim, 384], 0.04, 0.004)) + tf.Variable(tf.fill([384], 0.1)))
    local4 = tf.nn.relu(tf.matmul(local3, var([384, 192], 0.04, 0.004)) + tf.Variable(tf.fill([192], 0.1)))
    logits = tf.add(tf.matmul(local4, var([192, 10], 1 / 192.0, 0.0)), tf.Variable(tf.zeros([10])))
    tf.add_to_collection("losses", xent_loss(tf, logits, labels))
    loss = tf.add_n(tf.get_collection("losses"))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {images: rng.rand(batch, 24, 24, 3).astype(np.float32),
            labels: rng.randint(0, 10, batch).astype(np.int32)}
    flops = 3 * (_conv_flops(batch, 24, 24, 5, 3, 64) + _conv_flops(batch, 12, 12, 5, 64, 64)
                 + _fc_flops(batch, dim, 384) + _fc_flops(batch, 384, 192) + _fc_flops(batch, 192, 10))
    flops -= _conv_flops(batch, 24, 24, 5, 3, 64)
    return step, feed, flops


WORKLOADS = {
    "deep100": (lambda tf: _deep(tf, 100, 512, False), 100),
    "deep50": (lambda tf: _deep(tf, 50, 512, False), 50),
    "deep_tut": (lambda tf: _deep(tf, 50, 1024, True), 50),
    "cifar10": (lambda tf: _cifar10(tf), 128),
}


def run_backend(backend: str, names, seconds: float) -> dict:
    tf = load(backend)
    out = {}
    for name in names:
        build, batch = WORKLOADS[name]
        with tf.Graph().as_default():
            step, feed, flops = build(tf)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                t = timed(lambda: sess.run(step, feed), seconds)
        out[name] = {"ex_s": batch / t, "flops": flops, "step_s": t}
    return out


def peak_flops(seconds: float = 1.0) -> float:
    """FLOP/s of numpy's BLAS on a square float32 GEMM (the machine's practical peak)."""
    n = 1536
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    return 2 * n ** 3 / timed(lambda: a @ b, seconds)


def gemm_share(flops: float, step_s: float, seconds: float = 1.0) -> float:
    """The step's FLOP rate as a share of a GEMM of the same FLOP count, here, now."""
    n = max(64, int(round((flops / 2) ** (1 / 3))))
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    gemm_s = timed(lambda: a @ b, seconds) * flops / (2 * n ** 3)
    return gemm_s / step_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["tfjupyter", "tensorflow"], help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tf-python", default=None)
    args = parser.parse_args()
    if args.backend:
        print(json.dumps(run_backend(args.backend, args.only, args.seconds)))
        return
    tf_python = tensorflow_python(args.tf_python)

    def measure(backend, python):
        out = subprocess.run([python, HERE, "--backend", backend, "--seconds", str(args.seconds),
                              "--only", *args.only], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(measure("tfjupyter", sys.executable))
        if tf_python:
            theirs.append(measure("tensorflow", tf_python))
    print(f"{'workload':9s} {'tfjupyter ex/s best':>20s} {'median':>8s} {'tensorflow best':>16s} "
          f"{'median':>8s} {'ratio':>6s} {'GFLOP/step':>10s} {'share of peak (ours/TF)':>24s}")
    for name in args.only:
        mine = [r[name]["ex_s"] for r in ours]
        flops = ours[0][name]["flops"]
        step_s = WORKLOADS[name][1] / median(mine)
        share = gemm_share(flops, step_s)
        line = f"{name:9s} {max(mine):20.0f} {median(mine):8.0f}"
        if theirs:
            ref = [r[name]["ex_s"] for r in theirs]
            ref_share = gemm_share(flops, WORKLOADS[name][1] / median(ref))
            line += (f" {max(ref):16.0f} {median(ref):8.0f} {median(mine) / median(ref):5.2f}x"
                     f" {flops / 1e9:10.2f} {share:11.0%} / {ref_share:4.0%}")
        else:
            line += f" {'-':>16s} {'-':>8s} {'-':>6s} {flops / 1e9:10.2f} {share:11.0%}"
        print(line)
    print(f"peak (numpy float32 GEMM 1536^3): {peak_flops() / 1e9:.0f} GFLOP/s")
    if not theirs:
        print("(TensorFlow not importable: pass --tf-python to compare)")


if __name__ == "__main__":
    main()

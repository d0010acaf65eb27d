"""Milliseconds per call of the CPU nn kernels at LeNet-5 shapes, batch 100, float32,
and of TensorFlow's kernels at the same shapes when ``--tf-python`` names a Python with
TensorFlow installed.

    python bench/nn_kernels_micro.py [--rounds R] [--repeat N] [--tf-python PY]
                                     [--blas-threads N]

Each round times every kernel (best of N calls) in this process, then every kernel of
TensorFlow (``tf.raw_ops`` in eager mode, in a worker process kept for the whole run), so
that both see the same machine load; the table gives the min and median over the rounds.
The ratio is TensorFlow's median / ours (> 1: ours faster).  TensorFlow's eager dispatch
adds a few tens of microseconds per call, which only the smallest lines notice.

Our kernels run as inside a LeNet training step: numpy's BLAS on one thread, big jobs
split over the cores (``--blas-threads N`` overrides the BLAS threads; needs threadpoolctl).
The last line adds up the kernels one LeNet training step (forward + backward) runs;
the fully connected layers' MatMuls are not nn kernels and are not counted.
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def _cases():
    """[(label, op type, inputs, attrs, calls per training step)] of a LeNet-5 step."""
    rng = np.random.default_rng(0)

    def randn(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def i32(*values):
        return np.array(values, np.int32)

    conv = dict(strides=[1, 1, 1, 1], padding="SAME", data_format="NHWC")
    pool = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME", data_format="NHWC")
    nhwc = dict(data_format="NHWC")
    x1, w1, y1 = randn(100, 28, 28, 1), randn(5, 5, 1, 32), randn(100, 28, 28, 32)
    x2, w2, y2 = randn(100, 14, 14, 32), randn(5, 5, 32, 64), randn(100, 14, 14, 64)
    p2, h1, logits = randn(100, 7, 7, 64), randn(100, 512), randn(100, 10)
    labels = rng.integers(0, 10, 100).astype(np.int32)
    return [
        ("conv1 Conv2D", "Conv2D", [x1, w1], conv, 1),
        ("conv1 Conv2DBackpropFilter", "Conv2DBackpropFilter", [x1, i32(*w1.shape), y1], conv, 1),
        ("conv1 Conv2DBackpropInput", "Conv2DBackpropInput", [i32(*x1.shape), w1, y1], conv, 0),
        ("conv1 BiasAdd", "BiasAdd", [y1, randn(32)], nhwc, 1),
        ("conv1 BiasAddGrad", "BiasAddGrad", [y1], nhwc, 1),
        ("conv1 Relu", "Relu", [y1], {}, 1),
        ("conv1 ReluGrad", "ReluGrad", [y1, y1], {}, 1),
        ("pool1 MaxPool", "MaxPool", [y1], pool, 1),
        ("pool1 MaxPoolGrad", "MaxPoolGrad", [y1, x2, x2], pool, 1),
        ("conv2 Conv2D", "Conv2D", [x2, w2], conv, 1),
        ("conv2 Conv2DBackpropFilter", "Conv2DBackpropFilter", [x2, i32(*w2.shape), y2], conv, 1),
        ("conv2 Conv2DBackpropInput", "Conv2DBackpropInput", [i32(*x2.shape), w2, y2], conv, 1),
        ("conv2 BiasAdd", "BiasAdd", [y2, randn(64)], nhwc, 1),
        ("conv2 BiasAddGrad", "BiasAddGrad", [y2], nhwc, 1),
        ("conv2 Relu", "Relu", [y2], {}, 1),
        ("conv2 ReluGrad", "ReluGrad", [y2, y2], {}, 1),
        ("pool2 MaxPool", "MaxPool", [y2], pool, 1),
        ("pool2 MaxPoolGrad", "MaxPoolGrad", [y2, p2, p2], pool, 1),
        ("fc1 BiasAdd", "BiasAdd", [h1, randn(512)], nhwc, 1),
        ("fc1 BiasAddGrad", "BiasAddGrad", [h1], nhwc, 1),
        ("fc1 Relu", "Relu", [h1], {}, 1),
        ("fc1 ReluGrad", "ReluGrad", [h1, h1], {}, 1),
        ("fc2 BiasAdd", "BiasAdd", [logits, randn(10)], nhwc, 1),
        ("fc2 BiasAddGrad", "BiasAddGrad", [logits], nhwc, 1),
        ("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
         [logits, labels], {}, 1),
    ]


def _best_ms(run, inputs, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run(*inputs)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


# ---------------------------------------------------------------------------------------
# tfjupyter's kernels


class _Stub:
    """Just enough of a graph op for a kernel factory."""

    class _Tensor:
        def __init__(self, array):
            self.dtype = type("DType", (), {"as_numpy_dtype": array.dtype.type})()
            self.shape = type("Shape", (), {"as_list": lambda _, s=array.shape: list(s)})()

    def __init__(self, op_type, inputs, attrs):
        self.type = self.name = op_type
        self.inputs = [self._Tensor(np.asarray(a)) for a in inputs]
        self._attrs = attrs

    def get_attr(self, name):
        if name not in self._attrs:
            raise ValueError(name)
        return self._attrs[name]


def _our_runners(cases):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tfjupyter.kernels.cpu import KERNELS
    runners = []
    for _, op_type, inputs, attrs, _ in cases:
        run = KERNELS.get(op_type)(_Stub(op_type, inputs, attrs), None)
        run(*inputs)  # compiles
        runners.append((run, inputs))
    return runners


def _blas_context(blas_threads):
    """numpy's BLAS threads as a LeNet step sets them, or as asked."""
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits
        return threadpool_limits(blas_threads, user_api="blas")
    from tfjupyter.kernels.cpu._threads import single_threaded_blas
    return single_threaded_blas


# ---------------------------------------------------------------------------------------
# TensorFlow's kernels, in a worker process: one JSON line of ms per round asked on stdin


def _tf_worker(repeat: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    runners = []
    for _, op_type, inputs, attrs, _ in _cases():
        op = getattr(tf.raw_ops, op_type)
        # raw_ops take the op's inputs first, in the op definition's order.
        names = list(inspect.signature(op).parameters)[:len(inputs)]
        tensors = [tf.constant(a) for a in inputs]

        def run(*_, op=op, names=names, tensors=tensors, attrs=attrs):
            return op(**dict(zip(names, tensors)), **attrs)
        run()
        runners.append(run)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(json.dumps([_best_ms(run, (), repeat) for run in runners]), flush=True)


def _start_tf_worker(tf_python: str, repeat: int) -> subprocess.Popen:
    worker = subprocess.Popen([tf_python, __file__, "--tf-worker", "--repeat", str(repeat)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = worker.stdout.readline()
    if line.strip() != "ready":
        worker.kill()
        raise SystemExit(f"the TensorFlow worker ({tf_python}) did not start: {line!r}")
    return worker


def _tf_round(worker: subprocess.Popen) -> list:
    worker.stdin.write("round\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


# ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20, help="calls per kernel and round")
    parser.add_argument("--tf-python", default=None)
    parser.add_argument("--blas-threads", type=int, default=None)
    parser.add_argument("--tf-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_worker:
        _tf_worker(args.repeat)
        return

    cases = _cases()
    runners = _our_runners(cases)
    worker = _start_tf_worker(args.tf_python, args.repeat) if args.tf_python else None
    ours, theirs = [], []
    try:
        for _ in range(args.rounds):
            with _blas_context(args.blas_threads):
                ours.append([_best_ms(run, inputs, args.repeat) for run, inputs in runners])
            if worker is not None:
                theirs.append(_tf_round(worker))
    finally:
        if worker is not None:
            worker.stdin.close()
            worker.wait(timeout=30)
    _report(cases, ours, theirs)


def _report(cases, ours, theirs) -> None:
    head = f"{'kernel (ms per call)':38s} {'ours min':>9s} {'median':>8s}"
    if theirs:
        head += f" {'TF min':>8s} {'median':>8s} {'TF/ours':>8s}"
    print(head)
    totals = [[0.0] * len(ours), [0.0] * len(theirs)]
    for k, (label, _, _, _, per_step) in enumerate(cases):
        mine = [r[k] for r in ours]
        line = f"{label:38s} {min(mine):9.3f} {statistics.median(mine):8.3f}"
        for r, row in enumerate(ours):
            totals[0][r] += row[k] * per_step
        if theirs:
            ref = [r[k] for r in theirs]
            line += (f" {min(ref):8.3f} {statistics.median(ref):8.3f}"
                     f" {statistics.median(ref) / statistics.median(mine):7.2f}x")
            for r, row in enumerate(theirs):
                totals[1][r] += row[k] * per_step
        print(line + ("" if per_step else "   (not in a training step)"))
    line = (f"{'nn kernels of one LeNet training step':38s} {min(totals[0]):9.3f}"
            f" {statistics.median(totals[0]):8.3f}")
    if theirs:
        line += (f" {min(totals[1]):8.3f} {statistics.median(totals[1]):8.3f}"
                 f" {statistics.median(totals[1]) / statistics.median(totals[0]):7.2f}x")
    print(line)


if __name__ == "__main__":
    main()

"""Milliseconds per call of the CPU nn kernels at LeNet-5 shapes, batch 100, float32.

    python bench/nn_kernels_micro.py [--repeat N] [--blas-threads N]

The last line adds up the kernels one LeNet training step (forward + backward) runs;
the fully connected layers' MatMuls are not nn kernels and are not counted.  The kernels
split big jobs over the cores only while numpy's BLAS runs on one thread:
``--blas-threads 1`` (needs threadpoolctl) shows those numbers.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from tfjupyter.kernels.cpu import KERNELS


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


def _ms_per_call(op_type, inputs, attrs, repeat):
    run = KERNELS.get(op_type)(_Stub(op_type, inputs, attrs), None)
    run(*inputs)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run(*inputs)
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--blas-threads", type=int, default=None)
    args = parser.parse_args()
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(args.blas_threads, user_api="blas"):
            _run(args.repeat)
    else:
        _run(args.repeat)


def _run(repeat: int) -> None:
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

    # (label, op type, inputs, attrs, calls per training step)
    cases = [
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
    total = 0.0
    for label, op_type, inputs, attrs, per_step in cases:
        ms = _ms_per_call(op_type, inputs, attrs, repeat)
        total += ms * per_step
        note = "" if per_step else "   (not in a training step)"
        print(f"{label:40s} {ms:8.3f} ms{note}")
    print(f"{'nn kernels of one LeNet training step':40s} {total:8.3f} ms")


if __name__ == "__main__":
    main()

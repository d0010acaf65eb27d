"""GEMM throughput on the GPU: the Numba tiled kernel and the CuPy path against cuBLAS.

    python bench/gpu_gemm.py                     # 1024^2, 2048^2, 4096^2 float32
    python bench/gpu_gemm.py --sizes 4096 --iters 50
    python bench/gpu_gemm.py --maxreg 128        # cap the tiled kernel's registers (tuning)
    python bench/gpu_gemm.py --all-configs       # every tile configuration, not just the plan's

For each size n it times C = A @ B (n x n float32) on one stream with CUDA events:
  numba    the Numba kernel (kernels/cuda/matmul_kernels.py), launch plan as in a session
  cupy     the CuPy path as sessions use it: cupy.matmul on zero-copy views of Numba arrays
  cublas   CuPy's own cupy.matmul on CuPy arrays (cuBLAS SGEMM; TF32 off unless CUPY_TF32=1)
and prints GFLOP/s (2 n^3 / time) and the ratios to cuBLAS (> 1.0 means faster than cuBLAS).
Each result is checked against cuBLAS's (or, without CuPy, a float64 product of a corner).
Without a usable GPU (or under NUMBA_ENABLE_CUDASIM) it says so and exits 0.
"""
from __future__ import annotations

import argparse
import os
import sys
import types
from typing import Callable, Dict, Optional

import numpy as np


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--iters", type=int, default=20, help="timed runs per measurement")
    parser.add_argument("--maxreg", type=int, default=0,
                        help="TFJUPYTER_GEMM_MAXREG for the tiled kernel (0: uncapped)")
    parser.add_argument("--all-configs", action="store_true",
                        help="also time every tile configuration of the Numba kernel")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    return parser.parse_args(argv)


def no_gpu(reason: str) -> int:
    print(f"gpu_gemm: no GPU to benchmark ({reason}); nothing measured.")
    return 0


def timed_ms(stream, fn: Callable[[], None], iters: int) -> float:
    """Milliseconds per call of ``fn`` (which queues work on ``stream``): two warm-up calls
    (compilation, caches), then ``iters`` calls between two events; best of three rounds."""
    from numba import cuda
    fn()
    fn()
    stream.synchronize()
    best = float("inf")
    for _ in range(3):
        start, end = cuda.event(), cuda.event()
        start.record(stream)
        for _ in range(iters):
            fn()
        end.record(stream)
        end.synchronize()
        best = min(best, start.elapsed_time(end) / iters)
    return best


def gflops(n: int, ms: float) -> float:
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e9


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.maxreg:
        os.environ["TFJUPYTER_GEMM_MAXREG"] = str(args.maxreg)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return no_gpu("NUMBA_ENABLE_CUDASIM=1: the simulator has no meaningful speed")
    try:
        from numba import cuda
        if not cuda.is_available():
            return no_gpu("numba.cuda.is_available() is False")
    except Exception as e:  # no driver, broken install
        return no_gpu(f"numba.cuda unusable: {e}")

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tfjupyter.kernels.cuda import _runtime
    from tfjupyter.kernels.cuda import matmul_kernels as mk

    gpus = _runtime.physical_gpus()
    if not gpus:
        return no_gpu("no GPU found by the runtime")
    state = _runtime.gpu_state(gpus[0])
    ctx = types.SimpleNamespace(state=state, name="/device:GPU:0")
    cupy = mk._cupy()
    print(f"device: {gpus[0].name} ({gpus[0].multiprocessors} SMs), "
          f"CuPy: {getattr(cupy, '__version__', 'not importable')}, "
          f"TF32 in cuBLAS: {os.environ.get('CUPY_TF32', '0')}, "
          f"tiled-kernel register cap: {args.maxreg or 'none'}")

    results = []
    rng = np.random.default_rng(0)
    for n in args.sizes:
        a_host = rng.standard_normal((n, n), dtype=np.float32)
        b_host = rng.standard_normal((n, n), dtype=np.float32)
        with state.active():
            a = cuda.to_device(a_host, stream=state.stream)
            b = cuda.to_device(b_host, stream=state.stream)
            c = cuda.device_array((n, n), np.float32, stream=state.stream)
        flat = (a.reshape(n * n), b.reshape(n * n), c.reshape(n * n))
        row: Dict[str, Optional[float]] = {"n": n}
        reference = None

        if cupy is not None:
            with cupy.cuda.Device(gpus[0].index), mk._CupyStream.of(cupy, state):
                ca, cb = cupy.asarray(a_host), cupy.asarray(b_host)
                cc = cupy.empty((n, n), cupy.float32)
                ms = timed_ms(state.stream, lambda: cupy.matmul(ca, cb, out=cc), args.iters)
                reference = cupy.asnumpy(cc)
            row["cublas"] = gflops(n, ms)

            def cupy_path():
                mk._cupy_matmul(ctx, a, b, False, False, c)
            row["cupy"] = gflops(n, timed_ms(state.stream, cupy_path, args.iters))
            row["cupy_max_err"] = check(c.copy_to_host(stream=state.stream), reference,
                                        a_host, b_host)

        cfg, splits = mk._plan(mk.CONFIGS, n, n, n, 1, gpus[0].multiprocessors)
        configs = list(mk.CONFIGS) if args.all_configs else [cfg]
        for config in configs:
            def numba_path(config=config):
                mk.gemm(ctx, *flat, n, n, n, config=config, splits=splits if config == cfg else 1)
            key = "numba" if config == cfg else \
                f"numba {config.bm}x{config.bn}/{config.tm}x{config.tn}"
            row[key] = gflops(n, timed_ms(state.stream, numba_path, args.iters))
            row[key + "_max_err"] = check(c.copy_to_host(stream=state.stream), reference,
                                          a_host, b_host)
        row["plan"] = (f"{cfg.bm}x{cfg.bn}x{cfg.bk} tiles, {cfg.tm}x{cfg.tn}/thread, "
                       f"{splits} k-split")
        results.append(row)
        report(row)

    if args.json:
        import json
        print(json.dumps(results, indent=1))
    return 0


def check(got: np.ndarray, reference: Optional[np.ndarray], a: np.ndarray,
          b: np.ndarray) -> float:
    """Max |error| relative to the largest |entry|: against cuBLAS's result, else against a
    float64 product of the top-left 64x64 corner."""
    if reference is None:
        corner = min(64, got.shape[0])
        reference = a[:corner].astype(np.float64) @ b[:, :corner].astype(np.float64)
        got = got[:corner, :corner]
    return float(np.max(np.abs(got - reference)) / max(np.max(np.abs(reference)), 1e-30))


def report(row: Dict) -> None:
    n = row["n"]
    base = row.get("cublas")
    print(f"\n{n} x {n} x {n} float32  ({row['plan']})")
    for key, value in row.items():
        if key in ("n", "plan") or key.endswith("_max_err") or value is None:
            continue
        line = f"  {key:<22} {value:10.1f} GFLOP/s"
        if base and key != "cublas":
            line += f"   {value / base:6.3f} x cuBLAS"
        err = row.get(key + "_max_err")
        if err is not None:
            line += f"   max rel err {err:.1e}"
        print(line)


if __name__ == "__main__":
    sys.exit(main())

"""Threads of the CPU backend: a small pool that big kernels split their work over.

Splitting only pays while numpy's BLAS runs on one thread (OpenBLAS's own threads would compete
for the cores, and spin for a while after each call), so ``single_threaded_blas`` — entered by
the steps that run ops of SPLIT_OP_TYPES (runtime/executor.py) — switches it to one thread for
the step's duration. Measured on 2 cores: LeNet-5 steps 33% faster that way; an MLP's steps,
whose work is all in large GEMMs, 25% slower, so those keep OpenBLAS's own threads.

``set_intra_op_threads`` sizes all three (BLAS, Numba's parallel loops, this pool) as one budget,
as TensorFlow's ``intra_op_parallelism_threads`` does.
"""
from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Iterator, List, Optional, Tuple

# Smaller jobs run on the calling thread alone: handing work to a thread costs ~50 us.
PARALLEL_MIN_FLOPS = 20e6
PARALLEL_MIN_BYTES = 2 << 20

# Op types whose kernels are mostly splittable work rather than one big GEMM: a step with one of
# these runs the BLAS on one thread and splits (elementwise kernels split too, then).
SPLIT_OP_TYPES = frozenset({"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
                            "MaxPoolGrad", "AvgPool", "AvgPoolGrad"})


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _find_blas_thread_control():
    """(get, set) of the thread count of the OpenBLAS bundled with numpy, or None where there
    is none to find (another BLAS, or no /proc)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line and "numpy" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.argtypes, get.restype = [], ctypes.c_int
                set_.argtypes, set_.restype = [ctypes.c_int], None
                return get, set_
    return None


class _Workers:
    """Splits big jobs over the cores: one part on the calling thread, the others on a pool.

    Only while numpy's BLAS runs on one thread: OpenBLAS's own threads would compete with
    the parts for the cores (they even spin for a while after each call).  A LeNet-5
    training step on 2 cores, its MatMuls split the same way, took 52 ms split with a
    one-thread BLAS, 70 ms unsplit with a two-thread BLAS, 72 ms split next to it.
    """

    def __init__(self) -> None:
        self.count = _cpu_count()
        self._lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pool_pid = 0
        self._pool_size = 0
        self._blas_threads: Optional[Callable[[], int]] = None
        self._blas_looked_up = False

    def active(self) -> bool:
        """Whether jobs are split now."""
        if not self._blas_looked_up:
            control = _blas_control()
            self._blas_threads = control[0] if control else None
            self._blas_looked_up = True
        return self.count > 1 and self._blas_threads is not None and self._blas_threads() == 1

    def _get_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            # A forked child inherits the pool but not its threads.
            size = max(1, self.count - 1)   # the caller's thread takes one part itself
            if self._pool is None or self._pool_pid != os.getpid() or self._pool_size != size:
                if self._pool is not None and self._pool_pid == os.getpid():
                    self._pool.shutdown(wait=False)   # set_intra_op_threads resized it
                self._pool_size = size
                self._pool = ThreadPoolExecutor(size, thread_name_prefix="nn_kernels")
                self._pool_pid = os.getpid()
            return self._pool

    def map(self, work: Callable[[int, int], object], n: int, big: bool) -> List:
        """[work(lo, hi) for consecutive parts of range(n)]: one part per core if the job
        is ``big`` and jobs are split now, else a single part."""
        parts = min(self.count, n) if big and self.active() else 1
        if parts <= 1:
            return [work(0, n)]
        bounds = [n * p // parts for p in range(parts + 1)]
        futures = [self._get_pool().submit(work, bounds[p], bounds[p + 1])
                   for p in range(1, parts)]
        try:
            results = [work(bounds[0], bounds[1])]
        finally:
            wait(futures)
        return results + [f.result() for f in futures]

    def share(self, work: Callable[[Iterator[Tuple[int, int]]], object], n: int, step: int,
              big: bool) -> List:
        """[work(ranges) on each core]: the cores take the consecutive ``step``-long parts of
        range(n) from one shared iterator, each as soon as it is done with its last, so that
        a core slowed by another process takes fewer parts instead of holding up the job
        (with fixed halves, the job waits for the slower core), and a caller whose pool
        thread is busy with another step's job does the work alone instead of waiting.
        ``work`` may keep its buffers and partial sums across the parts it takes."""
        ranges = _SharedRanges(n, step)
        parts = min(self.count, -(-n // step)) if big and self.active() else 1
        if parts <= 1:
            return [work(ranges)]
        futures = [self._get_pool().submit(work, ranges) for _ in range(1, parts)]
        try:
            results = [work(ranges)]
        finally:
            # Parts that no pool thread has started (all busy) have nothing left to do.
            started = [f for f in futures if not f.cancel()]
            wait(started)
        return results + [f.result() for f in started]


class _SharedRanges:
    """(lo, hi) parts of range(n), ``step`` long, handed out once each to whichever thread
    asks next."""

    def __init__(self, n: int, step: int) -> None:
        self._n, self._step = n, max(1, step)
        self._next = 0
        self._lock = threading.Lock()

    def __iter__(self) -> "_SharedRanges":
        return self

    def __next__(self) -> Tuple[int, int]:
        with self._lock:
            lo = self._next
            if lo >= self._n:
                raise StopIteration
            self._next = min(self._n, lo + self._step)
            return lo, self._next


WORKERS = _WORKERS = _Workers()


_control = None
_control_looked_up = False


def _blas_control():
    global _control, _control_looked_up
    if not _control_looked_up:
        _control = _find_blas_thread_control()
        _control_looked_up = True
    return _control


class _SingleThreadedBlas:
    """Context: numpy's BLAS on one thread while any step runs (steps may run concurrently)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 1

    def __enter__(self):
        control = _blas_control()
        if control is not None and _WORKERS.count > 1:
            with self._lock:
                if self._users == 0:
                    self._saved = control[0]()
                    control[1](1)
                self._users += 1
        return self

    def __exit__(self, *exc):
        control = _blas_control()
        if control is not None and _WORKERS.count > 1:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    control[1](self._saved)
        return False


single_threaded_blas = _SingleThreadedBlas()


def set_intra_op_threads(n: int, split_kernels: bool = True) -> None:
    """Runs each op of this process on at most ``n`` threads: numpy's BLAS, Numba's parallel
    loops, and (``split_kernels``) the pool that big kernels split over. Process-wide, like the
    BLAS setting it includes.

    ``split_kernels=False`` leaves that pool at every core. Tasks sharing a host do that: the
    BLAS's threads spin for a while after each call, needed or not, but the pool's only run
    while they have a part of a job. (Measured on 2 cores, 1 ps + 1 or 2 MLP workers: capping
    the pool too cut the CPU per step by 3-10% and changed no throughput beyond the machine's
    +-20% noise.)"""
    n = max(1, int(n))
    try:
        import numba
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    except (ImportError, ValueError):
        pass
    try:
        # Numba's compiled np.dot calls scipy's own OpenBLAS, which it loads on first use: a
        # limit set before then would never reach it.
        import scipy.linalg.cython_blas  # noqa: F401
    except ImportError:
        pass
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=n)
    if split_kernels:
        WORKERS.count = min(n, _cpu_count())

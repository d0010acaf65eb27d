"""The CPU backend: numpy kernels, with Numba where numpy has no fast path."""
from __future__ import annotations

import numpy as np

from .. import KernelTable

KERNELS = KernelTable("CPU")


def allocate(shape, dtype) -> np.ndarray:
    return np.empty(shape, dtype)


def _keep_freed_memory() -> None:
    """Step buffers are freed and allocated again every step; glibc would hand each big one
    back to the OS and fault it in afresh (~7000 page faults per LeNet step, ~7% of its time).
    Keeping freed memory in the heap, as TF's BFC allocator keeps its arenas, avoids that."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)  # glibc's upper limit on 64-bit
    mallopt(m_trim_threshold, 1 << 30)


_keep_freed_memory()


# Importing a kernel module registers its kernels in KERNELS.
from . import (array_kernels, control_flow_kernels, data_flow_kernels, image_kernels,  # noqa: E402,F401
               dataset_kernels, io_kernels, iterator_kernels, logging_kernels, math_kernels,
               nn_extra_kernels, nn_kernels, parsing_kernels, random_kernels, reader_kernels,
               script_kernels, sendrecv_kernels, state_kernels, sparse_training_kernels,
               string_kernels, summary_kernels, training_kernels)
from . import (csv_kernels, ftrl_kernels, lookup_kernels, string_hash_kernels,  # noqa: E402,F401
               string_transform_kernels)
from . import sparse_cross_kernels, sparse_segment_kernels  # noqa: E402,F401

"""The CPU backend: numpy kernels, with Numba where numpy has no fast path."""
from __future__ import annotations

import numpy as np

from .. import KernelTable

KERNELS = KernelTable("CPU")


def allocate(shape, dtype) -> np.ndarray:
    return np.empty(shape, dtype)


# Importing a kernel module registers its kernels in KERNELS.
from . import (array_kernels, data_flow_kernels, io_kernels, math_kernels, nn_extra_kernels, nn_kernels,  # noqa: E402,F401
               random_kernels, sendrecv_kernels, state_kernels, summary_kernels,
               training_kernels)

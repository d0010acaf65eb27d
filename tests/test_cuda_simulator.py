"""Runs the GPU tests (tests/cuda) under Numba's CUDA simulator, in a process of their own.

The simulator replaces numba.cuda when numba is first imported, and this process imported numba
long ago; so the GPU tests get a fresh interpreter with ``NUMBA_ENABLE_CUDASIM=1``. On a machine
with a GPU, tests/cuda also runs in the main session, on the real device.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.timeout(900)
def test_gpu_kernels_and_devices_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONUNBUFFERED="1")
    env.pop("TFJUPYTER_LOGICAL_GPUS", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "--timeout=300",
         os.path.join("tests", "cuda")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=880)
    summary = result.stdout.strip().splitlines()[-1:] or ["(no output)"]
    assert result.returncode == 0, (
        f"GPU tests under the simulator failed ({summary[0]}):\n{result.stdout[-8000:]}\n"
        f"{result.stderr[-3000:]}")
    assert " passed" in summary[0], summary[0]

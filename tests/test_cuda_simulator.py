"""Runs the GPU tests (tests/cuda) under Numba's CUDA simulator, in processes of their own.

The simulator replaces numba.cuda when numba is first imported, and this process imported numba
long ago; so the GPU tests get fresh interpreters with ``NUMBA_ENABLE_CUDASIM=1``. On a machine
with a GPU, tests/cuda also runs in the main session, on the real device.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_TESTS = os.path.join("tests", "cuda")
# With two cores or more, tests/cuda runs as two processes at once: these files (about half
# the time) in one, the others in the other. When this was written the tests took (seconds, on a
# loaded machine) nn 113, gpu_runtime 74 and matmul 41 here; state_training 80, random 77,
# elementwise 41, array 20, reduction 14 and the rest 10 there.
FIRST_PROCESS = ["test_nn_kernels.py", "test_gpu_runtime.py", "test_matmul_kernels.py"]


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _command(files=None, ignore=()):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
               "--timeout=300"]
    command += [os.path.join(GPU_TESTS, f) for f in files] if files else [GPU_TESTS]
    return command + [f"--ignore={os.path.join(GPU_TESTS, f)}" for f in ignore]


@pytest.mark.timeout(900)
def test_gpu_kernels_and_devices_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONUNBUFFERED="1")
    env.pop("TFJUPYTER_LOGICAL_GPUS", None)
    first = [f for f in FIRST_PROCESS if os.path.exists(os.path.join(ROOT, GPU_TESTS, f))]
    if _usable_cores() >= 2 and first:
        commands = [_command(files=first), _command(ignore=first)]
    else:
        commands = [_command()]
    processes = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for command in commands]
    try:
        outputs = [p.communicate(timeout=880) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for process, (out, err) in zip(processes, outputs):
        summary = out.strip().splitlines()[-1:] or ["(no output)"]
        assert process.returncode == 0, (f"GPU tests under the simulator failed ({summary[0]}):\n"
                                         f"{out[-8000:]}\n{err[-3000:]}")
        assert " passed" in summary[0], summary[0]

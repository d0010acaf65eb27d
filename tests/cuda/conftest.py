"""GPU kernel tests: they run on a real GPU when one is there, else under Numba's CUDA simulator.

The simulator must be chosen before numba is imported, so the main test run cannot switch to it:
``tests/test_cuda_simulator.py`` runs this directory again in a process of its own with
``NUMBA_ENABLE_CUDASIM=1``. Where neither is available, this directory is skipped.
"""
import os


def _gpus_usable() -> bool:
    try:
        from tfjupyter.kernels.cuda._runtime import physical_gpus
    except Exception:
        return False
    return bool(physical_gpus())


collect_ignore_glob = [] if _gpus_usable() else ["test_*.py"]
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

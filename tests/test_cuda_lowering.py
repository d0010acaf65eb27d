"""Every GPU kernel the GPU tests launch compiles for a real GPU, without a GPU.

Numba's CUDA simulator (tests/test_cuda_simulator.py) runs kernels as Python, so it cannot see
what only the CUDA target rejects or does differently: typing and lowering errors, float64
arithmetic in float32 kernels. Here tests/cuda runs again under ``tests/cuda_lowering/plugin.py``:
a fake GPU whose kernel launches type and lower each kernel with numba-cuda's real compiler front
end (compute capability 9.0) instead of running it. The tests themselves fail there (kernels never
run); what is checked is the plugin's report of every kernel signature launched.

Skipped where numba-cuda cannot lower without a GPU, and where a real GPU is present (then
tests/cuda runs on it, which checks more).
"""
import collections
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")
GPU_TESTS = os.path.join("tests", "cuda")

# test_gpu_cluster.py starts servers in processes of their own, which the plugin does not reach.
NOT_RUN = ["test_gpu_cluster.py"]
# Tests whose whole work is in a subprocess (a tutorial, the demo, a script that lowers kernels
# itself): the plugin does not reach it either, so here they would only take time (a tenth of the
# run when this was written). They run under the simulator and on a real GPU.
IN_A_SUBPROCESS = [
    "test_elementwise_kernels.py::test_cast_to_bool_compares_in_the_source_type",
    "test_gpu_runtime.py::test_the_gpu1_tutorial_runs_on_logical_gpu_1_without_soft_placement",
    "test_gpu_runtime.py::test_the_demo_puts_one_tower_on_each_logical_gpu",
    "test_nn_kernels.py::test_float32_kernels_do_no_double_arithmetic",
]
# With two cores or more, tests/cuda runs as two processes at once: these files in one, the others
# in the other. Lowering is most of the time; when this was written it took (seconds, on a loaded
# machine) elementwise 450, reduction 24 and random 10 here, nn 221, control flow 83, matmul 90,
# array 54 and the rest 9 there, so that the two processes end at about the same time.
FIRST_PROCESS = ["test_elementwise_kernels.py", "test_reduction_kernels.py",
                 "test_random_kernels.py"]

# 484 kernel variants (459 distinct name/closure/signature texts) were lowered when this was
# written; fewer than this means the run lost most of its coverage and would pass vacuously.
MIN_SIGNATURES = 350

MAX_THREADS_PER_BLOCK = 1024
MAX_STATIC_SHARED_BYTES = 48 * 1024

# float32/float16 kernels that do float64 arithmetic on purpose: (kernel qualname, text in the
# variant or None for all its variants) -> why.
FLOAT64_ALLOWED = {
    ("_column_partial_sums", None):
        "bias-add gradient: column partial sums accumulate in float64 on purpose (sums of many "
        "float32 terms), into a float64 buffer",
    ("_sum_parts", None):
        "bias-add gradient: adds the float64 partial sums of _column_partial_sums, rounds once",
    ("_square_partial_sums", None):
        "l2_loss: squares summed in float64 on purpose (accuracy over large tensors)",
    ("_half_sum", None):
        "l2_loss: adds the float64 partial sums of _square_partial_sums, halves, rounds once",
    ("_drawing.<locals>.kernel", None):
        "random ops: numba.cuda.random's xoroshiro128p draws compute in float64 (library code)",
}
# Known float64 use still to fix, tolerated meanwhile: (kernel, variant) -> what does it. A
# typical cause is comparing a float32 value with a Python int literal (``v > 0`` is typed
# float64; compare with ``T(0)``). Sign, Sigmoid and Round were found and fixed this way.
FLOAT64_TO_FIX: dict = {}


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _pytest_command(report, files=None, ignore=()):
    command = [sys.executable, "-m", "pytest", "-p", "cuda_lowering.plugin",
               f"--cuda-lowering-report={report}", "-p", "no:cacheprovider", "-q", "--tb=no",
               "--timeout=600"]
    command += [os.path.join(GPU_TESTS, f) for f in files] if files else [GPU_TESTS]
    command += [f"--ignore={os.path.join(GPU_TESTS, f)}" for f in list(ignore) + NOT_RUN]
    return command + [f"--deselect={os.path.join(GPU_TESTS, t)}" for t in IN_A_SUBPROCESS]


pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The plugin's reports of tests/cuda, merged: {'kernels': [...], ...}."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "TFJUPYTER_LOGICAL_GPUS", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([TESTS, ROOT] + env.get("PYTHONPATH", "").split(os.pathsep))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    tmp = tmp_path_factory.mktemp("cuda_lowering")
    first = [f for f in FIRST_PROCESS if os.path.exists(os.path.join(ROOT, GPU_TESTS, f))]
    if _usable_cores() >= 2 and first:
        reports = [tmp / "first.json", tmp / "rest.json"]
        commands = [_pytest_command(reports[0], files=first),
                    _pytest_command(reports[1], ignore=first)]
    else:
        reports = [tmp / "all.json"]
        commands = [_pytest_command(reports[0])]
    processes = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for command in commands]
    outputs = [p.communicate(timeout=900)[0] for p in processes]

    merged = {"kernels": [], "collection_errors": [], "copies_off_stream": [],
              "tests": collections.Counter()}
    for path, output in zip(reports, outputs):
        if not os.path.exists(path):
            pytest.fail(f"the lowering run wrote no report:\n{output[-6000:]}")
        with open(path) as f:
            part = json.load(f)
        if part["unavailable"]:
            pytest.skip(part["unavailable"])
        for key in ("kernels", "collection_errors", "copies_off_stream"):
            merged[key] += part[key]
        merged["tests"].update(part["tests"])
        merged["numba_cuda"] = part["numba_cuda"]
    merged["output"] = "\n".join(o[-3000:] for o in outputs)
    return merged


def _name(entry):
    variant = f" [{entry['variant']}]" if entry["variant"] else ""
    return f"{entry['kernel']}{variant} ({entry['file']}:{entry['line']}) {entry['signature']}"


def test_the_gpu_tests_ran(report):
    assert report["collection_errors"] == [], report["collection_errors"]
    ran = sum(report["tests"].values())
    assert ran >= 100, f"only {ran} GPU tests ran:\n{report['output']}"


def test_enough_kernel_signatures_were_lowered(report):
    distinct = {(k["file"], k["kernel"], k["variant"], k["signature"]) for k in report["kernels"]}
    assert len(report["kernels"]) >= MIN_SIGNATURES, (
        f"only {len(report['kernels'])} kernel signatures were lowered ({len(distinct)} distinct "
        f"texts), expected at least {MIN_SIGNATURES}:\n{report['output']}")


def test_every_launched_kernel_lowers_for_a_real_gpu(report):
    failures = [f"{_name(k)}:\n{k['error']}" for k in report["kernels"] if "error" in k]
    assert not failures, (f"{len(failures)} kernel signatures do not compile for CUDA "
                          f"(numba-cuda {report['numba_cuda']}, cc 9.0):\n\n"
                          + "\n\n".join(failures))


def test_every_launch_and_copy_is_on_the_devices_stream(report):
    sites = collections.defaultdict(list)  # where the launch was configured -> kernels
    for k in report["kernels"]:
        for where in k["off_stream_launches"]:
            sites[where].append(k)
    launches = [f"launch at {where} ({len(kernels)} kernel signatures, e.g. {_name(kernels[0])})"
                for where, kernels in sites.items()]
    copies = [f"{c['copy']} on {c['stream']} at {c['where']}" for c in report["copies_off_stream"]]
    assert not launches + copies, (
        "work on a stream other than ctx.state.stream (unordered with the device's kernels):\n"
        + "\n".join(sorted(set(launches + copies))))


def test_launches_fit_the_device(report):
    too_big = [f"{_name(k)}: {k['threads_per_block']} threads per block"
               for k in report["kernels"] if k["threads_per_block"] > MAX_THREADS_PER_BLOCK]
    too_big += [f"{_name(k)}: {k['static_shared_bytes']} bytes of static shared memory"
                for k in report["kernels"]
                if k.get("static_shared_bytes", 0) > MAX_STATIC_SHARED_BYTES]
    assert not too_big, "\n".join(too_big)


def _float64_exception(entry):
    """The FLOAT64_ALLOWED or FLOAT64_TO_FIX key that covers ``entry``, or None."""
    for table in (FLOAT64_ALLOWED, FLOAT64_TO_FIX):
        for kernel, variant in table:
            if entry["kernel"] == kernel and (variant is None or variant in entry["variant"]):
                return kernel, variant
    return None


def test_float32_kernels_do_no_float64_arithmetic(report):
    """Numba types a float32 value combined with a Python float or int as float64: double
    arithmetic, a fraction of the float32 rate on most GPUs. Kernels with float32 or float16
    arguments must do none, but for FLOAT64_ALLOWED (on purpose) and FLOAT64_TO_FIX."""
    found, used = [], set()
    for k in report["kernels"]:
        if not k.get("float64_ops") or not {"float32", "float16"} & set(k["float_dtypes"]):
            continue
        exception = _float64_exception(k)
        if exception is not None:
            used.add(exception)
            continue
        found.append(f"{_name(k)}: {k['float64_ops']} float64 instructions, e.g. "
                     + "; ".join(k["float64_examples"][:4]))
    assert not found, ("float32/float16 kernels doing float64 arithmetic (or add them, with "
                       "the reason, to FLOAT64_ALLOWED):\n" + "\n".join(found))
    fixed = [f"{kernel} [{variant}]" for (kernel, variant), reason in FLOAT64_TO_FIX.items()
             if (kernel, variant) not in used]
    assert not fixed, "fixed, so delete from FLOAT64_TO_FIX:\n" + "\n".join(fixed)

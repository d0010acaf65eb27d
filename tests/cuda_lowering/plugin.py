"""A pytest plugin that runs tests/cuda against a *fake* GPU and compiles every kernel launch
with numba-cuda's real CUDA compiler front end.

Under Numba's CUDA simulator kernels run as Python, so an error that only the CUDA target sees
(a typing error, an unsupported call, a lowering failure) passes there and breaks on a real GPU.
With this plugin, ``tests/cuda`` runs in a process without the simulator and without a GPU:

- device arrays are numpy arrays (:class:`FakeDeviceArray`), copies are numpy copies;
- a kernel launch ``kernel[grid, block, stream](*args)`` does not run the kernel: it types the
  arguments as Numba types them for a launch, and types and lowers the kernel for that signature
  with ``numba.cuda.compiler.compile_cuda`` for compute capability 9.0. That is Numba's whole
  front end (typing, lowering to LLVM IR, device functions and libdevice declarations included);
  only NVVM (LLVM IR to PTX) and the driver are left out, so no CUDA toolkit or driver is needed.

Kernel outputs stay zeros, so the tests themselves fail on values; that is expected. What this
plugin produces is a JSON report (``--cuda-lowering-report=PATH``), one entry per distinct kernel
signature, which ``tests/test_cuda_lowering.py`` checks: lowering errors, the stream of each
launch and copy, block size, static shared memory, and float64 instructions in the LLVM IR.

Load it with ``-p cuda_lowering.plugin`` (``tests`` on ``sys.path``), in a process where
``NUMBA_ENABLE_CUDASIM`` is unset. It is not a test module (the name does not match test_*.py),
so the main test run never collects it.

Written for numba-cuda 0.30.4 (numba 0.68). The places that depend on numba-cuda internals are
marked ``numba-cuda internals``; if a numba-cuda upgrade breaks the plugin, look there first.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import time
import traceback
import types as pytypes

import numpy as np
import pytest

# The compute capability kernels are compiled for (an H100).
CC = (9, 0)
FAKE_STREAM_HANDLE = 0x5EED

_report_path = None
_unavailable = None  # why the plugin cannot work here (then the run stops at once)
_signatures = {}  # (kernel code, closure values, argument types) -> report entry
_copies_off_stream = []  # copies made by the kernels on a stream other than the device's
_collection_errors = []
_tests = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_addoption(parser):
    parser.addoption("--cuda-lowering-report", default="cuda_lowering.json",
                     help="where the fake-GPU lowering report (JSON) is written")


def _probe():
    """Why this process cannot lower kernels without a GPU, or None when it can."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "NUMBA_ENABLE_CUDASIM=1: the simulator replaces numba.cuda"
    try:
        from numba import cuda  # noqa: F401
        from numba.cuda import dispatcher  # noqa: F401
        from numba.cuda.compiler import compile_cuda  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the installed numba-cuda
        return f"numba-cuda's compile_cuda cannot be imported: {e!r}"
    try:
        if cuda.is_available():
            return "a real GPU is present: tests/cuda runs on it"
    except Exception:  # a broken driver is "no GPU"
        pass
    return None


# -- the fake device ------------------------------------------------------------------------------
class FakeStream:
    """The one stream of the fake GPU: launches and copies are checked against it."""

    handle = FAKE_STREAM_HANDLE

    def __int__(self):
        return FAKE_STREAM_HANDLE

    def synchronize(self):
        pass

    def __repr__(self):
        return "<the device's stream>"


STREAM = FakeStream()


class FakeEvent:
    def record(self, stream=0):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=0):
        pass


class FakeDeviceArray(np.ndarray):
    """A device array in host memory: a numpy array with DeviceNDArray's copy methods. Numba
    types it as a launch types a device array: ``Array(dtype, ndim, layout)``."""

    def copy_to_device(self, ary, stream=0):
        _check_copy_stream("copy_to_device", stream)
        np.copyto(self, np.asarray(ary).reshape(self.shape))

    def copy_to_host(self, ary=None, stream=0):
        _check_copy_stream("copy_to_host", stream)
        if ary is None:
            return np.array(self)
        np.copyto(ary, self)
        return ary

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_void_p(self.ctypes.data)

    def __array_finalize__(self, obj):
        pass


class _FakeContext:
    def memalloc(self, nbytes):
        return bytearray(nbytes)


def _fake_device_ndarray(shape, strides, dtype, stream, gpu_data):
    return np.ndarray(shape, dtype, buffer=gpu_data, strides=strides).view(FakeDeviceArray)


def _device_copy(host):
    return np.array(host, copy=True).view(FakeDeviceArray)


def _caller_outside(files):
    """'path:line' of the innermost stack frame whose file is not one of ``files``."""
    frame = sys._getframe(1)
    while frame is not None and os.path.basename(frame.f_code.co_filename) in files:
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"


def _check_copy_stream(what, stream):
    """Copies the kernels make must be on the device's stream: on a real GPU, a copy on the
    default stream is not ordered with the kernels queued on ours."""
    if stream is STREAM:
        return
    frame = sys._getframe(2)
    path = frame.f_code.co_filename
    if f"{os.sep}kernels{os.sep}" in path:  # tests may copy synchronously, the kernels may not
        _copies_off_stream.append({"copy": what, "stream": repr(stream),
                                   "where": f"{os.path.relpath(path)}:{frame.f_lineno}"})


def _install_fake_device():
    from numba import cuda

    # numba.cuda's public API, as the runtime (kernels/cuda/_runtime.py) uses it.
    def to_device(obj, stream=0, copy=True, to=None):
        _check_copy_stream("to_device", stream)
        return _device_copy(obj)

    def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
        return np.zeros(shape, dtype, order=order).view(FakeDeviceArray)

    cuda.to_device = to_device
    cuda.device_array = device_array
    cuda.pinned_array = lambda shape, dtype=np.float64, strides=None, order="C": np.empty(
        shape, dtype, order=order)
    cuda.stream = lambda: STREAM
    cuda.event = lambda timing=True: FakeEvent()
    cuda.is_cuda_array = lambda obj: isinstance(obj, FakeDeviceArray)

    # What the runtime takes from numba-cuda directly, to skip the public API's per-call cost:
    # array construction on memory from the context's manager, and the copy into it.
    cuda.current_context = lambda devnum=None: _FakeContext()

    def host_to_device(dst, src, size, stream=0):
        _check_copy_stream("host_to_device", stream)
        np.copyto(dst, np.asarray(src).reshape(dst.shape))

    from tfjupyter.kernels.cuda import _runtime
    _runtime._DeviceNDArray = _fake_device_ndarray
    _runtime._driver = pytypes.SimpleNamespace(host_to_device=host_to_device)

    # One H100-like GPU. _discover is the runtime's only use of the driver (cuda.gpus,
    # contexts, the memory manager); everything else goes through the functions above.
    _runtime._discover = lambda: [_runtime.PhysicalGPU(0, "Fake GPU (cc 9.0)", "0000:00:00.0",
                                                       CC, 80 << 30, 132)]

    # A GEMM through CuPy would need real device memory; keep GEMMs on the Numba kernels.
    os.environ["TFJUPYTER_GEMM"] = "numba"


# -- launches: lower instead of run ---------------------------------------------------------------
class _FakeDevice:
    compute_capability = CC
    id = 0


# float64 arithmetic in LLVM IR: double operations, conversions to double, calls returning double
# (libdevice's __nv_* math, llvm.* intrinsics). Loading a double and truncating it to float
# (fptrunc) is a conversion of float64 data, not arithmetic, and is not counted.
_DOUBLE_OPS = re.compile(
    r"=\s*(?:(?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp)\b[^,\n]*?\bdouble\b"
    r"|(?:fpext|sitofp|uitofp)\b[^\n]*\bto double\b"
    r"|(?:tail\s+)?call\b[^\n(]*?\bdouble\s+@)")
# Statically sized shared arrays (cuda.shared.array) are addrspace(3) globals.
_SHARED = re.compile(r"addrspace\(3\) global \[(\d+) x (\w+)\]")
_LLVM_SIZES = {"double": 8, "float": 4, "half": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "i1": 1}


def _float_dtypes(argtypes):
    from numba import types
    found = set()
    for t in argtypes:
        t = getattr(t, "dtype", t)  # an array's element type, or the scalar itself
        if isinstance(t, types.Float):
            found.add(str(t))
    return sorted(found)


def _lower(dispatcher, argtypes, entry):
    """Types and lowers ``dispatcher``'s kernel for ``argtypes`` as a launch compiles it, and
    records what its LLVM IR says."""
    from numba import types
    from numba.cuda.compiler import compile_cuda

    # numba-cuda internals: the arguments mirror numba.cuda.dispatcher._Kernel.__init__, which
    # compiles a kernel at its first launch (it then runs NVVM and links; we stop before).
    options = dispatcher.targetoptions
    fastmath = options.get("fastmath", False)
    nvvm_options = {"fastmath": fastmath, "opt": 3 if options.get("opt", True) else 0}
    if options.get("debug"):
        nvvm_options["g"] = None
    try:
        cres = compile_cuda(dispatcher.py_func, types.void, argtypes,
                            debug=options.get("debug", False),
                            lineinfo=options.get("lineinfo", False),
                            forceinline=options.get("forceinline", False),
                            fastmath=fastmath, nvvm_options=nvvm_options, cc=CC,
                            max_registers=options.get("max_registers"),
                            lto=options.get("lto", False))
    except Exception as e:
        text = "".join(traceback.format_exception_only(type(e), e)).strip()
        entry["error"] = text[-4000:]
        return
    # The library's IR includes the device functions it links (CUDACodeLibrary.modules).
    ir = cres.library.get_llvm_str()
    double_ops = [m.group(0).lstrip("= ").strip() for m in _DOUBLE_OPS.finditer(ir)]
    entry["float64_ops"] = len(double_ops)
    entry["float64_examples"] = sorted(set(double_ops))[:8]
    entry["static_shared_bytes"] = sum(int(n) * _LLVM_SIZES.get(t, 8)
                                       for n, t in _SHARED.findall(ir))


def _closure(py_func):
    """The values a kernel built by a factory closes over (device functions, constants): two
    kernels with the same code and these values compile the same; different values (the device
    function of another op) make another kernel."""
    cells = py_func.__closure__ or ()
    return [(name, _identity(cell.cell_contents))
            for name, cell in zip(py_func.__code__.co_freevars, cells)]


def _identity(value):
    if isinstance(value, (float, np.generic)):  # by repr: a NaN constant equals itself
        return (type(value).__name__, repr(value))
    if isinstance(value, (int, str, bool, type(None), np.dtype, type)):
        return value
    return _Same(value)


class _Same:
    """Compares by identity, and keeps the object alive so that its id stays unique."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self):
        return id(self.value)


def _describe(value, depth=0):
    """A closure value for the report: a function as ``qualname@file:line``, followed by what it
    closes over in turn (``_simple(fn)`` makes one lambda for many math functions)."""
    value = value.value if isinstance(value, _Same) else value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]  # a float constant, as _identity keeps it
    func = getattr(value, "py_func", value)  # a device function's dispatcher: its Python function
    code = getattr(func, "__code__", None)
    if code is None:
        return getattr(value, "__name__", None) or repr(value)[:60]
    text = f"{func.__qualname__}@{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    if depth < 2 and func.__closure__:
        inner = ", ".join(f"{name}={_describe(v, depth + 1)}"
                          for name, v in _closure(func))
        text += f"[{inner}]"
    return text


class _RecordingLaunch:
    """What ``kernel[grid, block, stream]`` returns under the fake GPU: calling it lowers the
    kernel for the arguments' types (once per dispatcher and signature) and records the launch."""

    def __init__(self, dispatcher, griddim, blockdim, stream=0, sharedmem=0):
        self.dispatcher = dispatcher
        self.blockdim = blockdim
        self.stream = stream
        self.sharedmem = sharedmem
        self.where = _caller_outside({"plugin.py"})

    def __call__(self, *args):
        d = self.dispatcher
        argtypes = tuple(d.typeof_pyval(a) for a in args)  # as a launch types its arguments
        variant = _closure(d.py_func)
        key = (d.py_func.__code__, tuple(v for _, v in variant), argtypes)
        entry = _signatures.get(key)
        if entry is None:
            code = d.py_func.__code__
            entry = _signatures[key] = {
                "kernel": d.py_func.__qualname__,
                "variant": ", ".join(f"{name}={_describe(v)}" for name, v in variant),
                "module": d.py_func.__module__,
                "file": os.path.relpath(code.co_filename),
                "line": code.co_firstlineno,
                "signature": "(" + ", ".join(map(str, argtypes)) + ")",
                "float_dtypes": _float_dtypes(argtypes),
                "launches": 0,
                "threads_per_block": 0,
                "dynamic_shared_bytes": 0,
                "off_stream_launches": [],
            }
            started = time.perf_counter()
            _lower(d, argtypes, entry)
            entry["lowering_seconds"] = round(time.perf_counter() - started, 3)
            entry["first_test"] = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        entry["launches"] += 1
        block = self.blockdim if isinstance(self.blockdim, tuple) else (self.blockdim,)
        entry["threads_per_block"] = max(entry["threads_per_block"], int(np.prod(block)))
        entry["dynamic_shared_bytes"] = max(entry["dynamic_shared_bytes"], int(self.sharedmem))
        if self.stream is not STREAM and self.where not in entry["off_stream_launches"]:
            entry["off_stream_launches"].append(self.where)


def _install_recording_launches():
    from numba.cuda import dispatcher

    # numba-cuda internals: device functions are compiled (while a kernel is typed) for
    # ``get_current_device().compute_capability``, which asks the driver; answer for it.
    dispatcher.get_current_device = lambda: _FakeDevice()

    # numba-cuda internals: ``kernel[...]`` is CUDADispatcher.__getitem__ -> configure ->
    # _LaunchConfiguration, whose __init__ already needs the driver (it converts the stream).
    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        return _RecordingLaunch(self, griddim, blockdim, stream, sharedmem)

    def getitem(self, args):
        if len(args) not in (2, 3, 4):
            raise ValueError("must specify at least the griddim and blockdim")
        return configure(self, *args)

    dispatcher.CUDADispatcher.configure = configure
    dispatcher.CUDADispatcher.__getitem__ = getitem


# -- pytest hooks ---------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # Before tests/cuda/conftest.py asks the runtime for GPUs (it skips the directory without).
    global _unavailable
    _unavailable = _probe()
    if _unavailable is None:
        _install_fake_device()
        _install_recording_launches()


def pytest_configure(config):
    global _report_path
    _report_path = os.path.abspath(config.getoption("--cuda-lowering-report"))


def pytest_collection(session):
    if _unavailable is not None:
        _write_report()
        pytest.exit("cuda_lowering: " + _unavailable, returncode=0)


def pytest_collectreport(report):
    if report.failed:
        _collection_errors.append({"node": report.nodeid, "error": str(report.longrepr)[-3000:]})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if report.outcome in _tests:
            _tests[report.outcome] += 1


def pytest_sessionfinish(session, exitstatus):
    _write_report()


def _write_report():
    report = {
        "numba_cuda": _numba_cuda_version(),
        "compute_capability": list(CC),
        "unavailable": _unavailable,
        "tests": _tests,
        "collection_errors": _collection_errors,
        "copies_off_stream": _copies_off_stream,
        "kernels": list(_signatures.values()),
    }
    with open(_report_path, "w") as f:
        json.dump(report, f, indent=1)


def _numba_cuda_version():
    try:
        from importlib.metadata import version
        return version("numba-cuda")
    except Exception:
        return None

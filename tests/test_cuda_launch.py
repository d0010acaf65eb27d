"""The GPU backend's launch path (kernels/cuda/_runtime.Kernel), checked against Numba itself.

A launch whose argument kinds were seen before skips Numba's dispatcher: it reuses the overload
compiled for those kinds and lays the arguments out itself.  Both halves must agree with Numba:
equal kinds must mean equal Numba types (else a launch would run an overload compiled for
another layout), and the layout must be the one Numba's own launch builds
(``_Kernel._prepare_args``).  Device arrays here are Numba DeviceNDArrays over a fake pointer:
no GPU is needed, nothing is launched on one.
"""
import ctypes
import itertools
import threading

import numpy as np
import pytest

from tfjupyter.kernels.cuda import _runtime

pytestmark = pytest.mark.skipif(_runtime.SIMULATOR, reason="the simulator launches through Numba")


class _Memory:
    """A device allocation as DeviceNDArray uses it (only its address is read)."""

    def __init__(self, address):
        self.address = address

    @property
    def device_pointer_value(self):
        return self.address or None

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_size_t(self.address)


def _array(shape, strides, dtype=np.float32, address=0x7000):
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(shape, strides, dtype, 0, gpu_data=_Memory(address))


def _samples():
    f4, f8, i4 = np.float32, np.float64, np.int32
    return {
        "C 2-d": _array((3, 4), (16, 4)),
        "C 2-d other shape": _array((5, 2), (8, 4), address=0x9000),
        "columns of a matrix (A)": _array((3, 2), (16, 4)),
        "transposed (F)": _array((4, 3), (4, 16)),
        "broadcast row (A)": _array((3, 4), (0, 4)),
        "size-1 dim of stride 0 (A)": _array((1, 4), (0, 4)),
        "1-d": _array((7,), (4,)),
        "1-d float64": _array((7,), (8,), f8),
        "1-d int32": _array((7,), (4,), i4),
        "0-d": _array((), ()),
        "one element 2-d (C)": _array((1, 1), (4, 4)),
        "python int": 3,
        "negative int": -(1 << 40),
        "int past int64": 1 << 63,
        "python float": 2.5,
        "python bool": True,
        "numpy float32": np.float32(1.5),
        "numpy int32": np.int32(-2),
        "numpy uint64": np.uint64(9),
        "numpy bool": np.bool_(False),
        "host array": np.zeros(3, f4),
        "tuple of ints": (1, 2),
        "tuple of other ints": (7, -3),
        "tuple of numpy ints": (np.int64(1), np.int64(2)),
        "longer tuple": (1, 2, 3),
        "empty tuple": (),
        "mixed tuple": (1, 2.0),
        "nested tuple": ((4, 5), (1, 0), (0, 1)),
        "tuple holding a host array": (np.zeros(2), 1),
    }


def _numba_type(value):
    from numba.cuda.typing.typeof import Purpose, typeof
    return typeof(value, Purpose.argument)


def test_equal_argument_kinds_are_equal_numba_types():
    samples = _samples()
    kinds = {name: _runtime._argument_kind(v) for name, v in samples.items()}
    # What Numba converts or types by value is left to Numba.
    assert kinds["host array"] is None and kinds["tuple holding a host array"] is None
    assert kinds["tuple of ints"] == kinds["tuple of other ints"] != kinds["longer tuple"]
    assert kinds["int past int64"] is None
    assert kinds["columns of a matrix (A)"] != kinds["C 2-d"]
    assert kinds["broadcast row (A)"] == kinds["columns of a matrix (A)"]
    for (a, x), (b, y) in itertools.combinations(samples.items(), 2):
        if kinds[a] is not None and kinds[a] == kinds[b]:
            assert _numba_type(x) == _numba_type(y), (a, b)


def _as_numba_lays_out(value):
    from numba.cuda.dispatcher import _Kernel

    class Launch:  # what _prepare_args reads of its kernel
        extensions = []
        _prepare_args = _Kernel._prepare_args   # (tuples recurse)

    params = []
    _Kernel._prepare_args(Launch(), _numba_type(value), value, 0, [], params)
    return params


def _comparable(params):
    return [(type(p), p.value) if isinstance(p, ctypes._SimpleCData) else (type(p), p)
            for p in params]


def test_arguments_are_laid_out_as_numbas_launch_lays_them_out():
    checked = 0
    for name, value in _samples().items():
        if _runtime._argument_kind(value) is None:
            continue
        pack = _runtime._packer(_numba_type(value))
        assert pack is not None, name
        params = []
        pack(value, params)
        assert _comparable(params) == _comparable(_as_numba_lays_out(value)), name
        checked += 1
    assert checked == 26


class _FakeOverload:
    debug = False
    cooperative = False

    def __init__(self, types):
        self.argument_types = list(types)
        function = type("CuFunction", (), {"kernel": f"compiled for {types}"})()
        self._codelibrary = type("Library", (), {"get_cufunc": lambda _self: function})()


class _FakeDispatcher:
    """Numba's dispatcher as Kernel uses it: a launch compiles the overload for the types."""

    def __init__(self):
        self.overloads = {}
        self.launches = []

    def __getitem__(self, config):
        def run(*args):
            types = tuple(map(_numba_type, args))
            self.overloads.setdefault(types, _FakeOverload(types))
            self.launches.append((config, args))
        return run


def _no_driver(monkeypatch):
    """Launches recorded instead of made; threads' contexts counted instead of made current."""
    direct, contexts = [], []
    monkeypatch.setattr(_runtime, "_core_launch", lambda *a: direct.append(a))
    monkeypatch.setattr(_runtime, "_threads", threading.local())
    monkeypatch.setattr(_runtime.cuda, "current_context",
                        lambda: contexts.append(threading.current_thread().name))
    return direct, contexts


def test_a_launch_with_seen_argument_kinds_skips_numbas_dispatcher(monkeypatch):
    direct, contexts = _no_driver(monkeypatch)
    monkeypatch.setattr(_runtime, "_core_stream", lambda stream, handle: ("core stream", stream))
    monkeypatch.setattr(_runtime, "_launch_config", lambda *a: ("config", a))
    dispatcher = _FakeDispatcher()
    kernel = _runtime.Kernel(dispatcher)

    x = _array((3, 4), (16, 4))
    kernel[4, 256](x, 2.0, 5)                       # first: Numba compiles and launches
    assert len(dispatcher.launches) == 1 and direct == []
    y = _array((6, 2), (8, 4), address=0xA000)
    kernel[(2, 1), 128, 0, 64](y, 3.0, 7)           # same kinds: straight to the driver
    assert len(dispatcher.launches) == 1
    (stream, config, function, *params), = direct
    assert stream == ("core stream", 0) and config == ("config", ((2, 1), 128, 64))
    assert function == f"compiled for {tuple(map(_numba_type, (y, 3.0, 7)))}"
    assert _comparable(params) == _comparable(
        _as_numba_lays_out(y) + _as_numba_lays_out(3.0) + _as_numba_lays_out(7))

    assert contexts == [threading.current_thread().name]   # made current once per thread
    kernel[(2, 1), 128, 0, 64](y, 3.0, 7)
    assert len(direct) == 2 and len(contexts) == 1
    # A thread that never called Numba (an RPC handler's, a pool's) gets its context made
    # current before its first direct launch, as Numba's own calls would.
    other = threading.Thread(target=lambda: kernel[(2, 1), 128, 0, 64](y, 3.0, 7), name="rpc")
    other.start()
    other.join()
    assert len(direct) == 3 and contexts == [threading.current_thread().name, "rpc"]
    del direct[1:]

    kernel[4, 256](_array((3, 4), (16, 8), np.float64), 2.0, 5)  # a new kind: Numba again
    kernel[4, 256](_array((3, 2), (16, 4)), 2.0, 5)              # A layout: a new kind too
    assert len(dispatcher.launches) == 3 and len(direct) == 1
    for _ in range(2):                              # a host array: always through Numba
        kernel[4, 256](np.zeros((3, 4), np.float32), 2.0, 5)
    assert len(dispatcher.launches) == 5 and len(direct) == 1


def test_an_overload_numba_did_not_compile_for_the_exact_types_keeps_numbas_path(monkeypatch):
    direct, _ = _no_driver(monkeypatch)

    class Converting(_FakeDispatcher):  # e.g. compiled for an explicit signature
        def __getitem__(self, config):
            return lambda *args: self.launches.append((config, args))

    dispatcher = Converting()
    kernel = _runtime.Kernel(dispatcher)
    for _ in range(3):
        kernel[1, 32](_array((7,), (4,)), 1)
    assert len(dispatcher.launches) == 3 and direct == []

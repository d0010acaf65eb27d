"""Op kernels, one backend per device type (``cpu``, ``cuda``).

A backend is a module with a small fixed interface:

- ``KERNELS``: a :class:`KernelTable` mapping op type -> kernel factory;
- ``allocate(shape, dtype)``: returns an uninitialised buffer on the device.

A kernel factory is called once per (session, op) when an execution plan is
compiled: ``factory(op, ctx) -> run``.  It reads the op's attrs and static
shapes then, so that ``run(*input_arrays)`` does nothing but compute.  ``run``
returns an array for a one-output op, a tuple for several, ``None`` for none.
Inputs that the op takes by reference (the variable of an ``Assign``) are not
passed to ``run``; the factory resolves them through ``ctx`` instead.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable, Dict

__all__ = ["KernelTable", "backend", "backend_name"]

_BACKEND_MODULES = {"CPU": "cpu", "GPU": "cuda"}


def _place(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    return f"{code.co_filename}:{code.co_firstlineno}"


class KernelTable:
    """The op type -> kernel factory table of one backend."""

    def __init__(self, device_type: str):
        self.device_type = device_type
        self._factories: Dict[str, Callable] = {}

    def register(self, *op_types: str) -> Callable[[Callable], Callable]:
        def decorate(factory: Callable) -> Callable:
            for op_type in op_types:
                if op_type in self._factories:
                    raise KeyError(
                        f"{self.device_type} kernel for op {op_type!r} registered twice: "
                        f"at {_place(self._factories[op_type])} and at {_place(factory)}")
                self._factories[op_type] = factory
            return factory
        return decorate

    def get(self, op_type: str):
        return self._factories.get(op_type)

    def __contains__(self, op_type: str) -> bool:
        return op_type in self._factories

    def op_types(self):
        return sorted(self._factories)


def backend_name(device_type: str) -> str:
    return _BACKEND_MODULES.get(device_type.upper(), device_type.lower())


_loaded: Dict[str, ModuleType] = {}


def backend(device_type: str) -> ModuleType:
    """The backend module for a device type ('CPU' -> tfjupyter.kernels.cpu), found by name."""
    key = device_type.upper()
    mod = _loaded.get(key)
    if mod is None:
        mod = importlib.import_module(f"{__name__}.{backend_name(key)}")
        _loaded[key] = mod
    return mod

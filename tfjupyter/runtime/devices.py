"""Devices of a process: each has a full name, a kernel backend and resources of its own."""
from __future__ import annotations

import threading
from typing import Dict, List, Optional

from ..framework.device import DeviceSpec
from ..framework.errors import FailedPreconditionError
from ..kernels import backend as _backend

__all__ = ["Device", "ResourceManager", "local_devices"]


class ResourceManager:
    """State that outlives a single step: variables by name (one manager per device)."""

    def __init__(self):
        self.variables: Dict[str, object] = {}
        self.lock = threading.Lock()
        self._resources: Dict[tuple, object] = {}

    def lookup_or_create(self, kind: str, name: str, factory):
        """The resource (queue, accumulator, ...) of this kind and name, made on first use."""
        key = (kind, name)
        with self.lock:
            resource = self._resources.get(key)
            if resource is None:
                resource = self._resources[key] = factory()
            return resource

    def read_variable(self, name: str, op=None):
        try:
            return self.variables[name]
        except KeyError:
            raise FailedPreconditionError(
                None, op, f"Attempting to use uninitialized value {name}\n\t [[node {name}]]"
            ) from None

    def clear(self) -> None:
        self.variables.clear()
        self._resources.clear()


class Device:
    """A device of this process: ``/job:J/replica:R/task:T/device:TYPE:N``.

    ``description`` is the text of the ``Device mapping:`` line (empty for CPUs, as TF).
    """

    def __init__(self, spec: DeviceSpec, description: str = ""):
        assert spec.is_complete(), spec
        self.spec = spec
        self.name = spec.to_string()
        self.device_type = spec.device_type
        self.description = description
        self.resources = ResourceManager()
        self.backend = _backend(self.device_type)
        self.host = None  # the task runtime (distributed.worker.Worker) of a server's device

    def has_kernel(self, op_type: str) -> bool:
        return op_type in self.backend.KERNELS

    def kernel_factory(self, op_type: str):
        return self.backend.KERNELS.get(op_type)

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def local_devices(job: str = "localhost", replica: int = 0, task: int = 0,
                  device_count: Optional[Dict[str, int]] = None) -> List[Device]:
    """The devices a local session sees. ``device_count`` caps each type, as ConfigProto's."""
    counts = dict(device_count or {})
    n_cpu = max(1, int(counts.get("CPU", 1)))
    return [Device(DeviceSpec(job, replica, task, "CPU", i)) for i in range(n_cpu)]

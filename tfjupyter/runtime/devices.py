"""Devices of a process: each has a full name, a kernel backend and resources of its own."""
from __future__ import annotations

import logging
import os
import threading
from typing import Dict, List, Optional

from ..framework.device import DeviceSpec
from ..framework.errors import FailedPreconditionError
from ..kernels import backend as _backend

__all__ = ["Device", "ResourceManager", "local_devices"]

_log = logging.getLogger("tfjupyter")


def private_key(session_handle: str, name: str) -> str:
    """The name under which a task keeps a session's private resource (a queue made without a
    shared_name): a task's devices outlive sessions, so two sessions building an op of the
    same name must not get each other's queue."""
    return f"_session_{session_handle}/{name}"


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

    def drop_private(self, session_handle: str) -> None:
        """Forgets the private resources of a session that is gone (see ``private_key``)."""
        prefix = private_key(session_handle, "")
        with self.lock:
            gone = [self._resources.pop(k) for k in list(self._resources)
                    if k[1].startswith(prefix)]
        _release(gone)

    def clear(self) -> None:
        self.variables.clear()
        with self.lock:
            gone = list(self._resources.values())
            self._resources.clear()
        _release(gone)


def _release(resources) -> None:
    """Lets resources that hold threads (a tf.data iterator's prefetching) end them."""
    for resource in resources:
        release = getattr(resource, "release", None)
        if release is not None:
            release()


class Device:
    """A device of this process: ``/job:J/replica:R/task:T/device:TYPE:N``.

    ``description`` is the text of the ``Device mapping:`` line (empty for CPUs, as TF).
    """

    def __init__(self, spec: DeviceSpec, description: str = "", state=None):
        assert spec.is_complete(), spec
        self.spec = spec
        self.state = state  # the backend's per-device runtime (a GPU's stream and memory)
        self.name = spec.to_string()
        self.device_type = spec.device_type
        self.description = description
        self.resources = ResourceManager()
        self.backend = _backend(self.device_type)
        self.host = None  # the task runtime (distributed.worker.Worker) of a server's device

    def has_kernel(self, op) -> bool:
        """Whether this device can run ``op`` (an Operation, or just an op type's name).

        A backend may refuse some ops of a type it has kernels for, by their dtypes: its
        optional ``supports(op)`` decides (a GPU holds no strings).
        """
        op_type = op if isinstance(op, str) else op.type
        if op_type not in self.backend.KERNELS:
            return False
        supports = getattr(self.backend, "supports", None)
        return supports is None or isinstance(op, str) or supports(op)

    def kernel_factory(self, op_type: str):
        return self.backend.KERNELS.get(op_type)

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def _forced_allow_growth(configured: bool) -> bool:
    """TensorFlow's TF_FORCE_GPU_ALLOW_GROWTH ("true"/"false") overrides GPUOptions.allow_growth,
    so several processes (test workers, notebooks) can share a card without code changes."""
    forced = os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "").strip().lower()
    if forced in ("true", "false"):
        return forced == "true"
    if forced:
        _log.error("TF_FORCE_GPU_ALLOW_GROWTH=%r is neither 'true' nor 'false'; using "
                   "GPUOptions.allow_growth=%s", forced, configured)
    return configured


def local_devices(job: str = "localhost", replica: int = 0, task: int = 0,
                  device_count: Optional[Dict[str, int]] = None, gpu_options=None) -> List[Device]:
    """The devices a local session sees: CPU:0, then the GPUs (physical or logical) found.

    ``device_count`` caps each type, as ConfigProto's; ``gpu_options`` is ConfigProto's
    GPUOptions (visible_device_list, virtual_devices, memory fraction, allow_growth).
    """
    counts = dict(device_count or {})
    n_cpu = max(1, int(counts.get("CPU", 1)))
    devices = [Device(DeviceSpec(job, replica, task, "CPU", i)) for i in range(n_cpu)]
    n_gpu = counts.get("GPU")
    if n_gpu is None or int(n_gpu) > 0:
        gpus = _gpu_devices(job, replica, task, gpu_options)
        devices += gpus[:int(n_gpu)] if n_gpu is not None else gpus
    return devices


def _gpu_devices(job: str, replica: int, task: int, gpu_options) -> List[Device]:
    physical = _physical_gpus()
    if not physical:
        return []
    from ..kernels.cuda import _runtime, memory
    visible = getattr(gpu_options, "visible_device_list", "") or ""
    if visible.strip():
        try:
            wanted = [int(x) for x in visible.split(",")]
        except ValueError:
            raise ValueError(f"GPUOptions.visible_device_list must be comma-separated GPU ids, "
                             f"got {visible!r}") from None
        known = {g.index: g for g in physical}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise ValueError(f"GPUOptions.visible_device_list names GPU {missing[0]}, but the GPUs "
                             f"are {sorted(known)}")
        physical = [known[i] for i in wanted]
    logical_per_gpu = _logical_layout(physical, gpu_options, _runtime.logical_gpu_count())
    fraction = getattr(gpu_options, "per_process_gpu_memory_fraction", 0.0) or 0.0
    growth = _forced_allow_growth(bool(getattr(gpu_options, "allow_growth", False)))
    if not memory.configure(fraction, growth):
        _log.warning("GPU memory pools already exist; per_process_gpu_memory_fraction=%s and "
                     "allow_growth=%s apply from the next process on", fraction, growth)
    devices = []
    for gpu, count in zip(physical, logical_per_gpu):
        state = _runtime.gpu_state(gpu)
        for _ in range(count):
            spec = DeviceSpec(job, replica, task, "GPU", len(devices))
            devices.append(Device(spec, gpu.description(), state))
    return devices


def _logical_layout(physical, gpu_options, env_count: int) -> List[int]:
    """How many logical GPUs each physical GPU shows: virtual_devices first, else the env var."""
    experimental = getattr(gpu_options, "experimental", None)
    virtual = list(getattr(experimental, "virtual_devices", None) or [])
    if not virtual:
        return [env_count] * len(physical)
    if len(virtual) != len(physical):
        raise ValueError(f"GPUOptions.experimental.virtual_devices has {len(virtual)} entries, but "
                         f"{len(physical)} GPUs are visible: give one VirtualDevices per GPU")
    return [max(1, len(list(v.memory_limit_mb or []))) for v in virtual]


_physical = None


def _physical_gpus():
    """The physical GPUs, found once per process. Without numba.cuda or a driver: none."""
    global _physical
    if _physical is None:
        try:
            from ..kernels.cuda._runtime import physical_gpus
        except Exception as e:  # numba.cuda missing or broken: no GPUs, said once
            _log.debug("no GPU support: %s", e)
            _physical = []
        else:
            _physical = physical_gpus()
    return _physical

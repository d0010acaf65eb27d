"""Device names: parsing, merging and matching with TensorFlow's semantics.

A full name is ``/job:J/replica:R/task:T/device:TYPE:N``; every field is optional.
Legacy forms ``/cpu:0`` and ``/gpu:1`` and the wildcard ``*`` for the index are accepted.
The short names the notebook shows (``worker:1``, ``worker:1/GPU:0``, ``GPU:0``) are made here too.
"""
from __future__ import annotations

import re
from typing import Optional, Union

__all__ = ["DeviceSpec", "canonical_name", "merge_device", "short_task", "short_device",
           "local_device"]

_JOB_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class DeviceSpec:
    """A (possibly partial) device specification."""

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job: Optional[str] = None, replica: Optional[int] = None,
                 task: Optional[int] = None, device_type: Optional[str] = None,
                 device_index: Optional[int] = None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else _normalize_type(device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        return cls().parse_from_string(spec)

    def parse_from_string(self, spec: str) -> "DeviceSpec":
        if not isinstance(spec, str):
            raise TypeError(f"A device must be a string, DeviceSpec or function, got {spec!r}")
        self.job = self.replica = self.task = self.device_type = self.device_index = None
        text = spec.strip()
        if not text:
            return self
        device_seen = False
        for part in text.split("/"):
            if not part:
                continue
            fields = part.split(":")
            key = fields[0].lower()
            if key in ("job", "replica", "task") and len(fields) == 2:
                if key == "job":
                    if not _JOB_RE.match(fields[1]):
                        raise _bad(spec, f"bad job name {fields[1]!r}")
                    self.job = fields[1]
                else:
                    setattr(self, key, _index(spec, key, fields[1], allow_wildcard=False))
                continue
            if key == "device" and len(fields) == 3:
                fields = fields[1:]
            elif key == "device" and len(fields) == 2:
                # "/device:CPU" with no index
                fields = fields[1:] + ["*"]
            if len(fields) == 2 and _is_device_type(fields[0]):
                if device_seen:
                    raise _bad(spec, "more than one device given")
                device_seen = True
                self.device_type = _normalize_type(fields[0])
                if fields[1] != "*":
                    self.device_index = _index(spec, "device", fields[1], allow_wildcard=True)
                continue
            raise _bad(spec, f"cannot parse {part!r}")
        return self

    def merge_from(self, dev: "DeviceSpec") -> None:
        """Fields set in ``dev`` override ours (TensorFlow's MergeFrom)."""
        for field in DeviceSpec.__slots__:
            value = getattr(dev, field)
            if value is not None:
                setattr(self, field, value)
        if dev.device_type is not None and dev.device_index is None:
            self.device_index = None

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        out = self.copy()
        out.merge_from(dev)
        return out

    def replace(self, **kwargs) -> "DeviceSpec":
        out = self.copy()
        for key, value in kwargs.items():
            setattr(out, key, value)
        return out

    def copy(self) -> "DeviceSpec":
        return DeviceSpec(self.job, self.replica, self.task, self.device_type, self.device_index)

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out

    def matches(self, full: "DeviceSpec") -> bool:
        """Whether a fully specified device satisfies this partial spec."""
        return all(getattr(self, f) is None or getattr(self, f) == getattr(full, f)
                   for f in DeviceSpec.__slots__)

    def is_complete(self) -> bool:
        return all(getattr(self, f) is not None for f in DeviceSpec.__slots__)

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self) -> str:
        return f"DeviceSpec({self.to_string()!r})"

    __str__ = to_string


def _normalize_type(name: str) -> str:
    return name.upper()


def _is_device_type(name: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z_]*$", name))


def _index(spec: str, field: str, text: str, allow_wildcard: bool) -> Optional[int]:
    if allow_wildcard and text == "*":
        return None
    if not text.isdigit():
        raise _bad(spec, f"{field} must be a non-negative integer, got {text!r}")
    return int(text)


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"Malformed device specification {spec!r}: {why}. Expected e.g. "
                      "'/job:worker/replica:0/task:1/device:GPU:0', '/cpu:0' or '/gpu:1'.")


def as_spec(device: Union[None, str, DeviceSpec]) -> DeviceSpec:
    if device is None:
        return DeviceSpec()
    if isinstance(device, DeviceSpec):
        return device
    return DeviceSpec.from_string(device)


def canonical_name(device: Union[None, str, DeviceSpec]) -> str:
    return as_spec(device).to_string()


def merge_device(outer: Union[None, str, DeviceSpec], inner: Union[None, str, DeviceSpec]) -> str:
    """The device string of ``inner`` nested in ``outer``: the inner fields win."""
    merged = as_spec(outer).copy()
    merged.merge_from(as_spec(inner))
    return merged.to_string()


# -- short names, for tables, legends and dashboards -----------------------------------------------
# A full task name is "/job:J/replica:R/task:T"; this process's own sessions place onto task
# /job:localhost/replica:0/task:0, which needs no name of its own where it is the only task.
_LOCAL_TASK = ("localhost", "0")


def _job_and_task(name: str) -> Optional[tuple]:
    """(job, task) of a full name ("/job:worker/.../task:1..."), task "0" when not given;
    None for a name that does not start with a job."""
    if not name.startswith("/job:"):
        return None
    fields = dict(part.split(":", 1) for part in name.strip("/").split("/") if ":" in part)
    return fields.get("job", "?"), fields.get("task", "0")


def short_task(name: str) -> str:
    """'/job:worker/replica:0/task:1' (or a device of it) -> 'worker:1'; a name that does not
    start with a job ('local', 'worker:1') is returned as it is."""
    job_task = _job_and_task(name)
    return name if job_task is None else ":".join(job_task)


def local_device(name: str) -> str:
    """'/job:worker/replica:0/task:1/device:GPU:0' -> 'GPU:0': the device within its task; a
    name without a device part is returned as it is."""
    return name.rpartition("/device:")[2] or name


def short_device(name: str) -> str:
    """'/job:worker/replica:0/task:1/device:GPU:0' -> 'worker:1/GPU:0'; a device of this
    process's own task (/job:localhost/replica:0/task:0) -> 'GPU:0'; a name that does not
    start with a job is returned as it is."""
    job_task = _job_and_task(name)
    if job_task is None:
        return name
    device = name.rpartition("/device:")[2] if "/device:" in name else ""
    task = "" if job_task == _LOCAL_TASK else ":".join(job_task)
    return "/".join(part for part in (task, device) if part) or ":".join(job_task)

"""The placer: gives every op a concrete device, honouring device requests and colocation.

Decisions are kept as data (PlacementRecord: requested, assigned, reason) for
``log_device_placement``, ``%tf_placement`` and the widgets.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence

from ..framework.device import DeviceSpec
from ..framework.errors import InvalidArgumentError
from ..framework.ops import Operation
from .devices import Device
from .events import PlacementRecord

__all__ = ["Placer"]

# Without a request, an op goes to the first device of the most preferred type with a kernel.
_TYPE_PRIORITY = {"GPU": 0, "CPU": 1}


class Placer:
    def __init__(self, devices: Sequence[Device], allow_soft_placement: bool = False,
                 default_task: Optional[DeviceSpec] = None):
        self.devices = list(devices)
        self.allow_soft_placement = allow_soft_placement
        # In a cluster, ops that name no job go to the session's own task when they can.
        self.default_task = default_task
        self.assigned: Dict[Operation, Device] = {}
        self.records: Dict[Operation, PlacementRecord] = {}
        self._spec_cache: Dict[str, DeviceSpec] = {}

    def device_names(self) -> str:
        return "[ " + ", ".join(d.name for d in self.devices) + " ]"

    def place(self, ops: Iterable[Operation]) -> List[PlacementRecord]:
        """Places the ops not placed yet; returns the new records in graph order."""
        new = [op for op in ops if op not in self.assigned]
        if not new:
            return []
        for group in self._colocation_groups(new):
            self._place_group(group)
        new.sort(key=lambda op: op._id)
        return [self.records[op] for op in new]

    # -- colocation --------------------------------------------------------------------------
    def _colocation_groups(self, ops: List[Operation]) -> List[List[Operation]]:
        parent: Dict[Operation, Operation] = {}

        def find(op):
            root = op
            while parent.get(root, root) is not root:
                root = parent[root]
            while parent.get(op, op) is not root:  # path compression
                parent[op], op = root, parent[op]
            return root

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[rb] = ra

        pending = list(ops)
        members = set(ops)
        graph = ops[0].graph
        while pending:
            op = pending.pop()
            partners = [op.inputs[i].op for i in op.op_def.ref_inputs]
            for group in op._attrs.get("_class", ()):
                name = group.decode() if isinstance(group, bytes) else group
                if name.startswith("loc:@"):
                    other = graph._ops_by_name.get(name[5:])
                    if other is not None:
                        partners.append(other)
            for other in partners:
                if other not in members:
                    members.add(other)
                    if other not in self.assigned:
                        pending.append(other)
                union(op, other)
        groups: Dict[Operation, List[Operation]] = {}
        for op in members:
            groups.setdefault(find(op), []).append(op)
        return [sorted(g, key=lambda o: o._id) for g in groups.values()]

    # -- choosing a device -------------------------------------------------------------------------
    def _spec(self, device: str) -> DeviceSpec:
        spec = self._spec_cache.get(device)
        if spec is None:
            spec = self._spec_cache[device] = DeviceSpec.from_string(device)
        return spec

    def _place_group(self, group: List[Operation]) -> None:
        placed = [self.assigned[op] for op in group if op in self.assigned]
        todo = [op for op in group if op not in self.assigned]
        if not todo:
            return
        anchor = group[0]
        if placed:
            device = placed[0]
            missing = [op for op in todo if not device.has_kernel(op)]
            if missing:
                raise self._error(missing[0], f"it is colocated with ops already on {device.name}, "
                                  f"which has no {_kernel_name(device, missing[0])} kernel")
            for op in todo:
                self._record(op, device, f"colocated with {anchor.name}")
            return
        requested = DeviceSpec()
        conflict = None
        for op in group:
            if not op.device:
                continue
            spec = self._spec(op.device)
            for field in DeviceSpec.__slots__:
                mine, theirs = getattr(requested, field), getattr(spec, field)
                if mine is not None and theirs is not None and mine != theirs:
                    conflict = op
            requested.merge_from(spec)
        if conflict is not None:
            # As TF: the op that owns the state (a variable) decides; the conflicting requests
            # of ops colocated with it (readers, writers) are dropped.
            owners = [op for op in group if op.op_def.stateful and not op.inputs and op.device]
            if owners:
                requested = DeviceSpec()
                for op in owners:
                    requested.merge_from(self._spec(op.device))
                conflict = None
        if self.default_task is not None and requested.job is None:
            local = requested.copy()
            local.job, local.replica, local.task = (self.default_task.job, self.default_task.replica,
                                                    self.default_task.task)
            if any(local.matches(d.spec) and all(d.has_kernel(op) for op in group)
                   for d in self.devices):
                requested = local
        if conflict is not None and not self.allow_soft_placement:
            raise self._error(conflict, "it must be colocated with ops whose device requests "
                              f"conflict with its own ({conflict.device!r})")
        matching = [d for d in self.devices if requested.matches(d.spec)]
        able = [d for d in matching if all(d.has_kernel(op) for op in group)]
        if able and conflict is None:
            device = min(able, key=_preference)
            for op in todo:
                reason = "requested" if op.device else "default"
                if len(group) > 1 and op is not anchor:
                    reason = f"colocated with {anchor.name}"
                self._record(op, device, reason)
            return
        capable = [d for d in self.devices if all(d.has_kernel(op) for op in group)]
        if not capable:
            op = next(o for o in group if not any(d.has_kernel(o) for d in self.devices))
            raise self._error(op, f"no kernel for op type {op.type} is registered for any of the "
                              f"available devices {self.device_names()}")
        wanted = requested.to_string()
        if matching:
            why = (f"no {matching[0].device_type} kernel for "
                   f"{', '.join(sorted({_kernel_name(matching[0], o) for o in group if not matching[0].has_kernel(o)}))}")
        else:
            why = f"{wanted} does not exist"
        if not self.allow_soft_placement:
            if matching:
                detail = (f"Could not satisfy explicit device specification '{wanted}' because "
                          f"no supported kernel for {matching[0].device_type} devices is available "
                          f"({why}).")
            else:
                detail = (f"Operation was explicitly assigned to {wanted} but available devices are "
                          f"{self.device_names()}. Make sure the device specification refers to a "
                          "valid device.")
            op = next((o for o in group if o.device), anchor)
            raise InvalidArgumentError(None, op, f"Cannot assign a device for operation {op.name}: "
                                       f"{detail}")
        # Soft placement: keep the job/task if we can, then the device type, else take the CPU.
        same_task = [d for d in capable if DeviceSpec(requested.job, requested.replica,
                                                      requested.task).matches(d.spec)] or capable
        same_type = [d for d in same_task if d.device_type == requested.device_type]
        device = min(same_type or same_task, key=_preference if same_type else _cpu_first)
        for op in todo:
            self._record(op, device, f"soft placement: {why}")

    def _record(self, op: Operation, device: Device, reason: str) -> None:
        self.assigned[op] = device
        self.records[op] = PlacementRecord(op.name, op.type, op.device, device.name, reason)

    def _error(self, op: Operation, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(None, op, f"Cannot assign a device for operation {op.name}: "
                                    f"{why}. Available devices: {self.device_names()}")


def _kernel_name(device: Device, op: Operation) -> str:
    """The kernel a device lacks: its type, with the dtypes when the device has the type's kernel."""
    if op.type not in device.backend.KERNELS:
        return op.type
    dtypes = sorted({t.dtype.name for t in list(op.inputs) + list(op.outputs)})
    return f"{op.type} on {'/'.join(dtypes)} tensors"


def _preference(device: Device):
    return (_TYPE_PRIORITY.get(device.device_type, 2), device.spec.task or 0,
            device.spec.device_index)


def _cpu_first(device: Device):
    return (device.device_type != "CPU",) + _preference(device)


def format_placement_line(record: PlacementRecord) -> str:
    """TensorFlow's log_device_placement line: ``add: (Add): /job:.../device:CPU:0``."""
    return f"{record.op}: ({record.type}): {record.assigned}"

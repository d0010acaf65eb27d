"""Execution plans: compiled once per (fetches, feeds, targets), then run each step.

Compiling walks the graph, places new ops, instantiates each op's kernel for its device, and
generates one straight-line Python function for the step::

    def step(feeds):
        v3 = k3()                  # Const
        v5 = k5(feeds[0], v3)      # MatMul
        del v3                     # buffers are freed after their last use
        ...
        return [copy(v5)]

A step therefore does no graph walks, no placement, no dict lookups and no string work: each op
costs one Python call into its kernel.  When a kernel fails, the traceback's line number in the
generated code names the op.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..framework import errors
from ..framework.ops import Operation, Tensor
from .devices import Device
from .fusion import FusedGroup, find_groups

__all__ = ["Plan", "StepStats", "needed_ops"]

# Ops whose output may be a buffer that outlives the step: constants, variables, and every op
# that writes a variable (it returns the variable's buffer). A fetch of one is copied so the
# caller never holds memory that the runtime later writes into.
_PERSISTENT_OUTPUT_TYPES = frozenset({"Const", "VariableV2"})
# Ops that forward their input unchanged within a device: the plan aliases instead of calling.
_FORWARDING_TYPES = frozenset({"Identity", "StopGradient", "Snapshot"})
_ORDERING_ONLY_TYPES = frozenset({"NoOp"})
# Ops whose first output's leading dimension is the step's batch (StepRecord.examples, rule c);
# an IteratorGetNext whose element is not a batch counts one example.
BATCH_TYPES = frozenset({"QueueDequeueManyV2", "QueueDequeueUpToV2", "IteratorGetNext"})
# Ops whose CPU kernels return a numpy view of one input (value: that input's index). A view of
# a persistent buffer is persistent too, so fetching it copies.
_VIEW_TYPES = {"Reshape": 0, "ExpandDims": 0, "Squeeze": 0, "Transpose": 0, "Slice": 0,
               "StridedSlice": 0, "ReverseV2": 0, "Split": 1, "SplitV": 0, "Unpack": 0}

_plan_ids = itertools.count()
# The session (or partition host) whose plan is being compiled, for kernels that compile plans of
# their own: control-flow ops compile their functions for the same task's devices.
_compiling = threading.local()


def compiling_session():
    return getattr(_compiling, "session", None)


def needed_ops(fetches: Sequence[Optional[Tensor]], feeds: Sequence[Tensor],
               targets: Sequence[Operation]) -> List[Operation]:
    """The ops a step needs, dependencies first; an error names any cycle."""
    fed = set(feeds)
    # Sends first: ops run one after another here, not as their inputs become ready as in
    # TensorFlow's executor, so a partition that waits in a _Recv before its independent _Send
    # ran would wait forever for a peer that is waiting for that send.
    sends = [op for op in targets if op.type == "_Send"]
    roots = sends + [t.op for t in fetches if t is not None and t not in fed] + \
        [op for op in targets if op.type != "_Send"]
    order: List[Operation] = []
    state: Dict[Operation, int] = {}  # 1: on the DFS stack, 2: done
    for root in roots:
        if state.get(root) == 2:
            continue
        stack = [(root, iter(_deps(root, fed)))]
        state[root] = 1
        while stack:
            op, deps = stack[-1]
            for dep in deps:
                s = state.get(dep)
                if s is None:
                    state[dep] = 1
                    stack.append((dep, iter(_deps(dep, fed))))
                    break
                if s == 1:
                    on_stack = [o for o, _ in stack]
                    cycle = [o.name for o in on_stack[on_stack.index(dep):]]
                    raise errors.InvalidArgumentError(
                        None, dep, "Graph has a cycle: " + " -> ".join(cycle + [dep.name]))
            else:
                stack.pop()
                state[op] = 2
                order.append(op)
    return order


def _in_device_memory(device: Device) -> bool:
    """Whether a device's tensors live in memory of their own (an accelerator's), not the host's."""
    return hasattr(device.backend, "from_host")


def _device_context(device: Device):
    active = getattr(device.state, "active", None)
    return active() if active is not None else contextlib.nullcontext()


def _deps(op: Operation, fed) -> List[Operation]:
    refs = op.op_def.ref_inputs  # a written variable is not read, so its op need not run
    deps = [t.op for k, t in enumerate(op.inputs) if t not in fed and k not in refs]
    deps.extend(op.control_inputs)
    return deps


class StepStats:
    """Per-op timings of one traced run (RunOptions.FULL_TRACE), as plain data."""

    def __init__(self):
        self.dev_stats: Dict[str, List[dict]] = {}

    def add(self, device: str, op: Operation, start: float, end: float) -> None:
        self.dev_stats.setdefault(device, []).append(
            {"node_name": op.name, "op": op.type, "all_start_micros": int(start * 1e6),
             "op_end_rel_micros": int((end - start) * 1e6)})


class Plan:
    """What one (fetches, feeds, targets) signature runs; built by Session, run many times."""

    def __init__(self, session, fetches: Sequence[Optional[Tensor]], feeds: Sequence[Tensor],
                 targets: Sequence[Operation]):
        self.session = session
        self.fetches = list(fetches)
        self.feeds = list(feeds)
        self.targets = list(targets)
        self.id = next(_plan_ids)
        self.filename = f"<tfjupyter plan {self.id}>"
        self.ops = needed_ops(self.fetches, self.feeds, self.targets)
        self.placement = session._place(self.ops)
        # The leading dim of the first dequeued batch of the last step (None: no dequeue op).
        self.dequeued = [0] if any(op.type in BATCH_TYPES for op in self.ops) else None
        from ..kernels.cpu._threads import SPLIT_OP_TYPES, single_threaded_blas
        splits = any(op.type in SPLIT_OP_TYPES for op in self.ops)
        self._threads = single_threaded_blas if splits else contextlib.nullcontext()
        self._units = self._fused_units()
        self.step, self.source, self._line_ops = self._generate(traced=False)
        self._traced_step = None
        self._traced_line_ops: Dict[int, Operation] = {}

    # -- code generation -----------------------------------------------------------------------
    def _fused_units(self) -> List:
        """The plan's ops in order, each fusible group (runtime/fusion.py) as one unit at its
        anchor's place."""
        assigned = self.session.placer.assigned
        groups = find_groups(
            self.ops, device_of=lambda op: None if _in_device_memory(assigned[op]) else assigned[op],
            has_kernel=lambda device, kind: device.kernel_factory(kind) is not None,
            fetched=[t for t in self.fetches if t is not None], fed=self.feeds)
        units = []
        for op in self.ops:
            group = groups.get(op)
            if group is None:
                units.append(op)
            elif op is group.anchor:
                units.append(group)
        return units

    def _kernel(self, unit, device: Device):
        """The kernel of an op (or fused group) on ``device``, from the device's backend."""
        factory = device.kernel_factory(unit.type)
        if factory is None:
            raise errors.NotFoundError(
                None, unit, f"No {device.device_type} kernel registered for op '{unit.name}' "
                f"(type {unit.type}) on {device.name}")
        outer, _compiling.session = compiling_session(), self.session
        op = unit.reported_as if isinstance(unit, FusedGroup) else unit
        try:
            with _device_context(device):  # factories upload constants, make RNG states
                kernel = factory(unit, device)
        except errors.OpError:
            raise
        except (ValueError, TypeError, NotImplementedError) as e:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': {e}") from e
        finally:
            _compiling.session = outer
        return kernel

    def _generate(self, traced: bool):
        session = self.session
        assigned: Dict[Operation, Device] = session.placer.assigned
        names: Dict[Tensor, str] = {}
        persistent = set()
        namespace = {"_copy": np.array, "_time": time.perf_counter, "_dequeued": self.dequeued}
        batch_noted = False
        lines = ["def step(feeds, _stats=None):"]
        line_ops: Dict[int, Operation] = {}
        for i, t in enumerate(self.feeds):
            names[t] = f"feeds[{i}]"
        last_use = self._last_uses()
        fed = set(self.feeds)

        def emit(text: str, op: Optional[Operation] = None) -> None:
            lines.append("    " + text)
            if op is not None:
                line_ops[len(lines)] = op

        def emit_dels(index: int) -> None:
            """Frees the buffers whose last reader is unit ``index``."""
            dead = []
            for t in last_use.get(index, ()):
                if names[t].startswith("v"):
                    dead.append(names[t])
                dead.extend(copies.pop(t, {}).values())
            if dead:
                emit(f"del {', '.join(dead)}")

        # Where each tensor's value lives: None for host memory, else its accelerator device.
        where: Dict[Tensor, Optional[Device]] = {t: None for t in self.feeds}
        copies: Dict[Tensor, Dict[Optional[str], str]] = {}
        copy_ids = itertools.count()

        def value_at(t: Tensor, needed: Optional[Device]) -> str:
            """The name of ``t``'s value in ``needed``'s memory: one copy per edge's end, made
            when first needed and kept for the tensor's other readers there."""
            have = where[t]
            if have is needed or (have is not None and needed is not None and have.name == needed.name):
                return names[t]
            key = needed.name if needed is not None else None
            known = copies.setdefault(t, {})
            if key not in known:
                known[key] = f"v_copy{next(copy_ids)}"
                emit(f"{known[key]} = {self._transfer(namespace, have, needed)}({names[t]})")
            return known[key]

        for index, op in enumerate(self._units):
            if isinstance(op, FusedGroup):
                group, device = op, assigned[op.anchor]
                namespace[f"k{index}"] = self._kernel(group, device)
                outs = [f"v{index}_{k}" for k in range(len(group.outputs))]
                if traced:
                    emit("_s = _time()")
                args = ", ".join(value_at(t, None) for t in group.inputs)
                bound = outs[0] if len(outs) == 1 else ", ".join(outs)
                emit(f"{bound} = k{index}({args})", group.reported_as)
                if traced:
                    namespace[f"op{index}"] = group.timed_as
                    emit(f"_stats.add({device.name!r}, op{index}, _s, _time())")
                for t, name in zip(group.outputs, outs):
                    where[t], names[t] = None, name
                emit_dels(index)
                continue
            device = assigned[op]
            if op.type in _ORDERING_ONLY_TYPES:
                continue
            inputs, outputs = op.inputs, op.outputs   # each access copies
            kernel = None
            home = device if _in_device_memory(device) else None
            host_inputs: Sequence[int] = ()
            host_outputs: Sequence[int] = ()
            forwarding = op.type in _FORWARDING_TYPES and len(inputs) == 1
            if not forwarding:
                kernel = self._kernel(op, device)
                host_inputs = getattr(kernel, "host_inputs", ())
                host_outputs = getattr(kernel, "host_outputs", ())
                bind = getattr(device.backend, "bind", None)
                if bind is not None:
                    kernel = bind(kernel, device)
            args = []
            for k, t in enumerate(inputs):
                if k in op.op_def.ref_inputs:
                    continue
                args.append(value_at(t, None if k in host_inputs else home))
            outs = [f"v{index}_{k}" for k in range(len(outputs))]
            if forwarding:
                emit(f"{outs[0]} = {names[inputs[0]]}", op)
                where[outputs[0]] = where[inputs[0]]
                if inputs[0] in persistent or inputs[0] in fed:
                    persistent.add(outputs[0])
            else:
                namespace[f"k{index}"] = kernel
                call = f"k{index}({', '.join(args)})"
                if traced:
                    emit("_s = _time()")
                if not outs:
                    emit(call, op)
                elif len(outs) == 1:
                    emit(f"{outs[0]} = {call}", op)
                else:
                    emit(f"{', '.join(outs)}, = {call}", op)
                if not batch_noted and op.type in BATCH_TYPES and outs and home is None:
                    from ..ops.data_ops import element_is_batch
                    if op.type == "IteratorGetNext" and not element_is_batch(op):
                        emit("_dequeued[0] = 1")
                    else:
                        emit(f"_dequeued[0] = {outs[0]}.shape[0] if {outs[0]}.ndim else 0")
                    batch_noted = True
                if traced:
                    namespace[f"op{index}"] = op
                    # Accelerator kernels return at launch: a traced step waits for each one, so
                    # its time is the kernel's (traced steps are slower; plain steps never wait).
                    finish = getattr(device.state, "synchronize", None)
                    if finish is not None:
                        namespace[f"wait{index}"] = finish
                        emit(f"wait{index}()")
                    emit(f"_stats.add({device.name!r}, op{index}, _s, _time())")
                for k, t in enumerate(outputs):
                    where[t] = None if k in host_outputs else home
                if op.type in _PERSISTENT_OUTPUT_TYPES or any(
                        inputs[i].op.type == "VariableV2" for i in op.op_def.ref_inputs):
                    persistent.update(outputs)
                viewed = _VIEW_TYPES.get(op.type)
                if viewed is not None and (inputs[viewed] in persistent or inputs[viewed] in fed):
                    persistent.update(outputs)
            for k, t in enumerate(outputs):
                names[t] = outs[k]
            emit_dels(index)
        results = []
        for t in self.fetches:
            if t is None:
                results.append("None")
            elif where[t] is not None:
                results.append(value_at(t, None))  # the one copy to the host is the fetch's own
            elif t in persistent or t in fed:
                results.append(f"_copy({names[t]})")
            else:
                results.append(names[t])
        emit(f"return [{', '.join(results)}]")
        source = "\n".join(lines) + "\n"
        exec(compile(source, self.filename, "exec"), namespace)
        return namespace["step"], source, line_ops

    def _last_uses(self) -> Dict[int, List[Tensor]]:
        """For each unit's index, the tensors whose last reader it is (and that are not fetched)."""
        keep = set(t for t in self.fetches if t is not None)
        fed = set(self.feeds)
        last: Dict[Tensor, int] = {}
        for index, op in enumerate(self._units):
            for t in op.outputs:
                last[t] = index
            for t in op.inputs:
                if t in last or t in fed:
                    last[t] = index
        out: Dict[int, List[Tensor]] = {}
        for t, index in last.items():
            if t not in keep:
                out.setdefault(index, []).append(t)
        return out

    @staticmethod
    def _transfer(namespace, src: Optional[Device], dst: Optional[Device]) -> str:
        """The copy on an edge between memories: host -> device, device -> host, device -> device."""
        key = f"_x_{src.name if src else 'host'}_{dst.name if dst else 'host'}"
        key = "".join(c if c.isalnum() else "_" for c in key)
        if key not in namespace:
            if dst is None:
                transfer = functools.partial(src.backend.to_host, device=src)
            elif src is None:
                transfer = functools.partial(dst.backend.from_host, device=dst)
            elif src.backend is dst.backend:
                transfer = functools.partial(dst.backend.peer_copy, src=src, dst=dst)
            else:
                def transfer(value, _src=src, _dst=dst):
                    return _dst.backend.from_host(_src.backend.to_host(value, _src), _dst)
            namespace[key] = transfer
        return key

    # -- running ----------------------------------------------------------------------------------
    def run(self, feed_values: List, step_stats: Optional[StepStats] = None) -> List:
        try:
            # inf and nan are values here, as in TensorFlow, not warnings. Steps with kernels
            # that split big jobs over the cores run numpy's BLAS on one thread meanwhile.
            with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"), \
                    self._threads:
                if step_stats is None:
                    return self.step(feed_values)
                if self._traced_step is None:
                    self._traced_step, _, self._traced_line_ops = self._generate(traced=True)
                return self._traced_step(feed_values, step_stats)
        except errors.OpError as e:
            if e.op is None:
                e.op = self._failing_op(sys.exc_info()[2])
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError, KeyError) as e:
            op = self._failing_op(sys.exc_info()[2])
            raise self._wrap(e, op) from e
        except MemoryError as e:
            op = self._failing_op(sys.exc_info()[2])
            raise errors.ResourceExhaustedError(
                None, op, f"OOM when running {self._where(op)}: {e}") from e
        except Exception as e:
            # A kernel that fails unexpectedly (a CUDA driver error, a bug) fails its step as
            # an OpError naming the node, as TensorFlow reports it (INTERNAL; UNIMPLEMENTED for
            # what a kernel does not support): callers, a distributed step's other tasks
            # among them, handle OpErrors, and would wait on a raw exception's tensors.
            op = self._failing_op(sys.exc_info()[2])
            kind = (errors.UnimplementedError if isinstance(e, NotImplementedError)
                    else errors.InternalError)
            raise kind(None, op, f"{type(e).__name__}: {e}\n\t [[{self._where(op)}]]") from e

    def _failing_op(self, tb) -> Optional[Operation]:
        op = None
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename == self.filename:
                traced = code is not self.step.__code__
                op = (self._traced_line_ops if traced else self._line_ops).get(tb.tb_lineno, op)
            tb = tb.tb_next
        return op

    def _where(self, op: Optional[Operation]) -> str:
        if op is None:
            return "the step"
        device = self.session.placer.assigned.get(op)
        return f"node {op.name} ({op.type}) on {device.name if device else '?'}"

    def _wrap(self, e: Exception, op: Optional[Operation]) -> errors.OpError:
        return errors.InvalidArgumentError(None, op, f"{e}\n\t [[{self._where(op)}]]")

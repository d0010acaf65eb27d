"""Kernels of the functional control-flow ops (``If``, ``While``, ``WhileGrad``).

Each function (branch, loop condition, body, a body's gradient) is compiled once per kernel into
an ``executor.Plan`` of its own, placed over the devices of the task that runs the op, so a
function's ops may sit on that task's GPUs with the executor's copies. The variables a function
writes are placed on the op's own device (the op is colocated with them), where the kernels
find them in that device's ResourceManager.
"""
from __future__ import annotations

import sys
from typing import List

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.framework.device import DeviceSpec
from tfjupyter.runtime import cancellation, executor
from tfjupyter.runtime.placer import Placer, format_placement_line

from . import KERNELS


class FunctionHost:
    """What executor.Plan needs of a session, for the plans of one op's functions."""

    def __init__(self, op, ctx):
        outer = executor.compiling_session()
        if outer is None:
            raise errors.InternalError(None, op, f"{op.type} '{op.name}': compiled outside a plan")
        placer = outer.placer
        task = DeviceSpec(ctx.spec.job, ctx.spec.replica, ctx.spec.task)
        devices = [d for d in placer.devices if task.matches(d.spec)]
        self.placer = Placer(devices, placer.allow_soft_placement, task)
        config = getattr(outer, "config", None)
        self._log = bool(getattr(config, "log_device_placement", False) or
                         getattr(outer, "_log", False))
        self.config = config
        self.op, self.ctx = op, ctx

    def _place(self, ops):
        new = self.placer.place(ops)
        if new and self._log:
            for record in new:
                print(format_placement_line(record))
            sys.stdout.flush()
        return [self.placer.records[o] for o in ops]

    def compile(self, function) -> executor.Plan:
        for clone in function.graph.variable_captures.values():
            if clone.op.type == "VariableV2":
                self._bind_variable(clone.op)
            if clone.op not in self.placer.assigned:
                self.placer._record(clone.op, self.ctx, f"variable of {self.op.name}")
        try:
            return executor.Plan(self, function.outputs, function.inputs, function.targets)
        except errors.OpError as e:
            bad = e.op.name if e.op is not None else "?"
            raise type(e)(None, e.op, f"{self.op.type} '{self.op.name}': cannot compile its "
                          f"function '{function.name}' on {self.ctx.name} (op {bad}): "
                          f"{e.message}. A control-flow op runs on one task: its functions' ops "
                          "may use that task's devices only.") from None


    def _bind_variable(self, clone) -> None:
        """Points a function's copy of a variable at the variable the op takes by reference:
        the same resource name, also when an import prefixed the outer graph's names."""
        n_refs = self.op.get_attr("Nrefs")
        refs = [t.op for t in self.op.inputs[len(self.op.inputs) - n_refs:]]
        wanted = clone.get_attr("shared_name") or clone.name
        for ref in refs:
            name = ref.get_attr("shared_name") or ref.name
            if name == wanted or name.endswith("/" + wanted):
                clone._attrs["shared_name"] = name
                return
        raise errors.InvalidArgumentError(
            None, self.op, f"{self.op.type} '{self.op.name}': its function uses variable "
            f"{wanted}, which the op does not take as an input")


@KERNELS.register("If")
def if_kernel(op, ctx):
    host = FunctionHost(op, ctx)
    then_plan = host.compile(op.get_attr("then_branch"))
    else_plan = host.compile(op.get_attr("else_branch"))
    single = len(op.outputs) == 1

    def run(pred, *args):
        results = (then_plan if pred else else_plan).run(list(args))
        return results[0] if single else results
    return run


def _shape_checker(op, shapes):
    """Checks each iteration's loop values against the shape invariants."""
    dims = [None if s.ndims is None else s.as_list() for s in shapes]

    def check(values, iteration: int) -> None:
        for i, (v, want) in enumerate(zip(values, dims)):
            if want is None:
                continue
            got = np.shape(v)
            if len(got) != len(want) or any(w is not None and w != g for w, g in zip(want, got)):
                raise errors.InvalidArgumentError(
                    None, op, f"While loop '{op.name}': loop variable {i} ({op.inputs[i].name}) "
                    f"has shape {list(got)} after iteration {iteration}, which is not compatible "
                    f"with its shape invariant {shapes[i]}; give tf.while_loop a less specific "
                    "shape_invariants entry for it.")
    return check


def _stacked(op, i: int, values: List[np.ndarray], initial) -> np.ndarray:
    if not values:
        return np.empty((0,) + np.shape(initial), dtype=np.asarray(initial).dtype)
    try:
        return np.stack(values)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, op, f"While loop '{op.name}': its gradient needs loop variable {i} "
            f"({op.inputs[i].name}) from every iteration, but its shape changes across "
            "iterations; such loops are not differentiable in tfjupyter.") from None


@KERNELS.register("While")
def while_kernel(op, ctx):
    host = FunctionHost(op, ctx)
    cond_plan = host.compile(op.get_attr("cond"))
    body_plan = host.compile(op.get_attr("body"))
    n = len(op.get_attr("T"))
    has_max = op.get_attr("has_max")
    # Each iteration's inputs are kept only when a gradient reads them.
    keep = [any(c.type != "WhileGrad" or c.get_attr("history_needed")[i]
                for c in op.outputs[n + i]._consumers) for i in range(n)]
    keep_any = any(keep)
    check = _shape_checker(op, op.get_attr("output_shapes"))

    def run(*args):
        values = list(args[:n])
        limit = int(args[n]) if has_max else None
        captured = list(args[n + has_max:])
        history = [[] for _ in range(n)]
        token = cancellation.current()
        iteration = 0
        while (limit is None or iteration < limit) and cond_plan.run(values + captured)[0]:
            if keep_any:
                for h, v, kept in zip(history, values, keep):
                    if kept:
                        h.append(v)
            values = body_plan.run(values + captured)
            iteration += 1
            check(values, iteration)
            token.check(f"while loop {op.name}")
        stacks = [_stacked(op, i, history[i], args[i]) if keep[i] else np.empty(0)
                  for i in range(n)]
        return tuple(values) + tuple(stacks) + (np.int32(iteration),)
    return run


@KERNELS.register("WhileGrad")
def while_grad_kernel(op, ctx):
    host = FunctionHost(op, ctx)
    vjp_plan = host.compile(op.get_attr("vjp"))
    n = op.get_attr("n_vars")
    n_captured = op.get_attr("n_captured")
    n_float = op.get_attr("n_float_vars")
    token = cancellation.current
    needed = op.get_attr("history_needed")

    def run(*args):
        history = args[:n]
        count = int(args[n])
        captured = list(args[n + 1:n + 1 + n_captured])
        grads = list(args[n + 1 + n_captured:])
        sums = None
        step = token()
        for it in range(count - 1, -1, -1):
            outs = vjp_plan.run([h[it] if need else None for h, need in zip(history, needed)]
                                + captured + grads)
            grads = outs[:n_float]
            captured_grads = outs[n_float:]
            sums = captured_grads if sums is None else [a + b for a, b in zip(sums, captured_grads)]
            step.check(f"gradient of while loop {op.name}")
        if sums is None:
            sums = [np.zeros_like(captured[k]) for k in op.get_attr("float_captured")]
        return tuple(grads) + tuple(sums)
    return run


@KERNELS.register("CaseCheck")
def case_check(op, ctx):
    """tf.case's assertions, with TF's messages: at most one true predicate when exclusive,
    at least one when there is no default."""
    names = op.get_attr("names")
    exclusive, require_one = op.get_attr("exclusive"), op.get_attr("require_one")

    def run(*preds):
        true = [name for name, p in zip(names, preds) if p]
        if exclusive and len(true) > 1:
            raise errors.InvalidArgumentError(
                None, op, f"Input error: exclusive=True: more than 1 conditions "
                f"({', '.join(true)}) evaluated as True.")
        if require_one and not true:
            raise errors.InvalidArgumentError(
                None, op, f"Input error: None of conditions evaluated as True: "
                f"({', '.join(names)}) [{' '.join('0' for _ in names)}]")
    return run


@KERNELS.register("SetRow")
def set_row(op, ctx):
    def run(acc, index, value):
        n = acc.shape[0]
        if not -n <= index < n:
            raise errors.InvalidArgumentError(
                None, op, f"SetRow '{op.name}': row {index} is out of range [0, {n})")
        out = acc.copy()
        out[index] = value
        return out
    return run

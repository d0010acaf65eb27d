"""GPU kernels for variables. A variable's value is a device array in its device's
ResourceManager, keyed as the CPU kernels key it (the variable op's shared_name or name);
writers update it in place when shapes agree, so optimizer steps and re-assignments do not
allocate, and readers hold the same buffer."""
from __future__ import annotations

import numpy as np
from numba import cuda

from tfjupyter.framework import errors

from ..cpu import state_kernels as cpu_state
from ..cpu.state_kernels import _assign_shape_error, _stored, _variable_name
from . import KERNELS, _runtime, host_memory, on_host
from .array_kernels import on_device


@_runtime.kernel
def _add_into(var, value, sign):  # pragma: no cover - device code
    # var += sign * value, value broadcast when it has one element.
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    one = value.size == 1
    for i in range(start, var.size, step):
        v = value[0] if one else value[i]
        if sign > 0:
            var[i] += v
        else:
            var[i] -= v


# The CPU kernels' store lookups serve device arrays as well.
KERNELS.register("VariableV2")(cpu_state.variable)


@KERNELS.register("Assign")
def assign(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)
    validate = op.get_attr("validate_shape")
    dtype = np.dtype(op.inputs[0].dtype.as_numpy_dtype)
    declared = op.inputs[0].shape
    declared = tuple(declared.as_list()) if declared.is_fully_defined() else None

    def run(value):
        value = on_device(ctx, value)
        shape = tuple(value.shape)
        current = store.get(name)
        if current is not None and tuple(current.shape) == shape:
            if current is not value and value.size:
                current.copy_to_device(value, stream=ctx.state.stream)
            return current
        if validate:
            lhs = tuple(current.shape) if current is not None else declared
            if lhs is not None and lhs != shape:
                raise _assign_shape_error(op, ctx, lhs, shape)
        # A buffer of its own: the value may be a constant or a view of another tensor.
        new = _runtime.empty(ctx, shape, dtype)
        if value.size:
            new.copy_to_device(value, stream=ctx.state.stream)
        store[name] = new
        return new
    return run


def _updater(op, ctx, sign: int):
    store = ctx.resources.variables
    name = _variable_name(op)

    def run(value):
        current = _stored(store, name, op, ctx)
        value = on_device(ctx, value)
        if tuple(value.shape) != tuple(current.shape) and value.size != 1:
            raise errors.InvalidArgumentError(
                None, op, f"Must have the same shape: {list(current.shape)} vs. "
                f"{list(value.shape)}\n\t [[node {op.name} ({op.type}) on {ctx.name}]]")
        n = int(current.size)
        if n:
            _runtime.launch(ctx, _add_into, n)(_runtime.flat(current), _runtime.flat(value), sign)
        return current
    return run


@KERNELS.register("AssignAdd")
def assign_add(op, ctx):
    return _updater(op, ctx, 1)


@KERNELS.register("AssignSub")
def assign_sub(op, ctx):
    return _updater(op, ctx, -1)


KERNELS.register("InitializedValue")(cpu_state.initialized_value)


@KERNELS.register("IsVariableInitialized")
def is_variable_initialized(op, ctx):
    # The CPU kernel, its flag in host memory (TensorFlow's HostMemory("is_initialized")).
    return host_memory(cpu_state.is_variable_initialized(op, ctx), outputs=(0,))


# Lists of variable names (strings): host bookkeeping.
on_host("ReportUninitialized", "AssertNoneUninitialized")

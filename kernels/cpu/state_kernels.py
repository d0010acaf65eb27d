"""CPU kernels for variables. A variable's value lives in its device's ResourceManager, keyed by
the variable op's name; writers update it in place when shapes agree, so optimizer steps do not
allocate."""
from __future__ import annotations

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS


def _variable_name(op) -> str:
    ref = op.inputs[0].op if op.type != "VariableV2" else op
    return ref.get_attr("shared_name") or ref.name


# Error messages shared with the GPU kernels (kernels/cuda/state_kernels.py).

def _uninitialized(op, ctx, name: str, node: str) -> errors.FailedPreconditionError:
    return errors.FailedPreconditionError(
        None, op, f"Attempting to use uninitialized value {name}\n\t [[node {node} "
        f"({op.type}) on {ctx.name}]]")


def _stored(store, name: str, op, ctx):
    """The buffer of the variable an update op (AssignAdd, AssignSub) writes."""
    try:
        return store[name]
    except KeyError:
        raise _uninitialized(op, ctx, name, op.name) from None


def _assign_shape_error(op, ctx, lhs, rhs) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, op, f"Assign requires shapes of both tensors to match. lhs shape= "
        f"{list(lhs)} rhs shape= {list(rhs)}\n\t [[node {op.name} (Assign) on {ctx.name}]]")


@KERNELS.register("VariableV2")
def variable(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)

    def run():
        try:
            return store[name]
        except KeyError:
            raise _uninitialized(op, ctx, name, name) from None
    return run


@KERNELS.register("Assign")
def assign(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)
    validate = op.get_attr("validate_shape")
    dtype = op.inputs[0].dtype.as_numpy_dtype
    declared = op.inputs[0].shape
    declared = tuple(declared.as_list()) if declared.is_fully_defined() else None

    def run(value):
        current = store.get(name)
        if current is not None and current.shape == np.shape(value):
            np.copyto(current, value)
            return current
        if validate:
            lhs = current.shape if current is not None else declared
            if lhs is not None and lhs != np.shape(value):
                raise _assign_shape_error(op, ctx, lhs, np.shape(value))
        store[name] = new = np.array(value, dtype=dtype, copy=True)
        return new
    return run


def _updater(op, ctx, ufunc):
    store = ctx.resources.variables
    name = _variable_name(op)

    def run(value):
        current = _stored(store, name, op, ctx)
        ufunc(current, value, out=current)
        return current
    return run


@KERNELS.register("AssignAdd")
def assign_add(op, ctx):
    return _updater(op, ctx, np.add)


@KERNELS.register("AssignSub")
def assign_sub(op, ctx):
    return _updater(op, ctx, np.subtract)


@KERNELS.register("InitializedValue")
def initialized_value(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)
    return lambda initial: store.get(name, initial)


@KERNELS.register("IsVariableInitialized")
def is_variable_initialized(op, ctx):
    store = ctx.resources.variables
    name = _variable_name(op)
    return lambda: np.bool_(name in store)


@KERNELS.register("ReportUninitialized")
def report_uninitialized(op, ctx):
    def run(names, *flags):
        return np.array([n for n, ok in zip(names, flags) if not ok], dtype=object)
    return run


@KERNELS.register("AssertNoneUninitialized")
def assert_none_uninitialized(op, ctx):
    def run(report):
        if len(report):
            names = ", ".join(n.decode() for n in report)
            raise errors.FailedPreconditionError(None, op, f"Uninitialized variables: {names}")
    return run

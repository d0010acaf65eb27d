"""CPU kernels for array ops: constants, placeholders, identity and shape manipulation."""
from __future__ import annotations

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS


@KERNELS.register("Const")
def const(op, ctx):
    value = op.get_attr("value")
    return lambda: value


@KERNELS.register("Placeholder")
def placeholder(op, ctx):
    # Only instantiated when the plan does not feed it.
    shape = op.get_attr("shape")
    dims = "<unknown>" if shape.ndims is None else \
        "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"
    raise errors.InvalidArgumentError(
        None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
        f"{op.outputs[0].dtype.name} and shape {dims}\n\t [[node {op.name} (Placeholder)]]")


@KERNELS.register("Identity", "StopGradient", "PlaceholderWithDefault")
def identity(op, ctx):
    return lambda x: x


@KERNELS.register("NoOp")
def no_op(op, ctx):
    return lambda: None

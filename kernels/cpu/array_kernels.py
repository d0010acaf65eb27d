"""CPU kernels for array ops: constants, placeholders, identity, shapes, reshaping, joining,
splitting, tiling, padding and reversing. The indexing kernels are in array_index_kernels.

Arguments known while building the graph (a constant shape, axis, perm, paddings ...) are read
once by the factory, so that ``run`` is a single numpy call. Views are returned where numpy
gives them (reshape, split, unstack, reverse); kernels never write into their inputs.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from tfjupyter.framework import errors
from . import KERNELS


_FORWARDING = ("Identity", "StopGradient", "Snapshot")   # the plans alias these


def static_input(op, i: int) -> Optional[np.ndarray]:
    """The value of input ``i`` when it is a constant, else None.

    It is the very array the Const kernel hands out, so ``arg is value`` inside ``run`` tells
    whether the input was fed another value instead (any tensor may be fed): kernels take
    their precomputed fast path only then.
    """
    t = op.inputs[i]
    while t.op.type in _FORWARDING and t.op.inputs:
        t = t.op.inputs[0]
    return t.op.get_attr("value") if t.op.type == "Const" else None


def as_int(value) -> int:
    return int(np.reshape(value, ()))


def dims_text(dims: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def _fill_value(dtype: np.dtype, one: bool):
    if dtype == np.object_:
        return b""
    return dtype.type(1 if one else 0)


# -- Const, Placeholder, Identity, NoOp -----------------------------------------------------------------
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


# -- Shape, Size, Rank -------------------------------------------------------------------------------------
@KERNELS.register("Shape")
def shape(op, ctx):
    dtype = op.get_attr("out_type").as_numpy_dtype
    return lambda x: np.array(np.shape(x), dtype=dtype)


@KERNELS.register("Size")
def size(op, ctx):
    dtype = op.get_attr("out_type").as_numpy_dtype
    return lambda x: np.array(np.size(x), dtype=dtype)


@KERNELS.register("Rank")
def rank(op, ctx):
    return lambda x: np.array(np.ndim(x), dtype=np.int32)


# -- Reshape ------------------------------------------------------------------------------------------------
def _reshape_error(n: int, target: Sequence[int]) -> str:
    target = [int(d) for d in target]
    unknown = [i for i, d in enumerate(target) if d == -1]
    if len(unknown) > 1:
        return f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]}"
    for i, d in enumerate(target):
        if d < -1:
            return f"Size {i} must be non-negative, not {d}"
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    if unknown:
        return (f"Input to reshape is a tensor with {n} values, but the requested shape requires "
                f"a multiple of {known}")
    return f"Input to reshape is a tensor with {n} values, but the requested shape has {known}"


@KERNELS.register("Reshape")
def reshape(op, ctx):
    static = static_input(op, 1)
    fixed = None if static is None else tuple(static.tolist())

    def run(x, shape_arr):
        target = fixed if shape_arr is static else tuple(np.reshape(shape_arr, -1).tolist())
        try:
            return np.reshape(x, target)
        except ValueError:
            raise ValueError(_reshape_error(np.size(x), target)) from None
    return run


# -- Fill, ZerosLike, OnesLike ----------------------------------------------------------------------------
@KERNELS.register("Fill")
def fill(op, ctx):
    dtype = op.outputs[0].dtype.as_numpy_dtype

    def run(dims, value):
        dims = tuple(dims.tolist())
        if any(d < 0 for d in dims):
            raise ValueError(f"Fill dimensions must be >= 0, got {dims_text(dims)}")
        return np.full(dims, value, dtype=dtype)
    return run


@KERNELS.register("ZerosLike")
def zeros_like(op, ctx):
    if op.outputs[0].dtype.as_numpy_dtype is np.object_:
        return lambda x: np.full(np.shape(x), b"", dtype=object)
    return np.zeros_like


@KERNELS.register("OnesLike")
def ones_like(op, ctx):
    return np.ones_like


# -- ExpandDims, Squeeze -------------------------------------------------------------------------------------
@KERNELS.register("ExpandDims")
def expand_dims(op, ctx):
    static = static_input(op, 1)
    fixed = None if static is None else as_int(static)

    def run(x, dim):
        d = fixed if dim is static else as_int(dim)
        r = np.ndim(x)
        if not -1 - r <= d <= r:
            raise ValueError(f"Tried to expand dim index {d} for tensor with {r} dimensions.")
        return np.expand_dims(x, d)
    return run


@KERNELS.register("Squeeze")
def squeeze(op, ctx):
    dims = tuple(op.get_attr("squeeze_dims"))
    if not dims:
        return np.squeeze

    def run(x):
        try:
            return np.squeeze(x, axis=dims)
        except ValueError:
            for d in dims:
                if -x.ndim <= d < x.ndim and x.shape[d] != 1:
                    raise ValueError(f"Can not squeeze dim[{d % x.ndim}], expected a dimension "
                                     f"of 1, got {x.shape[d]}") from None
            raise
        except IndexError:
            bad = next(d for d in dims if not -x.ndim <= d < x.ndim)
            raise ValueError(f"Tried to squeeze dim index {bad} for tensor with {x.ndim} "
                             "dimensions.") from None
    return run


# -- Transpose, InvertPermutation ----------------------------------------------------------------------------
def _check_perm(x, perm: Sequence[int]) -> tuple:
    r = np.ndim(x)
    if len(perm) != r:
        raise ValueError(f"transpose expects a vector of size {r}. But input(1) is a vector of "
                         f"size {len(perm)}")
    perm = tuple(p + r if p < 0 else p for p in perm)
    for i in range(r):
        if i not in perm:
            raise ValueError(f"{i} is missing from {{{','.join(str(p) for p in perm)}}}.")
    return perm


def _transposed(x, perm: tuple):
    out = np.transpose(x, perm)
    # A 2-D transpose stays a view (matmul reads it as is); others are laid out afresh.
    return out if out.ndim <= 2 else np.ascontiguousarray(out)


@KERNELS.register("Transpose")
def transpose(op, ctx):
    static = static_input(op, 1)
    r = op.inputs[0].shape.ndims
    fixed = None
    if static is not None and r is not None:
        fixed = _check_perm(np.empty((0,) * r), static.tolist())

    def run(x, perm):
        p = fixed if perm is static and fixed is not None else _check_perm(x, perm.tolist())
        return _transposed(x, p)
    return run


@KERNELS.register("InvertPermutation")
def invert_permutation(op, ctx):
    def run(x):
        n = x.size
        seen = np.zeros(n, dtype=bool)
        for i, v in enumerate(x.tolist()):
            if not 0 <= v < n:
                raise ValueError(f"{v} is not between 0 and {n}")
            if seen[v]:
                raise ValueError(f"{v} is duplicated in the input.")
            seen[v] = True
        out = np.empty_like(x)
        out[x] = np.arange(n, dtype=x.dtype)
        return out
    return run


# -- BroadcastTo ---------------------------------------------------------------------------------------------
@KERNELS.register("BroadcastTo")
def broadcast_to(op, ctx):
    static = static_input(op, 1)
    fixed = None if static is None else tuple(static.tolist())

    def run(x, shape_arr):
        target = fixed if shape_arr is static else tuple(shape_arr.tolist())
        try:
            # A real array, not numpy's read-only broadcast view: consumers and fetches own it.
            return np.array(np.broadcast_to(x, target))
        except ValueError:
            raise ValueError(f"Incompatible shapes: {dims_text(np.shape(x))} vs. "
                             f"{dims_text(target)}") from None
    return run


# -- ConcatV2, Split, SplitV, Pack, Unpack ---------------------------------------------------------------------
def _concat_error(values, axis: int) -> str:
    r = np.ndim(values[0])
    if not -r <= axis < r:
        return f"ConcatOp : Expected concatenating dimensions in the range [{-r}, {r}), but got {axis}"
    first = np.shape(values[0])
    for i, v in enumerate(values[1:], 1):
        s = np.shape(v)
        if len(s) != len(first):
            return (f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                    f"{dims_text(first)} vs. shape[{i}] = {dims_text(s)}")
        if any(a != b for k, (a, b) in enumerate(zip(first, s)) if k != axis % r):
            return (f"ConcatOp : Dimensions of inputs should match: shape[0] = {dims_text(first)} "
                    f"vs. shape[{i}] = {dims_text(s)}")
    return "ConcatOp : invalid inputs"


@KERNELS.register("ConcatV2")
def concat(op, ctx):
    static = static_input(op, len(op.inputs) - 1)
    fixed = None if static is None else as_int(static)

    def run(*args):
        axis = fixed if args[-1] is static else as_int(args[-1])
        values = args[:-1]
        try:
            return np.concatenate(values, axis=axis)
        except (ValueError, IndexError):
            raise ValueError(_concat_error(values, axis)) from None
    return run


@KERNELS.register("Split")
def split(op, ctx):
    n = op.get_attr("num_split")
    static = static_input(op, 0)
    fixed = None if static is None else as_int(static)

    def run(axis, x):
        axis = fixed if axis is static else as_int(axis)
        r = np.ndim(x)
        if not -r <= axis < r:
            raise ValueError(f"-input rank(-{r}) <= split_dim < input rank ({r}), but got {axis}")
        d = x.shape[axis]
        if d % n:
            raise ValueError(f"Number of ways to split should evenly divide the split dimension, "
                             f"but got split_dim {axis % r} (size = {d}) and num_split {n}")
        if n == 1:
            return x
        return tuple(np.split(x, n, axis=axis))
    return run


@KERNELS.register("SplitV")
def split_v(op, ctx):
    n = op.get_attr("num_split")
    static_axis = static_input(op, 2)
    fixed_axis = None if static_axis is None else as_int(static_axis)

    def run(x, sizes, axis):
        axis = fixed_axis if axis is static_axis else as_int(axis)
        sizes = np.reshape(sizes, -1).tolist()
        r = np.ndim(x)
        if not -r <= axis < r:
            raise ValueError(f"-input rank(-{r}) <= split_dim < input rank ({r}), but got {axis}")
        d = x.shape[axis]
        known = sum(s for s in sizes if s != -1)
        if -1 in sizes:
            if known > d:
                raise ValueError(f"Determined shape must either match input shape along "
                                 f"split_dim exactly if fully specified, or be less than the size "
                                 f"of the input along split_dim if not fully specified.  Got: "
                                 f"{known}")
            sizes = [d - known if s == -1 else s for s in sizes]
        elif known != d:
            raise ValueError(f"Determined shape must either match input shape along split_dim "
                             f"exactly if fully specified, or be less than the size of the input "
                             f"along split_dim if not fully specified.  Got: {known}")
        if n == 1:
            return x
        return tuple(np.split(x, np.cumsum(sizes[:-1]), axis=axis))
    return run


@KERNELS.register("Pack")
def pack(op, ctx):
    axis = op.get_attr("axis")

    def run(*values):
        try:
            return np.stack(values, axis=axis)
        except ValueError:
            first = np.shape(values[0])
            for i, v in enumerate(values[1:], 1):
                if np.shape(v) != first:
                    raise ValueError(f"Shapes of all inputs must match: values[0].shape = "
                                     f"{dims_text(first)} != values[{i}].shape = "
                                     f"{dims_text(np.shape(v))}") from None
            raise
    return run


@KERNELS.register("Unpack")
def unpack(op, ctx):
    num, axis = op.get_attr("num"), op.get_attr("axis")

    def run(x):
        r = np.ndim(x)
        if not -r <= axis < r:
            raise ValueError(f"axis = {axis} not in [{-r}, {r})")
        if x.shape[axis] != num:
            raise ValueError(f"Input shape axis {axis % r} must equal {num}, got shape "
                             f"{dims_text(x.shape)}")
        parts = tuple(x) if axis == 0 else tuple(np.moveaxis(x, axis, 0))
        return parts[0] if num == 1 else parts
    return run


# -- Tile -----------------------------------------------------------------------------------------------------
def _check_multiples(x, reps) -> tuple:
    reps = tuple(int(m) for m in reps)
    if len(reps) != np.ndim(x):
        raise ValueError(f"Expected multiples argument to be a vector of length {np.ndim(x)} but "
                         f"got length {len(reps)}")
    if any(m < 0 for m in reps):
        raise ValueError(f"Expected multiples argument to be non-negative, got {dims_text(reps)}")
    return reps


@KERNELS.register("Tile")
def tile(op, ctx):
    static = static_input(op, 1)
    fixed = None
    if static is not None and op.inputs[0].shape.ndims is not None:
        fixed = _check_multiples(np.empty((0,) * op.inputs[0].shape.ndims), static.tolist())

    def run(x, multiples):
        reps = fixed if multiples is static and fixed is not None else \
            _check_multiples(x, multiples.tolist())
        return np.tile(x, reps)
    return run


# -- Pad, PadV2, MirrorPad, MirrorPadGrad ------------------------------------------------------------------------
def _check_paddings(x, paddings, mode: Optional[str]) -> List[tuple]:
    p = np.asarray(paddings)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] != np.ndim(x):
        raise ValueError(f"The first dimension of paddings must be the rank of inputs"
                         f"{dims_text(p.shape)} {dims_text(np.shape(x))}")
    pairs = [(int(a), int(b)) for a, b in p.tolist()]
    for (a, b), d in zip(pairs, np.shape(x)):
        if a < 0 or b < 0:
            raise ValueError(f"Paddings must be non-negative: {a} {b}")
        if mode == "REFLECT" and (a >= d or b >= d):
            raise ValueError(f"paddings must be less than the dimension size: {a}, {b} not less "
                             f"than {d}")
        if mode == "SYMMETRIC" and (a > d or b > d):
            raise ValueError(f"paddings must be no greater than the dimension size: {a}, {b} "
                             f"greater than {d}")
    return pairs


def _constant_pad(op, has_value: bool):
    np_dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
    static = static_input(op, 1)
    r = op.inputs[0].shape.ndims
    fixed = None if static is None or r is None else \
        _check_paddings(np.empty((0,) * r), static, None)
    zero = _fill_value(np_dtype, one=False)

    def run(x, paddings, value=None):
        pairs = fixed if paddings is static and fixed is not None else \
            _check_paddings(x, paddings, None)
        out_shape = tuple(d + a + b for d, (a, b) in zip(x.shape, pairs))
        if value is None and np_dtype != np.object_:
            out = np.zeros(out_shape, dtype=np_dtype)
        else:
            out = np.full(out_shape, zero if value is None else value, dtype=np_dtype)
        out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pairs))] = x
        return out
    if has_value:
        return run
    return lambda x, paddings: run(x, paddings)


@KERNELS.register("Pad")
def pad(op, ctx):
    return _constant_pad(op, has_value=False)


@KERNELS.register("PadV2")
def pad_v2(op, ctx):
    return _constant_pad(op, has_value=True)


@KERNELS.register("MirrorPad")
def mirror_pad(op, ctx):
    mode = op.get_attr("mode")
    np_mode = "reflect" if mode == "REFLECT" else "symmetric"

    def run(x, paddings):
        return np.pad(x, _check_paddings(x, paddings, mode), mode=np_mode)
    return run


@KERNELS.register("MirrorPadGrad")
def mirror_pad_grad(op, ctx):
    offset = 1 if op.get_attr("mode") == "REFLECT" else 0

    def run(grad, paddings):
        p = np.asarray(paddings).tolist()
        out = grad
        for axis, (a, b) in enumerate(p):
            if a == 0 and b == 0:
                continue
            n = out.shape[axis] - a - b

            def along(s, _axis=axis):
                return (slice(None),) * _axis + (s,)
            core = out[along(slice(a, a + n))].copy()
            # A border cell's gradient goes to the cell it mirrors (REFLECT skips the edge).
            if a:
                core[along(slice(offset, offset + a))] += np.flip(out[along(slice(0, a))], axis)
            if b:
                core[along(slice(n - offset - b, n - offset))] += \
                    np.flip(out[along(slice(a + n, a + n + b))], axis)
            out = core
        return out if out is not grad else grad.copy()
    return run


# -- ReverseV2 ---------------------------------------------------------------------------------------------------
@KERNELS.register("ReverseV2")
def reverse(op, ctx):
    static = static_input(op, 1)
    r = op.inputs[0].shape.ndims
    key = None
    if static is not None and r:
        axes = {int(a) % r for a in static.tolist()}
        key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(r))

    def run(x, axis):
        if axis is static and key is not None:
            return x[key]
        return np.flip(x, axis=tuple(int(a) for a in np.reshape(axis, -1)))
    return run


from . import array_index_kernels  # noqa: E402,F401  (registers the indexing kernels)

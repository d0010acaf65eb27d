"""CPU kernels for checkpoint I/O (SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename).

Each runs on the device its op is placed on (the variables' task, for sharded savers) and reads
or writes TensorFlow's V2 checkpoint files through ``tfjupyter.train.tensor_bundle``. The
readers of input pipelines are in reader_kernels.py.
"""
from __future__ import annotations


import numpy as np

from tfjupyter.framework import errors
from tfjupyter.summary._encoding import tf_type_name
from tfjupyter.train import tensor_bundle, tensor_slices
from tfjupyter.train.saver import parse_shape_and_slice

from . import KERNELS



def _scalar_str(value, op, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    arr = np.asarray(value)
    if arr.size != 1:
        raise errors.InvalidArgumentError(None, op, f"Input '{what}' of {op.type} '{op.name}' "
                                          f"must be a scalar string, got shape {list(arr.shape)}")
    item = arr.reshape(-1)[0]
    return item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else str(item)


def _str_list(value) -> list:
    if isinstance(value, bytes):
        return [value.decode("utf-8", "surrogateescape")]
    return [x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else str(x)
            for x in np.asarray(value, dtype=object).reshape(-1)]


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _shape_and_slice(op, name: str, spec: str):
    """A RestoreV2/SaveV2 shape_and_slice as (full shape, extents)."""
    try:
        shape, dims = parse_shape_and_slice(spec)
        extents = tensor_slices.extents_from_spec_dims(dims)
        tensor_slices.check_within(extents, shape, f"shape_and_slice {spec!r}")
    except ValueError as e:
        raise errors.InvalidArgumentError(None, op, f"tensor_name = {name}; {e}") from None
    return shape, extents


@KERNELS.register("SaveV2")
def save_v2(op, ctx):
    n = len(op.inputs) - 3

    def run(prefix, tensor_names, shape_and_slices, *tensors):
        path = _scalar_str(prefix, op, "prefix")
        names = _str_list(tensor_names)
        slices = _str_list(shape_and_slices)
        if len(names) != n or len(slices) != n:
            raise errors.InvalidArgumentError(
                None, op, f"Got {len(names)} tensor names and {len(slices)} shape_and_slices "
                f"for {n} tensors in {op.type} '{op.name}'")
        # A partitioned variable's part is saved as a slice of the full variable.
        sliced = [_shape_and_slice(op, name, spec) if spec else None
                  for name, spec in zip(names, slices)]
        try:
            tensor_bundle.write_bundle(path, list(zip(names, tensors)), sliced)
        except errors.OpError as e:
            e.op = op
            raise
    return run


@KERNELS.register("RestoreV2")
def restore_v2(op, ctx):
    want = list(op.get_attr("dtypes"))
    n = len(want)

    def run(prefix, tensor_names, shape_and_slices):
        path = _scalar_str(prefix, op, "prefix")
        names = _str_list(tensor_names)
        slices = _str_list(shape_and_slices)
        if len(names) != n or len(slices) != n:
            raise errors.InvalidArgumentError(
                None, op, f"Got {len(names)} tensor names and {len(slices)} shape_and_slices "
                f"for {n} dtypes in {op.type} '{op.name}'")
        try:
            reader = tensor_bundle.BundleReader(path)
            out = []
            for name, spec, dtype in zip(names, slices, want):
                entry = reader.entry(name)
                stored = reader.dtype(name)
                if stored is not dtype:
                    raise errors.InvalidArgumentError(
                        None, op, f"tensor_name = {name}; expected dtype {tf_type_name(dtype)} "
                        f"does not equal original dtype {tf_type_name(stored)}")
                if not spec:
                    out.append(reader.read(name))
                    continue
                shape, extents = _shape_and_slice(op, name, spec)
                if list(shape) != list(entry.shape):
                    raise errors.InvalidArgumentError(
                        None, op, f"tensor_name = {name}; shape in shape_and_slice spec "
                        f"{_shape_text(shape)} does not match the shape stored in checkpoint: "
                        f"{_shape_text(entry.shape)}")
                out.append(reader.read_slice(name, extents))
        except errors.OpError as e:
            e.op = op
            raise
        return out[0] if n == 1 else tuple(out)
    return run


@KERNELS.register("MergeV2Checkpoints")
def merge_v2_checkpoints(op, ctx):
    delete_old_dirs = bool(op.get_attr("delete_old_dirs"))

    def run(checkpoint_prefixes, destination_prefix):
        try:
            tensor_bundle.merge_bundles(_str_list(checkpoint_prefixes),
                                        _scalar_str(destination_prefix, op, "destination_prefix"),
                                        delete_old_dirs)
        except errors.OpError as e:
            e.op = op
            raise
    return run


@KERNELS.register("ShardedFilename")
def sharded_filename(op, ctx):
    def run(basename, shard, num_shards):
        return f"{_scalar_str(basename, op, 'basename')}-{int(shard):05d}-of-" \
               f"{int(num_shards):05d}".encode()
    return run

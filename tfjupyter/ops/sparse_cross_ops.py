"""``tf.sparse.cross`` / ``tf.sparse.cross_hashed`` (TF 1.x ``sparse_ops.sparse_cross*``): the
cartesian product, row by row, of several sparse or dense 2-D feature tensors, as TensorFlow's
``SparseCross`` op. What ``crossed_column`` builds (tfjupyter/feature_column/).

For each row, every combination of one value per input is one output value, the last input
varying fastest; a row with no value in some input has none. Hashed, a combination is
FingerprintCat64(... FingerprintCat64(hash_key, f(v1)) ..., f(vn)) modulo ``num_buckets``,
where f is Fingerprint64 for strings and the value itself for integers: TensorFlow's bucket ids
exactly. Not hashed, it is the values' text joined with "_X_". Kernel in
``kernels/cpu/sparse_cross_kernels.py``.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.sparse_tensor import SparseTensor
from ..framework.tensor_shape import TensorShape
from . import math_ops

__all__ = ["sparse_cross", "sparse_cross_hashed"]

# TensorFlow's default hash key (sparse_ops._DEFAULT_HASH_KEY).
DEFAULT_HASH_KEY = 0xDECAFCAFFE
_FEATURE_DTYPES = (dtypes.int64, dtypes.string)


@register_op("SparseCross")
def _sparse_cross_shape(op):
    n = op.get_attr("N")
    for i, tensor in enumerate(op.inputs):
        kind = ("indices", "values", "shapes")[i // n] if i < 3 * n else "dense_inputs"
        if kind in ("values", "dense_inputs") and tensor.dtype not in _FEATURE_DTYPES:
            raise TypeError(f"SparseCross '{op.name}': {kind} must be int64 or string, got "
                            f"{tensor.dtype.name} ({tensor.name})")
        if kind == "dense_inputs" and tensor.shape.ndims not in (None, 2):
            raise ValueError(f"SparseCross '{op.name}': dense inputs must be 2-D [batch, n], "
                             f"got {tensor.name} of shape {tensor.shape}")
    out_type = op.get_attr("out_type")
    return [(dtypes.int64, TensorShape([None, 2])), (out_type, TensorShape([None])),
            (dtypes.int64, TensorShape([2]))]


NotDifferentiable("SparseCross")


def _int64_if_int32(tensor: Tensor) -> Tensor:
    return math_ops.cast(tensor, dtypes.int64) if tensor.dtype == dtypes.int32 else tensor


def _cross(inputs, hashed_output: bool, num_buckets: int, hash_key: int,
           name: Optional[str]) -> SparseTensor:
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    if not inputs:
        raise ValueError("sparse_cross: inputs must not be empty")
    if num_buckets < 0:
        raise ValueError(f"sparse_cross_hashed: num_buckets must be >= 0, got {num_buckets}")
    sparse = [x for x in inputs if isinstance(x, SparseTensor)]
    with name_scope(name, "SparseCross" if not hashed_output else "SparseCrossHashed"):
        dense = [convert_to_tensor(x) for x in inputs if not isinstance(x, SparseTensor)]
        # int32 features cross as int64, as in TensorFlow's sparse_ops._sparse_cross_internal.
        values = [_int64_if_int32(x.values) for x in sparse]
        dense = [_int64_if_int32(x) for x in dense]
        attrs = {"N": len(sparse), "hashed_output": hashed_output,
                 "num_buckets": int(num_buckets), "hash_key": int(hash_key),
                 "sparse_types": [v.dtype for v in values], "dense_types": [d.dtype for d in dense],
                 "out_type": dtypes.int64 if hashed_output else dtypes.string,
                 "internal_type": dtypes.int64 if hashed_output else dtypes.string}
        op = _new_op("SparseCross", [x.indices for x in sparse] + values
                     + [x.dense_shape for x in sparse] + dense, attrs, name="SparseCross")
    return SparseTensor(*op.outputs)


def sparse_cross(inputs, name: Optional[str] = None) -> SparseTensor:
    """The crosses of ``inputs`` (SparseTensors or dense 2-D tensors of int64 or strings) as
    strings "a_X_b_X_c"."""
    return _cross(inputs, False, 0, 0, name)


def sparse_cross_hashed(inputs, num_buckets: int = 0, hash_key: Optional[int] = None,
                        name: Optional[str] = None) -> SparseTensor:
    """The crosses of ``inputs`` as int64 bucket ids in [0, num_buckets) (0: the whole int64
    range), TensorFlow's FingerprintCat64 hashing seeded with ``hash_key``."""
    return _cross(inputs, True, num_buckets,
                  DEFAULT_HASH_KEY if hash_key is None else hash_key, name)

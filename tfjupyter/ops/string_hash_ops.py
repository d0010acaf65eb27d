"""``tf.string_to_hash_bucket_fast`` (``tf.strings.to_hash_bucket_fast``): each string's
Fingerprint64 modulo the number of buckets, TensorFlow's buckets exactly (the kernel,
``kernels/cpu/string_hash_kernels.py``, implements farmhash's fingerprint)."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ._shapes import check_dtype_in

__all__ = ["string_to_hash_bucket_fast"]


@register_op("StringToHashBucketFast")
def _hash_bucket_shape(op):
    check_dtype_in(op, op.inputs[0], (dtypes.string,))
    if op.get_attr("num_buckets") < 1:
        raise ValueError(f"StringToHashBucketFast '{op.name}': num_buckets must be >= 1, got "
                         f"{op.get_attr('num_buckets')}")
    return [(dtypes.int64, op.inputs[0].shape)]


NotDifferentiable("StringToHashBucketFast")


def string_to_hash_bucket_fast(input, num_buckets: int,  # noqa: A002 - TF's name
                               name: Optional[str] = None) -> Tensor:
    """The bucket, in [0, num_buckets), of each string of ``input``."""
    strings = convert_to_tensor(input, dtype=dtypes.string)
    return _new_op("StringToHashBucketFast", [strings], {"num_buckets": int(num_buckets)},
                   name=name or "StringToHashBucketFast").outputs[0]

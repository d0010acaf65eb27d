"""CPU kernel of ``StringToHashBucketFast`` (tfjupyter/ops/string_hash_ops.py)."""
from __future__ import annotations

import numpy as np

from . import KERNELS
from .farmhash import fingerprint64


def hash_buckets(strings, num_buckets: int) -> np.ndarray:
    """Fingerprint64(s) % num_buckets for each string (bytes, or str as UTF-8) of ``strings``,
    as an int64 array of its shape."""
    array = np.asarray(strings, dtype=object)
    flat = [fingerprint64(s if isinstance(s, bytes) else str(s).encode())
            % num_buckets for s in array.reshape(-1).tolist()]
    return np.array(flat, dtype=np.int64).reshape(array.shape)


@KERNELS.register("StringToHashBucketFast")
def string_to_hash_bucket_fast(op, ctx):
    num_buckets = op.get_attr("num_buckets")
    return lambda strings: hash_buckets(strings, num_buckets)

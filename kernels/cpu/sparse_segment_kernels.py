"""CPU kernels of ``SparseSegmentSum``/``Mean``/``SqrtN`` (tfjupyter/ops/sparse_ops.py): rows of
data picked by ``indices``, summed per sorted segment id; the output has the last segment id
+ 1 rows, as TensorFlow's segment_reduction_ops.cc, with its errors."""
from __future__ import annotations

import numpy as np

from . import KERNELS


def _check(op, data, indices, segment_ids) -> None:
    if indices.shape[0] != segment_ids.shape[0]:
        raise ValueError(f"{op.type} '{op.name}': segment_ids and indices should have same "
                         f"size, got {segment_ids.shape[0]} and {indices.shape[0]}")
    if segment_ids.size and (segment_ids[0] < 0 or np.any(np.diff(segment_ids) < 0)):
        raise ValueError(f"{op.type} '{op.name}': segment ids are not increasing")
    bad = np.flatnonzero((indices < 0) | (indices >= data.shape[0]))
    if bad.size:
        raise ValueError(f"{op.type} '{op.name}': Bad: indices[{bad[0]}] == "
                         f"{indices[bad[0]]} out of range [0, {data.shape[0]})")


def _segment_kernel(scale):
    """The kernel factory of one reduction: ``scale(counts)`` divides each segment's sum
    (None: a plain sum)."""
    def factory(op, ctx):
        def run(data, indices, segment_ids):
            _check(op, data, indices, segment_ids)
            rows = int(segment_ids[-1]) + 1 if segment_ids.size else 0
            out = np.zeros((rows,) + data.shape[1:], dtype=data.dtype)
            np.add.at(out, segment_ids, data[indices])
            if scale is not None and rows:
                counts = np.bincount(segment_ids, minlength=rows).astype(data.dtype)
                divisor = scale(np.maximum(counts, 1))
                out /= divisor.reshape((rows,) + (1,) * (data.ndim - 1))
            return out
        return run
    return factory


KERNELS.register("SparseSegmentSum")(_segment_kernel(None))
KERNELS.register("SparseSegmentMean")(_segment_kernel(lambda counts: counts))
KERNELS.register("SparseSegmentSqrtN")(_segment_kernel(np.sqrt))

"""CPU kernel of ``SparseCross`` (tfjupyter/ops/sparse_cross_ops.py): per row, the cartesian
product of the inputs' values, the last input varying fastest, as TensorFlow's
sparse_cross_op.cc (its ProductIterator and HashCrosser)."""
from __future__ import annotations

import itertools

import numpy as np

from . import KERNELS
from .farmhash import fingerprint64, fingerprint_cat64

_MASK = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1


def _rows_of_sparse(indices, values, batch: int):
    rows = [[] for _ in range(batch)]
    for row, value in zip(indices[:, 0].tolist(), values.tolist()):
        rows[row].append(value)
    return rows


def _hash_feature(value) -> int:
    """What TensorFlow's SparseTensorColumn<int64>::Feature gives a value: Fingerprint64 of
    a string, an integer as itself (as uint64)."""
    if isinstance(value, (bytes, str)):
        return fingerprint64(value if isinstance(value, bytes) else value.encode())
    return int(value) & _MASK


def _text_feature(value) -> bytes:
    if isinstance(value, (bytes, str)):
        return value if isinstance(value, bytes) else value.encode()
    return str(int(value)).encode()


def _batch_size(op, sparse_shapes, dense) -> int:
    sizes = [int(s[0]) for s in sparse_shapes] + [int(d.shape[0]) for d in dense]
    if any(size != sizes[0] for size in sizes):
        raise ValueError(f"SparseCross '{op.name}': inputs have different batch sizes "
                         f"{sizes}")
    return sizes[0]


@KERNELS.register("SparseCross")
def sparse_cross(op, ctx):
    n = op.get_attr("N")
    hashed = op.get_attr("hashed_output")
    num_buckets = op.get_attr("num_buckets")
    hash_key = op.get_attr("hash_key") & _MASK

    def cross(features) -> object:
        """One combination: its text, or its bucket (``features`` already hashed)."""
        if not hashed:
            return b"_X_".join(features)
        result = hash_key
        for value in features:
            result = fingerprint_cat64(result, value)
        return result % (num_buckets if num_buckets > 0 else _INT64_MAX)

    def prepared(rows):
        """Each value as ``cross`` takes it, converted once per distinct value: categorical
        features repeat across a batch."""
        convert, seen = (_hash_feature if hashed else _text_feature), {}
        return [[seen[v] if v in seen else seen.setdefault(v, convert(v)) for v in row]
                for row in rows]

    def run(*arrays):
        indices, values, shapes, dense = (arrays[:n], arrays[n:2 * n], arrays[2 * n:3 * n],
                                          arrays[3 * n:])
        for i, shape in enumerate(shapes):
            if len(shape) != 2:
                raise ValueError(f"SparseCross '{op.name}': sparse input {i} must be 2-D, its "
                                 f"dense_shape is {shape.tolist()}")
        batch = _batch_size(op, shapes, dense)
        columns = [prepared(rows) for rows in
                   [_rows_of_sparse(i, v, batch) for i, v in zip(indices, values)]
                   + [d.tolist() for d in dense]]
        out_indices, out_values, width = [], [], 0
        done = {}     # combinations repeat across a batch too
        for row in range(batch):
            crosses = [done[c] if c in done else done.setdefault(c, cross(c))
                       for c in itertools.product(*(column[row] for column in columns))]
            out_indices.extend((row, k) for k in range(len(crosses)))
            out_values.extend(crosses)
            width = max(width, len(crosses))
        out_indices = np.array(out_indices, dtype=np.int64).reshape(-1, 2)
        out_values = (np.array(out_values, dtype=np.int64) if hashed
                      else np.array(out_values, dtype=object))
        return out_indices, out_values, np.array([batch, width], dtype=np.int64)
    return run

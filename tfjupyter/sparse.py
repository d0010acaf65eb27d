"""``tf.sparse``: TF 1.13+'s names of the sparse ops (the same objects as
``tf.sparse_tensor_to_dense``, ``tf.sparse_reshape``...), with ``cross`` and ``cross_hashed``
(ops/sparse_cross_ops.py)."""
from __future__ import annotations

from .framework.sparse_tensor import SparseTensor  # noqa: F401
from .ops.sparse_cross_ops import sparse_cross as cross  # noqa: F401
from .ops.sparse_cross_ops import sparse_cross_hashed as cross_hashed  # noqa: F401
from .ops.sparse_ops import sparse_reshape as reshape  # noqa: F401
from .ops.sparse_ops import sparse_retain as retain  # noqa: F401
from .ops.sparse_ops import sparse_tensor_to_dense as to_dense  # noqa: F401

"""``tf.linalg``: TF 1.13+'s names of the linear-algebra ops there are."""
from __future__ import annotations

from .nn import l2_normalize  # noqa: F401
from .ops.array_ops import transpose  # noqa: F401
from .ops.linalg_ops import qr  # noqa: F401
from .ops.math_ops import global_norm, matmul  # noqa: F401

"""``tensorflow.python.ops.array_ops``: the array ops (tfjupyter/ops/array_ops.py)."""
from ...ops.array_ops import *  # noqa: F401,F403

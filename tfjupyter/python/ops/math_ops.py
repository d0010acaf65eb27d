"""``tensorflow.python.ops.math_ops``: the math ops (tfjupyter/ops/math_ops.py)."""
from ...ops.math_ops import *  # noqa: F401,F403

"""``tensorflow.python.ops.lookup_ops``: lookup tables (tfjupyter/ops/lookup_ops.py)."""
from ...ops.lookup_ops import *  # noqa: F401,F403

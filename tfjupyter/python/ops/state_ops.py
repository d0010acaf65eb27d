"""``tensorflow.python.ops.state_ops``: the state ops (tfjupyter/ops/state_ops.py)."""
from ...ops.state_ops import *  # noqa: F401,F403

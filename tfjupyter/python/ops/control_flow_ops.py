"""``tensorflow.python.ops.control_flow_ops``: control flow (tfjupyter/ops/control_flow_ops.py)."""
from ...ops.control_flow_ops import *  # noqa: F401,F403

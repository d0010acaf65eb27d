"""``tensorflow.python.framework.ops``: Graph, Tensor, collections (tfjupyter/framework/ops.py)."""
from ...framework.ops import *  # noqa: F401,F403

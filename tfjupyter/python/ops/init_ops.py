"""``tensorflow.python.ops.init_ops``: initializers (tfjupyter/init_ops.py)."""
from ...init_ops import *  # noqa: F401,F403

"""``tensorflow.python.ops.variables``: variables (tfjupyter/variables.py)."""
from ...variables import *  # noqa: F401,F403

"""``tensorflow.python.ops.variable_scope``: variable scopes (tfjupyter/variable_scopes.py)."""
from ...variable_scopes import *  # noqa: F401,F403

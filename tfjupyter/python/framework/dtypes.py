"""``tensorflow.python.framework.dtypes``: dtypes (tfjupyter/framework/dtypes.py)."""
from ...framework.dtypes import *  # noqa: F401,F403

"""``tf.dtypes``: the dtypes (tfjupyter/framework/dtypes.py) with TF 1.13+'s ``cast`` and
``saturate_cast``."""
from __future__ import annotations

from .framework.dtypes import *  # noqa: F401,F403
from .ops.math_compat_ops import saturate_cast  # noqa: F401
from .ops.math_ops import cast  # noqa: F401

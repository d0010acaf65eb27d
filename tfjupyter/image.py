"""``tf.image``: see tfjupyter/ops/image_ops.py (and image_resize_ops.py for the resize ops)."""
from .ops.image_ops import *  # noqa: F401,F403
from .ops.image_ops import __all__  # noqa: F401

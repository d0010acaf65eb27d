"""``tensorflow.python.framework.tensor_shape``: TensorShape
(tfjupyter/framework/tensor_shape.py)."""
from ...framework.tensor_shape import *  # noqa: F401,F403

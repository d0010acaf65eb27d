"""``tf.compat.v1``: TensorFlow 1.x's whole API under its TF 1.13+ (and TF 2.x) spelling, so
that ``import tensorflow.compat.v1 as tf`` programs run with ``import tfjupyter.compat.v1 as
tf``. Every name is the very object ``tfjupyter`` gives (``tf.compat.v1.Session is
tf.Session``), looked up on first use; ``tf.compat.v1.data`` is ``tf.data``.

``disable_eager_execution()``/``disable_v2_behavior()`` are accepted (graph mode is the only
mode here); ``enable_eager_execution()`` refuses with a clear error (tfjupyter/execution_mode.py).
"""
from __future__ import annotations

import tfjupyter as _tf


def __getattr__(name: str):
    if name == "__all__":    # from tfjupyter.compat.v1 import *
        return _tf.__all__
    if name == "__version__":    # tf.compat.v1.__version__ is the package's version
        return _tf.__version__
    if name.startswith("__"):
        raise AttributeError(f"module 'tfjupyter.compat.v1' has no attribute {name!r}")
    try:
        return getattr(_tf, name)
    except AttributeError:
        raise AttributeError(f"module 'tfjupyter.compat.v1' has no attribute {name!r}") from None


def __dir__():
    return dir(_tf)

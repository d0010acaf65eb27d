"""tensorflow.contrib.learn.python.learn (the import path TF 1.x examples use)."""
from . import datasets  # noqa: F401

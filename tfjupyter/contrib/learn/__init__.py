"""``tf.contrib.learn``: only the dataset readers that TF 1.x's examples import from
``tensorflow.contrib.learn.python.learn.datasets`` (estimators are not provided)."""
from .python.learn import datasets  # noqa: F401

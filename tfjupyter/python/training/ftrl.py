"""``tensorflow.python.training.ftrl``: ``tf.train.FtrlOptimizer`` (tfjupyter/train/ftrl.py)."""
from ...train.ftrl import *  # noqa: F401,F403

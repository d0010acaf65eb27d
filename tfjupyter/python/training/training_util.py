"""``tensorflow.python.training.training_util``: the global step helpers
(tfjupyter/train/training_util.py)."""
from ...train.training_util import *  # noqa: F401,F403

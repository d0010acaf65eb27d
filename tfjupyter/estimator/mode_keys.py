"""``tf.estimator.ModeKeys``: the mode a ``model_fn`` is called in (TensorFlow's strings)."""
from __future__ import annotations

__all__ = ["ModeKeys"]


class ModeKeys:
    """Standard names for model modes: ``TRAIN`` (training), ``EVAL`` (evaluation),
    ``PREDICT`` (inference)."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"

"""``tf.random``: TF 1.13+'s names of the random ops (``tf.random.uniform`` is
``tf.random_uniform``, ``tf.random.categorical`` draws as ``tf.multinomial``)."""
from __future__ import annotations

from typing import Optional

from .framework import dtypes
from .nn import log_uniform_candidate_sampler, uniform_candidate_sampler  # noqa: F401
from .ops.random_ops import get_seed, multinomial, set_random_seed  # noqa: F401
from .ops.random_ops import random_normal as normal  # noqa: F401
from .ops.random_ops import random_shuffle as shuffle  # noqa: F401
from .ops.random_ops import random_uniform as uniform  # noqa: F401
from .ops.random_ops import truncated_normal  # noqa: F401


def categorical(logits, num_samples, dtype=None, seed=None, name: Optional[str] = None):
    """``num_samples`` class indices per row of ``logits`` (int64 unless ``dtype``)."""
    return multinomial(logits, num_samples, seed=seed, name=name,
                       output_dtype=dtypes.as_dtype(dtype or dtypes.int64))

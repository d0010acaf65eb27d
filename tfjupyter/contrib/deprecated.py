"""``tf.contrib.deprecated``: TF 0.x's summary ops kept for TF 1.x programs (the same objects
as ``tf.scalar_summary``...)."""
from __future__ import annotations

from ..summary.legacy import (histogram_summary, image_summary, merge_all_summaries,  # noqa: F401
                              merge_summary, scalar_summary)

"""TensorFlow 0.x summary functions (``tf.scalar_summary`` & co.): tags are used as given,
not prefixed with the name scope; ops go into the ``summaries`` collection."""
from __future__ import annotations

from typing import Optional, Sequence

from ..framework.ops import GraphKeys, Tensor, get_collection, name_scope
from . import summary_ops

__all__ = ["scalar_summary", "histogram_summary", "image_summary", "merge_summary",
           "merge_all_summaries"]


def scalar_summary(tags, values, collections: Optional[Sequence[str]] = None,
                   name: Optional[str] = None) -> Tensor:
    """Scalar summaries: ``tags`` (a string, or strings) and ``values`` of the same shape."""
    with name_scope(name, "ScalarSummary", [tags, values]) as scope:
        value = summary_ops._summary_op("ScalarSummary", "tags", tags, values, scope)
    summary_ops.collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram_summary(tag, values, collections: Optional[Sequence[str]] = None,
                      name: Optional[str] = None) -> Tensor:
    with name_scope(name, "HistogramSummary", [tag, values]) as scope:
        value = summary_ops._summary_op("HistogramSummary", "tag", tag, values, scope)
    summary_ops.collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def image_summary(tag, tensor, max_images: int = 3, collections: Optional[Sequence[str]] = None,
                  name: Optional[str] = None) -> Tensor:
    with name_scope(name, "ImageSummary", [tag, tensor]) as scope:
        value = summary_ops._summary_op("ImageSummary", "tag", tag, tensor, scope,
                                        {"max_images": int(max_images),
                                         "bad_color": [255, 0, 0, 255]})
    summary_ops.collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def merge_summary(inputs, collections: Optional[Sequence[str]] = None,
                  name: Optional[str] = None) -> Tensor:
    inputs = list(inputs)
    with name_scope(name, "MergeSummary", inputs):
        value = summary_ops.merge_summary_op(inputs, name)
    summary_ops.collect(value, collections, [])
    return value


def merge_all_summaries(key: str = GraphKeys.SUMMARIES) -> Optional[Tensor]:
    summaries = get_collection(key)
    if not summaries:
        return None
    return merge_summary(summaries)

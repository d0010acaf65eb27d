"""Summary ops: graph ops whose value is a serialized ``Summary`` protocol buffer (a string).

``tf.summary.scalar('loss', x)`` inside ``name_scope('GPU_0')`` is the op ``GPU_0/loss`` with
tag ``GPU_0/loss``, added to the ``summaries`` collection, as in TensorFlow 1.x.  Running it
gives the ``bytes`` of a Summary, which ``FileWriter.add_summary`` writes to an event file.
"""
from __future__ import annotations

import contextlib
import logging
import re
from typing import List, Optional, Sequence

from ..framework import dtypes
from ..framework.ops import (GraphKeys, Tensor, convert_to_tensor, get_collection,
                             get_default_graph, name_scope)
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from ..ops import array_ops

__all__ = ["scalar", "histogram", "image", "merge", "merge_all"]

_log = logging.getLogger("tfjupyter")

_REAL_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16,
               dtypes.int8, dtypes.int64, dtypes.float16)
_IMAGE_TYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)


# -- op definitions --------------------------------------------------------------------------------
def _check_type(op, t: Tensor, what: str, allowed) -> None:
    if t.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to parameter '{what}' of '{op.type}' Op '{op.name}' has "
                        f"DataType {t.dtype.name} not in list of allowed values: {names}")


def _check_rank(op, t: Tensor, what: str, rank: int) -> None:
    if t.shape.ndims is not None and t.shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                         f"'{op.name}' (op: '{op.type}') input '{what}' with shape {t.shape}")


def _scalar_string(op) -> list:
    return [(dtypes.string, TensorShape(()))]


@register_op("ScalarSummary")
def _scalar_summary_shape(op):
    tags, values = op.inputs
    _check_type(op, tags, "tags", (dtypes.string,))
    _check_type(op, values, "values", _REAL_TYPES)
    if (tags.shape.is_fully_defined() and values.shape.is_fully_defined()
            and tags.shape.as_list() != values.shape.as_list()):
        raise ValueError(f"tags and values not the same shape: {tags.shape.as_list()} != "
                         f"{values.shape.as_list()} for ScalarSummary '{op.name}'")
    return _scalar_string(op)


@register_op("HistogramSummary")
def _histogram_summary_shape(op):
    tag, values = op.inputs
    _check_type(op, tag, "tag", (dtypes.string,))
    _check_rank(op, tag, "tag", 0)
    _check_type(op, values, "values", _REAL_TYPES)
    return _scalar_string(op)


@register_op("ImageSummary")
def _image_summary_shape(op):
    tag, tensor = op.inputs
    _check_type(op, tag, "tag", (dtypes.string,))
    _check_rank(op, tag, "tag", 0)
    _check_type(op, tensor, "tensor", _IMAGE_TYPES)
    shape = tensor.shape
    if shape.ndims is not None:
        if shape.ndims != 4:
            raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape} "
                             f"(ImageSummary '{op.name}')")
        depth = shape.as_list()[3]
        if depth is not None and depth not in (1, 3, 4):
            raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape} "
                             f"(ImageSummary '{op.name}')")
    if op.get_attr("max_images") < 1:
        raise ValueError(f"max_images must be >= 1, got {op.get_attr('max_images')}")
    return _scalar_string(op)


@register_op("MergeSummary")
def _merge_summary_shape(op):
    if not op.inputs:
        raise ValueError(f"List argument 'inputs' to 'MergeSummary' Op with length 0 shorter "
                         f"than minimum length 1 ('{op.name}')")
    for t in op.inputs:
        _check_type(op, t, "inputs", (dtypes.string,))
    return _scalar_string(op)


for _t in ("ScalarSummary", "HistogramSummary", "ImageSummary", "MergeSummary"):
    NotDifferentiable(_t)


# -- building --------------------------------------------------------------------------------------
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def clean_tag(name: Optional[str]) -> Optional[str]:
    """A summary name with characters TensorBoard cannot use replaced by '_'."""
    if name is not None:
        new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
        if new_name != name:
            _log.info("Summary name %s is illegal; using %s instead.", name, new_name)
            name = new_name
    return name


@contextlib.contextmanager
def summary_scope(name: str, family: Optional[str] = None, default_name: Optional[str] = None,
                  values=None):
    """Yields (tag, scope): the name scope of a summary op and the tag it reports under."""
    name = clean_tag(name)
    family = clean_tag(family)
    scope_base_name = name if family is None else f"{family}/{name}"
    with name_scope(scope_base_name, default_name, values) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def collect(value: Tensor, collections: Optional[Sequence[str]], default: Sequence[str]) -> None:
    graph = value.graph
    for key in (default if collections is None else collections):
        graph.add_to_collection(key, value)


def _summary_op(op_type: str, tag_name: str, tag, values, scope: str, attrs=None,
                values_name: str = "values") -> Tensor:
    """Creates a summary op named exactly ``scope`` (which ends with '/')."""
    graph = values.graph if isinstance(values, Tensor) else get_default_graph()
    with graph.as_default(), graph.name_scope(scope):
        tag_t = tag if isinstance(tag, Tensor) else \
            array_ops.constant(tag, dtype=dtypes.string, name=tag_name)
        values_t = values if isinstance(values, Tensor) else \
            convert_to_tensor(values, name=values_name)
        return graph.create_op(op_type, [tag_t, values_t], attrs or {}, name=scope).outputs[0]


def _input_tensor(value, name: str):
    return value if isinstance(value, Tensor) else convert_to_tensor(value, name=name)


def scalar(name: str, tensor, collections: Optional[Sequence[str]] = None,
           family: Optional[str] = None) -> Tensor:
    """A summary of one real number: ``tf.summary.scalar('loss', loss)``."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = _summary_op("ScalarSummary", "tags", tag, _input_tensor(tensor, "values"), scope)
    collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram(name: str, values, collections: Optional[Sequence[str]] = None,
              family: Optional[str] = None) -> Tensor:
    """A histogram of a tensor's values (TensorFlow's exponential buckets)."""
    with summary_scope(name, family, values=[values]) as (tag, scope):
        value = _summary_op("HistogramSummary", "tag", tag, _input_tensor(values, "values"),
                            scope)
    collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def image(name: str, tensor, max_outputs: int = 3, collections: Optional[Sequence[str]] = None,
          family: Optional[str] = None) -> Tensor:
    """PNG images of a [batch, height, width, channels] tensor (channels 1, 3 or 4); tags are
    ``<name>/image/<i>`` (``<name>/image`` for one image). Floats are rescaled to 0..255."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = _summary_op("ImageSummary", "tag", tag, _input_tensor(tensor, "tensor"), scope,
                            {"max_images": int(max_outputs),
                             "bad_color": [255, 0, 0, 255]})
    collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def merge_summary_op(inputs: Sequence, name: Optional[str]) -> Tensor:
    tensors = [convert_to_tensor(x, dtype=dtypes.string) for x in inputs]
    graph = tensors[0].graph if tensors else get_default_graph()
    return graph.create_op("MergeSummary", tensors, {"N": len(tensors)},
                           name=name or "MergeSummary").outputs[0]


def merge(inputs: Sequence, collections: Optional[Sequence[str]] = None,
          name: Optional[str] = None) -> Tensor:
    """One Summary holding the values of all the input summaries (tags must be unique)."""
    inputs = list(inputs)
    with name_scope(name, "Merge", inputs):
        value = merge_summary_op(inputs, name)
    collect(value, collections, [])
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Optional[str] = None,
              name: Optional[str] = None) -> Optional[Tensor]:
    """Merges every summary in the collection ``key``; None if there are none."""
    summary_ops: List = get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)

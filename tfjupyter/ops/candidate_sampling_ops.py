"""Candidate samplers: the negative classes of sampled losses (``tf.nn.nce_loss``,
``tf.nn.sampled_softmax_loss``).

A sampler op draws ``num_sampled`` classes from [0, range_max) and reports, for the true
classes and for the sampled ones, the expected number of times the class would be drawn:
``num_sampled * P(class)``, or with unique sampling (draw until ``num_sampled`` distinct classes
came up, after ``num_tries`` draws) ``1 - (1 - P(class)) ** num_tries``.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from . import math_ops, random_ops
from ._nn_util import outputs, rank_dims

__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler"]


class Sampled(NamedTuple):
    sampled_candidates: Tensor
    true_expected_count: Tensor
    sampled_expected_count: Tensor


@register_op("UniformCandidateSampler", stateful=True)
@register_op("LogUniformCandidateSampler", stateful=True)
def _candidate_sampler_shape(op):
    true_classes = op.inputs[0]
    if true_classes.dtype is not dtypes.int64:
        raise TypeError(f"{op.type} op '{op.name}': true_classes must be int64, got "
                        f"{true_classes.dtype.name}.")
    num_true, num_sampled = op.get_attr("num_true"), op.get_attr("num_sampled")
    range_max = op.get_attr("range_max")
    batch, width = rank_dims(op, true_classes, 2)
    if width is not None and width != num_true:
        raise ValueError(f"{op.type} op '{op.name}': true_classes must be a matrix with "
                         f"num_true={num_true} columns, got shape {true_classes.shape}.")
    if num_true < 1 or num_sampled < 1 or range_max < 1:
        raise ValueError(f"{op.type} op '{op.name}': num_true, num_sampled and range_max must be "
                         f"positive, got {num_true}, {num_sampled}, {range_max}.")
    if op.get_attr("unique") and num_sampled > range_max:
        raise ValueError(f"{op.type} op '{op.name}': Sampler's range is too small: unique "
                         f"sampling of num_sampled={num_sampled} classes from "
                         f"range_max={range_max}.")
    return [(dtypes.int64, TensorShape([num_sampled])),
            (dtypes.float32, TensorShape([batch, num_true])),
            (dtypes.float32, TensorShape([num_sampled]))]


NotDifferentiable("UniformCandidateSampler")
NotDifferentiable("LogUniformCandidateSampler")


def _sampler(op_type: str, true_classes, num_true: int, num_sampled: int, unique: bool,
             range_max: int, seed: Optional[int], name: Optional[str]) -> Sampled:
    true_classes = convert_to_tensor(true_classes, name="true_classes")
    if true_classes.dtype is dtypes.int32:
        true_classes = math_ops.cast(true_classes, dtypes.int64)
    seed1, seed2 = random_ops.get_seed(seed)
    attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
             "range_max": int(range_max), "seed": seed1 or 0, "seed2": seed2 or 0}
    return Sampled(*outputs(op_type, [true_classes], attrs, name))


def uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: Optional[int] = None,
                              name: Optional[str] = None) -> Sampled:
    """Samples ``num_sampled`` classes uniformly from [0, range_max) (distinct ones if
    ``unique``): (sampled_candidates, true_expected_count, sampled_expected_count)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


def log_uniform_candidate_sampler(true_classes, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: Optional[int] = None,
                                  name: Optional[str] = None) -> Sampled:
    """Samples ``num_sampled`` classes from the log-uniform (Zipfian) distribution
    P(class) = log((class + 2) / (class + 1)) / log(range_max + 1), which suits classes sorted
    by decreasing frequency (word ids): (sampled_candidates, true_expected_count,
    sampled_expected_count)."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)

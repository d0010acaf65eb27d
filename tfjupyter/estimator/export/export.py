"""Serving input receivers (``tf.estimator.export``): what a served model is fed, and the
features the ``model_fn`` gets from it; the SignatureDefs of an export."""
from __future__ import annotations

import collections
import logging

from ...framework import dtypes
from ...framework.ops import Tensor
from ...framework.sparse_tensor import SparseTensor
from ...framework.tensor_shape import TensorShape
from ...ops import array_ops, parsing_ops
from ...saved_model import signature_def_utils

__all__ = ["ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]

_log = logging.getLogger("tfjupyter")
_DEFAULT_NAMES = {"feature": "feature", "receiver_tensor": "input",
                  "receiver_tensors_alternative": "input"}


def _wrap_and_check(tensors, field_name: str, allow_int_keys: bool = False) -> dict:
    if tensors is None:
        raise ValueError(f"{field_name}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_DEFAULT_NAMES[field_name]: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str) and not (allow_int_keys and isinstance(name, int)):
            kinds = "strings or ints" if allow_int_keys else "strings"
            raise ValueError(f"{field_name} keys must be {kinds}: {name}.")
        if not isinstance(tensor, (Tensor, SparseTensor)):
            raise ValueError(f"{field_name} {name} must be a Tensor, SparseTensor, or "
                             "RaggedTensor.")
    return tensors


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors",
                                 "receiver_tensors_alternatives"])):
    """``features`` (a tensor or dict, given to the model_fn) and ``receiver_tensors`` (the
    placeholders a served request feeds)."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _wrap_and_check(features, "feature", allow_int_keys=True)
        receiver_tensors = _wrap_and_check(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError("receiver_tensors_alternatives must be a dict: "
                                 f"{receiver_tensors_alternatives}.")
            receiver_tensors_alternatives = {
                name: _wrap_and_check(alt, "receiver_tensors_alternative")
                for name, alt in receiver_tensors_alternatives.items()}
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors",
                                       "receiver_tensors_alternatives"])):
    """As ServingInputReceiver, but the model_fn gets ``features`` as one Tensor."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise ValueError("features must be defined.")
        if not isinstance(features, (Tensor, SparseTensor)):
            raise ValueError("feature must be a Tensor, SparseTensor, or RaggedTensor.")
        receiver = ServingInputReceiver(features, receiver_tensors,
                                        receiver_tensors_alternatives)
        return super().__new__(cls, features, receiver.receiver_tensors,
                               receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn fed serialized ``tf.Example``s (``examples``), parsed by
    ``feature_spec``."""
    def serving_input_receiver_fn():
        serialized = array_ops.placeholder(dtype=dtypes.string, shape=[default_batch_size],
                                           name="input_example_tensor")
        features = parsing_ops.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})
    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn fed the features themselves: one placeholder per feature, named after
    the feature tensor's op, with the batch dimension ``default_batch_size``."""
    def serving_input_receiver_fn():
        receivers = {}
        for name, tensor in features.items():
            dims = tensor.get_shape().as_list()
            dims[0] = default_batch_size
            receivers[name] = array_ops.placeholder(dtype=tensor.dtype, shape=TensorShape(dims),
                                                    name=tensor.op.name)
        return ServingInputReceiver(receivers, dict(receivers))
    return serving_input_receiver_fn


def build_all_signature_defs(receiver_tensors, export_outputs,
                             receiver_tensors_alternatives=None) -> dict:
    """The SignatureDefs of every export output (and of every alternative receiver, as
    ``receiver:output``); one an output cannot make is left out and logged, as in TF."""
    if not isinstance(receiver_tensors, dict):
        receiver_tensors = {"input": receiver_tensors}
    if not isinstance(export_outputs, dict):
        raise ValueError(f"`export_outputs` must be a dict. Received {export_outputs} with "
                         f"type {type(export_outputs).__name__}.")
    receivers = [(None, receiver_tensors)] + list((receiver_tensors_alternatives or {}).items())
    signatures, excluded = {}, {}
    for receiver_name, tensors in receivers:
        for key, output in export_outputs.items():
            name = f"{key or 'None'}" if receiver_name is None else \
                f"{receiver_name or 'None'}:{key or 'None'}"
            try:
                signatures[name] = output.as_signature_def(tensors)
            except ValueError as e:
                excluded[name] = str(e)
    for name, why in excluded.items():
        _log.warning("Export includes no signature %r: %s", name, why)
    return {k: v for k, v in signatures.items() if signature_def_utils.is_valid_signature(v)}

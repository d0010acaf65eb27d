"""``tf.contrib.layers`` layers built on ``tf.get_variable``: fully_connected and flatten."""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Union

from ... import nn
from ...framework.ops import GraphKeys, Tensor, add_to_collections, convert_to_tensor, name_scope
from ...init_ops import zeros_initializer
from ...ops import array_ops, math_ops
from ...variable_scopes import get_variable, variable_scope
from .initializers import xavier_initializer

__all__ = ["fully_connected", "flatten"]

Collections = Union[None, Sequence[str], Dict[str, Sequence[str]]]


def _variable_collections(variables_collections: Collections, name: str) -> list:
    """The collections a layer variable goes to: a list, or a dict by variable name."""
    if isinstance(variables_collections, dict):
        extra = variables_collections.get(name) or []
    else:
        extra = variables_collections or []
    return [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES] + \
        [c for c in extra if c not in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES)]


def _collect_outputs(outputs_collections, outputs: Tensor) -> Tensor:
    if outputs_collections:
        add_to_collections(outputs_collections, outputs)
    return outputs


def fully_connected(inputs, num_outputs: int, activation_fn: Optional[Callable] = nn.relu,
                    normalizer_fn: Optional[Callable] = None, normalizer_params=None,
                    weights_initializer=xavier_initializer(), weights_regularizer=None,
                    biases_initializer=zeros_initializer(), biases_regularizer=None,
                    reuse=None, variables_collections: Collections = None,
                    outputs_collections: Optional[Sequence[str]] = None, trainable: bool = True,
                    scope=None) -> Tensor:
    """``activation_fn(inputs @ weights + biases)`` with variables '<scope>/weights' [in, out]
    and '<scope>/biases' [out] (scope defaults to 'fully_connected', made unique).

    Inputs of rank > 2 are multiplied along their last dimension. With ``normalizer_fn``
    there are no biases: ``normalizer_fn(outputs, **normalizer_params)`` is applied instead.
    """
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of [<class 'int'>], got "
                         f"{type(num_outputs)}.")
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        in_shape = x.get_shape()
        if in_shape.ndims is not None and in_shape.ndims < 2:
            raise ValueError(f"fully_connected '{sc.name}': inputs must have rank at least 2, "
                             f"got shape {in_shape} ({x.name}).")
        num_inputs = None if in_shape.ndims is None else in_shape.as_list()[-1]
        if num_inputs is None:
            raise ValueError(f"fully_connected '{sc.name}': the last dimension of the inputs "
                             f"must be defined, got shape {in_shape} ({x.name}).")
        weights = get_variable("weights", shape=[num_inputs, num_outputs], dtype=x.dtype,
                               initializer=weights_initializer, regularizer=weights_regularizer,
                               trainable=trainable,
                               collections=_variable_collections(variables_collections, "weights"))
        if in_shape.ndims == 2:
            outputs = math_ops.matmul(x, weights)
        else:
            flat = array_ops.reshape(x, [-1, num_inputs])
            outputs = math_ops.matmul(flat, weights)
            out_shape = array_ops.concat(
                [array_ops.shape(x)[:-1], array_ops.constant([num_outputs])], 0)
            outputs = array_ops.reshape(outputs, out_shape)
            outputs.set_shape(in_shape[:-1].concatenate([num_outputs]))
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = get_variable("biases", shape=[num_outputs], dtype=x.dtype,
                                  initializer=biases_initializer, regularizer=biases_regularizer,
                                  trainable=trainable,
                                  collections=_variable_collections(variables_collections,
                                                                    "biases"))
            outputs = nn.bias_add(outputs, biases)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_outputs(outputs_collections, outputs)


def flatten(inputs, outputs_collections: Optional[Sequence[str]] = None,
            scope: Optional[str] = None) -> Tensor:
    """Reshapes [batch, d1, d2, ...] to [batch, d1 * d2 * ...]."""
    with name_scope(scope, "Flatten", [inputs]):
        x = convert_to_tensor(inputs)
        shape = x.get_shape()
        if shape.ndims is None or shape.ndims < 2:
            raise ValueError(f"Inputs must have a least 2 dimensions, got shape {shape} "
                             f"({x.name}).")
        rest = shape.as_list()[1:]
        if all(d is not None for d in rest):
            size = 1
            for d in rest:
                size *= d
            outputs = array_ops.reshape(x, [-1, size])
        else:
            outputs = array_ops.reshape(x, array_ops.stack([array_ops.shape(x)[0], -1]))
            outputs.set_shape([shape.as_list()[0], None])
        return _collect_outputs(outputs_collections, outputs)

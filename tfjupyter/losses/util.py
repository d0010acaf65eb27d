"""The loss collections: ``tf.losses.add_loss``, ``get_losses``, ``get_regularization_loss(es)``
and ``get_total_loss`` (TensorFlow 1.x's losses/util.py)."""
from __future__ import annotations

from typing import List, Optional

from ..framework.ops import GraphKeys, Tensor, add_to_collection, get_collection
from ..ops import array_ops, math_ops

__all__ = ["add_loss", "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss"]


def add_loss(loss: Tensor, loss_collection: Optional[str] = GraphKeys.LOSSES) -> None:
    """Adds ``loss`` to ``loss_collection`` (nothing when the collection is None or '')."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope: Optional[str] = None,
               loss_collection: str = GraphKeys.LOSSES) -> List[Tensor]:
    """The losses in ``loss_collection`` whose names match ``scope`` (a regex prefix)."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: Optional[str] = None) -> List[Tensor]:
    """The tensors of GraphKeys.REGULARIZATION_LOSSES (regularizers of variables and layers)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: Optional[str] = None,
                            name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses, or a constant 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return array_ops.constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: Optional[str] = None) -> Tensor:
    """The sum of the losses of GraphKeys.LOSSES (what the tf.losses functions add) and, by
    default, of the regularization losses. Raises ValueError when there are no losses."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("No losses to sum: GraphKeys.LOSSES and REGULARIZATION_LOSSES are empty "
                         "(build a loss with tf.losses first).")
    return math_ops.add_n(losses, name=name)

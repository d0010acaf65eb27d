"""``tf.contrib.legacy_seq2seq``: the per-time-step sequence losses (the PTB language model's
loss). Lists of [batch, classes] logits, [batch] targets and [batch] weights, one per step."""
from __future__ import annotations

from typing import Optional

from ..framework.ops import name_scope
from ..ops import array_ops, math_ops
from .. import nn

__all__ = ["sequence_loss_by_example", "sequence_loss"]


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps: bool = True,
                             softmax_loss_function=None, name: Optional[str] = None):
    """[batch] log-perplexities: the weighted cross-entropy summed over time steps (divided by
    the summed weights with ``average_across_timesteps``)."""
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError("Lengths of logits, weights, and targets must be the same "
                         f"{len(logits)}, {len(weights)}, {len(targets)}.")
    with name_scope(name, "sequence_loss_by_example", list(logits) + list(targets) + list(weights)):
        terms = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                crossent = nn.sparse_softmax_cross_entropy_with_logits(
                    labels=array_ops.reshape(target, [-1]), logits=logit)
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            terms.append(crossent * weight)
        log_perps = math_ops.add_n(terms)
        if average_across_timesteps:
            # The epsilon keeps all-zero weights from dividing by zero, as in TensorFlow.
            log_perps /= math_ops.add_n(list(weights)) + 1e-12
        return log_perps


def sequence_loss(logits, targets, weights, average_across_timesteps: bool = True,
                  average_across_batch: bool = True, softmax_loss_function=None,
                  name: Optional[str] = None):
    """The scalar sum of sequence_loss_by_example, divided by the batch size with
    ``average_across_batch``."""
    with name_scope(name, "sequence_loss", list(logits) + list(targets) + list(weights)):
        cost = math_ops.reduce_sum(sequence_loss_by_example(
            logits, targets, weights, average_across_timesteps=average_across_timesteps,
            softmax_loss_function=softmax_loss_function))
        if average_across_batch:
            batch_size = array_ops.shape(targets[0])[0]
            return cost / math_ops.cast(batch_size, cost.dtype)
        return cost

"""``tf.contrib.slim.prefetch_queue.prefetch_queue``: a FIFO queue that a queue runner keeps
filled with already-assembled batches, so a training step's dequeue does not wait for the
input pipeline (the multi-GPU trainers dequeue one batch per tower)."""
from __future__ import annotations

from typing import Optional

from ...framework.ops import name_scope
from ...ops import data_flow_ops, math_ops
from ...summary import summary_ops
from ...train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["prefetch_queue"]


def prefetch_queue(tensors, capacity: int = 8, num_threads: int = 1, dynamic_pad: bool = False,
                   shared_name: Optional[str] = None, name: Optional[str] = None):
    """A queue of ``tensors`` (a list or a dict of tensors) filled by ``num_threads`` threads;
    its ``dequeue()`` gives the same structure. Adds the fraction-full scalar summary."""
    if isinstance(tensors, dict):
        names, tensor_list = list(tensors), list(tensors.values())
    else:
        names, tensor_list = None, list(tensors)
    if not tensor_list:
        raise ValueError("prefetch_queue: expected at least one tensor")
    with name_scope(name, "prefetch_queue", tensor_list):
        queue_class = data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue
        queue = queue_class(capacity=capacity, dtypes=[t.dtype for t in tensor_list],
                            shapes=[t.shape for t in tensor_list], names=names,
                            shared_name=shared_name)
        enqueue = queue.enqueue(tensors)
        add_queue_runner(QueueRunner(queue, [enqueue] * num_threads))
        summary_ops.scalar(f"fraction_of_{capacity}_full",
                           math_ops.to_float(queue.size()) * (1.0 / capacity))
        return queue

"""Queue-based input pipelines (``tf.train.string_input_producer``, ``tf.train.batch``, ...), as
TensorFlow 1.x's ``training/input.py``.

Each function builds a queue and the ops that fill it, and registers a ``QueueRunner`` in the
graph's ``QUEUE_RUNNERS`` collection; ``tf.train.start_queue_runners(sess, coord)`` starts its
threads. The end of the input travels down the pipeline as in TensorFlow:

* an input producer with ``num_epochs`` counts epochs in a local variable (``limit_epochs``:
  run ``tf.local_variables_initializer()``); the enqueue after the last epoch fails with
  OutOfRangeError, and its runner closes the producer's queue;
* a reader reading from that queue then fails with OutOfRangeError once the queue is empty, so
  the runner of the batching queue fed by it closes that queue in turn (when its last thread
  ends);
* the batch dequeue then fails with OutOfRangeError, after handing out what is left: only whole
  batches, unless ``allow_smaller_final_batch``, which also gives the last, smaller batch.

The summaries TensorFlow adds (how full each queue is: ``fraction_of_<capacity>_full``) are
added too, to the SUMMARIES collection, costing nothing unless fetched.
"""
from __future__ import annotations

from typing import List, Optional

from ..framework import dtypes as _dtypes
from ..framework.ops import GraphKeys, Tensor, control_dependencies, convert_to_tensor, name_scope
from ..framework.tensor_shape import TensorShape, as_shape, unknown_shape
from ..ops import array_ops, math_ops
from ..ops import data_flow_ops
from ..ops import io_ops
from ..ops import random_ops
from ..summary import summary_ops
from .queue_runner import QueueRunner, add_queue_runner

__all__ = ["match_filenames_once", "limit_epochs", "input_producer", "string_input_producer",
           "range_input_producer", "slice_input_producer", "batch", "maybe_batch", "batch_join",
           "maybe_batch_join", "shuffle_batch", "maybe_shuffle_batch", "shuffle_batch_join",
           "maybe_shuffle_batch_join"]


# -- producers -------------------------------------------------------------------------------------
def match_filenames_once(pattern, name: Optional[str] = None):
    """A local variable holding the files that match ``pattern`` when it is initialized (by
    ``tf.local_variables_initializer()``), so the file list is taken once, not at every step."""
    from ..variables import Variable
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(io_ops.matching_files(pattern), name=scope, trainable=False,
                        validate_shape=False, collections=[GraphKeys.LOCAL_VARIABLES])


def limit_epochs(tensor, num_epochs: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """``tensor``, which can be evaluated ``num_epochs`` times; the next evaluation raises
    OutOfRangeError. The count is a local variable ("epochs"): run
    ``tf.local_variables_initializer()`` first."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    from ..variables import Variable
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        zero64 = convert_to_tensor(0, dtype=_dtypes.int64)
        epochs = Variable(zero64, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = io_ops.count_up_to(epochs, num_epochs)
        with control_dependencies([counter.op]):
            return array_ops.identity(tensor, name=scope)


def input_producer(input_tensor, element_shape=None, num_epochs: Optional[int] = None,
                   shuffle: bool = True, seed: Optional[int] = None, capacity: int = 32,
                   shared_name: Optional[str] = None, summary_name: Optional[str] = None,
                   name: Optional[str] = None, cancel_op=None):
    """A FIFO queue fed, by a QueueRunner, with the rows of ``input_tensor`` (shuffled anew
    every epoch with ``shuffle``), ``num_epochs`` times or forever; returns the queue."""
    with name_scope(name, "input_producer", [input_tensor]) as scope:
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.shape[1:] if input_tensor.shape.ndims is not None else unknown_shape()
        element_shape = rows.merge_with(as_shape(element_shape) if element_shape is not None
                                        else unknown_shape())
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype],
                                    shapes=[element_shape], shared_name=shared_name,
                                    name=scope)
        # One enqueue_many per epoch: the whole (shuffled) list goes in with one op.
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            summary_ops.scalar(summary_name,
                               math_ops.cast(q.size(), _dtypes.float32) * (1.0 / capacity))
        return q


def string_input_producer(string_tensor, num_epochs: Optional[int] = None, shuffle: bool = True,
                          seed: Optional[int] = None, capacity: int = 32,
                          shared_name: Optional[str] = None, name: Optional[str] = None,
                          cancel_op=None):
    """A queue of the strings (file names, usually) of a 1-D string tensor, for a reader."""
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not _is_variable(string_tensor) and \
            not len(string_tensor):
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=_dtypes.string)
        # An empty list (a pattern matching nothing) would make the runner enqueue nothing in
        # a loop, and readers wait forever: fail the enqueue instead, as TensorFlow does.
        check = io_ops._assert(math_ops.greater(array_ops.size(string_tensor), 0), not_null_err)
        with control_dependencies([check]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(input_tensor=string_tensor, element_shape=[],
                              num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                              capacity=capacity, shared_name=shared_name, name=scope,
                              summary_name=f"fraction_of_{capacity}_full", cancel_op=cancel_op)


def range_input_producer(limit, num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32,
                         shared_name: Optional[str] = None, name: Optional[str] = None):
    """A queue of the integers 0 .. limit-1 (int32)."""
    with name_scope(name, "input_producer", [limit]) as scope:
        range_tensor = math_ops.range(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, f"fraction_of_{capacity}_full", scope)


def slice_input_producer(tensor_list, num_epochs: Optional[int] = None, shuffle: bool = True,
                         seed: Optional[int] = None, capacity: int = 32,
                         shared_name: Optional[str] = None, name: Optional[str] = None):
    """One row (along dimension 0) of every tensor of ``tensor_list`` at a time, the same row
    of each: a list of tensors, each evaluation giving the next row."""
    with name_scope(name, "input_producer", list(tensor_list)):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        known = {t.shape.as_list()[0] for t in tensor_list if t.shape.ndims}
        known.discard(None)
        if len(known) > 1:
            raise ValueError(f"slice_input_producer: the tensors must have the same size in "
                             f"dimension 0, got {[t.shape for t in tensor_list]}")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


def _is_variable(x) -> bool:
    from ..variables import Variable
    return isinstance(x, Variable)


# -- batching: helpers -----------------------------------------------------------------------------
def _as_tensor_list(tensors) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors)]
    return list(tensors)


def _as_tensor_list_list(tensors_list) -> List[list]:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0])
        for d in tensors_list[1:]:
            if not isinstance(d, dict) or set(d) != keys:
                raise ValueError("If some tensors are dictionaries, all must be dictionaries "
                                 f"with the same keys; got keys {sorted(keys)} and "
                                 f"{sorted(d) if isinstance(d, dict) else type(d).__name__}")
    return [_as_tensor_list(t) for t in tensors_list]


def _as_original_type(original, dequeued):
    """The dequeued batch in the structure given: a dict for a dict, else a list (a single
    tensor when a single tensor was batched, as TensorFlow's queues return it)."""
    if isinstance(original, dict):
        if len(original) == 1:
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original))}
    return dequeued


def _validate(tensor_list) -> List[Tensor]:
    tensor_list = [convert_to_tensor(t) for t in tensor_list]
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return tensor_list


def _validate_join(tensor_list_list) -> List[List[Tensor]]:
    tensor_list_list = [[convert_to_tensor(t) for t in tl] for tl in tensor_list_list]
    if not tensor_list_list:
        raise ValueError("Expected at least one input in batch_join().")
    return tensor_list_list


def _validate_keep_input(keep_input, enqueue_many: bool) -> Tensor:
    keep_input = convert_to_tensor(keep_input, dtype=_dtypes.bool)
    ndims = keep_input.shape.ndims
    if ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _component_types(tensor_list_list) -> list:
    types = [t.dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        if [t.dtype for t in other] != types:
            raise TypeError(f"Expected types to be {[t.name for t in types]}, got "
                            f"{[t.dtype.name for t in other]}")
    return types


def _merge_shapes(shape_list, enqueue_many: bool) -> TensorShape:
    shapes = [as_shape(s) for s in shape_list]
    if enqueue_many:   # the elements' shapes, without the batch dimension
        for s in shapes:
            if s.ndims == 0:
                raise ValueError(f"Shape {s} must have rank at least 1: with enqueue_many, "
                                 "each tensor is a batch of examples")
        shapes = [s[1:] if s.ndims is not None else s for s in shapes]
    merged = shapes[0]
    for s in shapes[1:]:
        merged = merged.merge_with(s)
    return merged


def _shapes(tensor_list_list, shapes, enqueue_many: bool):
    if shapes is not None:
        return shapes
    n = len(tensor_list_list[0])
    for tl in tensor_list_list:
        if len(tl) != n:
            raise ValueError(f"Expected {n} tensors in each input, got {len(tl)}")
        for t in tl:
            if t.shape.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {t}")
    return [_merge_shapes([tl[i].shape for tl in tensor_list_list], enqueue_many)
            for i in range(n)]


def _which_queue(dynamic_pad: bool):
    return data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue


def _is_constant_true(t: Tensor) -> bool:
    value = array_ops._const(t)
    return value is not None and value.ndim == 0 and bool(value)


def _kept(tensor_list, keep_input: Tensor, enqueue_many: bool):
    """(tensors to enqueue, whether to enqueue them as a batch). Without tf.cond, a scalar
    ``keep_input`` that is not constant True turns the element into a batch of 1 or 0 rows:
    enqueue_many of nothing enqueues nothing."""
    if _is_constant_true(keep_input):
        return tensor_list, enqueue_many
    if keep_input.shape.ndims == 0:
        keep = array_ops.reshape(keep_input, [1])
        tensor_list = [array_ops.expand_dims(t, 0) for t in tensor_list]
    else:
        keep = keep_input
    return [array_ops.boolean_mask(t, keep) for t in tensor_list], True


def _enqueue(queue, tensor_list, threads: int, enqueue_many: bool, keep_input: Tensor) -> None:
    tensor_list, many = _kept(tensor_list, keep_input, enqueue_many)
    enqueue = queue.enqueue_many if many else queue.enqueue
    # One op, run by `threads` threads: each thread runs the whole subgraph feeding it (a read,
    # a parse), so the threads read and parse in parallel.
    add_queue_runner(QueueRunner(queue, [enqueue(tensor_list)] * threads))


def _enqueue_join(queue, tensor_list_list, enqueue_many: bool, keep_input: Tensor) -> None:
    ops = []
    for tl in tensor_list_list:
        tl, many = _kept(tl, keep_input, enqueue_many)
        ops.append((queue.enqueue_many if many else queue.enqueue)(tl))
    add_queue_runner(QueueRunner(queue, ops))


def _dequeue(queue, batch_size, allow_smaller_final_batch: bool, name: str):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _check_threads(num_threads: int) -> None:
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")


# -- batching --------------------------------------------------------------------------------------
def _batch(tensors, batch_size, keep_input, num_threads=1, capacity=32, enqueue_many=False,
           shapes=None, dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
           name=None):
    _check_threads(num_threads)
    tensor_list = _as_tensor_list(tensors)
    with name_scope(name, "batch", list(tensor_list) + [keep_input]) as scope:
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _component_types([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        summary_ops.scalar(f"fraction_of_{capacity}_full",
                           math_ops.cast(queue.size(), _dtypes.float32) * (1.0 / capacity))
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        return _as_original_type(tensors, dequeued)


def _batch_join(tensors_list, batch_size, keep_input, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    with name_scope(name, "batch_join", _flatten(tensor_list_list) + [keep_input]) as scope:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _component_types(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        summary_ops.scalar(f"fraction_of_{capacity}_full",
                           math_ops.cast(queue.size(), _dtypes.float32) * (1.0 / capacity))
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        return _as_original_type(tensors_list[0], dequeued)


def _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name):
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                         f"{min_after_dequeue}.")
    return data_flow_ops.RandomShuffleQueue(capacity=capacity,
                                            min_after_dequeue=min_after_dequeue, seed=seed,
                                            dtypes=types, shapes=shapes, shared_name=shared_name)


def _shuffle_summary(queue, capacity, min_after_dequeue) -> None:
    # How full the queue is above the min_after_dequeue elements it always keeps.
    full = math_ops.cast(math_ops.maximum(0, queue.size() - min_after_dequeue),
                         _dtypes.float32) * (1.0 / (capacity - min_after_dequeue))
    summary_ops.scalar(f"fraction_over_{min_after_dequeue}_of_"
                       f"{capacity - min_after_dequeue}_full", full)


def _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input, num_threads=1,
                   seed=None, enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                   shared_name=None, name=None):
    _check_threads(num_threads)
    tensor_list = _as_tensor_list(tensors)
    with name_scope(name, "shuffle_batch", list(tensor_list) + [keep_input]) as scope:
        tensor_list = _validate(tensor_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _component_types([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        _shuffle_summary(queue, capacity, min_after_dequeue)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        return _as_original_type(tensors, dequeued)


def _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                        seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    with name_scope(name, "shuffle_batch_join",
                    _flatten(tensor_list_list) + [keep_input]) as scope:
        tensor_list_list = _validate_join(tensor_list_list)
        keep_input = _validate_keep_input(keep_input, enqueue_many)
        types = _component_types(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _shuffle_queue(capacity, min_after_dequeue, seed, types, shapes, shared_name)
        _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        _shuffle_summary(queue, capacity, min_after_dequeue)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, scope)
        return _as_original_type(tensors_list[0], dequeued)


def _flatten(tensor_list_list) -> list:
    return [t for tl in tensor_list_list for t in tl]


def batch(tensors, batch_size, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
          name: Optional[str] = None):
    """Batches of ``batch_size`` of ``tensors`` (a list or dict of tensors, one example each;
    a batch of examples each with ``enqueue_many``), through a FIFO queue of ``capacity``
    filled by ``num_threads`` threads. ``dynamic_pad`` pads variable-size dimensions to the
    batch's largest. OutOfRangeError once the input has ended and no whole batch is left
    (``allow_smaller_final_batch``: once nothing is left; the batch dimension is then None)."""
    return _batch(tensors, batch_size, True, num_threads, capacity, enqueue_many, shapes,
                  dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch(tensors, keep_input, batch_size, num_threads: int = 1, capacity: int = 32,
                enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
                allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                name: Optional[str] = None):
    """As ``batch``, keeping only the examples for which ``keep_input`` (a bool scalar, or a
    vector over the batch with ``enqueue_many``) is true."""
    return _batch(tensors, batch_size, keep_input, num_threads, capacity, enqueue_many, shapes,
                  dynamic_pad, allow_smaller_final_batch, shared_name, name)


def batch_join(tensors_list, batch_size, capacity: int = 32, enqueue_many: bool = False,
               shapes=None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
               shared_name: Optional[str] = None, name: Optional[str] = None):
    """As ``batch``, from several lists (or dicts) of tensors of the same types and shapes,
    e.g. one per reader: one thread per list enqueues it, so a batch mixes their examples."""
    return _batch_join(tensors_list, batch_size, True, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity: int = 32,
                     enqueue_many: bool = False, shapes=None, dynamic_pad: bool = False,
                     allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                     name: Optional[str] = None):
    """As ``batch_join``, keeping only the examples for which ``keep_input`` is true."""
    return _batch_join(tensors_list, batch_size, keep_input, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads: int = 1,
                  seed: Optional[int] = None, enqueue_many: bool = False, shapes=None,
                  allow_smaller_final_batch: bool = False, shared_name: Optional[str] = None,
                  name: Optional[str] = None):
    """As ``batch``, through a RandomShuffleQueue: each batch is drawn at random from the
    queue, which keeps at least ``min_after_dequeue`` examples (until the input ends) so that
    batches mix examples from far apart in the input."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True, num_threads,
                          seed, enqueue_many, shapes, allow_smaller_final_batch, shared_name,
                          name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads: int = 1, seed: Optional[int] = None,
                        enqueue_many: bool = False, shapes=None,
                        allow_smaller_final_batch: bool = False,
                        shared_name: Optional[str] = None, name: Optional[str] = None):
    """As ``shuffle_batch``, keeping only the examples for which ``keep_input`` is true."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                          num_threads, seed, enqueue_many, shapes, allow_smaller_final_batch,
                          shared_name, name)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                       seed: Optional[int] = None, enqueue_many: bool = False, shapes=None,
                       allow_smaller_final_batch: bool = False,
                       shared_name: Optional[str] = None, name: Optional[str] = None):
    """As ``shuffle_batch``, from several lists (or dicts) of tensors, one thread each."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, True,
                               seed, enqueue_many, shapes, allow_smaller_final_batch,
                               shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed: Optional[int] = None, enqueue_many: bool = False,
                             shapes=None, allow_smaller_final_batch: bool = False,
                             shared_name: Optional[str] = None, name: Optional[str] = None):
    """As ``shuffle_batch_join``, keeping only the examples for which ``keep_input`` is true."""
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                               keep_input, seed, enqueue_many, shapes,
                               allow_smaller_final_batch, shared_name, name)

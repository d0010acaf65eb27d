"""Queues and conditional accumulators, as TensorFlow 1.x's ``data_flow_ops``.

A queue (FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue) or a ConditionalAccumulator is state
kept by a device, like a variable: the op that makes it (``FIFOQueueV2``, ...) outputs a scalar
string handle, and the ops that use it (``QueueEnqueueV2``, ``AccumulatorTakeGradient``, ...)
take that handle as a reference input, so that they run where the resource lives. Resources
with a ``shared_name`` are shared by every graph and session that runs on the device.

Dequeues block until there are enough elements, the queue is closed (OutOfRangeError) or the
step is cancelled; enqueues block while the queue is full. The kernels are in
``kernels/cpu/data_flow_kernels.py``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..framework import dtypes as _dtypes
from ..framework.ops import Operation, Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape, as_shape, unknown_shape
from . import math_ops
from .array_ops import _const_int
from .random_ops import get_seed
from ._shapes import scalar_input

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue",
           "ConditionalAccumulatorBase", "ConditionalAccumulator"]

_QUEUE_TYPES = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2")
_ACCUMULATOR_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


# -- shape rules -----------------------------------------------------------------------------------
def _handle_producer(op, types: Sequence[str]) -> Optional[Operation]:
    """The op that made the resource whose handle is input 0, if it is one of ``types``."""
    scalar_input(op, 0, (_dtypes.string,), "handle")
    src = op.inputs[0].op
    return src if src.type in types else None


@register_op("FIFOQueueV2", stateful=True)
@register_op("PaddingFIFOQueueV2", stateful=True)
@register_op("RandomShuffleQueueV2", stateful=True)
def _queue_shape(op):
    types = op.get_attr("component_types")
    shapes = op.get_attr("shapes")
    if not types:
        raise ValueError(f"A queue needs at least one component type ({op.name})")
    if shapes and len(shapes) != len(types):
        raise ValueError(f"Queue '{op.name}' has {len(types)} component types but "
                         f"{len(shapes)} shapes")
    if op.type == "PaddingFIFOQueueV2":
        if len(shapes) != len(types):
            raise ValueError(f"Shapes must be provided for all components, but received "
                             f"{len(types)} dtypes and {len(shapes)} shapes.")
        if any(s.ndims is None for s in shapes):
            raise ValueError(f"All shapes of PaddingFIFOQueue '{op.name}' must have a defined "
                             f"rank: {list(shapes)}")
    elif any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {list(shapes)}")
    if op.type == "RandomShuffleQueueV2":
        capacity, min_after = op.get_attr("capacity"), op.get_attr("min_after_dequeue")
        if min_after < 0:
            raise ValueError(f"min_after_dequeue {min_after} must be >= 0")
        if capacity >= 0 and min_after >= capacity:
            raise ValueError(f"min_after_dequeue {min_after} must be < capacity {capacity}")
    return [(_dtypes.string, TensorShape(()))]


def _queue_component_shapes(queue: Optional[Operation], n: int) -> List[TensorShape]:
    shapes = queue.get_attr("shapes") if queue is not None else ()
    return list(shapes) if shapes else [unknown_shape() for _ in range(n)]


def _check_component_types(op, queue: Optional[Operation], types) -> None:
    if queue is None:
        return
    want = list(queue.get_attr("component_types"))
    if list(types) != want:
        raise TypeError(f"Queue '{queue.name}' holds components of types "
                        f"[{', '.join(t.name for t in want)}], but '{op.name}' ({op.type}) uses "
                        f"[{', '.join(t.name for t in types)}]")


@register_op("QueueEnqueueV2", ref_inputs=(0,), stateful=True)
@register_op("QueueEnqueueManyV2", ref_inputs=(0,), stateful=True)
def _enqueue_shape(op):
    queue = _handle_producer(op, _QUEUE_TYPES)
    components = op.inputs[1:]
    if queue is None:
        return []
    types = queue.get_attr("component_types")
    if len(components) != len(types):
        raise ValueError(f"Queue '{queue.name}' has {len(types)} components, but "
                         f"{len(components)} tensors were enqueued by '{op.name}'")
    _check_component_types(op, queue, [t.dtype for t in components])
    many = op.type == "QueueEnqueueManyV2"
    batch = None
    for i, (t, shape) in enumerate(zip(components, _queue_component_shapes(queue, len(types)))):
        s = t.shape
        if many and s.ndims is not None:
            if s.ndims == 0:
                raise ValueError(f"Shape () must have rank at least 1: component {i} of an "
                                 f"enqueue_many to queue '{queue.name}' must be a batch")
            b = s.as_list()[0]
            if b is not None and batch is not None and b != batch:
                raise ValueError(f"Dimensions {batch} and {b} are not compatible: the "
                                 f"components enqueued by '{op.name}' need one batch size")
            batch = b if b is not None else batch
            s = TensorShape(s.as_list()[1:])
        elif many:
            continue
        if not s.is_compatible_with(shape):
            raise ValueError(f"Shapes {s} and {shape} are incompatible: component {i} "
                             f"enqueued to queue '{queue.name}' by '{op.name}'")
    return []


@register_op("QueueDequeueV2", ref_inputs=(0,), stateful=True)
def _dequeue_shape(op):
    queue = _handle_producer(op, _QUEUE_TYPES)
    types = op.get_attr("component_types")
    _check_component_types(op, queue, types)
    return list(zip(types, _queue_component_shapes(queue, len(types))))


@register_op("QueueDequeueManyV2", ref_inputs=(0,), stateful=True)
@register_op("QueueDequeueUpToV2", ref_inputs=(0,), stateful=True)
def _dequeue_many_shape(op):
    queue = _handle_producer(op, _QUEUE_TYPES)
    types = op.get_attr("component_types")
    _check_component_types(op, queue, types)
    n = _const_int(scalar_input(op, 1, (_dtypes.int32,), "n"))
    if n is not None and n < 0:
        raise ValueError(f"{op.type[5:-2]}Op requested {n} < 0 elements ('{op.name}')")
    batch = n if op.type == "QueueDequeueManyV2" else None
    return [(t, TensorShape([batch]).concatenate(s))
            for t, s in zip(types, _queue_component_shapes(queue, len(types)))]


@register_op("QueueCloseV2", ref_inputs=(0,), stateful=True)
def _close_shape(op):
    _handle_producer(op, _QUEUE_TYPES)
    return []


@register_op("QueueSizeV2", ref_inputs=(0,), stateful=True)
def _size_shape(op):
    _handle_producer(op, _QUEUE_TYPES)
    return [(_dtypes.int32, TensorShape(()))]


@register_op("QueueIsClosedV2", ref_inputs=(0,), stateful=True)
def _is_closed_shape(op):
    _handle_producer(op, _QUEUE_TYPES)
    return [(_dtypes.bool, TensorShape(()))]


@register_op("ConditionalAccumulator", stateful=True)
def _accumulator_shape(op):
    dtype = op.get_attr("dtype")
    if dtype not in _ACCUMULATOR_FLOATS:
        raise TypeError(f"ConditionalAccumulator '{op.name}' accumulates float16, float32 or "
                        f"float64 gradients, not {dtype.name}")
    reduction = op.get_attr("reduction_type")
    if reduction not in ("MEAN", "SUM"):
        raise ValueError(f"reduction_type must be 'MEAN' or 'SUM', got {reduction!r}")
    return [(_dtypes.string, TensorShape(()))]


@register_op("AccumulatorApplyGradient", ref_inputs=(0,), stateful=True)
def _apply_gradient_shape(op):
    acc = _handle_producer(op, ("ConditionalAccumulator",))
    scalar_input(op, 1, (_dtypes.int64,), "local_step")
    grad = op.inputs[2]
    dtype = op.get_attr("dtype")
    if grad.dtype is not dtype:
        raise TypeError(f"Gradient '{grad.name}' has dtype {grad.dtype.name}, but "
                        f"'{op.name}' applies {dtype.name} gradients")
    if acc is not None:
        if acc.get_attr("dtype") is not dtype:
            raise TypeError(f"Accumulator '{acc.name}' holds {acc.get_attr('dtype').name} "
                            f"gradients, not {dtype.name}")
        if not grad.shape.is_compatible_with(acc.get_attr("shape")):
            raise ValueError(f"Shapes {grad.shape} and {acc.get_attr('shape')} are "
                             f"incompatible: gradient applied to accumulator '{acc.name}'")
    return []


@register_op("AccumulatorTakeGradient", ref_inputs=(0,), stateful=True)
def _take_gradient_shape(op):
    acc = _handle_producer(op, ("ConditionalAccumulator",))
    scalar_input(op, 1, (_dtypes.int32,), "num_required")
    dtype = op.get_attr("dtype")
    if acc is not None and acc.get_attr("dtype") is not dtype:
        raise TypeError(f"Accumulator '{acc.name}' holds {acc.get_attr('dtype').name} "
                        f"gradients, not {dtype.name}")
    return [(dtype, acc.get_attr("shape") if acc is not None else unknown_shape())]


@register_op("AccumulatorSetGlobalStep", ref_inputs=(0,), stateful=True)
def _set_global_step_shape(op):
    _handle_producer(op, ("ConditionalAccumulator",))
    scalar_input(op, 1, (_dtypes.int64,), "new_global_step")
    return []


@register_op("AccumulatorNumAccumulated", ref_inputs=(0,), stateful=True)
def _num_accumulated_shape(op):
    _handle_producer(op, ("ConditionalAccumulator",))
    return [(_dtypes.int32, TensorShape(()))]


for _t in _QUEUE_TYPES + ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                          "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2",
                          "QueueSizeV2", "QueueIsClosedV2", "ConditionalAccumulator",
                          "AccumulatorApplyGradient", "AccumulatorTakeGradient",
                          "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated"):
    NotDifferentiable(_t)


# -- argument helpers, as TensorFlow's -------------------------------------------------------------
def _as_type_list(dtypes) -> List[_dtypes.DType]:
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    return [_dtypes.as_dtype(d) for d in dtypes]


def _as_shape_list(shapes, unknown_dim_allowed: bool = False,
                   unknown_rank_allowed: bool = False) -> Optional[List[TensorShape]]:
    if unknown_dim_allowed and (not isinstance(shapes, (list, tuple)) or not shapes or any(
            s is None or isinstance(s, int) for s in shapes)):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]  # a single shape, given as a list of dimensions
    shapes = [as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if not unknown_rank_allowed and any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes) -> Optional[List[str]]:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


# -- queues ----------------------------------------------------------------------------------------
class QueueBase:
    """A queue of tuples of tensors (its components): ``enqueue``/``dequeue`` one element,
    ``enqueue_many``/``dequeue_many``/``dequeue_up_to`` a batch along dimension 0, ``close``.

    Built by FIFOQueue, PaddingFIFOQueue and RandomShuffleQueue from the handle of their queue op.
    """

    def __init__(self, dtypes, shapes, names, queue_ref: Tensor):
        self._dtypes = list(dtypes)
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [as_shape(s) for s in shapes]
        else:
            self._shapes = [unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @property
    def queue_ref(self) -> Tensor:
        """The queue's handle (a scalar string tensor)."""
        return self._queue_ref

    @property
    def name(self) -> str:
        """The name of the queue op."""
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> List[_dtypes.DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> List[TensorShape]:
        return list(self._shapes)

    @property
    def names(self) -> Optional[List[str]]:
        return None if self._names is None else list(self._names)

    def _scope(self, name: Optional[str], default: str, vals=()):
        tensors = [v for v in vals if isinstance(v, Tensor)]
        return name_scope(name, f"{self._name}_{default}", [self._queue_ref] + tensors)

    def _check_enqueue_dtypes(self, vals) -> List[Tensor]:
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  "
                                 f"Dictionary: ({sorted(vals.keys(), key=str)}), Queue: "
                                 f"({sorted(self._names, key=str)})")
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue '{self.name}' has {len(self._dtypes)} components, but "
                             f"{len(vals)} values were given to enqueue")
        return [convert_to_tensor(v, dtype=d, name=f"component_{i}")
                for i, (v, d) in enumerate(zip(vals, self._dtypes))]

    def _flat_vals(self, vals) -> list:
        if isinstance(vals, dict):
            return list(vals.values())
        return list(vals) if isinstance(vals, (list, tuple)) else [vals]

    def enqueue(self, vals, name: Optional[str] = None) -> Operation:
        """An op that adds one element (a tensor, list/tuple, or dict for a queue with names);
        it blocks while the queue is full."""
        with self._scope(name, "enqueue", self._flat_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            return _new_op("QueueEnqueueV2", [self._queue_ref] + tensors,
                           {"Tcomponents": [t.dtype for t in tensors], "timeout_ms": -1},
                           name=scope)

    def enqueue_many(self, vals, name: Optional[str] = None) -> Operation:
        """An op that adds the elements of a batch: each component is sliced along dimension
        0, which must have the same size in every component."""
        with self._scope(name, "EnqueueMany", self._flat_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            return _new_op("QueueEnqueueManyV2", [self._queue_ref] + tensors,
                           {"Tcomponents": [t.dtype for t in tensors], "timeout_ms": -1},
                           name=scope)

    def _dequeue_return_value(self, tensors: List[Tensor]):
        if self._names:
            return {n: tensors[i] for i, n in enumerate(self._names)}
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    def dequeue(self, name: Optional[str] = None):
        """One element: a tensor, a list of tensors, or a dict for a queue with names. Running
        it blocks until an element is available; OutOfRangeError once the queue is closed and
        empty."""
        op = _new_op("QueueDequeueV2", [self._queue_ref],
                     {"component_types": list(self._dtypes), "timeout_ms": -1},
                     name=name or f"{self._name}_Dequeue")
        for t, shape in zip(op.outputs, self._shapes):
            t.set_shape(shape)
        return self._dequeue_return_value(op.outputs)

    def _dequeue_n(self, op_type: str, default: str, n, name: Optional[str]):
        with self._scope(name, default, [n]) as scope:
            n = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
            op = _new_op(op_type, [self._queue_ref, n],
                         {"component_types": list(self._dtypes), "timeout_ms": -1}, name=scope)
        batch = _const_int(n) if op_type == "QueueDequeueManyV2" else None
        for t, shape in zip(op.outputs, self._shapes):
            t.set_shape(TensorShape([batch]).concatenate(shape))
        return self._dequeue_return_value(op.outputs)

    def dequeue_many(self, n, name: Optional[str] = None):
        """``n`` elements, stacked along a new dimension 0. Blocks until there are ``n``;
        OutOfRangeError if the queue is closed with fewer."""
        return self._dequeue_n("QueueDequeueManyV2", "DequeueMany", n, name)

    def dequeue_up_to(self, n, name: Optional[str] = None):
        """As dequeue_many, but once the queue is closed returns the remaining elements when
        there are fewer than ``n`` (OutOfRangeError only when none remain)."""
        return self._dequeue_n("QueueDequeueUpToV2", "DequeueUpTo", n, name)

    def close(self, cancel_pending_enqueues: bool = False, name: Optional[str] = None) -> Operation:
        """An op that closes the queue: later enqueues fail, dequeues fail once it is empty.
        With ``cancel_pending_enqueues``, blocked enqueues are cancelled too."""
        return _new_op("QueueCloseV2", [self._queue_ref],
                       {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                       name=name or f"{self._name}_Close")

    def is_closed(self, name: Optional[str] = None) -> Tensor:
        return _new_op("QueueIsClosedV2", [self._queue_ref], {},
                       name=name or f"{self._name}_Is_Closed").outputs[0]

    def size(self, name: Optional[str] = None) -> Tensor:
        """The number of elements in the queue (int32)."""
        return _new_op("QueueSizeV2", [self._queue_ref], {},
                       name=name or f"{self._name}_Size").outputs[0]


def _queue_op(op_type: str, dtypes, shapes, capacity: int, shared_name: Optional[str],
              name: str, **extra) -> Tensor:
    attrs: Dict[str, Any] = {"component_types": dtypes, "shapes": list(shapes or []),
                             "capacity": int(capacity), "container": "",
                             "shared_name": shared_name or ""}
    attrs.update(extra)
    return _new_op(op_type, [], attrs, name=name).outputs[0]


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in the order they were enqueued."""

    def __init__(self, capacity: int, dtypes, shapes=None, names=None,
                 shared_name: Optional[str] = None, name: str = "fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        ref = _queue_op("FIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose shapes may have unknown dimensions: ``dequeue_many`` pads each
    component with zeros (empty strings) to the largest shape in the batch."""

    def __init__(self, capacity: int, dtypes, shapes, names=None,
                 shared_name: Optional[str] = None, name: str = "padding_fifo_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(f"Shapes must be provided for all components, but received "
                             f"{len(dtypes)} dtypes and {len(shapes)} shapes.")
        ref = _queue_op("PaddingFIFOQueueV2", dtypes, shapes, capacity, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order; until it is closed, a dequeue leaves
    at least ``min_after_dequeue`` elements (so that the mixing stays good)."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes, shapes=None, names=None,
                 seed: Optional[int] = None, shared_name: Optional[str] = None,
                 name: str = "random_shuffle_queue"):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # As TF: with a graph seed but no op seed, seed2 of a shared queue depends only on
            # the graph seed and the shared name, so that all its users agree.
            import hashlib
            digest = hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        ref = _queue_op("RandomShuffleQueueV2", dtypes, shapes, capacity, shared_name, name,
                        min_after_dequeue=int(min_after_dequeue), seed=int(seed1),
                        seed2=int(seed2))
        super().__init__(dtypes, shapes, names, ref)


# -- conditional accumulators ----------------------------------------------------------------------
class ConditionalAccumulatorBase:
    """An accumulator of gradients for one variable (used by SyncReplicasOptimizer)."""

    def __init__(self, dtype, shape, accumulator_ref: Tensor):
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = unknown_shape() if shape is None else as_shape(shape)
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self) -> Tensor:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    def num_accumulated(self, name: Optional[str] = None) -> Tensor:
        """The number of gradients accumulated since the last take_grad (int32)."""
        return _new_op("AccumulatorNumAccumulated", [self._accumulator_ref], {},
                       name=name or f"{self._name}_NumAccumulated").outputs[0]

    def set_global_step(self, new_global_step, name: Optional[str] = None) -> Operation:
        """An op that sets the accumulator's global step: gradients applied later with a
        smaller local_step are dropped."""
        step = math_ops.cast(convert_to_tensor(new_global_step), _dtypes.int64)
        return _new_op("AccumulatorSetGlobalStep", [self._accumulator_ref, step], {},
                       name=name or "AccumulatorSetGlobalStep")


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Accumulates the gradients applied with a ``local_step`` no older than its global step;
    ``take_grad(n)`` waits for ``n`` of them and returns their mean (or sum)."""

    def __init__(self, dtype, shape=None, shared_name: Optional[str] = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN"):
        dtype = _dtypes.as_dtype(dtype)
        shape = unknown_shape() if shape is None else as_shape(shape)
        ref = _new_op("ConditionalAccumulator", [],
                      {"dtype": dtype, "shape": shape, "container": "",
                       "shared_name": shared_name or "", "reduction_type": reduction_type},
                      name=name).outputs[0]
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name: Optional[str] = None) -> Operation:
        """An op that adds ``grad`` (dropped if ``local_step`` < the global step)."""
        grad = convert_to_tensor(grad, self._dtype)
        if not grad.shape.is_compatible_with(self._shape):
            raise ValueError(f"Shapes {grad.shape} and {self._shape} are incompatible: "
                             f"gradient applied to accumulator '{self._name}'")
        local_step = math_ops.to_int64(convert_to_tensor(local_step))
        return _new_op("AccumulatorApplyGradient", [self._accumulator_ref, local_step, grad],
                       {"dtype": self._dtype}, name=name or "AccumulatorApplyGradient")

    def take_grad(self, num_required, name: Optional[str] = None) -> Tensor:
        """The mean (or sum) of the accumulated gradients, once ``num_required`` have been
        applied; it resets the accumulator and increments its global step by one."""
        with name_scope(name, "AccumulatorTakeGradient", [self._accumulator_ref]) as scope:
            num_required = convert_to_tensor(num_required, dtype=_dtypes.int32,
                                             name="num_required")
            out = _new_op("AccumulatorTakeGradient", [self._accumulator_ref, num_required],
                          {"dtype": self._dtype}, name=scope).outputs[0]
        out.set_shape(self._shape)
        return out


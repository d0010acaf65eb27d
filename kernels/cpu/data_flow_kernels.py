"""CPU kernels for queues and conditional accumulators (TensorFlow's data_flow_ops).

A queue or an accumulator is a resource of its device: the first kernel that needs it creates
it in ``ctx.resources``, under its ``shared_name`` (so every graph and session running on the
device, e.g. between-graph workers sharing a ps task, sees the same one) or, without one, under
its op's name (a private resource, named ``_<n>_<op name>`` in messages, as TensorFlow does).
The ops that use a queue take its handle as a reference input: the placer puts them on the
queue's device and the kernel finds the resource through the queue op's attrs.

Blocking follows TensorFlow's queues: enqueue attempts and dequeue attempts are each served in
arrival order; a dequeue of n elements takes them as they arrive (so n may exceed the capacity)
and gives them back to the queue if it fails. Every wait goes through
``cancellation.wait_until``, so a closed session or a run deadline always ends it, and says
what it waits in (runtime/waits.py: the op, the queue's size and capacity, the accumulator's
gradients received and needed and the steps that applied them) for ``%tf_cluster why``.
"""
from __future__ import annotations

import collections
import itertools
import logging
import sys
import threading
import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.framework.tensor_shape import TensorShape
from tfjupyter.runtime import cancellation, events, waits
from tfjupyter.runtime.devices import private_key

from . import KERNELS
from .array_kernels import as_int

_log = logging.getLogger("tfjupyter")

QUEUE_TYPES = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2")
ACCUMULATOR_TYPES = ("ConditionalAccumulator",)
_UNBOUNDED = sys.maxsize
_resource_ids = itertools.count()  # the <n> of private resources' names, process-wide as in TF

Element = Tuple[np.ndarray, ...]   # one queue element: one array per component


def _dims_text(dims: Optional[Sequence[Optional[int]]]) -> str:
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(int(d)) for d in dims) + "]"


def _shape_dims(shape: TensorShape) -> Optional[Tuple[Optional[int], ...]]:
    return None if shape.ndims is None else tuple(shape.as_list())


def _compatible(dims: Optional[Tuple], shape: Tuple[int, ...]) -> bool:
    return dims is None or (len(dims) == len(shape) and
                            all(d is None or d == s for d, s in zip(dims, shape)))


class _Attempt:
    """A blocked take_grad, waiting for its turn."""
    __slots__ = ("cancelled",)

    def __init__(self):
        self.cancelled = False


class _QueueAttempt:
    """A blocked enqueue (``elements``, moved from ``pos`` on), dequeue (of ``n``, into
    ``got``) or plain close, with the condition its thread waits on."""
    __slots__ = ("cond", "n", "got", "elements", "pos", "closing", "cancelled", "done")

    def __init__(self, lock, n: int):
        self.cond = threading.Condition(lock)
        self.n = n
        self.got: List[Element] = []
        self.elements: List[Element] = []
        self.pos = 0
        self.closing = False
        self.cancelled = False
        self.done = False


# -- queues ----------------------------------------------------------------------------------------
class FIFOQueueResource:
    """First-in first-out. ``shapes`` is empty when the components' shapes are unspecified."""

    kind = "FIFOQueue"

    def __init__(self, name: str, dtypes: Sequence[np.dtype], shapes: Sequence[TensorShape],
                 capacity: int, signature: tuple):
        self.name = name
        self.dtypes = tuple(np.dtype(d) for d in dtypes)
        self.dims = tuple(_shape_dims(s) for s in shapes) if shapes else None
        # (dtype, shape) per component when every shape is fully defined: element()'s fast check.
        self._exact = None
        if self.dims is not None and all(d is not None and None not in d for d in self.dims):
            self._exact = tuple(zip(self.dtypes, self.dims))
        self.capacity = capacity if capacity >= 0 else _UNBOUNDED
        self.signature = signature
        self.closed = False
        self._lock = threading.Lock()
        # The blocked attempts, in arrival order (_QueueAttempt; a plain close waits among
        # the enqueues).
        self._enqueuers: collections.deque = collections.deque()
        self._dequeuers: collections.deque = collections.deque()
        self._items = self._new_store()
        self._what_enqueue = f"enqueue to {self.kind} '{name}'"
        self._what_dequeue = f"dequeue from {self.kind} '{name}'"
        self._what_close = f"close {self.kind} '{name}'"

    # The storage policy; RandomShuffleQueue overrides these four.
    def _new_store(self):
        return collections.deque()

    def _ready(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self._items)

    def _take(self, n: int) -> List[Element]:
        popleft = self._items.popleft
        return [popleft() for _ in range(n)]

    def _restore(self, elements: List[Element]) -> None:
        """Gives back the elements a failed dequeue had taken, where they came from."""
        self._items.extendleft(reversed(elements))

    # -- element checks (outside the lock) ---------------------------------------------------------
    def element(self, components: Sequence[np.ndarray], where: str) -> List[Element]:
        """One element to enqueue, checked and copied (the caller may reuse its arrays)."""
        if self._exact is not None and len(components) == len(self._exact):
            # Fully defined shapes, arrays of the queue's dtypes (what a kernel usually
            # produces): the checks below in a few comparisons.
            for c, (dtype, shape) in zip(components, self._exact):
                if type(c) is not np.ndarray or c.dtype != dtype or c.shape != shape:
                    break
            else:
                return [tuple([c.copy() for c in components])]
        if self.dims is not None:
            for i, c in enumerate(components):
                if not _compatible(self.dims[i], np.shape(c)):
                    raise errors.InvalidArgumentError(
                        None, None, f"Shape mismatch in tuple component {i}. Expected "
                        f"{_dims_text(self.dims[i])}, got {_dims_text(np.shape(c))}{where}")
        return [tuple(np.array(c, dtype=d, copy=True) for c, d in zip(components, self.dtypes))]

    def elements(self, components: Sequence[np.ndarray], where: str) -> List[Element]:
        """The elements of an enqueue_many batch (split along dimension 0), checked and copied."""
        batch = None
        for i, c in enumerate(components):
            shape = np.shape(c)
            if not shape:
                raise errors.InvalidArgumentError(
                    None, None, f"Component {i} of an enqueue_many to {self.kind} '{self.name}' "
                    f"must be a batch (rank >= 1), got a scalar{where}")
            if batch is None:
                batch = shape[0]
            elif shape[0] != batch:
                raise errors.InvalidArgumentError(
                    None, None, f"All input tensors must have the same size in the 0th "
                    f"dimension. Component {i} has {shape[0]}, and should have {batch}{where}")
            if self.dims is not None and not _compatible(self.dims[i], shape[1:]):
                expected = (batch,) + tuple(self.dims[i] or ())
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch in tuple component {i}. Expected "
                    f"{_dims_text(expected)}, got {_dims_text(shape)}{where}")
        copies = [np.array(c, dtype=d, copy=True) for c, d in zip(components, self.dtypes)]
        # Iterating a batch gives row views, except for rank 1 (numpy scalars, not 0-d arrays).
        rows = [list(c) if c.ndim > 1 else [c[j, ...] for j in range(batch)] for c in copies]
        return list(zip(*rows))

    def batch(self, elements: List[Element]) -> Tuple[np.ndarray, ...]:
        """dequeue_many's outputs: the elements stacked, one array per component."""
        if not elements:
            return tuple(np.empty((0,) + tuple(d or 0 for d in dims), dtype)
                         for dims, dtype in zip(self.dims, self.dtypes))
        # np.array of a list of equal-shape arrays stacks them in C, faster than np.stack; not
        # for strings: it would nest 0-d object arrays instead of unwrapping them.
        return tuple(np.stack([e[i] for e in elements]) if dtype == np.object_ else
                     np.array([e[i] for e in elements], dtype=dtype)
                     for i, dtype in enumerate(self.dtypes))

    def check_batchable(self, where: str) -> None:
        if self.dims is None:
            raise errors.InvalidArgumentError(
                None, None, f"{self.kind}'s DequeueMany and DequeueUpTo require the components "
                f"to have specified shapes.{where}")

    # -- operations --------------------------------------------------------------------------------
    # As TensorFlow's queues do, the thread that changes the queue does the work of the attempts
    # waiting at the heads of the two lines (``_serve``): it moves elements into the queue for
    # the first blocked enqueue and out of it for the first blocked dequeue, and wakes a
    # waiting thread only when its attempt is done or must end (closed, cancelled). Each
    # attempt waits on a condition of its own (over the queue's lock), so nobody else wakes.
    # Waking every waiter at each change, as a single condition would, cost a futex round trip
    # and a GIL hand-off per element in pipelines whose runner threads enqueue one element per
    # step while a consumer waits for its batch.
    def enqueue(self, elements: List[Element], where: str) -> None:
        with self._lock:
            if self.closed:
                raise errors.CancelledError(None, None,
                                            f"{self.kind} '{self.name}' is closed.{where}")
            if not self._enqueuers and len(self._items) + len(elements) <= self.capacity:
                self._items.extend(elements)
                if self._dequeuers:
                    self._serve()
                return
            attempt = _QueueAttempt(self._lock, 0)
            attempt.elements = elements
            self._enqueuers.append(attempt)
            try:
                self._serve()
                cancellation.wait_until(
                    attempt.cond, lambda: attempt.done or attempt.cancelled or self.closed,
                    self._what_enqueue, self._blocked(where))
                if attempt.done:
                    return
                if attempt.cancelled:
                    raise errors.CancelledError(None, None,
                                                f"Enqueue operation was cancelled{where}")
                raise errors.CancelledError(None, None,
                                            f"{self.kind} '{self.name}' is closed.{where}")
            finally:
                if not attempt.done:   # the elements moved so far stay in the queue
                    self._enqueuers.remove(attempt)
                    self._serve()

    def dequeue(self, n: int, allow_small_batch: bool, where: str) -> List[Element]:
        """n elements; fewer only for dequeue_up_to on a closed queue."""
        with self._lock:
            if not self._dequeuers and self._ready() >= n:
                got = self._take(n)
                if self._enqueuers:
                    self._serve()
                return got
            attempt = _QueueAttempt(self._lock, n)
            self._dequeuers.append(attempt)

            def ended() -> bool:
                # Done, or first in line on a closed queue that cannot complete it.
                return attempt.done or (self.closed and self._dequeuers[0] is attempt
                                        and len(self._items) < n - len(attempt.got))
            try:
                self._serve()
                cancellation.wait_until(attempt.cond, ended, self._what_dequeue,
                                        self._blocked(where))
                if attempt.done:
                    return attempt.got
                # Closed: what is left, for dequeue_up_to; else the elements go back.
                attempt.got.extend(self._take(len(self._items)))
                if allow_small_batch and attempt.got:
                    self._dequeuers.popleft()
                    attempt.done = True
                    self._serve()
                    return attempt.got
                raise errors.OutOfRangeError(
                    None, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                    f"elements (requested {n}, current size {len(attempt.got)}){where}")
            finally:
                if not attempt.done:
                    self._dequeuers.remove(attempt)
                    if attempt.got:
                        self._restore(attempt.got)
                    self._serve()

    def _serve(self) -> None:
        """Moves elements for the first blocked enqueue and the first blocked dequeue (and
        their successors) as far as the queue allows; wakes the attempts that are done. A
        plain close waiting its turn closes the queue here. Called with the lock held."""
        enqueuers, dequeuers, items = self._enqueuers, self._dequeuers, self._items
        progress = True
        while progress:
            progress = False
            if enqueuers and not self.closed:
                head = enqueuers[0]
                if head.closing:
                    enqueuers.popleft()
                    head.done = True
                    self._close_now()
                    head.cond.notify()
                    progress = True
                elif not head.cancelled and len(items) < self.capacity:
                    todo = head.elements
                    k = min(self.capacity - len(items), len(todo) - head.pos)
                    items.extend(todo[head.pos:head.pos + k])
                    head.pos += k
                    progress = True
                    if head.pos == len(todo):
                        enqueuers.popleft()
                        head.done = True
                        head.cond.notify()
            if dequeuers:
                head = dequeuers[0]
                missing = head.n - len(head.got)
                ready = self._ready()
                if missing and ready:
                    head.got.extend(self._take(min(missing, ready)))
                    progress = True
                if len(head.got) == head.n:
                    dequeuers.popleft()
                    head.done = True
                    head.cond.notify()
                    progress = True
                elif self.closed:
                    head.cond.notify()   # it cannot complete: it ends itself

    def _close_now(self) -> None:
        """Closes the queue and wakes every waiting attempt (they end, or take what is left)."""
        self.closed = True
        for attempt in itertools.chain(self._enqueuers, self._dequeuers):
            attempt.cond.notify()

    def close(self, cancel_pending_enqueues: bool, where: str) -> None:
        with self._lock:
            if cancel_pending_enqueues:
                for attempt in self._enqueuers:
                    attempt.cancelled = True
                self._close_now()
                self._serve()
                return
            if self.closed:
                raise errors.CancelledError(None, None,
                                            f"Queue '{self.name}' is already closed.{where}")
            # A plain close waits its turn behind the enqueues already pending, as in TF.
            attempt = _QueueAttempt(self._lock, 0)
            attempt.closing = True
            self._enqueuers.append(attempt)
            try:
                self._serve()
                cancellation.wait_until(attempt.cond, lambda: attempt.done or self.closed,
                                        self._what_close, self._blocked(where))
                self.closed = True
            finally:
                if not attempt.done:
                    self._enqueuers.remove(attempt)
                    self._serve()

    def size(self) -> int:
        with self._lock:
            return len(self._items)

    def _blocked(self, where: str) -> waits.Blocked:
        """What a thread blocked on this queue waits in (described when telemetry asks)."""
        site = where if isinstance(where, waits.OpSite) else None
        return waits.Blocked("queue", site, (site and site.resource) or self.name, self._describe)

    def _describe(self) -> dict:
        # Read without the lock: a poll must not wait for the queue, and lengths are atomic.
        return {"queue_type": self.kind, "size": len(self._items),
                "capacity": None if self.capacity == _UNBOUNDED else self.capacity,
                "closed": self.closed, "blocked_enqueues": len(self._enqueuers),
                "blocked_dequeues": len(self._dequeuers)}


class PaddingFIFOQueueResource(FIFOQueueResource):
    """A FIFO queue whose dequeue_many pads each component to the batch's largest shape."""

    kind = "PaddingFIFOQueue"

    def check_batchable(self, where: str) -> None:
        pass  # its shapes are always given (possibly with unknown dimensions)

    def batch(self, elements: List[Element]) -> Tuple[np.ndarray, ...]:
        out = []
        for i, (dims, dtype) in enumerate(zip(self.dims, self.dtypes)):
            shapes = [e[i].shape for e in elements]
            padded = tuple(d if d is not None else max((s[k] for s in shapes), default=0)
                           for k, d in enumerate(dims))
            fill = b"" if dtype == np.object_ else 0
            arr = np.full((len(elements),) + padded, fill, dtype=dtype)
            for j, e in enumerate(elements):
                arr[(j,) + tuple(slice(0, s) for s in e[i].shape)] = e[i]
            out.append(arr)
        return tuple(out)


class RandomShuffleQueueResource(FIFOQueueResource):
    """Dequeues a uniformly random element, keeping at least ``min_after_dequeue`` elements
    until the queue is closed."""

    kind = "RandomShuffleQueue"

    def __init__(self, name: str, dtypes: Sequence[np.dtype], shapes: Sequence[TensorShape],
                 capacity: int, signature: tuple, min_after_dequeue: int, seed: int, seed2: int):
        super().__init__(name, dtypes, shapes, capacity, signature)
        self.min_after_dequeue = min_after_dequeue
        bits = np.random.Philox() if seed == 0 and seed2 == 0 else \
            np.random.Philox(np.random.SeedSequence([int(seed), int(seed2)]))
        self._rng = np.random.Generator(bits)

    def _new_store(self):
        return []

    def _ready(self) -> int:
        if self.closed:
            return len(self._items)
        return max(0, len(self._items) - self.min_after_dequeue)

    def _take(self, n: int) -> List[Element]:
        items = self._items
        got = []
        for u in self._rng.random(n).tolist():  # one draw per element, uniform over the rest
            i = int(u * len(items))
            items[i], items[-1] = items[-1], items[i]
            got.append(items.pop())
        return got

    def _restore(self, elements: List[Element]) -> None:
        self._items.extend(elements)


# -- conditional accumulators ----------------------------------------------------------------------
class AccumulatorResource:
    """Sums (and averages) the gradients applied since the last take, ignoring stale ones."""

    kind = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: np.dtype, shape: TensorShape, reduction_type: str,
                 signature: tuple):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.dims = _shape_dims(shape)
        self.mean = reduction_type == "MEAN"
        self.signature = signature
        self.global_step = 0
        self.counter = 0
        self._sum: Optional[np.ndarray] = None
        self._cond = threading.Condition(threading.Lock())
        self._takers: collections.deque = collections.deque()
        self._applied_steps: List[int] = []   # the step ids of this round's gradients
        self._what_take = f"take_grad from accumulator '{name}'"

    def apply(self, grad: np.ndarray, local_step: int, where: str) -> None:
        if not _compatible(self.dims, np.shape(grad)):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch: accumulator '{self.name}' expects gradients of "
                f"shape {_dims_text(self.dims)}, got {_dims_text(np.shape(grad))}{where}")
        with self._cond:
            stale = local_step < self.global_step   # a stale gradient: dropped, as in TensorFlow
            if not stale:
                if self.counter == 0:
                    self._sum = np.array(grad, dtype=self.dtype, copy=True)
                elif self._sum.shape != np.shape(grad):
                    raise errors.InvalidArgumentError(
                        None, None, f"Shape mismatch: accumulator '{self.name}' holds gradients "
                        f"of shape {_dims_text(self._sum.shape)}, got "
                        f"{_dims_text(np.shape(grad))}{where}")
                else:
                    np.add(self._sum, grad, out=self._sum)
                self.counter += 1
                self._applied_steps.append(cancellation.current().step_id)
                if self._takers:
                    self._cond.notify_all()
        # Listeners run outside the lock: they may be slow, or read the accumulator.
        if stale and events.listeners["sync"]:
            events.publish("sync", events.SyncRecord(self.name, int(local_step), 0, 1, time.time()))

    def take(self, num_required: int, where: str) -> np.ndarray:
        """The mean (or sum) of the gradients once ``num_required`` have been applied; resets the
        accumulator and increments its global step."""
        if num_required <= 0:
            raise errors.InvalidArgumentError(
                None, None,
                f"Argument num_required must be positive, but was {num_required}{where}")
        with self._cond:
            if self._takers or self.counter < num_required:
                attempt = _Attempt()
                self._takers.append(attempt)
                site = where if isinstance(where, waits.OpSite) else None
                blocked = waits.Blocked(
                    "accumulator", site, (site and site.resource) or self.name,
                    lambda: {"received": self.counter, "needed": num_required,
                             "applied_steps": list(self._applied_steps),
                             "global_step": self.global_step})
                try:
                    cancellation.wait_until(
                        self._cond,
                        lambda: self._takers[0] is attempt and self.counter >= num_required,
                        self._what_take, blocked)
                finally:
                    self._takers.remove(attempt)
                    self._cond.notify_all()
            total, count, step = self._sum, self.counter, self.global_step
            self._sum, self.counter = None, 0
            self._applied_steps = []
            self.global_step += 1
        if events.listeners["sync"]:
            events.publish("sync", events.SyncRecord(self.name, step, count, 0, time.time()))
        if self.mean:
            np.divide(total, count, out=total)
        return total

    def set_global_step(self, step: int) -> None:
        with self._cond:
            if step < self.global_step:
                _log.warning("Attempt to set the global step of accumulator '%s' to a smaller "
                             "value: current %d >= %d new", self.name, self.global_step, step)
            self.global_step = step

    def num_accumulated(self) -> int:
        with self._cond:
            return self.counter


# -- finding a kernel's resource -------------------------------------------------------------------
def _node(op, ctx) -> waits.OpSite:
    """The op and device for errors and wait records, with the label of the op's resource
    (the queue or accumulator whose handle is its input 0, or that it makes)."""
    src = op.inputs[0].op if op.inputs else op
    return waits.OpSite(op.name, op.type, ctx.name, waits.resource_label(src))


def _resource_op(op, types: Sequence[str], what: str):
    """The op that made the resource ``op`` works on (itself, or the producer of input 0)."""
    if op.type in types:
        return op
    src = op.inputs[0].op
    if src.type not in types:
        raise errors.InvalidArgumentError(
            None, op, f"{op.type} '{op.name}' needs the handle of a {what} as input 0, but it "
                      f"comes from '{src.name}' ({src.type})")
    return src


def _resource_getter(op, ctx, types: Sequence[str], what: str,
                     make: Callable[[object, tuple, str], object],
                     signature: Callable[[object], tuple]):
    """A function returning the resource of ``op``: created on first use in the device's
    ResourceManager; a shared one made by another graph must have been made with equal attrs."""
    src = _resource_op(op, types, what)
    shared = src.get_attr("shared_name")
    container = src.get_attr("container")
    kind = what if shared else f"{what} (private)"
    name = shared or src.name
    session = getattr(src.graph, "session_handle", None)
    if not shared and session:   # a partition on a task, whose devices every session shares
        name = private_key(session, name)
    key = f"{container}/{name}" if container else name
    wanted = signature(src)
    resources = ctx.resources
    checked = [None]

    def create():
        return make(src, wanted, shared or f"_{next(_resource_ids)}_{src.name}")

    def get():
        resource = resources.lookup_or_create(kind, key, create)
        if resource is not checked[0]:
            if resource.signature != wanted:
                raise errors.InvalidArgumentError(None, op, _mismatch(what, resource, src, wanted))
            checked[0] = resource
        return resource
    return get


def _mismatch(what: str, resource, src, wanted: tuple) -> str:
    """TensorFlow's message for a shared resource requested with other attrs."""
    have_type, have_fields = resource.signature
    if have_type != wanted[0]:
        return (f"Shared {what} '{resource.name}' has type '{have_type}' that does not match "
                f"type of Node '{src.name}': {src.type}")
    for (label, have), (_, want) in zip(have_fields, wanted[1]):
        if have != want:
            verb = "were" if label.endswith("s") else "was"
            return (f"Shared {what} '{resource.name}' has {label} {have} but requested {label} "
                    f"{verb} {want}")
    return f"Shared {what} '{resource.name}' does not match node '{src.name}'"


def _queue_signature(src) -> tuple:
    """(op type, ((attr label, value), ...)): what two users of a shared queue must agree on."""
    types = src.get_attr("component_types")
    shapes = src.get_attr("shapes")
    capacity = src.get_attr("capacity")
    shape_texts = [_dims_text(_shape_dims(s)) for s in shapes]
    fields = [("component types", "[" + ", ".join(t.name for t in types) + "]"),
              ("component shapes", "[" + ", ".join(shape_texts) + "]"),
              ("capacity", capacity if capacity >= 0 else -1)]
    if src.type == "RandomShuffleQueueV2":
        fields.append(("min_after_dequeue", src.get_attr("min_after_dequeue")))
    return src.type, tuple(fields)


def _make_queue(src, signature: tuple, name: str):
    types = [t.as_numpy_dtype for t in src.get_attr("component_types")]
    shapes = list(src.get_attr("shapes"))
    capacity = src.get_attr("capacity")
    if src.type == "RandomShuffleQueueV2":
        return RandomShuffleQueueResource(name, types, shapes, capacity, signature,
                                          src.get_attr("min_after_dequeue"),
                                          src.get_attr("seed"), src.get_attr("seed2"))
    cls = PaddingFIFOQueueResource if src.type == "PaddingFIFOQueueV2" else FIFOQueueResource
    return cls(name, types, shapes, capacity, signature)


def _queue(op, ctx):
    return _resource_getter(op, ctx, QUEUE_TYPES, "queue", _make_queue, _queue_signature)


def _accumulator_signature(src) -> tuple:
    fields = (("dtype", src.get_attr("dtype").name),
              ("shape", _dims_text(_shape_dims(src.get_attr("shape")))),
              ("reduction_type", src.get_attr("reduction_type")))
    return src.type, fields


def _make_accumulator(src, signature: tuple, name: str):
    return AccumulatorResource(name, src.get_attr("dtype").as_numpy_dtype, src.get_attr("shape"),
                               src.get_attr("reduction_type"), signature)


def _accumulator(op, ctx):
    return _resource_getter(op, ctx, ACCUMULATOR_TYPES, "accumulator", _make_accumulator,
                            _accumulator_signature)


def resource_handle(get):
    """The kernel of an op that makes a resource (queue, accumulator, reader): the resource's
    name as a string scalar, the handle its users take as a reference input."""
    return lambda: np.array(get().name.encode(), dtype=object)


# -- queue kernels ---------------------------------------------------------------------------------
@KERNELS.register(*QUEUE_TYPES)
def queue_handle(op, ctx):
    get = _queue(op, ctx)
    return resource_handle(get)


@KERNELS.register("QueueEnqueueV2")
def queue_enqueue(op, ctx):
    get = _queue(op, ctx)
    where = _node(op, ctx)

    def run(*components):
        queue = get()
        queue.enqueue(queue.element(components, where), where)
    return run


@KERNELS.register("QueueEnqueueManyV2")
def queue_enqueue_many(op, ctx):
    get = _queue(op, ctx)
    where = _node(op, ctx)

    def run(*components):
        queue = get()
        queue.enqueue(queue.elements(components, where), where)
    return run


@KERNELS.register("QueueDequeueV2")
def queue_dequeue(op, ctx):
    get = _queue(op, ctx)
    where = _node(op, ctx)
    if len(op.outputs) == 1:
        return lambda: get().dequeue(1, False, where)[0][0]
    return lambda: get().dequeue(1, False, where)[0]


def _dequeue_many(op, ctx, allow_small_batch: bool):
    get = _queue(op, ctx)
    where = _node(op, ctx)
    single = len(op.outputs) == 1
    label = "DequeueUpToOp" if allow_small_batch else "DequeueManyOp"

    def run(n):
        n = as_int(n)
        if n < 0:
            raise errors.InvalidArgumentError(
                None, None, f"{label} requested {n} < 0 elements{where}")
        queue = get()
        queue.check_batchable(where)
        out = queue.batch(queue.dequeue(n, allow_small_batch, where))
        return out[0] if single else out
    return run


@KERNELS.register("QueueDequeueManyV2")
def queue_dequeue_many(op, ctx):
    return _dequeue_many(op, ctx, allow_small_batch=False)


@KERNELS.register("QueueDequeueUpToV2")
def queue_dequeue_up_to(op, ctx):
    return _dequeue_many(op, ctx, allow_small_batch=True)


@KERNELS.register("QueueCloseV2")
def queue_close(op, ctx):
    get = _queue(op, ctx)
    where = _node(op, ctx)
    cancel = bool(op.get_attr("cancel_pending_enqueues"))
    return lambda: get().close(cancel, where)


@KERNELS.register("QueueSizeV2")
def queue_size(op, ctx):
    get = _queue(op, ctx)
    return lambda: np.array(get().size(), dtype=np.int32)


@KERNELS.register("QueueIsClosedV2")
def queue_is_closed(op, ctx):
    get = _queue(op, ctx)
    return lambda: np.array(get().closed, dtype=np.bool_)


# -- accumulator kernels ---------------------------------------------------------------------------
@KERNELS.register(*ACCUMULATOR_TYPES)
def accumulator_handle(op, ctx):
    get = _accumulator(op, ctx)
    return resource_handle(get)


@KERNELS.register("AccumulatorApplyGradient")
def accumulator_apply_gradient(op, ctx):
    get = _accumulator(op, ctx)
    where = _node(op, ctx)
    return lambda local_step, grad: get().apply(grad, as_int(local_step), where)


@KERNELS.register("AccumulatorTakeGradient")
def accumulator_take_gradient(op, ctx):
    get = _accumulator(op, ctx)
    where = _node(op, ctx)
    return lambda num_required: get().take(as_int(num_required), where)


@KERNELS.register("AccumulatorSetGlobalStep")
def accumulator_set_global_step(op, ctx):
    get = _accumulator(op, ctx)
    return lambda step: get().set_global_step(as_int(step))


@KERNELS.register("AccumulatorNumAccumulated")
def accumulator_num_accumulated(op, ctx):
    get = _accumulator(op, ctx)
    return lambda: np.array(get().num_accumulated(), dtype=np.int32)

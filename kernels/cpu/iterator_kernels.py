"""CPU kernels of the iterator ops: an iterator is a resource of its device, as a queue is.

The op that makes an iterator (``IteratorV2``, ``OneShotIterator``) creates it in
``ctx.resources`` on first run, under its ``shared_name`` (every graph and session on the device
sees the same one) or, without one, under its op's name (private to the session), and outputs
that name as the iterator's string handle. The ops that use it (``MakeIterator``,
``IteratorGetNext``) look the handle up, so a handle fed through ``from_string_handle`` works the
same way. Initializing starts a pass over the dataset (``dataset_kernels.py``); initializing
again, or ``release()`` (the session closed), closes the pass before, which stops its
background threads.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.runtime.devices import private_key

from . import KERNELS
from .dataset_kernels import Dataset

_KIND = "iterator"
_NOT_INITIALIZED = ("GetNext() failed because the iterator has not been initialized. Ensure that "
                    "you have run the initializer operation for this iterator before getting "
                    "the next element.")
_CLOSE_WAIT_S = 10.0


class IteratorResource:
    def __init__(self, name: str, types: Sequence, shapes: Sequence):
        self.name = name
        self.types = [t.name for t in types]
        self.shapes = list(shapes)
        self._lock = threading.Lock()
        self._pass = None            # the generator of the current pass over the dataset
        self.started = False

    def initialize(self, dataset: Dataset, only_once: bool = False) -> None:
        with self._lock:
            if only_once and self.started:
                return
            self._close_pass()
            self._pass = dataset.elements()
            self.started = True

    def get_next(self, op):
        with self._lock:
            if self._pass is None:
                raise errors.FailedPreconditionError(None, op, _NOT_INITIALIZED)
            try:
                return next(self._pass)
            except StopIteration:
                self._pass = iter(())
                raise errors.OutOfRangeError(None, op, "End of sequence") from None

    def _close_pass(self) -> None:
        if self._pass is not None and hasattr(self._pass, "close"):
            self._pass.close()      # runs the pass's finally blocks: background threads end
        self._pass = None

    def release(self) -> None:
        """Ends the current pass (its device state is going away)."""
        if self._lock.acquire(timeout=_CLOSE_WAIT_S):
            try:
                self._close_pass()
            finally:
                self._lock.release()


def _handle(key: str) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = key.encode()
    return out


def _key(op) -> str:
    shared = op.get_attr("shared_name")
    container = op.get_attr("container")
    name = shared or op.name
    session = getattr(op.graph, "session_handle", None)
    if not shared and session:   # a partition on a task, whose devices every session shares
        name = private_key(session, name)
    return f"{container}/{name}" if container else name


def _lookup(ctx, handle, op) -> IteratorResource:
    key = handle.item() if isinstance(handle, np.ndarray) else handle
    key = key.decode() if isinstance(key, bytes) else str(key)

    def missing():
        raise errors.NotFoundError(None, op, f"{op.type} '{op.name}': no iterator '{key}' on "
                                   f"{ctx.name}; was its handle made in another session?")
    return ctx.resources.lookup_or_create(_KIND, key, missing)


def _check_types(op, resource: IteratorResource, types: Sequence) -> None:
    wanted = [t.name for t in types]
    if len(wanted) != len(resource.types):
        raise errors.InvalidArgumentError(
            None, op, f"{op.type} '{op.name}': number of components does not match: expected "
            f"{len(wanted)} types but iterator '{resource.name}' has {len(resource.types)}.")
    for i, (want, have) in enumerate(zip(wanted, resource.types)):
        if want != have:
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} '{op.name}': data type mismatch at component {i}: "
                f"expected {want} but got {have}.")


def _iterator_getter(op, ctx):
    key = _key(op)
    types, shapes = op.get_attr("output_types"), op.get_attr("output_shapes")
    resources = ctx.resources

    def get() -> IteratorResource:
        resource = resources.lookup_or_create(_KIND, key,
                                              lambda: IteratorResource(key, types, shapes))
        _check_types(op, resource, types)
        return resource
    return key, get


@KERNELS.register("IteratorV2")
def iterator_v2(op, ctx):
    key, get = _iterator_getter(op, ctx)
    handle = _handle(key)

    def run():
        get()
        return handle
    return run


@KERNELS.register("OneShotIterator")
def one_shot_iterator(op, ctx):
    key, get = _iterator_getter(op, ctx)
    handle = _handle(key)

    def run(dataset):
        get().initialize(dataset, only_once=True)
        return handle
    return run


@KERNELS.register("MakeIterator")
def make_iterator(op, ctx):
    def run(dataset, handle):
        _lookup(ctx, handle, op).initialize(dataset)
    return run


@KERNELS.register("IteratorGetNext")
def iterator_get_next(op, ctx):
    types = op.get_attr("output_types")
    single = len(types) == 1
    checked: list = [None]

    def run(handle):
        resource = _lookup(ctx, handle, op)
        if resource is not checked[0]:
            _check_types(op, resource, types)
            checked[0] = resource
        # Fresh arrays, as TensorFlow fetches are: elements may be views of a dataset's
        # constants or of a cache, which a caller's writes must not reach.
        element = [np.array(c) for c in resource.get_next(op)]
        return element[0] if single else tuple(element)
    return run


@KERNELS.register("IteratorFromStringHandle")
def iterator_from_string_handle(op, ctx):
    types = op.get_attr("output_types")

    def run(handle):
        _check_types(op, _lookup(ctx, handle, op), types)
        return handle
    return run


@KERNELS.register("IteratorToStringHandle")
def iterator_to_string_handle(op, ctx):
    return lambda handle: handle


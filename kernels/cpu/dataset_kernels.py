"""CPU kernels of the dataset ops (``tfjupyter/ops/data_ops.py``): each makes a ``Dataset``, a
description that ``elements()`` walks.

A dataset op's kernel runs when the step that needs it runs (an iterator's initializer): it
turns its inputs (tensors, the datasets it transforms, the values its function captured) into a
``Dataset`` object, the op's ``variant`` output. Nothing is read then: ``elements()`` starts one
pass, a Python generator of elements (a tuple of arrays, one per component), pulled by the
iterator (``iterator_kernels.py``). ``repeat`` calls it once per epoch, so each pass starts
afresh: a reshuffling ``shuffle`` draws a new order, a ``cache`` replays the first pass.

Functions (``map``, ``filter``, ``flat_map``, ``interleave``) are compiled once per kernel into
``executor.Plan``s, as control flow's functions are, and run per element. ``prefetch`` and a
parallel ``map`` move work to background threads (``BackgroundPump``, ``_parallel_map``) that
run under a cancellation token of their own: closing the pass (a re-initialized iterator, a
closed session) cancels it, so their waits end, and joins them.
"""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import pickle
import threading
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from tfjupyter.framework import errors
from tfjupyter.runtime import cancellation

from . import KERNELS
from .control_flow_kernels import FunctionHost

Element = Tuple[np.ndarray, ...]
AUTOTUNE = -1
# A closing pass waits this long for a background thread's current work (a slow map call);
# after that, the thread ends on its own when the call returns.
_THREAD_JOIN_S = 1.0


class Dataset:
    """A dataset at run time: ``elements()`` is one pass over it."""

    def elements(self) -> Iterator[Element]:
        raise NotImplementedError


def _scalar(value) -> int:
    return int(np.asarray(value).reshape(()))


def _paths(filenames: np.ndarray) -> List[str]:
    return [f.decode("utf-8", "surrogateescape") if isinstance(f, bytes) else str(f)
            for f in np.asarray(filenames, dtype=object).reshape(-1)]


def _string(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


# -- sources ---------------------------------------------------------------------------------------
class TensorSlices(Dataset):
    def __init__(self, op, components: Sequence[np.ndarray]):
        components = [np.asarray(c) for c in components]
        for c in components:
            if c.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, op, f"{op.type} '{op.name}': every component must have rank >= 1 to be "
                    "sliced, got a scalar")
        sizes = {c.shape[0] for c in components}
        if len(sizes) > 1:
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} '{op.name}': all components must have the same size in "
                f"dimension 0, got {[c.shape[0] for c in components]}")
        self.components = components
        self.n = sizes.pop()

    def elements(self):
        components = self.components
        for i in range(self.n):
            # A slice keeps a string component an object array (c[i] would be a bare bytes).
            yield tuple([c[i:i + 1].reshape(c.shape[1:]) for c in components])


class Tensors(Dataset):
    def __init__(self, components: Sequence[np.ndarray]):
        self.element = tuple(np.asarray(c) for c in components)

    def elements(self):
        yield self.element


class Range(Dataset):
    def __init__(self, op, start, stop, step):
        self.start, self.stop, self.step = _scalar(start), _scalar(stop), _scalar(step)
        if self.step == 0:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': step must be a "
                                              "non-zero integer.")

    def elements(self):
        for i in range(self.start, self.stop, self.step):
            yield (np.array(i, dtype=np.int64),)


class TFRecords(Dataset):
    def __init__(self, filenames, compression):
        self.paths, self.compression = _paths(filenames), compression

    def elements(self):
        from tfjupyter.python_io import RecordReader
        for path in self.paths:
            with RecordReader(path, self.compression) as reader:
                while True:
                    record = reader.read()
                    if record is None:
                        break
                    yield (_string(record),)


class TextLines(Dataset):
    def __init__(self, filenames, compression):
        self.paths, self.compression = _paths(filenames), compression

    def elements(self):
        from tfjupyter.python_io import read_chunks
        for path in self.paths:
            rest = b""
            for chunk in read_chunks(path, self.compression):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:   # TensorFlow's ReadLine: the "\n", then a "\r" before it
                    yield (_string(line[:-1] if line.endswith(b"\r") else line),)
            if rest:
                yield (_string(rest[:-1] if rest.endswith(b"\r") else rest),)


class FixedLengthRecords(Dataset):
    def __init__(self, op, filenames, header, record, footer, compression):
        self.paths, self.compression = _paths(filenames), compression
        self.header, self.record, self.footer = _scalar(header), _scalar(record), _scalar(footer)
        if self.record <= 0:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': record_bytes "
                                              f"must be positive, got {self.record}")

    def elements(self):
        from tfjupyter.python_io import read_chunks
        size = self.record
        for path in self.paths:
            data = b"".join(read_chunks(path, self.compression))
            body = data[self.header:len(data) - self.footer]
            for start in range(0, len(body) - size + 1, size):
                yield (_string(body[start:start + size]),)


class Generator(Dataset):
    """``from_generator``: ``flat_elements(*args)`` (the API's wrapper of the user's generator)
    yields flat tuples of arrays of the dataset's dtypes; here each is checked against its
    shapes."""

    def __init__(self, op, flat_elements: Callable, args):
        self.op, self.flat_elements, self.args = op, flat_elements, list(args)
        self.shapes = [s.as_list() if s.ndims is not None else None
                       for s in op.get_attr("output_shapes")]

    def elements(self):
        op = self.op
        try:
            for values in self.flat_elements(*self.args):
                out = []
                for value, shape in zip(values, self.shapes):
                    if shape is not None and (len(value.shape) != len(shape) or any(
                            w is not None and w != g for w, g in zip(shape, value.shape))):
                        raise errors.InvalidArgumentError(
                            None, op, f"`generator` yielded an element of shape "
                            f"{tuple(value.shape)} where an element of shape "
                            f"{tuple(shape)} was expected.")
                    out.append(value)
                yield tuple(out)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': {e}") from e


# -- transformations -------------------------------------------------------------------------------
class Zip(Dataset):
    def __init__(self, inputs: Sequence[Dataset]):
        self.inputs = list(inputs)

    def elements(self):
        for parts in zip(*[d.elements() for d in self.inputs]):
            yield tuple(c for part in parts for c in part)


class Concatenate(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        self.first, self.second = first, second

    def elements(self):
        yield from self.first.elements()
        yield from self.second.elements()


class Batch(Dataset):
    def __init__(self, op, input: Dataset, batch_size, drop_remainder):
        self.op, self.input = op, input
        self.size, self.drop = _scalar(batch_size), bool(drop_remainder)
        if self.size <= 0:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': batch_size must "
                                              f"be greater than zero, got {self.size}")

    def elements(self):
        it = self.input.elements()
        while True:
            batch = list(itertools.islice(it, self.size))
            if not batch or (self.drop and len(batch) < self.size):
                return
            yield self._stack(batch)

    def _stack(self, batch: List[Element]) -> Element:
        out = []
        for i in range(len(batch[0])):
            first = batch[0][i].shape
            for k, element in enumerate(batch):
                if element[i].shape != first:
                    raise errors.InvalidArgumentError(
                        None, self.op, f"Cannot batch tensors with different shapes in component "
                        f"{i}. First element had shape {list(first)} and element {k} had shape "
                        f"{list(element[i].shape)}.")
            out.append(np.stack([element[i] for element in batch]))
        return tuple(out)


class PaddedBatch(Batch):
    def __init__(self, op, input, batch_size, padded_shapes, padding_values, drop_remainder):
        super().__init__(op, input, batch_size, drop_remainder)
        self.padded_shapes = [[int(d) for d in np.asarray(s).reshape(-1)] for s in padded_shapes]
        self.padding_values = [np.asarray(v) for v in padding_values]

    def _stack(self, batch):
        out = []
        for i, (want, pad) in enumerate(zip(self.padded_shapes, self.padding_values)):
            shapes = [element[i].shape for element in batch]
            if any(len(s) != len(want) for s in shapes):
                raise errors.InvalidArgumentError(
                    None, self.op, f"{self.op.type} '{self.op.name}': component {i} has rank "
                    f"{len(shapes[0])}, but its padded shape {want} has rank {len(want)}")
            target = [max(s[d] for s in shapes) if w < 0 else w for d, w in enumerate(want)]
            if any(s[d] > target[d] for s in shapes for d in range(len(want))):
                raise errors.InvalidArgumentError(
                    None, self.op, "Attempted to pad to a smaller size than the input element.")
            dtype = batch[0][i].dtype
            padded = np.empty([len(batch)] + target, dtype=dtype)
            padded[...] = pad.astype(dtype) if dtype != object else pad
            for k, element in enumerate(batch):
                padded[(k,) + tuple(slice(0, n) for n in element[i].shape)] = element[i]
            out.append(padded)
        return tuple(out)


class Shuffle(Dataset):
    """TensorFlow's algorithm: a buffer of ``buffer_size`` elements, from which a uniformly
    random one is taken and replaced by the next input element. Each pass draws from a
    generator seeded by (seed, seed2, pass number), so a seeded shuffle gives the same orders
    every time the iterator starts, and a new one each epoch unless
    ``reshuffle_each_iteration`` is false."""

    def __init__(self, op, input, buffer_size, seed, seed2, reshuffle):
        self.input, self.size = input, _scalar(buffer_size)
        if self.size <= 0:
            raise errors.InvalidArgumentError(None, op, f"{op.type} '{op.name}': buffer_size must "
                                              f"be greater than zero, got {self.size}")
        seed, seed2 = _scalar(seed), _scalar(seed2)
        self.seeds = None if seed == 0 and seed2 == 0 else [seed, seed2]
        self.reshuffle = reshuffle
        self.passes = 0

    def elements(self):
        if self.seeds is None:
            rng = np.random.default_rng()
        else:
            rng = np.random.default_rng(self.seeds + [self.passes if self.reshuffle else 0])
        self.passes += 1
        buffer: list = []
        draws = _uniforms(rng)
        for element in self.input.elements():
            buffer.append(element)
            if len(buffer) == self.size:
                i = int(next(draws) * len(buffer))
                buffer[i], buffer[-1] = buffer[-1], buffer[i]
                yield buffer.pop()
        while buffer:
            i = int(next(draws) * len(buffer))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    """Uniform floats in [0, 1), drawn a block at a time (one draw per element costs more than
    the rest of the shuffle)."""
    while True:
        yield from rng.random(1024).tolist()


class Repeat(Dataset):
    def __init__(self, input, count):
        self.input, self.count = input, _scalar(count)

    def elements(self):
        done = 0
        while self.count < 0 or done < self.count:
            empty = True
            for element in self.input.elements():
                empty = False
                yield element
            done += 1
            if empty:       # repeating nothing forever is still nothing (as TensorFlow)
                return


class Take(Dataset):
    def __init__(self, input, count):
        self.input, self.count = input, _scalar(count)

    def elements(self):
        it = self.input.elements()
        yield from (it if self.count < 0 else itertools.islice(it, self.count))


class Skip(Dataset):
    def __init__(self, input, count):
        self.input, self.count = input, _scalar(count)

    def elements(self):
        it = self.input.elements()
        if self.count < 0:
            return
        for _ in itertools.islice(it, self.count):
            pass
        yield from it


class Cache(Dataset):
    """The first complete pass is kept (in memory, or in ``filename``) and replayed after."""

    def __init__(self, input, filename: str):
        self.input = input
        self.path = filename + ".tfjupyter-cache" if filename else None
        self.kept: Optional[List[Element]] = None

    def elements(self):
        if self.kept is None and self.path and os.path.exists(self.path):
            with open(self.path, "rb") as f:
                self.kept = pickle.load(f)
        if self.kept is not None:
            yield from self.kept
            return
        seen = []
        for element in self.input.elements():
            seen.append(element)
            yield element
        self.kept = seen
        if self.path:
            tmp = f"{self.path}.tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                pickle.dump(seen, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)


class Prefetch(Dataset):
    def __init__(self, input, buffer_size):
        self.input = input
        size = _scalar(buffer_size)
        self.size = 4 if size == AUTOTUNE else max(size, 1)

    def elements(self):
        pump = BackgroundPump(self.input.elements(), self.size, "prefetch")
        try:
            yield from pump
        finally:
            pump.close()


class BackgroundPump:
    """A thread pulling ``source`` into a buffer of at most ``capacity`` elements; iterating
    takes them in order, an error where it happened. ``close()`` ends the thread: its waits go
    through a cancellation token of its own, which close cancels."""

    def __init__(self, source: Iterator[Element], capacity: int, what: str):
        self._source, self._capacity = source, capacity
        self._what = what
        self._buffer: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._ended = False          # the source ended or failed (its error is buffered)
        self._token = cancellation.CancellationToken()
        self._thread = threading.Thread(target=self._fill, name=f"tfjupyter-data-{what}",
                                        daemon=True)
        self._thread.start()

    def _fill(self) -> None:
        cond, buffer = self._cond, self._buffer
        with cancellation.step_scope(self._token):
            try:
                while True:
                    with cond:
                        cancellation.wait_until(cond, lambda: len(buffer) < self._capacity,
                                                f"{self._what} buffer")
                    try:
                        item = (True, next(self._source))
                    except StopIteration:
                        break
                    except Exception as e:  # noqa: BLE001 - handed to the consumer, in order
                        item = (False, e)
                    with cond:
                        buffer.append(item)
                        cond.notify_all()
                    if not item[0]:
                        break
            except errors.CancelledError:
                pass            # closed: the consumer is gone
            finally:
                self._source.close()
                with cond:
                    self._ended = True
                    cond.notify_all()

    def __iter__(self):
        cond, buffer = self._cond, self._buffer
        while True:
            with cond:
                cancellation.wait_until(cond, lambda: buffer or self._ended,
                                        f"{self._what} buffer")
                if not buffer:
                    return
                ok, value = buffer.popleft()
                cond.notify_all()
            if not ok:
                raise value
            yield value

    def close(self) -> None:
        self._token.cancel(f"the {self._what} thread was stopped")
        self._thread.join(_THREAD_JOIN_S)


# -- functions -------------------------------------------------------------------------------------
def _compile(op, ctx, key: str) -> Callable[[list], list]:
    plan = FunctionHost(op, ctx).compile(op.get_attr(key))
    return plan.run


class Map(Dataset):
    def __init__(self, input, fn, captured, parallel: int):
        self.input, self.fn, self.captured, self.parallel = input, fn, list(captured), parallel

    def elements(self):
        fn, captured = self.fn, self.captured
        if self.parallel <= 1:
            for element in self.input.elements():
                yield tuple(fn(list(element) + captured))
            return
        yield from _parallel_map(self.input.elements(), lambda e: tuple(fn(list(e) + captured)),
                                 self.parallel)


def _parallel_map(elements: Iterator[Element], fn, width: int) -> Iterator[Element]:
    """``map(fn, elements)`` on ``width`` threads, in order (as TensorFlow's parallel map)."""
    token = cancellation.CancellationToken()

    def call(element):
        with cancellation.step_scope(token):
            return fn(element)

    pool = concurrent.futures.ThreadPoolExecutor(width, thread_name_prefix="tfjupyter-data-map")
    pending: collections.deque = collections.deque()
    try:
        for element in elements:
            pending.append(pool.submit(call, element))
            if len(pending) > width:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    finally:
        token.cancel("the parallel map was stopped")
        pool.shutdown(wait=True, cancel_futures=True)
        elements.close()


def _result(future: concurrent.futures.Future):
    """A future's result, waited for as a kernel waits: a closed session ends the wait."""
    step = cancellation.current()
    while True:
        try:
            return future.result(timeout=0.05)
        except concurrent.futures.TimeoutError:
            step.check("parallel map")


class Filter(Dataset):
    def __init__(self, input, predicate, captured):
        self.input, self.predicate, self.captured = input, predicate, list(captured)

    def elements(self):
        predicate, captured = self.predicate, self.captured
        for element in self.input.elements():
            if predicate(list(element) + captured)[0]:
                yield element


class FlatMap(Dataset):
    def __init__(self, input, fn, captured):
        self.input, self.fn, self.captured = input, fn, list(captured)

    def elements(self):
        for element in self.input.elements():
            yield from self.fn(list(element) + self.captured)[0].elements()


class Interleave(Dataset):
    """TensorFlow's interleave: ``cycle_length`` datasets open at once, ``block_length``
    elements from each in turn; a dataset that ends is replaced, in its place in the cycle,
    by the dataset of the next input element."""

    def __init__(self, op, input, fn, captured, cycle_length, block_length):
        self.input, self.fn, self.captured = input, fn, list(captured)
        self.cycle, self.block = _scalar(cycle_length), _scalar(block_length)
        if self.cycle == AUTOTUNE:
            self.cycle = os.cpu_count() or 1
        if self.cycle <= 0 or self.block <= 0:
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} '{op.name}': cycle_length and block_length must be "
                f"positive, got {self.cycle} and {self.block}")

    def elements(self):
        inputs = self.input.elements()
        slots: List[Optional[Iterator[Element]]] = [None] * self.cycle
        open_count, index, in_block, inputs_done = 0, 0, 0, False
        while not inputs_done or open_count:
            current = slots[index]
            if current is not None:
                element = next(current, None)
                if element is not None:
                    yield element
                    in_block += 1
                    if in_block == self.block:
                        in_block, index = 0, (index + 1) % self.cycle
                    continue
                slots[index] = None
                open_count -= 1
                in_block, index = 0, (index + 1) % self.cycle
            elif not inputs_done:
                args = next(inputs, None)
                if args is None:
                    inputs_done = True
                else:
                    slots[index] = self.fn(list(args) + self.captured)[0].elements()
                    open_count += 1
            else:
                in_block, index = 0, (index + 1) % self.cycle


# -- kernels ---------------------------------------------------------------------------------------
def _compression(op) -> str:
    return op.get_attr("compression_type")


KERNELS.register("TensorSliceDataset")(lambda op, ctx: lambda *c: TensorSlices(op, c))
KERNELS.register("TensorDataset")(lambda op, ctx: lambda *c: Tensors(c))
KERNELS.register("RangeDataset")(lambda op, ctx: lambda *a: Range(op, *a))
KERNELS.register("TFRecordDataset")(
    lambda op, ctx: lambda filenames, buffer_size: TFRecords(filenames, _compression(op)))
KERNELS.register("TextLineDataset")(
    lambda op, ctx: lambda filenames, buffer_size: TextLines(filenames, _compression(op)))
KERNELS.register("FixedLengthRecordDataset")(
    lambda op, ctx: lambda filenames, header, record, footer, buffer_size: FixedLengthRecords(
        op, filenames, header, record, footer, _compression(op)))
KERNELS.register("ZipDataset")(lambda op, ctx: lambda *inputs: Zip(inputs))
KERNELS.register("ConcatenateDataset")(lambda op, ctx: lambda a, b: Concatenate(a, b))
KERNELS.register("BatchDataset")(lambda op, ctx: lambda d, size, drop: Batch(op, d, size, drop))
KERNELS.register("RepeatDataset")(lambda op, ctx: lambda d, count: Repeat(d, count))
KERNELS.register("TakeDataset")(lambda op, ctx: lambda d, count: Take(d, count))
KERNELS.register("SkipDataset")(lambda op, ctx: lambda d, count: Skip(d, count))
KERNELS.register("CacheDataset")(
    lambda op, ctx: lambda d, filename: Cache(d, _path_text(filename)))
KERNELS.register("PrefetchDataset")(lambda op, ctx: lambda d, size: Prefetch(d, size))


def _path_text(value) -> str:
    paths = _paths(value)
    return paths[0] if paths else ""


@KERNELS.register("PaddedBatchDataset")
def padded_batch(op, ctx):
    n = len(op.get_attr("output_types"))

    def run(d, batch_size, drop, *shapes_and_values):
        return PaddedBatch(op, d, batch_size, shapes_and_values[:n], shapes_and_values[n:], drop)
    return run


@KERNELS.register("ShuffleDataset")
def shuffle(op, ctx):
    reshuffle = op.get_attr("reshuffle_each_iteration")
    return lambda d, size, seed, seed2: Shuffle(op, d, size, seed, seed2, reshuffle)


@KERNELS.register("GeneratorDataset")
def generator(op, ctx):
    from tfjupyter.ops.script_ops import FUNCTIONS
    token = op.get_attr("token")

    def run(*args):
        flat_elements = FUNCTIONS.get(token)
        if flat_elements is None:
            raise errors.InvalidArgumentError(
                None, op, f"{op.type} '{op.name}': its generator lives in the process that "
                f"built the graph, not in this one (pid {os.getpid()})")
        return Generator(op, flat_elements, args)
    return run


@KERNELS.register("MapDataset")
def map_dataset(op, ctx):
    fn = _compile(op, ctx, "f")
    parallel = op.get_attr("num_parallel_calls")
    if parallel == AUTOTUNE:
        parallel = os.cpu_count() or 1
    return lambda d, *captured: Map(d, fn, captured, parallel)


@KERNELS.register("FilterDataset")
def filter_dataset(op, ctx):
    predicate = _compile(op, ctx, "predicate")
    return lambda d, *captured: Filter(d, predicate, captured)


@KERNELS.register("FlatMapDataset")
def flat_map_dataset(op, ctx):
    fn = _compile(op, ctx, "f")
    return lambda d, *captured: FlatMap(d, fn, captured)


@KERNELS.register("InterleaveDataset")
def interleave_dataset(op, ctx):
    fn = _compile(op, ctx, "f")
    return lambda d, cycle, block, *captured: Interleave(op, d, fn, captured, cycle, block)

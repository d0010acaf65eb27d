"""Session: runs parts of a graph on this process's devices."""
from __future__ import annotations

import collections
import contextlib
import itertools
import sys
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..framework import dtypes, errors
from ..framework.device import DeviceSpec
from ..framework.ops import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from ..framework.sparse_tensor import SparseTensor, SparseTensorValue
from ..runtime import cancellation, events
from ..runtime.devices import Device, local_devices
from ..runtime.executor import Plan, StepStats
from ..runtime.placer import Placer, format_placement_line
from .config import ConfigProto, RunMetadata, RunOptions

__all__ = ["Session", "InteractiveSession", "get_default_session"]

_session_ids = itertools.count(1)
_last_run_session = None  # weakref to the session that ran last (for %tf_placement)


def last_run_session() -> Optional["BaseSession"]:
    """The session whose run() finished last in this process, if it is still alive."""
    return _last_run_session() if _last_run_session is not None else None


class _FetchStructure:
    """Flattens nested fetches (lists, tuples, namedtuples, dicts) and rebuilds the results."""

    def __init__(self, graph: Graph, fetches):
        self.elements: List[Any] = []   # unique Tensors and Operations, in first-seen order
        self._index: Dict[Any, int] = {}
        self._build = self._flatten(graph, fetches)

    def _add(self, element) -> int:
        i = self._index.get(element)
        if i is None:
            i = self._index[element] = len(self.elements)
            self.elements.append(element)
        return i

    def _flatten(self, graph: Graph, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        if isinstance(fetch, SparseTensor):  # fetched as its three tensors
            parts = [self._flatten(graph, t)
                     for t in (fetch.indices, fetch.values, fetch.dense_shape)]
            return lambda v: SparseTensorValue(*[b(v) for b in parts])
        if isinstance(fetch, IndexedSlices):  # its tensors; dense_shape may be None
            parts = [self._flatten(graph, t) if t is not None else (lambda v: None)
                     for t in (fetch.values, fetch.indices, fetch.dense_shape)]
            return lambda v: IndexedSlicesValue(*[b(v) for b in parts])
        if isinstance(fetch, (list, tuple)) and not hasattr(fetch, "_as_graph_element"):
            builders = [self._flatten(graph, f) for f in fetch]
            if hasattr(fetch, "_fields"):   # namedtuple
                cls = type(fetch)
                return lambda v: cls(*[b(v) for b in builders])
            cls = type(fetch)
            if cls is list:
                return lambda v: [b(v) for b in builders]
            return lambda v: cls(b(v) for b in builders)
        if isinstance(fetch, collections.abc.Mapping):
            keys = list(fetch.keys())
            builders = [self._flatten(graph, fetch[k]) for k in keys]
            cls = type(fetch)
            return lambda v: cls(zip(keys, [b(v) for b in builders]))
        try:
            element = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a "
                            f"string or Tensor. ({e})") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})"
                             ) from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. "
                             f"({e.args[0]})") from None
        i = self._add(element)
        if isinstance(element, Operation):
            return lambda v: None
        if element.shape.ndims == 0:
            return lambda v: _scalar(v[i])
        return lambda v: v[i]

    def build(self, values: List):
        return self._build(values)


class _FeedConverter:
    """Checks and converts one fed value for its tensor: dtype first, then static shape."""

    __slots__ = ("tensor", "np_dtype", "dims", "shape_text")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        self.np_dtype = np.dtype(tensor.dtype.as_numpy_dtype)
        shape = tensor.shape
        self.dims = None if shape.ndims is None else tuple(shape.as_list())
        self.shape_text = "(?)" if shape.ndims is None else str(shape).replace("?", "?")

    def __call__(self, value):
        if type(value) is np.ndarray and value.dtype == self.np_dtype:
            arr = value
        else:
            arr = self._convert(value)
        dims = self.dims
        if dims is not None and (arr.ndim != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, arr.shape))):
            raise ValueError(f"Cannot feed value of shape {arr.shape} for Tensor "
                             f"'{self.tensor.name}', which has shape '{self.shape_text}'")
        return arr

    def _convert(self, value):
        name = self.tensor.name
        if isinstance(value, (Tensor, Operation)):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object (feeding {name}). "
                            "Acceptable feed values include Python scalars, strings, lists, "
                            "numpy ndarrays, or TensorHandles.")
        want = self.tensor.dtype
        if want is dtypes.string:
            try:
                from ..framework.ops import _as_string_array
                return _as_string_array(value)
            except TypeError as e:
                raise TypeError(f"Cannot feed {value!r} to string Tensor '{name}': {e}") from None
        arr = np.asarray(value)
        kind = arr.dtype.kind
        if kind in "SU":  # TensorFlow converts as numpy does: "1.5" is a float, "a" a ValueError
            try:
                return arr.astype(self.np_dtype)
            except ValueError as e:
                raise ValueError(f"Cannot feed {_short(value)} to Tensor '{name}' of dtype "
                                 f"{want.name}: {e}") from None
        if kind in "OV" or (kind == "c" and not want.is_complex):
            raise TypeError(f"Cannot feed a value of type {arr.dtype} to Tensor '{name}' of "
                            f"dtype {want.name}")
        if want.is_bool and kind != "b":
            raise TypeError(f"Cannot feed a value of dtype {arr.dtype} to bool Tensor '{name}'")
        if want.is_integer and kind == "f" and arr.size and not np.all(np.mod(arr, 1) == 0):
            raise TypeError(f"Cannot feed non-integer values of dtype {arr.dtype} to Tensor "
                            f"'{name}' of dtype {want.name}: they would be truncated")
        return arr.astype(self.np_dtype, copy=False)


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _StepProbe:
    """Where a step's StepRecord finds its examples and global step, decided once per plan
    (the rule is in runtime/events.py), so a listened step pays a few attribute reads."""

    __slots__ = ("mode", "index", "static", "dequeued", "global_step", "override")

    # mode: how examples are found
    NONE, STATIC, FEED_LEADING, FEED_VALUE, FETCH_VALUE, DEQUEUED = range(6)

    def __init__(self):
        self.mode = _StepProbe.NONE
        self.index = -1
        self.static = 0
        self.dequeued = None
        self.global_step = -1   # index in the plan's results, or -1
        self.override = None    # the graph's examples_per_step collection when decided

    def examples(self, feeds: list, results: list) -> int:
        mode = self.mode
        try:
            if mode == 2:   # FEED_LEADING
                v = feeds[self.index]
                return int(v.shape[0]) if v.ndim else 0
            if mode == 1:   # STATIC
                return self.static
            if mode == 5:   # DEQUEUED
                return int(self.dequeued[0])
            if mode == 3:   # FEED_VALUE
                return int(np.asarray(feeds[self.index]).reshape(-1)[0])
            if mode == 4:   # FETCH_VALUE
                return int(np.asarray(results[self.index]).reshape(-1)[0])
        except (AttributeError, IndexError, TypeError, ValueError):
            pass
        return 0

    def global_step_of(self, results: list) -> Optional[int]:
        if self.global_step < 0:
            return None
        try:
            return int(np.asarray(results[self.global_step]).reshape(-1)[0])
        except (IndexError, TypeError, ValueError):
            return None


def _global_step_tensors(graph: Graph) -> set:
    """The tensors whose value is the graph's global step: the variable, its read snapshot,
    Identity ops of it, and the hooks' shared read (``global_step/add``)."""
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif found:
        return set()
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return set()
    base = getattr(step, "_variable", step)
    if not isinstance(base, Tensor):
        return set()
    tensors = {base}
    snapshot = getattr(step, "_snapshot", None)
    if isinstance(snapshot, Tensor):
        tensors.add(snapshot)
    for op in base.consumers():
        if op.type in ("Identity", "Snapshot") and op._outputs:
            tensors.add(op._outputs[0])
    from ..train.basic_session_run_hooks import _GLOBAL_STEP_READ_KEY
    tensors.update(t for t in graph.get_collection(_GLOBAL_STEP_READ_KEY) if isinstance(t, Tensor))
    return tensors


def _step_probe(graph: Graph, tensors: List[Optional[Tensor]], feed_tensors: tuple,
                targets: List[Operation], allow_extra: bool = True):
    """The StepProbe of a plan, and any tensor the plan should fetch beyond the caller's (the
    examples override, when the step computes it anyway and ``allow_extra``)."""
    from ..runtime.executor import needed_ops
    from ..train.training_util import EXAMPLES_PER_STEP_KEY, get_examples_per_step
    probe = _StepProbe()
    probe.override = graph._collections.get(EXAMPLES_PER_STEP_KEY)
    extra = []
    steps = _global_step_tensors(graph)
    for i, t in enumerate(tensors):
        if t is not None and t in steps:
            probe.global_step = i
            break
    override = get_examples_per_step(graph)
    if isinstance(override, int):
        probe.mode, probe.static = _StepProbe.STATIC, override
        return probe, extra
    if isinstance(override, str):
        try:
            tensor = graph.as_graph_element(override, allow_tensor=True, allow_operation=False)
        except (KeyError, ValueError, TypeError):
            tensor = None
        if tensor is not None:
            if tensor in feed_tensors:
                probe.mode, probe.index = _StepProbe.FEED_VALUE, feed_tensors.index(tensor)
                return probe, extra
            if tensor in tensors:
                probe.mode, probe.index = _StepProbe.FETCH_VALUE, tensors.index(tensor)
                return probe, extra
            if allow_extra and tensor.op in needed_ops(tensors, list(feed_tensors), targets):
                probe.mode, probe.index = _StepProbe.FETCH_VALUE, len(tensors)
                extra.append(tensor)
                return probe, extra
    unknown_leading = [i for i, t in enumerate(feed_tensors)
                       if t.shape.ndims and t.shape.as_list()[0] is None]
    if unknown_leading:
        probe.mode, probe.index = _StepProbe.FEED_LEADING, unknown_leading[0]
        return probe, extra
    for i, t in enumerate(feed_tensors):
        if t.shape.ndims is None:
            probe.mode, probe.index = _StepProbe.FEED_LEADING, i
            return probe, extra
        if t.shape.ndims >= 1:
            probe.mode, probe.static = _StepProbe.STATIC, t.shape.as_list()[0]
            return probe, extra
    probe.mode = _StepProbe.DEQUEUED   # resolved once the plan exists (plan.dequeued)
    return probe, extra


def _resolve_dequeued(probe: _StepProbe, plan) -> None:
    if probe.mode == _StepProbe.DEQUEUED:
        probe.dequeued = getattr(plan, "dequeued", None)
        if probe.dequeued is None:
            probe.mode = _StepProbe.NONE


_EXAMPLES_PER_STEP_KEY = "examples_per_step"   # train.training_util.EXAMPLES_PER_STEP_KEY


class BaseSession:
    def __init__(self, target: str = "", graph: Optional[Graph] = None,
                 config: Optional[ConfigProto] = None):
        self.graph = graph if graph is not None else get_default_graph()
        if not isinstance(self.graph, Graph):
            raise TypeError(f"graph must be a tf.Graph, got {type(self.graph).__name__}")
        self.config = config if config is not None else ConfigProto()
        self._operation_timeout_ms = self.config.operation_timeout_in_ms or 0
        self.target = target
        self.id = next(_session_ids)
        self._cluster = None
        default_task = None
        if target:
            from ..distributed.master import ClusterConnection
            self._cluster = ClusterConnection(target, self.config)
            self.devices: List[Device] = self._cluster.devices
            job, task = self._cluster.target_task
            default_task = DeviceSpec(job=job, replica=0, task=task)
        else:
            self.devices = local_devices(device_count=self.config.device_count,
                                         gpu_options=self.config.gpu_options)
        self._placer = Placer(self.devices, self.config.allow_soft_placement, default_task)
        self._plans: Dict[Any, Tuple[_FetchStructure, Plan, List[_FeedConverter], _StepProbe]] = {}
        self._closed = False
        self._lock = threading.Lock()
        self._active_steps: set = set()
        self.steps = 0
        self.last_placement: List[events.PlacementRecord] = []
        self._weakref = weakref.ref(self)
        self._apply_thread_config()
        if self.config.log_device_placement:
            self._print_device_mapping()

    # -- configuration ---------------------------------------------------------------------------
    def _apply_thread_config(self) -> None:
        n = self.config.intra_op_parallelism_threads
        if n and n > 0:
            from ..kernels.cpu._threads import set_intra_op_threads
            set_intra_op_threads(n)

    def _print_device_mapping(self) -> None:
        described = [d for d in self.devices if d.description]
        if not described:
            print("Device mapping: no known devices.")
        else:
            print("Device mapping:")
            for d in described:
                print(f"{d.name} -> {d.description}")
        sys.stdout.flush()

    def list_devices(self) -> List[Device]:
        return list(self.devices)

    # -- placement -------------------------------------------------------------------------------
    def _place(self, ops: List[Operation]) -> List[events.PlacementRecord]:
        new = self._placer.place(ops)
        if new and self.config.log_device_placement:
            for record in new:
                print(format_placement_line(record))
            sys.stdout.flush()
        if new and events.listeners["placement"]:
            events.publish("placement", new)
        return [self._placer.records[op] for op in ops]

    @property
    def placer(self) -> Placer:
        """What this session has placed so far: ``records`` (op -> PlacementRecord) and
        ``assigned`` (op -> Device); runs place the ops they need on first use."""
        return self._placer

    @property
    def placement(self) -> List[events.PlacementRecord]:
        """Every placement decision this session has made, in graph order."""
        return sorted(self._placer.records.values(),
                      key=lambda r: self.graph._ops_by_name[r.op]._id)

    # -- running ----------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options: Optional[RunOptions] = None,
            run_metadata: Optional[RunMetadata] = None):
        """Runs the ops needed for ``fetches`` and returns their values in the same structure."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        feed_tensors, feed_values = self._resolve_feeds(feed_dict)
        key = (_fetch_key(fetches), feed_tensors)
        entry = self._plans.get(key) if key[0] is not None else None
        if entry is None:
            entry = self._compile(fetches, feed_tensors)
            if key[0] is not None:
                self._plans[key] = entry
        return self._run_entry(key, entry, feed_values, options, run_metadata)

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """A function that runs ``fetches`` as ``run`` would, taking the values of the tensors
        in ``feed_list`` as positional arguments (TF 1.x ``Session.make_callable``).

        The fetch structure, the feeds and the plan are resolved once, here, so each call pays
        only for the step (queue runners run one small step many times). With
        ``accept_options`` it also takes the keyword arguments ``options`` and
        ``run_metadata``."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if feed_list is None:
            feed_list = []
        elif not isinstance(feed_list, (list, tuple)):
            raise TypeError("`feed_list` must be a list or tuple.")
        given = [self._feed_tensor(f) for f in feed_list]
        for i, tensor in enumerate(given):
            if any(tensor is other for other in given[:i]):
                raise ValueError(f"feed_list has Tensor {tensor.name} more than once")
        # The plan's feeds are in run()'s canonical order; order[j] is the argument fed to
        # its j-th feed.
        order = sorted(range(len(given)),
                       key=lambda i: (given[i]._op._id, given[i]._value_index))
        feed_tensors = tuple(given[i] for i in order)
        fetch_key = _fetch_key(fetches)
        # Shared with run() when run() would cache the plan; else a key of this callable's own
        # (still in _plans: closing the session releases every plan there).
        key = (fetch_key if fetch_key is not None else object(), feed_tensors)
        entry = self._plans.get(key)
        if entry is None:
            entry = self._plans[key] = self._compile(fetches, feed_tensors)
        n = len(given)

        def call(*args, options=None, run_metadata=None):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if len(args) != n:
                raise errors.InvalidArgumentError(
                    None, None, f"Expected {n} argument{'' if n == 1 else 's'} (the values of "
                    f"feed_list), got {len(args)}")
            # _plans holds the entry as _reprobe last left it.
            return self._run_entry(key, self._plans.get(key, entry), [args[i] for i in order],
                                   options, run_metadata)

        if accept_options:
            return call
        return lambda *args: call(*args)

    def _feed_tensor(self, key) -> Tensor:
        """The tensor a feed key (a Tensor of this graph, or its name) stands for."""
        if isinstance(key, Tensor):
            if key.graph is not self.graph:
                raise ValueError(f"Cannot feed Tensor {key.name}: it is not an element of "
                                 "this session's graph.")
            return key
        try:
            return self.graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (KeyError, ValueError, TypeError) as e:
            raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: "
                            f"{e.args[0] if e.args else e}") from None

    def _run_entry(self, key, entry, feed_values: list, options: Optional[RunOptions],
                   run_metadata: Optional[RunMetadata]):
        """Runs a compiled (structure, plan, converters, probe) with the feeds' values in the
        plan's feed order; the fetches' values in their structure."""
        structure, plan, converters, probe = entry
        values = [convert(v) for convert, v in zip(converters, feed_values)]
        traced = options is not None and options.trace_level and run_metadata is not None
        stats = None
        if traced:
            stats = StepStats()
        else:
            # Sampled for trace listeners (events.request_traces); untraced runs pay one read.
            every = events.trace_every
            if every and events.listeners["trace"] and (self.steps + 1) % every == 0:
                stats = StepStats()
        # TensorFlow: RunOptions.timeout_in_ms, else ConfigProto.operation_timeout_in_ms,
        # bounds every blocking operation of the step; zero or less means no deadline.
        timeout_ms = (options.timeout_in_ms if options is not None and options.timeout_in_ms
                      else self._operation_timeout_ms)
        token = cancellation.CancellationToken(timeout_ms / 1000 if timeout_ms > 0 else None)
        self._active_steps.add(token)
        start = time.perf_counter()
        try:
            with cancellation.step_scope(token):
                if stats is None:
                    results = plan.run(values)
                else:
                    results = plan.run(values, stats)
                    if traced:
                        run_metadata.step_stats = stats
        finally:
            self._active_steps.discard(token)
        if run_metadata is not None:
            run_metadata.placement = plan.placement
        global _last_run_session
        self.steps += 1
        self.last_placement = plan.placement
        _last_run_session = self._weakref
        if events.listeners["step"]:
            end = time.perf_counter()
            if probe.override is not self.graph._collections.get(_EXAMPLES_PER_STEP_KEY):
                probe = self._reprobe(key, entry)   # set_examples_per_step since the compile
            events.publish("step", events.step_record(
                self.id, self.steps, time.time(), end - start, len(structure.elements),
                len(plan.ops), probe.examples(values, results), probe.global_step_of(results)))
        if stats is not None and events.listeners["trace"]:
            events.publish("trace", events.TraceRecord(
                self.id, self.steps, time.time(), time.perf_counter() - start,
                probe.global_step_of(results), stats.dev_stats))
        return structure.build(results)

    def _resolve_feeds(self, feed_dict) -> Tuple[tuple, list]:
        if not feed_dict:
            return (), []
        pairs = [(self._feed_tensor(key), value) for key, value in feed_dict.items()]
        if len(pairs) > 1:
            pairs.sort(key=lambda p: (p[0]._op._id, p[0]._value_index))
        return tuple(p[0] for p in pairs), [p[1] for p in pairs]

    def _compile(self, fetches, feed_tensors: tuple):
        structure = _FetchStructure(self.graph, fetches)
        tensors = [e if isinstance(e, Tensor) else None for e in structure.elements]
        targets = [e for e in structure.elements if isinstance(e, Operation)]
        probe, extra = _step_probe(self.graph, tensors, feed_tensors, targets)
        plan_class = Plan
        if self._cluster is not None:
            from ..distributed.master import DistributedPlan as plan_class
        with self._lock:
            plan = plan_class(self, tensors + extra, list(feed_tensors), targets)
        _resolve_dequeued(probe, plan)
        return structure, plan, [_FeedConverter(t) for t in feed_tensors], probe

    def _reprobe(self, key, entry) -> "_StepProbe":
        """A new StepProbe for a cached plan, after the examples override changed (it can use
        only what the plan already feeds and fetches)."""
        structure, plan, converters, _ = entry
        targets = [e for e in structure.elements if isinstance(e, Operation)]
        feeds = tuple(c.tensor for c in converters)
        probe, _ = _step_probe(self.graph, list(plan.fetches), feeds, targets, allow_extra=False)
        _resolve_dequeued(probe, plan)
        if self._plans.get(key) is entry:
            self._plans[key] = (structure, plan, converters, probe)
        return probe

    # -- lifecycle ---------------------------------------------------------------------------------
    def cancel_running_steps(self, reason: str = "Steps were cancelled") -> None:
        """Makes every run() in flight (in other threads) fail at once with CancelledError."""
        for token in list(self._active_steps):
            token.cancel(reason)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.cancel_running_steps("Session was closed while the step was running")
            if self._cluster is not None:
                # Variables live on the tasks and outlive the session; only our graphs go.
                for entry in self._plans.values():
                    entry[1].deregister()
                self._cluster.close()
            else:
                for device in self.devices:
                    device.resources.clear()
            self._plans.clear()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def graph_def(self):
        return self.graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self.target

    def as_default(self):
        return _default_session_stack.scope(self)

    def __enter__(self):
        self._default_ctx = self.as_default()
        self._default_ctx.__enter__()
        self._graph_ctx = self.graph.as_default()
        self._graph_ctx.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._graph_ctx.__exit__(exc_type, exc, tb)
        self._default_ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def _scalar(value):
    """A 0-d result as TensorFlow returns it: a numpy scalar (bytes for strings)."""
    return value[()] if type(value) is np.ndarray and value.ndim == 0 else value


def _fetch_key(fetches):
    """A hashable key for fetch structures that are cheap to recognise; None otherwise."""
    def plain(f):   # a graph element, or what stands for one (a Variable)
        return (isinstance(f, (Tensor, Operation, SparseTensor, IndexedSlices))
                or hasattr(f, "_as_graph_element"))
    if plain(fetches):
        return fetches
    if type(fetches) in (list, tuple) and all(map(plain, fetches)):
        return (type(fetches),) + tuple(fetches)
    if isinstance(fetches, str):
        return fetches
    return None


class Session(BaseSession):
    """``with tf.Session() as sess: sess.run(...)`` — a session on this process's devices."""


class InteractiveSession(BaseSession):
    """A session that installs itself as the default on construction (for shells/notebooks)."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None,
                 config: Optional[ConfigProto] = None):
        super().__init__(target, graph, config)
        self._default_ctx = self.as_default()
        self._default_ctx.__enter__()
        self._graph_ctx = self.graph.as_default()
        self._graph_ctx.__enter__()

    def close(self) -> None:
        was_open = not self._closed
        super().close()
        if was_open and hasattr(self, "_default_ctx"):
            _default_session_stack.remove(self)
            from ..framework.ops import _default_graph_stack
            if self.graph in _default_graph_stack.stack:
                _default_graph_stack.stack.remove(self.graph)


class _DefaultSessionStack(threading.local):
    def __init__(self):
        self.stack: List[BaseSession] = []

    @contextlib.contextmanager
    def scope(self, session: BaseSession):
        self.stack.append(session)
        try:
            yield session
        finally:
            self.remove(session)

    def remove(self, session: BaseSession) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] is session:
                del self.stack[i]
                return


_default_session_stack = _DefaultSessionStack()


def get_default_session() -> Optional[BaseSession]:
    return _default_session_stack.stack[-1] if _default_session_stack.stack else None


def _default_session_for(graph: Graph, session: Optional[BaseSession]) -> BaseSession:
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit session "
                             "to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is "
                         "different from the session's graph.")
    return session

"""``tf.summary.FileWriter``: writes summaries, graphs and run metadata to TensorBoard event
files (TFRecord-framed ``Event`` protos, written by TensorBoard's own ``EventFileWriter``)."""
from __future__ import annotations

import threading
import time
from typing import Dict, Iterator, Optional

from tensorboard.compat.proto import (config_pb2, event_pb2, graph_pb2, meta_graph_pb2,
                                      summary_pb2)

from ..framework.ops import Graph
from . import graph_def as _graph_def

__all__ = ["FileWriter", "FileWriterCache", "summary_iterator"]


class FileWriter:
    """Writes ``Summary`` protos (or the bytes summary ops produce) to an event file in
    ``logdir``, asynchronously; ``flush()`` forces them to disk, ``close()`` finishes."""

    def __init__(self, logdir: str, graph: Optional[Graph] = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def=None, filename_suffix: Optional[str] = None):
        self._logdir = str(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._filename_suffix = filename_suffix or ""
        self._writer = _event_file_writer(self._logdir, max_queue, flush_secs,
                                          self._filename_suffix)
        self._closed = False
        self._lock = threading.Lock()
        self._seen_summary_tags = set()
        self._session_run_tags: Dict[str, bool] = {}
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            if isinstance(graph, Graph):
                self.add_meta_graph(_graph_def.build_meta_graph_def(graph))

    # -- events ------------------------------------------------------------------------------------
    def add_event(self, event: event_pb2.Event) -> None:
        """Writes an Event proto as is; ignored once the writer is closed (as TensorFlow)."""
        if not isinstance(event, event_pb2.Event):
            raise TypeError(f"add_event expects an Event proto (tf.summary.Event), got "
                            f"{type(event).__name__}")
        with self._lock:
            if not self._closed:
                self._writer.add_event(event)

    def _add_event(self, event: event_pb2.Event, step: Optional[int]) -> None:
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def add_summary(self, summary, global_step: Optional[int] = None) -> None:
        """Adds a Summary: a ``Summary`` proto or the serialized bytes a summary op returned."""
        if isinstance(summary, (bytes, bytearray)):
            proto = summary_pb2.Summary()
            try:
                proto.ParseFromString(bytes(summary))
            except Exception as e:  # protobuf's DecodeError
                raise ValueError(f"add_summary: the bytes given are not a serialized Summary "
                                 f"({e})") from None
            summary = proto
        elif hasattr(summary, "item") and getattr(summary, "size", 0) == 1 and \
                isinstance(summary.item(), bytes):  # a 0-d string array from sess.run
            return self.add_summary(summary.item(), global_step)
        if not isinstance(summary, summary_pb2.Summary):
            raise TypeError(f"add_summary expects a Summary proto or its serialized bytes "
                            f"(the value of a summary op), got {type(summary).__name__}")
        # Plugin metadata is kept only on the first value of each tag, as TensorFlow does.
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        self._add_event(event_pb2.Event(summary=summary), global_step)

    def add_session_log(self, session_log: event_pb2.SessionLog,
                        global_step: Optional[int] = None) -> None:
        self._add_event(event_pb2.Event(session_log=session_log), global_step)

    def add_graph(self, graph: Optional[Graph] = None, global_step: Optional[int] = None,
                  graph_def=None) -> None:
        """Adds the graph for TensorBoard's graph view (a tf.Graph; a GraphDef is accepted too)."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        source = graph if graph is not None else graph_def
        if isinstance(source, Graph):
            proto = _graph_def.graph_to_graph_def(source, add_shapes=True)
        elif isinstance(source, graph_pb2.GraphDef):
            proto = source
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the "
                            f"deprecated `GraphDef`, got {type(source).__name__}")
        self._add_event(event_pb2.Event(graph_def=proto.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def: meta_graph_pb2.MetaGraphDef,
                       global_step: Optional[int] = None) -> None:
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: "
                            f"{type(meta_graph_def)}")
        self._add_event(event_pb2.Event(meta_graph_def=meta_graph_def.SerializeToString()),
                        global_step)

    def add_run_metadata(self, run_metadata, tag: str, global_step: Optional[int] = None
                         ) -> None:
        """Adds a traced step's metadata (``sess.run(..., options=RunOptions(trace_level=
        FULL_TRACE), run_metadata=...)``) for TensorBoard's per-node compute times."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags[tag] = True
        tagged = event_pb2.TaggedRunMetadata(tag=tag)
        tagged.run_metadata = _run_metadata_proto(run_metadata).SerializeToString()
        self._add_event(event_pb2.Event(tagged_run_metadata=tagged), global_step)

    # -- lifecycle ---------------------------------------------------------------------------------
    def get_logdir(self) -> str:
        return self._logdir

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._writer.flush()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._writer.close()

    def reopen(self) -> None:
        """After close(): start writing again, to a new event file in the same logdir."""
        with self._lock:
            if self._closed:
                self._writer = _event_file_writer(self._logdir, self._max_queue,
                                                  self._flush_secs, self._filename_suffix)
                self._closed = False

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<tf.summary.FileWriter logdir={self._logdir!r}{' closed' if self._closed else ''}>"


def _event_file_writer(logdir: str, max_queue: int, flush_secs: float, suffix: str):
    # Imported here: tensorboard.summary pulls in TensorBoard's plugins (~0.2 s), which
    # `import tfjupyter` should not pay for.
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    return EventFileWriter(logdir, max_queue, flush_secs, suffix)


def _run_metadata_proto(run_metadata) -> config_pb2.RunMetadata:
    """Our RunMetadata (plain data) as TensorFlow's RunMetadata proto."""
    if isinstance(run_metadata, config_pb2.RunMetadata):
        return run_metadata
    if hasattr(run_metadata, "SerializeToString"):
        return config_pb2.RunMetadata.FromString(run_metadata.SerializeToString())
    proto = config_pb2.RunMetadata()
    stats = getattr(run_metadata, "step_stats", None)
    for device, nodes in (getattr(stats, "dev_stats", None) or {}).items():
        dev = proto.step_stats.dev_stats.add(device=device)
        for node in nodes:
            end = int(node.get("op_end_rel_micros", 0))
            dev.node_stats.add(node_name=node["node_name"],
                               all_start_micros=int(node.get("all_start_micros", 0)),
                               op_start_rel_micros=0, op_end_rel_micros=end,
                               all_end_rel_micros=end,
                               timeline_label=f"{node['node_name']} = {node.get('op', '')}()")
    return proto


class FileWriterCache:
    """One FileWriter per logdir, shared (``FileWriterCache.get(logdir)``)."""

    _cache: Dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                from ..framework.ops import get_default_graph
                writer = FileWriterCache._cache[logdir] = FileWriter(logdir,
                                                                     graph=get_default_graph())
            return writer

    @staticmethod
    def clear() -> None:
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()



def summary_iterator(path: str) -> Iterator[event_pb2.Event]:
    """The Event protos of an event file, in order (``tf.train.summary_iterator``); every
    record's CRCs are checked (DataLossError on a corrupt or truncated record)."""
    from ..python_io import tf_record_iterator  # python_io needs this package's _encoding
    for record in tf_record_iterator(path):
        yield event_pb2.Event.FromString(record)

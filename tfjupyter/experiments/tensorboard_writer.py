"""An experiment record as TensorBoard reads it: one run (sub-folder) per task, ``local/``,
``worker_0/``..., holding that task's scalars and graph as event files, so that
``tensorboard --logdir experiments`` compares experiments and tasks side by side."""
from __future__ import annotations

import os
import time
from typing import Callable, Dict, Optional

__all__ = ["TensorBoardWriter", "run_dir"]


def run_dir(task: str) -> str:
    """The TensorBoard run (sub-folder) of a task: 'worker:0' -> 'worker_0'."""
    return task.replace(":", "_").replace("/", "_")


class TensorBoardWriter:
    """Event files under ``path``, one run per task, made on the task's first event.

    ``on_new_run(task, run)`` is called when a task's run folder is made (the recorder lists the
    runs in the record's metadata).
    """

    def __init__(self, path: str, on_new_run: Optional[Callable[[str, str], None]] = None):
        self.path = path
        self._on_new_run = on_new_run
        self._writers: Dict[str, object] = {}   # task -> summary FileWriter

    def scalar(self, task: str, tag: str, value: float, step: int, t: float) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag,
                                                                       simple_value=value)])
        self._writer(task).add_event(event_pb2.Event(wall_time=t, step=int(step),
                                                     summary=summary))

    def graph(self, task: str, graph_def) -> None:
        """The task's graph (a GraphDef), shown by TensorBoard's graph dashboard."""
        from tensorboard.compat.proto import event_pb2
        writer = self._writer(task)
        writer.add_event(event_pb2.Event(wall_time=time.time(),
                                         graph_def=graph_def.SerializeToString()))
        writer.flush()

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()

    def _writer(self, task: str):
        writer = self._writers.get(task)
        if writer is None:
            from ..summary.writer import FileWriter
            run = run_dir(task)
            os.makedirs(os.path.join(self.path, run), exist_ok=True)
            writer = self._writers[task] = FileWriter(os.path.join(self.path, run),
                                                      flush_secs=1)
            if self._on_new_run is not None:
                self._on_new_run(task, run)
        return writer

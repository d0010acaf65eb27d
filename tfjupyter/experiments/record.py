"""``load(path)``: an experiment folder as an ``ExperimentRecord``; ``Table``: pandas-free columns.

A record whose metadata still says ``running`` but whose writer (the kernel that recorded it)
is gone reads as ``interrupted``: everything up to the crash is there, since the timeline is
flushed every half second and the metadata is replaced atomically.
"""
from __future__ import annotations

import os
import re
import socket
import time
from typing import Dict, Iterator, List, Optional, Sequence

from ..tables import html_table, text_table
from . import store
from .recorder import DEFAULT_DIR
from .tensorboard_writer import run_dir

__all__ = ["ExperimentRecord", "Table", "load", "resolve", "read_cells", "NotARecord"]

_MINIMIZED = re.compile(r"loss|error|perplexity|mse|mae|cost", re.I)
STALE_AFTER = 60.0   # a remote writer's record is "running" while its timeline grew this recently


class NotARecord(ValueError):
    """The path given is not an experiment record."""


class Table:
    """Named columns of equal length, without pandas: ``t["value"]`` is a list, ``t.rows()``
    a list of dicts, ``t.where(task="worker:0")`` a filtered Table, ``len(t)`` the row count,
    ``t.to_pandas()`` a DataFrame where pandas is installed."""

    def __init__(self, columns: Dict[str, list]):
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"Table: columns of different lengths {sorted(lengths)}")
        self._columns = {k: list(v) for k, v in columns.items()}

    @classmethod
    def from_rows(cls, names: Sequence[str], rows: Sequence[dict]) -> "Table":
        return cls({name: [r.get(name) for r in rows] for name in names})

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    def __getitem__(self, name: str) -> list:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self._columns)}") from None

    def __len__(self) -> int:
        return len(next(iter(self._columns.values()), []))

    def rows(self) -> List[dict]:
        names = list(self._columns)
        return [dict(zip(names, values)) for values in zip(*self._columns.values())]

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows())

    def where(self, **equal) -> "Table":
        keep = [i for i in range(len(self))
                if all(self._columns[k][i] == v for k, v in equal.items())]
        return Table({k: [v[i] for i in keep] for k, v in self._columns.items()})

    def to_dict(self) -> Dict[str, list]:
        return {k: list(v) for k, v in self._columns.items()}

    def to_pandas(self):
        import pandas
        return pandas.DataFrame(self._columns)

    def __repr__(self) -> str:
        rows = self.rows()
        shown = rows[:10]
        lines = [" ".join(f"{c:>12}" for c in self._columns)]
        lines += [" ".join(f"{_cell(r[c]):>12}" for c in self._columns) for r in shown]
        if len(rows) > len(shown):
            lines.append(f"... {len(rows)} rows")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.rows()
        return html_table(f"{len(rows)} rows", self.columns,
                           [[_cell(r[c]) for c in self._columns] for r in rows[:50]])


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def read_cells(path: str) -> List[dict]:
    """The cells recorded in ``path``: one per cell (the last line written for it, which knows
    whether it succeeded), in the order they first ran. Records written before lines had a
    ``cell`` number name a cell by its execution count."""
    cells: Dict[object, dict] = {}
    for i, line in enumerate(store.read_jsonl(os.path.join(path, store.CELLS))):
        key = line["cell"] if "cell" in line else line.get("execution_count")
        key = ("line", i) if key is None else key
        if key in cells:
            cells[key].update(line)
        else:
            cells[key] = dict(line)
    return list(cells.values())


def minimized(tag: str) -> bool:
    """Whether lower values of ``tag`` are better (loss, error, ...), for targets."""
    return bool(_MINIMIZED.search(tag))


class ExperimentRecord:
    """One experiment folder, read (see ``load``).

    Attributes: ``name``, ``id`` (the folder's name), ``path``, ``status`` (running, finished,
    failed, interrupted), ``started``/``ended`` (seconds since the epoch; an interrupted
    record ends at its last event), ``wall_time``, ``config`` (yours), ``environment``,
    ``cluster`` (spec, tasks with host and devices; None without one), ``sessions`` (per task:
    session configs and devices), ``cells`` (the code that ran, dicts), ``checkpoint`` (the
    latest checkpoint's path or None; ``checkpoint_info`` has more), ``notes``.
    Tables: ``metrics`` (every scalar summary point: task, tag, step, value, time since the
    start, wall_time), ``throughput`` (per flush and task: time, wall_time, t0 (start of the
    span the rates divide by), global_step, steps_per_sec,
    examples_per_sec, totals), ``placement`` (task, op, type, requested, assigned, reason).
    ``final`` is a dict of final figures; ``time_to(tag, target)`` the time to reach a value;
    ``graph(task)`` the GraphDef with assigned devices.
    """

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        meta_file = os.path.join(self.path, store.METADATA)
        if not os.path.isdir(self.path):
            raise NotARecord(f"{path}: no such experiment folder")
        try:
            self.meta = store.read_json(meta_file)
        except FileNotFoundError:
            raise NotARecord(f"{path} is not an experiment record (it has no "
                             f"{store.METADATA})") from None
        except ValueError as e:
            raise NotARecord(f"{path}: {store.METADATA} is not valid JSON ({e})") from None
        if not isinstance(self.meta, dict) or "name" not in self.meta or \
                "started" not in self.meta:
            raise NotARecord(f"{path}: {store.METADATA} does not describe an experiment")
        self.name: str = self.meta["name"]
        self.id: str = self.meta.get("id") or os.path.basename(self.path)
        self.config: dict = self.meta.get("config") or {}
        self.environment: dict = self.meta.get("environment") or {}
        self.cluster: Optional[dict] = self.meta.get("cluster")
        self.sessions: dict = self.meta.get("sessions") or {}
        self.checkpoint_info: Optional[dict] = self.meta.get("checkpoint")
        self.checkpoint: Optional[str] = (self.checkpoint_info or {}).get("path")
        self.notes: List[str] = self.meta.get("notes") or []
        self.error: Optional[str] = self.meta.get("error")
        self.started: float = float(self.meta["started"])
        self.cells = read_cells(self.path)
        self._read_timeline()
        self.status = self._status()
        ended = self.meta.get("ended")
        self.ended: float = float(ended) if ended is not None else self._last_time
        self.wall_time = max(0.0, self.ended - self.started)

    # -- reading -----------------------------------------------------------------------------------
    def _read_timeline(self) -> None:
        steps, scalars, placement, tasks = [], [], {}, []
        last = self.started
        for line in store.read_jsonl(os.path.join(self.path, store.EVENTS)):
            kind = line.get("kind")
            try:
                if kind == "steps":
                    steps.append(dict(line, time=line["t"] - self.started, wall_time=line["t"]))
                    last = max(last, line["t"])
                elif kind == "scalar":
                    scalars.append(dict(line, time=line["t"] - self.started,
                                        wall_time=line["t"]))
                    last = max(last, line["t"])
                elif kind == "placement":
                    placement[(line["task"], line["op"])] = line   # the last decision wins
                elif kind == "task":
                    tasks.append(line)
            except (KeyError, TypeError):
                continue   # a line this version does not understand
        self._last_time = last
        self.throughput = Table.from_rows(
            ["task", "time", "wall_time", "t0", "global_step", "steps_per_sec",
             "examples_per_sec", "total_steps", "total_examples"], steps)
        self.metrics = Table.from_rows(["task", "tag", "step", "value", "time", "wall_time"],
                                       scalars)
        self.placement = Table.from_rows(["task", "op", "type", "requested", "assigned",
                                          "reason"], list(placement.values()))
        self.task_events = Table.from_rows(["task", "state", "host", "pid", "error", "t"], tasks)

    def _status(self) -> str:
        status = self.meta.get("status", "running")
        if status != "running":
            return status
        return "running" if self._writer_alive() else "interrupted"

    def _writer_alive(self) -> bool:
        writer = self.meta.get("writer") or {}
        if writer.get("host") == socket.gethostname():
            try:
                import psutil
                process = psutil.Process(writer["pid"])
                started = writer.get("process_start")
                return started is None or abs(process.create_time() - started) < 1.0
            except Exception:   # no such process (or psutil missing: assume it is gone)
                return False
        try:   # another host's kernel: alive while its timeline keeps growing
            return time.time() - os.path.getmtime(os.path.join(self.path, store.EVENTS)) \
                < STALE_AFTER
        except OSError:
            return False

    # -- questions ---------------------------------------------------------------------------------
    @property
    def tasks(self) -> List[str]:
        return sorted(set(self.throughput["task"]) | set(self.metrics["task"]))

    @property
    def tags(self) -> List[str]:
        return sorted(set(self.metrics["tag"]))

    def scalar(self, tag: str, task: Optional[str] = None) -> Table:
        """The points of one summary tag (of one task, or all)."""
        return self.metrics.where(tag=tag, **({"task": task} if task else {}))

    def time_to(self, tag: str, target: float, mode: Optional[str] = None) -> Optional[float]:
        """Seconds from the start until any task's ``tag`` first reached ``target`` (``mode``
        "max": at or above it; "min": at or below it; default "min" for losses and errors,
        else "max"); None if it never did."""
        mode = mode or ("min" if minimized(tag) else "max")
        if mode not in ("min", "max"):
            raise ValueError(f"time_to: mode must be 'min' or 'max', got {mode!r}")
        reached = [p["time"] for p in self.scalar(tag).rows()
                   if (p["value"] <= target if mode == "min" else p["value"] >= target)]
        return min(reached) if reached else None

    def step_to(self, tag: str, target: float, mode: Optional[str] = None) -> Optional[int]:
        """The step at which ``tag`` first reached ``target`` (as ``time_to``)."""
        when = self.time_to(tag, target, mode)
        if when is None:
            return None
        return min(p["step"] for p in self.scalar(tag).rows() if p["time"] == when)

    @property
    def final(self) -> dict:
        """Final figures: status, wall_time, steps (training steps of every task), global_step,
        examples, examples_per_sec and steps_per_sec (means over the training span), and the
        last value of every summary tag (the latest point of any task)."""
        out = {"status": self.status, "wall_time": self.wall_time}
        last_line: Dict[str, dict] = {}
        for row in self.throughput.rows():
            last_line[row["task"]] = row
        steps = sum(r["total_steps"] for r in last_line.values())
        examples = sum(r["total_examples"] for r in last_line.values())
        # The training span: from the first step's start to the last step's end, any task.
        span = (max(self.throughput["wall_time"]) - min(self.throughput["t0"])) \
            if last_line else 0.0
        global_steps = [g for g in self.throughput["global_step"] if g is not None]
        out.update(steps=steps, global_step=max(global_steps) if global_steps else None,
                   examples=examples,
                   examples_per_sec=examples / span if span > 0 else None,
                   steps_per_sec=steps / span if span > 0 else None)
        latest: Dict[str, tuple] = {}
        for p in self.metrics.rows():
            if p["tag"] not in latest or p["wall_time"] >= latest[p["tag"]][0]:
                latest[p["tag"]] = (p["wall_time"], p["value"])
        for tag in sorted(latest):
            out[tag] = latest[tag][1]
        return out

    def graph(self, task: Optional[str] = None):
        """The GraphDef recorded for ``task`` (default: the one with the most nodes), nodes'
        ``device`` set to the devices assigned; None if no graph was recorded."""
        from tensorboard.compat.proto import graph_pb2
        graphs = self.meta.get("graphs") or {}
        if not graphs:
            return None
        if task is None:
            task = max(graphs, key=lambda t: graphs[t].get("nodes", 0))
        if task not in graphs:
            raise KeyError(f"no graph recorded for task {task!r}; tasks: {', '.join(graphs)}")
        graph_def = graph_pb2.GraphDef()
        with open(os.path.join(self.path, graphs[task]["file"]), "rb") as f:
            graph_def.ParseFromString(f.read())
        return graph_def

    def run_dir(self, task: str) -> str:
        """The TensorBoard run folder of ``task`` (event files with its scalars and graph)."""
        return os.path.join(self.path, run_dir(task))

    # -- display -----------------------------------------------------------------------------------
    def summary_rows(self) -> List[List[str]]:
        env = self.environment
        packages = env.get("packages") or {}
        git = env.get("git") or {}
        rows = [["status", self.status + (f" ({self.error})" if self.error else "")],
                ["started", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))],
                ["wall time", f"{self.wall_time:.1f} s"],
                ["tasks", ", ".join(self.tasks) or "none"]]
        if self.cluster:
            rows.append(["cluster", ", ".join(f"{job}: {len(addresses)}" for job, addresses
                                              in sorted(self.cluster["spec"].items()))])
        rows += [["config", ", ".join(f"{k}={v}" for k, v in sorted(self.config.items()))],
                 ["checkpoint", self.checkpoint or ""],
                 ["cells", str(len(self.cells))],
                 ["host", env.get("hostname", "")],
                 ["python / tfjupyter", f"{env.get('python', '')} / "
                                        f"{packages.get('tfjupyter', '')}"],
                 ["git", f"{git.get('commit', '')[:12]}{' (dirty)' if git.get('dirty') else ''}"
                  if git else ""]]
        for key, value in self.final.items():
            if key not in ("status", "wall_time"):
                rows.append([key, _cell(value)])
        return rows

    def __repr__(self) -> str:
        return "\n".join([f"Experiment {self.id!r} ({store.shown_path(self.path)})"] +
                         ["  " + line for line in text_table((), self.summary_rows())])

    def _repr_html_(self) -> str:
        return html_table(f"Experiment {self.id} ({store.shown_path(self.path)})", ["", ""],
                           self.summary_rows())


def resolve(item, dir: Optional[str] = None) -> str:
    """The folder of ``item``: a path to a record, else a name under ``dir`` (default
    ./experiments). A name that was taken again (``async``, ``async-2``, ...: reruns of a
    notebook) means its newest record; ``async-2`` or a path picks one exactly."""
    text = os.fspath(item)
    parent = dir if dir is not None else DEFAULT_DIR
    named = _newest(parent, text) if os.sep not in text else None
    # A name in the folder asked for wins over a folder of that name here (a "data" folder in
    # the working directory must not hide the record "data" in --dir).
    if dir is not None and named:
        return named
    if os.path.isdir(text):
        return text
    if named:
        return named
    raise NotARecord(f"no experiment {text!r}: neither a folder nor a record in "
                     f"{os.path.abspath(parent)}")


def _newest(parent: str, name: str) -> Optional[str]:
    """``parent/name``, or ``parent/name-N`` with the largest N (the folders ``store`` gives a
    record whose name is taken)."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return None
    runs = [(1, name)] if name in entries else []
    pattern = re.compile(re.escape(name) + r"-(\d+)")
    runs += [(int(m.group(1)), e) for e in entries for m in [pattern.fullmatch(e)] if m]
    runs = [(n, e) for n, e in runs if os.path.isdir(os.path.join(parent, e))]
    return os.path.join(parent, max(runs)[1]) if runs else None


def load(path, dir: Optional[str] = None) -> ExperimentRecord:
    """The record in folder ``path`` (or named ``path`` under ``dir``, default
    ./experiments). Raises ``NotARecord`` (a ValueError) for anything else."""
    if isinstance(path, ExperimentRecord):
        return path
    return ExperimentRecord(resolve(path, dir))


"""The sessions that ran during an experiment, and their graphs with the devices they assigned.

A ``SessionTracker`` listens to ``runtime.events`` "step" records. The first time a session id
appears it takes the session object from ``client.session.last_run_session()`` (set by the run
that published the record, on the same thread, just before) and keeps its graph and placer.
Later records of known sessions cost one set lookup. The same tracker runs inside cluster
tasks' engines (``install``/``collect``, which the recorder runs there with ``Cluster.run`` while
the engines are idle), since between-graph training builds and runs its graphs there.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Dict, List, Optional

from ..runtime import events

__all__ = ["SessionTracker", "graph_def_with_devices", "graph_def_from_placement",
           "install", "collect", "find_checkpoint"]


class SessionTracker:
    """Keeps (graph, placer, config, target, steps) of every session that runs while active."""

    def __init__(self):
        self._known: set = set()
        self.sessions: Dict[int, dict] = {}
        self._lock = threading.Lock()
        events.subscribe("step", self._on_step)

    def close(self) -> None:
        events.unsubscribe("step", self._on_step)

    def add(self, session) -> None:
        """Tracks ``session`` (a tf.Session) explicitly (ExperimentHook knows its session)."""
        with self._lock:
            if session.id not in self.sessions:
                self.sessions[session.id] = {"graph": session.graph, "placer": session.placer,
                                             "config": repr(session.config),
                                             "target": session.target, "first_run": time.time(),
                                             "devices": [{"name": d.name,
                                                          "type": d.device_type,
                                                          "description": d.description}
                                                         for d in session.devices]}
            self._known.add(session.id)

    def _on_step(self, record) -> None:
        if record.session_id in self._known:   # the hot path: one set lookup
            return
        from ..client.session import last_run_session
        session = last_run_session()
        if session is not None and session.id == record.session_id:
            self.add(session)

    def summaries(self) -> List[dict]:
        """Per session: id, target, config, placed ops, graph ops."""
        with self._lock:
            items = list(self.sessions.items())
        return [{"session": sid, "target": s["target"], "config": s["config"],
                 "devices": s["devices"],
                 "placed_ops": len(s["placer"].records),
                 "graph_ops": len(s["graph"].get_operations())} for sid, s in items]

    def graph_defs(self) -> List[tuple]:
        """(session id, placed ops, GraphDef with assigned devices) per session, largest
        placement first."""
        with self._lock:
            items = list(self.sessions.items())
        out = []
        for sid, s in items:
            records = dict(list(s["placer"].records.items()))
            out.append((sid, len(records), graph_def_with_devices(s["graph"], records)))
        out.sort(key=lambda item: -item[1])
        return out


def graph_def_with_devices(graph, records: dict):
    """The GraphDef of ``graph`` (with shapes) whose nodes' ``device`` is the device the
    session assigned (TensorBoard colors its graph by this field); ops it never placed keep
    the device they asked for."""
    from ..summary.graph_def import graph_to_graph_def
    graph_def = graph_to_graph_def(graph, add_shapes=True)
    assigned = {op.name: record.assigned for op, record in records.items()}
    for node in graph_def.node:
        device = assigned.get(node.name)
        if device:
            node.device = device
    return graph_def


def graph_def_from_placement(rows: List[dict]):
    """A GraphDef of the placed ops alone (name, type, assigned device; no edges): what a
    record keeps of a task whose graph could not be fetched."""
    from tensorboard.compat.proto import graph_pb2, node_def_pb2
    graph_def = graph_pb2.GraphDef()
    seen = set()
    for row in rows:
        if row["op"] in seen:
            continue
        seen.add(row["op"])
        graph_def.node.append(node_def_pb2.NodeDef(name=row["op"], op=row["type"],
                                                   device=row["assigned"]))
    return graph_def


# -- checkpoints -----------------------------------------------------------------------------------
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", ".git", ".ipynb_checkpoints"}


def find_checkpoint(roots: List[str], since: float, max_depth: int = 3,
                    max_dirs: int = 3000) -> Optional[dict]:
    """The newest checkpoint whose "checkpoint" state file under ``roots`` (searched
    ``max_depth`` levels deep, at most ``max_dirs`` folders) was written at or after ``since``:
    {"path": absolute checkpoint prefix, "state_file", "written": mtime, "all": [prefixes]}."""
    from ..train import checkpoint_management as cm
    best = None
    visited = 0
    for root in dict.fromkeys(os.path.abspath(r) for r in roots if r and os.path.isdir(r)):
        base_depth = root.rstrip(os.sep).count(os.sep)
        for folder, dirs, files in os.walk(root):
            visited += 1
            if visited > max_dirs:
                break
            if folder.count(os.sep) - base_depth >= max_depth:
                dirs[:] = []
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
            if "checkpoint" not in files:
                continue
            state_file = os.path.join(folder, "checkpoint")
            try:
                written = os.path.getmtime(state_file)
                state = cm.get_checkpoint_state(folder)
            except (OSError, ValueError):
                continue
            if state is None or not state.model_checkpoint_path or written < since:
                continue
            if best is None or written > best["written"]:
                def absolute(p):
                    return p if os.path.isabs(p) else os.path.join(folder, p)
                best = {"path": absolute(state.model_checkpoint_path), "state_file": state_file,
                        "written": written,
                        "all": [absolute(p) for p in state.all_model_checkpoint_paths]}
    return best


# -- inside a cluster task's engine (the recorder runs these there with Cluster.run) ---------------
_engine_tracker: Optional[SessionTracker] = None


def install() -> bool:
    """Starts tracking the sessions this engine runs (replacing a tracker left over)."""
    global _engine_tracker
    if _engine_tracker is not None:
        _engine_tracker.close()
    _engine_tracker = SessionTracker()
    return True


def collect(since: float) -> dict:
    """What the engine's tracker saw, and stops it: {"sessions": [...], "graphs": [(session,
    placed ops, serialized GraphDef)], "cwd", "checkpoint"}. Called when the engine is idle."""
    global _engine_tracker
    tracker, _engine_tracker = _engine_tracker, None
    out = {"sessions": [], "graphs": [], "cwd": os.getcwd(),
           "checkpoint": find_checkpoint([os.getcwd()], since)}
    if tracker is not None:
        tracker.close()
        out["sessions"] = tracker.summaries()
        out["graphs"] = [(sid, n, g.SerializeToString()) for sid, n, g in tracker.graph_defs()]
    return out

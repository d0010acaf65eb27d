"""Graph views: a graph, or what a session placed of it, for JupyterLab and for static HTML.

``GraphView(graph_or_session)`` displays as one MIME bundle:

- ``application/vnd.tfjupyter.graph+json``: the document our lab extension renders (the format is
  the contract with ``labextension/src/graph``; every key is always present);
- ``text/html``: what nbconvert and front ends without the extension show — an SVG of the
  collapsed top level (``svg.py``), a legend, and per-device and per-op tables;
- ``text/plain``: a few summary lines.

Device colors are chosen here, once, so the SVG fallback and the renderer agree. The view is a
snapshot: it describes the graph and the placement as they were when it was made.
"""
from __future__ import annotations

import html
import json
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..client.session import BaseSession, last_run_session
from ..framework.device import DeviceSpec, local_device, short_device
from ..framework.dtypes import DType
from ..framework.ops import Graph, Operation
from ..framework.tensor_shape import TensorShape
from ..tables import Html, html_table, text_table
from . import svg

__all__ = ["MIME_TYPE", "GraphView", "show_graph", "graph_mimebundle", "as_session", "PALETTE",
           "UNPLACED_COLOR", "SOFT_COLOR"]

MIME_TYPE = "application/vnd.tfjupyter.graph+json"
VERSION = 1

# Category10 without its red (#d62728, kept for soft placement and cross-task edges) and its grey
# (#7f7f7f, too close to the unplaced grey), then the light halves of Category20 by the same rule.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
           "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5")
UNPLACED_COLOR = "#c8c8c8"
SOFT_COLOR = "#d62728"

_TYPE_RANK = {"CPU": 0, "GPU": 1}
_SOFT_PREFIX = "soft placement"
_MAX_ATTRS = 6             # attrs per node in the document ...
_MAX_ATTR_CHARS = 40       # ... each at most this long as text; longer ones are left out
_TABLE_ROWS = 500          # rows of the HTML fallback's op table
# Ops listed by default: the renderer's top level stays readable at 5,000, and a document of
# 20,000 (~8 MB of JSON) would sit in the notebook of every cell that ends in a big graph.
DEFAULT_MAX_OPS = 5000
_MORE_OPS = "show_graph(g, max_ops=N) shows more"   # said wherever a view is truncated


class GraphView:
    """A graph, or the ops a session placed, with their devices (see the module docstring).

    ``GraphView(graph)`` shows every op of the graph; assigned devices come from ``session``, else
    from the session that ran last if it runs this graph, else the ops are "not placed".
    ``GraphView(session)`` shows the ops that session has placed (on a cluster: over every task;
    edges between tasks are its _Send/_Recv pairs); a MonitoredSession stands for its tf.Session.
    At most ``max_ops`` ops are listed (the first, in graph order; the document says
    ``truncated``); ``title`` names what is shown, and the view adds who placed it.
    ``document`` is the JSON document (a dict); ``edges`` the edges between its ops (source,
    target, tensor, control, cross), which the document leaves to the renderer to derive.
    """

    def __init__(self, graph_or_session, *, session: Optional[BaseSession] = None,
                 max_ops: int = DEFAULT_MAX_OPS, title: Optional[str] = None):
        if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1:
            raise ValueError(f"max_ops must be a positive int, got {max_ops!r}")
        self.graph, self.session, self.ops, self.records = _subject(graph_or_session, session)
        self.max_ops = max_ops
        self.title = _title(graph_or_session, self.session, self.records, title)
        self.devices = _devices(self.ops, self.records)
        self.document, self.edges = _document(self.title, self.ops, self.records, self.devices,
                                              max_ops)
        self._html: Optional[str] = None

    # -- display ---------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None) -> Dict[str, object]:
        makers = ((MIME_TYPE, lambda: self.document), ("text/html", self.to_html),
                  ("text/plain", self.summary))
        return {mime: make() for mime, make in makers if _wanted(mime, include, exclude)}

    def to_json(self, **kwargs) -> str:
        """The document as JSON text (compact unless json.dumps keywords say otherwise)."""
        kwargs.setdefault("separators", (",", ":"))
        kwargs.setdefault("ensure_ascii", False)
        return json.dumps(self.document, **kwargs)

    def to_html(self) -> str:
        """The static fallback: top-level SVG, legend, device table, op table. No JavaScript."""
        if self._html is None:
            self._html = _fallback_html(self)
        return self._html

    def summary(self) -> str:
        """The text/plain form: title, op/device/edge counts, one line per device."""
        doc = self.document
        counts = Counter(e["cross"] for e in self.edges)
        soft = sum(d["soft"] for d in self.devices)
        shown = (f" (the first {len(doc['nodes'])} listed; {_MORE_OPS})" if doc["truncated"]
                 else "")
        lines = [f"{doc['title']}: {_plural(doc['total_ops'], 'op')}{shown}, "
                 f"{_plural(len(self.devices), 'device')}"
                 + (f", {soft} soft-placed" if soft else "")
                 + f"; {_plural(len(self.edges), 'edge')} ({counts['task']} cross-task, "
                 f"{counts['device']} cross-device)"]
        per_device = [[d["short"], _plural(d["ops"], "op")
                       + (f", {d['soft']} soft-placed" if d["soft"] else "")]
                      for d in self.devices]
        lines += ["  " + line for line in text_table((), per_device)]
        if doc["total_ops"] and not doc["placed"]:
            lines.append("  (not placed: run it in a session, or pass session=)")
        return "\n".join(lines)

    __repr__ = summary


def show_graph(graph_or_session, *, session: Optional[BaseSession] = None,
               max_ops: int = DEFAULT_MAX_OPS, title: Optional[str] = None) -> GraphView:
    """The GraphView of a graph or session; a cell ending in it (or ``display(view)``) shows it."""
    return GraphView(graph_or_session, session=session, max_ops=max_ops, title=title)


def graph_mimebundle(graph: Graph, include=None, exclude=None) -> Dict[str, object]:
    """``tf.Graph._repr_mimebundle_``: the graph's view, with its own repr as the plain text.

    A terminal IPython asks every object for its bundle but shows only text/plain, so there the
    view (tens of milliseconds per thousand ops) is not built at all.
    """
    bundle = {}
    if _rich_front_end() and (_wanted(MIME_TYPE, include, exclude)
                              or _wanted("text/html", include, exclude)):
        bundle = GraphView(graph)._repr_mimebundle_(include, exclude)
    if _wanted("text/plain", include, exclude):
        bundle["text/plain"] = repr(graph)
    return bundle


def _wanted(mime: str, include, exclude) -> bool:
    return (include is None or mime in include) and not (exclude and mime in exclude)


def _rich_front_end() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return True
    active = shell.display_formatter.active_types
    return MIME_TYPE in active or "text/html" in active


# -- what is shown ------------------------------------------------------------------------------------
def as_session(obj) -> Optional[BaseSession]:
    """``obj`` as a tf.Session: itself, or the session a MonitoredSession runs; else None."""
    if isinstance(obj, BaseSession):
        return obj
    unwrap = getattr(type(obj), "_tf_sess", None)   # MonitoredSession & co. (None once closed)
    inner = unwrap(obj) if callable(unwrap) else None
    return inner if isinstance(inner, BaseSession) else None


def _subject(graph_or_session, session) -> Tuple[Graph, Optional[BaseSession], List[Operation], Dict]:
    """(graph, placing session or None, ops in graph order, op -> PlacementRecord)."""
    if session is not None:
        given, session = session, as_session(session)
        if session is None:
            raise TypeError(f"session must be a tf.Session, got {type(given).__name__}")
    shown = as_session(graph_or_session)
    if shown is not None:
        if session is not None and session is not shown:
            raise ValueError("GraphView(session, session=other): give one session")
        records = _records(shown)
        return shown.graph, shown, sorted(records, key=lambda op: op._id), records
    if not isinstance(graph_or_session, Graph):
        raise TypeError(f"GraphView shows a tf.Graph or a tf.Session, not "
                        f"{type(graph_or_session).__name__}")
    graph = graph_or_session
    if session is None:
        last = last_run_session()
        session = last if last is not None and last.graph is graph else None
    elif session.graph is not graph:
        raise ValueError(f"session {session.id} runs another graph than the one shown")
    records = _records(session) if session is not None else {}
    return graph, session, graph.get_operations(), records


def _records(session: BaseSession) -> Dict:
    # list() copies the dict in one C call, so a run placing ops in another thread cannot
    # change it under us.
    return dict(list(session.placer.records.items()))


def _title(subject, session, records, title: Optional[str]) -> str:
    """``title`` (or a default naming the graph or session) and where the devices come from."""
    if not isinstance(subject, Graph):
        where = f" on {session.target}" if session.target else ""
        return f"{title or f'session {session.id}{where}'} — the ops it placed"
    label = title if title is not None else "graph"
    if records:
        return f"{label} — placed by session {session.id}"
    return f"{label} — not placed"


# -- the JSON document ------------------------------------------------------------------------------
def _devices(ops: Sequence[Operation], records: Dict) -> List[Dict]:
    """Every assigned device with its op and soft-placed counts (over all ops, listed or not),
    ordered by task, then CPU before GPU, then index; colored from PALETTE in that order."""
    counts: Counter = Counter()
    soft: Counter = Counter()
    for op in ops:
        record = records.get(op)
        if record is not None:
            counts[record.assigned] += 1
            soft[record.assigned] += int(record.reason.startswith(_SOFT_PREFIX))
    specs = {name: DeviceSpec.from_string(name) for name in counts}  # full names
    order = sorted(counts, key=lambda name: _device_key(specs[name]))
    tasks = {_task(specs[name]) for name in order}
    devices = []
    for i, name in enumerate(order):
        spec = specs[name]
        devices.append({
            "name": name,
            "short": local_device(name) if len(tasks) == 1 else short_device(name),
            "task": _task(spec), "type": spec.device_type or "", "color": PALETTE[i % len(PALETTE)],
            "ops": counts[name], "soft": soft[name]})
    return devices


def _device_key(spec: DeviceSpec):
    return (spec.job or "", spec.replica or 0, spec.task or 0,
            _TYPE_RANK.get(spec.device_type, len(_TYPE_RANK)), spec.device_type or "",
            spec.device_index or 0)


def _task(spec: DeviceSpec) -> str:
    return DeviceSpec(spec.job, spec.replica, spec.task).to_string()


def _document(title: str, ops: Sequence[Operation], records: Dict, devices: List[Dict],
              max_ops: int) -> Tuple[Dict, List[Dict]]:
    """The JSON document, and the edges between its listed ops (source, target, tensor, control,
    cross). The document leaves the edges out: each is already in its target's ``inputs``, and
    the renderer derives them from there (half the bytes of a large view)."""
    shown = ops[:max_ops]
    listed = set(shown)
    assigned = {op: record.assigned for op, record in records.items()}
    task_of = {d["name"]: d["task"] for d in devices}

    def cross(source: Operation, target: Operation) -> str:
        a, b = assigned.get(source, ""), assigned.get(target, "")
        if not a or not b or a == b:
            return "none"
        return "device" if task_of[a] == task_of[b] else "task"

    nodes, edges = [], []
    for op in shown:
        record = records.get(op)
        reason = record.reason if record is not None else ""
        nodes.append({
            "name": op.name, "type": op.type,
            "device": record.assigned if record is not None else "",
            "requested": op.device, "reason": reason, "soft": reason.startswith(_SOFT_PREFIX),
            "inputs": [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs],
            "outputs": [{"dtype": t.dtype.name, "shape": str(t.shape)} for t in op.outputs],
            "attrs": _attrs(op)})
        for t in op.inputs:
            if t.op in listed:
                edges.append({"source": t.op.name, "target": op.name, "tensor": t.name,
                              "control": False, "cross": cross(t.op, op)})
        for c in op.control_inputs:
            if c in listed:
                edges.append({"source": c.name, "target": op.name, "tensor": "",
                              "control": True, "cross": cross(c, op)})
    public_devices = [{k: v for k, v in d.items() if k != "soft"} for d in devices]
    return {"version": VERSION, "title": title, "placed": bool(records),
            "truncated": len(ops) > max_ops, "total_ops": len(ops), "devices": public_devices,
            "nodes": nodes}, edges


def _attrs(op: Operation) -> Dict[str, str]:
    """A few short attrs as text, as TF prints them (``transpose_a: false``); internal ones
    (``_class``) and long ones (a big Const's value) are left out."""
    out = {}
    for key, value in op._attrs.items():
        if key.startswith("_"):
            continue
        text = _attr_text(value)
        if text is not None and len(text) <= _MAX_ATTR_CHARS:
            out[key] = text
            if len(out) == _MAX_ATTRS:
                break
    return out


def _attr_text(value) -> Optional[str]:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):g}"
    if isinstance(value, str):
        return value or None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace") or None
    if isinstance(value, DType):
        return value.name
    if isinstance(value, TensorShape):
        return str(value)
    if isinstance(value, np.ndarray):   # a Const's value: small vectors in full, else described
        if value.ndim == 0:
            return _attr_text(value[()])
        if value.ndim == 1 and value.size <= 4 and value.dtype.kind in "biuf":
            return "[" + ", ".join(_attr_text(v) for v in value) + "]"
        kind = "string" if value.dtype.kind in "OSU" else value.dtype.name
        return f"{kind} {TensorShape(value.shape)}"
    if isinstance(value, (list, tuple)):
        parts = [_attr_text(v) for v in value]
        return None if any(p is None for p in parts) else "[" + ", ".join(parts) + "]"
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- the static HTML fallback -------------------------------------------------------------------------
_CELL = "text-align:left;padding:1px 8px 1px 0"


def _fallback_html(view: GraphView) -> str:
    doc = view.document
    esc = html.escape
    parts = ["<div class='tfj-graph-static' style='font-family:sans-serif;font-size:12px'>",
             f"<div style='font-weight:bold;margin:2px 0 6px'>{esc(doc['title'])}</div>"]
    note = f"{_plural(doc['total_ops'], 'op')}"
    if doc["truncated"]:
        note += f"; the first {len(doc['nodes'])} are drawn and listed ({_MORE_OPS})"
    parts.append(f"<div style='color:#555;margin-bottom:4px'>{esc(note)}</div>")
    items, links = svg.top_level(doc["nodes"], view.edges, doc["devices"], UNPLACED_COLOR)
    if not items:
        parts.append("<p>The graph is empty.</p>")
    elif len(items) > svg.MAX_ITEMS:
        parts.append(f"<p>The top level has {len(items)} name scopes and ops, more than "
                     f"{svg.MAX_ITEMS}: it is not drawn here; see the tables below (the "
                     "tfjupyter lab extension draws it).</p>")
    else:
        parts.append(svg.draw(items, links, soft_color=SOFT_COLOR))
    parts.append(_legend(view))
    parts.append(_device_table(view))
    parts.append(_op_table(doc))
    parts.append("</div>")
    return "".join(parts)


def _swatch(fill: str, stroke: str = "#444", dashed: bool = False) -> str:
    style = "dashed" if dashed else "solid"
    return (f"<span style='display:inline-block;width:12px;height:10px;margin-right:4px;"
            f"vertical-align:middle;background:{fill};border:1.5px {style} {stroke}'></span>")


def _line(color: str, dash: str) -> str:
    dasharray = f" stroke-dasharray='{dash}'" if dash else ""
    return (f"<svg width='28' height='8' style='vertical-align:middle;margin-right:4px'>"
            f"<line x1='0' y1='4' x2='28' y2='4' stroke='{color}' stroke-width='2'{dasharray}/>"
            f"</svg>")


def _legend(view: GraphView) -> str:
    esc = html.escape
    keys = [_swatch(d["color"]) + esc(d["short"]) for d in view.devices]
    if any(not n["device"] for n in view.document["nodes"]):
        keys.append(_swatch(UNPLACED_COLOR) + "not placed")
    keys.append(_swatch("#fff", SOFT_COLOR, dashed=True) + "soft-placed")
    keys.append(_line("#888", "") + "tensor")
    keys.append(_line("#888", svg.CONTROL_DASH) + "control")
    keys.append(_line("#444", svg.DEVICE_DASH) + "across devices")
    keys.append(_line(SOFT_COLOR, svg.TASK_DASH) + "across tasks (_Send/_Recv)")
    spans = "".join(f"<span style='margin-right:14px;white-space:nowrap'>{k}</span>" for k in keys)
    return f"<div class='tfj-legend' style='margin:6px 0;line-height:20px'>{spans}</div>"


def _device_table(view: GraphView) -> str:
    if not view.devices:
        return "<p>No op is placed yet: run the graph in a session to see its devices.</p>"
    rows = [[Html(f"{_swatch(d['color'])}<span title='{html.escape(d['name'])}'>"
                  f"{html.escape(d['short'])}</span>"), d["ops"], d["soft"]]
            for d in view.devices]
    unplaced = view.document["total_ops"] - sum(d["ops"] for d in view.devices)
    if unplaced:
        rows.append([Html(f"{_swatch(UNPLACED_COLOR)}not placed"), unplaced, ""])
    return html_table("", ["device", "ops", "soft-placed"], rows, cell_style=_CELL,
                      table_style="border-collapse:collapse;margin:4px 0;font-size:inherit")


def _op_table(doc: Dict) -> str:
    nodes = doc["nodes"][:_TABLE_ROWS]
    rows = [[n["name"], n["type"], n["requested"] or "-", n["device"] or "-", n["reason"] or "-"]
            for n in nodes]
    more = doc["total_ops"] - len(nodes)
    note = (f"<p>The first {len(nodes)} of {doc['total_ops']} ops are listed.</p>" if more else "")
    table = html_table("", ["op", "type", "requested", "assigned", "reason"], rows,
                       cell_style=_CELL, table_style="border-collapse:collapse;font-size:inherit")
    return f"<details><summary>Ops ({doc['total_ops']})</summary>{table}{note}</details>"

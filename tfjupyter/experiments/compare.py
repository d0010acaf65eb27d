"""``compare([a, b, ...])``: a table of configs and final figures, and plots of the metrics
against step and against wall time (time-to-accuracy).

The display is static-snapshot friendly, like the dashboard's (widgets/snapshot.py): a plain
HTML table first (what GitHub's notebook viewer shows), then the Bokeh figures embedded
standalone (nbconvert, nbviewer, JupyterLab without a kernel). Bokeh is imported only when the
figures are made.
"""
from __future__ import annotations

import html
import uuid
from typing import Dict, List, Optional, Sequence

from ..tables import html_table, text_table
from .record import ExperimentRecord, Table, _cell, load, minimized

__all__ = ["Comparison", "compare"]

MAX_PLOTTED_TAGS = 4
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
_DASHES = ("solid", "dashed", "dotted", "dotdash", "dashdot")


def compare(records: Sequence, metric: Optional[str] = None, target: Optional[float] = None,
            mode: Optional[str] = None, dir: Optional[str] = None) -> "Comparison":
    """Compares experiment records: ``records`` are ExperimentRecords, folders, or names
    under ``dir`` (default ./experiments). ``metric``: the summary tag the table and plots
    lead with (default: every tag, the first ``MAX_PLOTTED_TAGS`` plotted); ``target``: a
    value of ``metric`` whose time and step to reach the table reports (``mode`` "max" or
    "min" as ``ExperimentRecord.time_to``)."""
    if isinstance(records, (str, ExperimentRecord)) or not hasattr(records, "__iter__"):
        raise TypeError("compare: give a list of records, folders or names, e.g. "
                        "compare(['async', 'sync'])")
    loaded = [load(r, dir) for r in records]
    if not loaded:
        raise ValueError("compare: no records given")
    if target is not None and metric is None:
        raise ValueError("compare: a target needs a metric (the summary tag it is a value of)")
    if metric is not None and not any(metric in r.tags for r in loaded):
        known = sorted({t for r in loaded for t in r.tags})
        raise ValueError(f"compare: no record has a summary {metric!r}; tags recorded: "
                         f"{', '.join(known) or 'none'}")
    return Comparison(loaded, metric, target, mode)


class Comparison:
    """The comparison of ``records``: ``table`` (a Table, one row per record), ``figure()``
    (the Bokeh layout), ``to_html()``; displays as the HTML table and embedded figures."""

    def __init__(self, records: List[ExperimentRecord], metric: Optional[str] = None,
                 target: Optional[float] = None, mode: Optional[str] = None):
        self.records = records
        self.metric = metric
        self.target = target
        self.mode = mode or (("min" if minimized(metric) else "max") if metric else None)
        tags = sorted({t for r in records for t in r.tags})
        if metric in tags:
            tags.remove(metric)
            tags.insert(0, metric)
        self.tags = tags
        self.table = self._table()

    # -- the table -------------------------------------------------------------------------------
    def _table(self) -> Table:
        config_keys = sorted({k for r in self.records for k in r.config})
        rows = []
        for r in self.records:
            final = r.final
            row = {"experiment": r.id, "status": r.status, "tasks": _shape(r)}
            row.update({f"config.{k}": r.config.get(k) for k in config_keys})
            row.update(steps=final["steps"], global_step=final["global_step"],
                       examples_per_sec=final["examples_per_sec"], wall_time=r.wall_time)
            for tag in self.tags:
                row[f"final {tag}"] = final.get(tag)
            if self.metric is not None and self.target is not None:
                row[f"time to {self.metric} {self._reach()}"] = \
                    r.time_to(self.metric, self.target, self.mode)
                row[f"step to {self.metric} {self._reach()}"] = \
                    r.step_to(self.metric, self.target, self.mode)
            rows.append(row)
        names = list(rows[0]) if rows else []
        return Table.from_rows(names, rows)

    def _reach(self) -> str:
        return f"{'<=' if self.mode == 'min' else '>='} {self.target:g}"

    def _cells(self) -> List[List[str]]:
        out = []
        for row in self.table.rows():
            cells = []
            for name, value in row.items():
                if value is None:
                    cells.append("never" if name.startswith(("time to", "step to")) else "")
                elif name == "wall_time" or name.startswith("time to"):
                    cells.append(f"{value:.1f} s")
                elif name == "examples_per_sec":
                    cells.append(f"{value:,.1f}")
                else:
                    cells.append(_cell(value))
            out.append(cells)
        return out

    def __repr__(self) -> str:
        header = [c.replace("config.", "") for c in self.table.columns]
        return "\n".join(text_table(header, self._cells()))

    def table_html(self) -> str:
        caption = f"{len(self.records)} experiments"
        if self.metric is not None and self.target is not None:
            caption += f"; target {self.metric} {self._reach()}"
        header = [c.replace("config.", "") for c in self.table.columns]
        return html_table(caption, header, self._cells())

    # -- the figures -----------------------------------------------------------------------------
    def figure(self, width: int = 980):
        """A Bokeh layout: per tag (the metric first, at most MAX_PLOTTED_TAGS), value against
        step and against seconds since the experiment's start, and examples/s against time;
        one color per experiment, one dash per task; the target as a horizontal line."""
        from bokeh.layouts import column, row
        from bokeh.models import HoverTool, Legend, Span
        from bokeh.plotting import figure

        half = width // 2 - 10

        def new(title: str, x_label: str):
            fig = figure(title=title, width=half, height=240, toolbar_location="above",
                         tools="pan,wheel_zoom,box_zoom,reset,save")
            fig.xaxis.axis_label = x_label
            fig.add_layout(Legend(click_policy="hide", label_text_font_size="8pt"), "right")
            fig.add_tools(HoverTool(tooltips=[("", "$name"), ("x", "@x{0.[00]}"),
                                              ("value", "@y{0.[0000]}")]))
            return fig

        def lines(fig, points: Dict[tuple, tuple]) -> None:
            for (i, record, task, t), (xs, ys) in points.items():
                label = f"{record.id} {task}" if len(record.tasks) > 1 else record.id
                fig.line(xs, ys, color=_COLORS[i % len(_COLORS)], line_width=2,
                         line_dash=_DASHES[t % len(_DASHES)], legend_label=label, name=label)

        rows = []
        for tag in self.tags[:MAX_PLOTTED_TAGS]:
            by_step, by_time = new(f"{tag} against step", "step"), \
                new(f"{tag} against time", "seconds since the start")
            points_step, points_time = {}, {}
            for i, record in enumerate(self.records):
                for t, task in enumerate(record.tasks):
                    pts = sorted(record.scalar(tag, task).rows(), key=lambda p: p["time"])
                    if pts:
                        key = (i, record, task, t)
                        points_step[key] = ([p["step"] for p in pts], [p["value"] for p in pts])
                        points_time[key] = ([p["time"] for p in pts], [p["value"] for p in pts])
            lines(by_step, points_step)
            lines(by_time, points_time)
            if tag == self.metric and self.target is not None:
                for fig in (by_step, by_time):
                    fig.add_layout(Span(location=self.target, dimension="width",
                                        line_color="#444", line_dash="dashed"))
            rows.append(row(by_step, by_time))
        speed = new("examples/s against time", "seconds since the start")
        points = {}
        for i, record in enumerate(self.records):
            for t, task in enumerate(record.tasks):
                pts = record.throughput.where(task=task).rows()
                if pts:
                    points[(i, record, task, t)] = ([p["time"] for p in pts],
                                                    [p["examples_per_sec"] for p in pts])
        lines(speed, points)
        rows.append(row(speed))
        return column(*rows)

    def to_html(self) -> str:
        """The plain table, then the figures embedded standalone (see the module docstring)."""
        from ..widgets.snapshot import snapshot_html
        title = "tfjupyter experiments: " + ", ".join(html.escape(r.id) for r in self.records)
        # A fresh id: no live dashboard shares it, so the snapshot never folds itself away.
        from bokeh.document import Document
        root = self.figure()
        Document().add_root(root)   # standalone embedding renders a document's roots
        return snapshot_html(root, uuid.uuid4().hex[:12], title, self.table_html())

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> Dict[str, str]:
        bundle = {"text/plain": repr(self)}
        if (include is None or "text/html" in include) and \
                not (exclude and "text/html" in exclude):
            bundle["text/html"] = self.to_html()
        return bundle


def _shape(record: ExperimentRecord) -> str:
    if record.cluster:
        return ", ".join(f"{len(addresses)} {job}" for job, addresses
                         in sorted(record.cluster["spec"].items()))
    return "local"


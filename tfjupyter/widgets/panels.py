"""The dashboard's Bokeh document: figures, tables and the ``apply(update)`` that feeds them.

Everything here runs on one thread (the pump's) with the dashboard's lock held; the document is
never touched from anywhere else. Filters of the placement table run in the browser (a
CustomJSFilter), so they respond while the kernel is busy training and work in the static
snapshot too.
"""
from __future__ import annotations

import html
from typing import Dict, List

from bokeh.document import Document
from bokeh.layouts import column, row
from bokeh.models import (CheckboxGroup, ColumnDataSource, CDSView, CustomJS, CustomJSFilter,
                          DataTable, Div, FactorRange, HoverTool, Legend, Select, TableColumn)
from bokeh.palettes import Category10_10, Category20_20
from bokeh.plotting import figure

from ..framework.device import short_device
from ..tables import Html, html_table
from .feed import TOTAL, TaskRow, Update

__all__ = ["Panels", "ALL_DEVICES"]

ALL_DEVICES = "all devices"
WIDTH = 980                      # fits JupyterLab's and Notebook 7's default output width
HALF = WIDTH // 2 - 10


def _figure(title: str, width: int, height: int = 220, **kwargs):
    fig = figure(title=title, width=width, height=height, toolbar_location="above",
                 tools="pan,wheel_zoom,box_zoom,reset,save", **kwargs)
    fig.title.text_font_size = "11pt"
    return fig


class Panels:
    """The dashboard's figures. ``root`` is the Bokeh layout; ``apply(update)`` mutates it."""

    def __init__(self, history: int = 3600, scalar_history: int = 5000,
                 placement_history: int = 20000):
        self.history = history
        self.scalar_history = scalar_history
        self.placement_history = placement_history
        self._task_colors: Dict[str, str] = {}
        self._device_colors: Dict[str, str] = {}
        self._type_colors: Dict[str, str] = {}

        # -- throughput: examples/s and steps/s, one line per task and the total --------------
        self.examples_fig = _figure("examples/s", HALF, x_axis_type="datetime")
        self.steps_fig = _figure("steps/s", HALF, x_axis_type="datetime")
        for fig in (self.examples_fig, self.steps_fig):
            fig.add_layout(Legend(click_policy="hide", label_text_font_size="8pt"), "right")
        self.throughput: Dict[str, ColumnDataSource] = {}

        # -- scalar summaries: one figure per tag, one line per task ----------------------------
        self.scalars_box = column(Div(text="<i>no scalar summaries yet</i>"))
        self.scalars: Dict[str, figure] = {}
        self.scalar_sources: Dict[tuple, ColumnDataSource] = {}

        # -- placement: filterable table and per-device op counts -------------------------------
        self.placement = ColumnDataSource({k: [] for k in (
            "task", "op", "type", "requested", "assigned", "short", "reason", "soft")})
        self.device_select = Select(title="device", value=ALL_DEVICES, options=[ALL_DEVICES],
                                    width=260)
        self.soft_only = CheckboxGroup(labels=["soft-placed only"], active=[], width=160)
        placement_filter = CustomJSFilter(
            args={"device": self.device_select, "soft": self.soft_only},
            code="""
                const d = source.data, n = d.op.length, out = new Array(n);
                const all = device.value == '%s', only_soft = soft.active.includes(0);
                for (let i = 0; i < n; i++)
                    out[i] = (all || d.assigned[i] == device.value) && (!only_soft || d.soft[i]);
                return out;""" % ALL_DEVICES)
        refilter = CustomJS(args={"source": self.placement},
                            code="source.change.emit(); source.properties.data.change.emit();")
        self.device_select.js_on_change("value", refilter)
        self.soft_only.js_on_change("active", refilter)
        columns = [TableColumn(field="op", title="op", width=260),
                   TableColumn(field="type", title="type", width=110),
                   TableColumn(field="requested", title="requested", width=150),
                   TableColumn(field="short", title="assigned", width=120),
                   TableColumn(field="reason", title="reason", width=330)]
        self.placement_table = DataTable(source=self.placement, columns=columns,
                                         view=CDSView(filter=placement_filter), width=WIDTH - 300,
                                         height=260, index_position=None)
        self.counts = ColumnDataSource({"device": [], "short": [], "ops": [], "color": []})
        self.counts_fig = _figure("ops per device", 280, height=300,
                                  y_range=FactorRange(factors=[]))
        self.counts_fig.hbar(y="short", right="ops", height=0.7, color="color", source=self.counts)
        self.counts_fig.x_range.start = 0
        self.placement_note = Div(text="", width=400)

        # -- timeline of a sampled traced step ------------------------------------------------
        self.trace = ColumnDataSource({k: [] for k in (
            "lane", "op", "type", "start", "end", "duration_us", "color")})
        self.timeline_fig = _figure("timeline of a traced step (waiting for one)", WIDTH,
                                    height=200, y_range=FactorRange(factors=[]))
        self.timeline_fig.hbar(y="lane", left="start", right="end", height=0.8, color="color",
                               line_color="white", line_width=0.5, source=self.trace)
        self.timeline_fig.xaxis.axis_label = "ms since the step's first op"
        self.timeline_fig.add_tools(HoverTool(tooltips=[
            ("op", "@op"), ("type", "@type"), ("device", "@lane"), ("time", "@duration_us us")]))

        # -- cluster health and sync replicas -------------------------------------------------
        self.health = ColumnDataSource({k: [] for k in (
            "task", "state", "host", "devices", "global_step", "examples_per_sec",
            "steps_per_sec", "cpu_percent", "rss_mb", "error", "restarts")})
        # An HTML table, not a DataTable: BokehJS's DataTable does not redraw rows whose values
        # change in place (patched, replaced or rolled over), and this table is all such rows.
        self.health_table = Div(text=_health_html([]), width=HALF + 60, height=190,
                                styles={"overflow": "auto"})
        self.sync = ColumnDataSource({"step": [], "aggregated": [], "dropped": []})
        self.sync_fig = _figure("sync replicas per global step", HALF - 70, height=200)
        self.sync_fig.vbar_stack(["aggregated", "dropped"], x="step", width=0.9,
                                 color=["#2ca02c", "#d62728"], source=self.sync,
                                 legend_label=["aggregated", "dropped (stale)"])
        self.sync_fig.legend.location = "bottom_left"
        self.sync_fig.legend.label_text_font_size = "8pt"
        self.sync_fig.legend.background_fill_alpha = 0.7
        self.sync_fig.y_range.start = 0
        self.sync_fig.xaxis.axis_label = "global step"

        def heading(text: str) -> Div:
            return Div(text=f"<b>{text}</b>", width=WIDTH, height=18)

        self.root = column(
            heading("Throughput"), row(self.examples_fig, self.steps_fig),
            heading("Scalar summaries"), self.scalars_box,
            heading("Placement"), row(self.device_select, self.soft_only, self.placement_note),
            row(self.placement_table, self.counts_fig),
            heading("Device timeline"), self.timeline_fig,
            heading("Cluster"), row(self.health_table, self.sync_fig))
        self.document = Document()   # one document: the widget's, the snapshot's, save()'s
        self.document.add_root(self.root)

    # -- colors ----------------------------------------------------------------------------------
    def task_color(self, task: str) -> str:
        if task == TOTAL:
            return "#222222"
        if task not in self._task_colors:
            self._task_colors[task] = Category10_10[len(self._task_colors) % 10]
        return self._task_colors[task]

    def type_color(self, op_type: str) -> str:
        """Timeline bars are colored by op type, as TensorFlow's Chrome trace does."""
        if op_type not in self._type_colors:
            self._type_colors[op_type] = Category20_20[len(self._type_colors) % 20]
        return self._type_colors[op_type]

    def device_color(self, device: str) -> str:
        if device not in self._device_colors:
            self._device_colors[device] = Category20_20[len(self._device_colors) % 20]
        return self._device_colors[device]

    # -- applying updates --------------------------------------------------------------------------
    def apply(self, update: Update) -> None:
        for task, cols in update.throughput.items():
            self._throughput_source(task).stream(cols, rollover=self.history)
        for tag, per_task in update.scalars.items():
            for task, cols in per_task.items():
                self._scalar_source(tag, task).stream(cols, rollover=self.scalar_history)
        if update.placement:
            self._add_placement(update.placement, update.device_counts or {})
        if update.trace is not None:
            self._show_trace(update.trace)
        if update.sync is not None:
            self.sync.data = update.sync
        if update.health is not None:
            self._show_health(update.health)

    def _throughput_source(self, task: str) -> ColumnDataSource:
        source = self.throughput.get(task)
        if source is None:
            source = self.throughput[task] = ColumnDataSource({"t": [], "examples": [],
                                                               "steps": []})
            dash = "dashed" if task == TOTAL else "solid"
            for fig, y in ((self.examples_fig, "examples"), (self.steps_fig, "steps")):
                fig.line("t", y, source=source, color=self.task_color(task), line_width=2,
                         line_dash=dash, legend_label=task)
        return source

    def _scalar_source(self, tag: str, task: str) -> ColumnDataSource:
        source = self.scalar_sources.get((tag, task))
        if source is not None:
            return source
        fig = self.scalars.get(tag)
        if fig is None:
            fig = self.scalars[tag] = _figure(tag, HALF, height=200)
            fig.xaxis.axis_label = "global step"
            fig.add_tools(HoverTool(tooltips=[("step", "@step"), ("value", "@value")]))
            figures = list(self.scalars.values())
            self.scalars_box.children = [row(*figures[i:i + 2]) for i in range(0, len(figures), 2)]
        source = self.scalar_sources[(tag, task)] = ColumnDataSource({"step": [], "value": []})
        fig.line("step", "value", source=source, color=self.task_color(task), line_width=2,
                 legend_label=task)
        fig.legend.label_text_font_size = "8pt"
        fig.legend.click_policy = "hide"
        return source

    def _add_placement(self, rows: dict, counts: Dict[str, int]) -> None:
        rows = dict(rows, short=[short_device(d) for d in rows["assigned"]])
        self.placement.stream({k: rows[k] for k in self.placement.data},
                              rollover=self.placement_history)
        devices = sorted(counts)
        self.counts.data = {"device": devices, "short": [short_device(d) for d in devices],
                            "ops": [counts[d] for d in devices],
                            "color": [self.device_color(d) for d in devices]}
        self.counts_fig.y_range.factors = [short_device(d) for d in devices]
        options = [ALL_DEVICES] + devices
        if self.device_select.options != options:
            self.device_select.options = options
        total = sum(counts.values())
        soft = sum(self.placement.data["soft"])
        self.placement_note.text = (f"{total} ops placed on {len(devices)} devices; "
                                    f"<b>{soft}</b> soft-placed")

    def _show_trace(self, trace: dict) -> None:
        cols = trace["columns"]
        lanes = [short_device(d) for d in cols["device"]]
        self.timeline_fig.y_range.factors = [short_device(d) for d in trace["devices"]]
        self.trace.data = {"lane": lanes, "op": cols["op"], "type": cols["type"],
                           "start": cols["start"], "end": cols["end"],
                           "duration_us": cols["duration_us"],
                           "color": [self.type_color(t) for t in cols["type"]]}
        step = trace["global_step"] if trace["global_step"] is not None else trace["step"]
        kind = "global step" if trace["global_step"] is not None else "run"
        self.timeline_fig.title.text = (f"timeline of {trace['task']}'s {kind} {step}: "
                                        f"{len(cols['op'])} ops, {trace['duration'] * 1e3:.1f} ms")

    def _show_health(self, rows: List[TaskRow]) -> None:
        self.health.data = {key: [getattr(r, key) for r in rows] for key in self.health.data}
        self.health_table.text = _health_html(rows)


_HEALTH_HEADER = ("task", "state", "host", "step", "ex/s", "cpu %", "MB", "devices",
                  "waiting in", "restarts", "error")
_STATE_STYLE = {"alive": "color:#2ca02c", "unknown": "color:#7f7f7f",
                "dead": "color:#d62728;font-weight:bold"}


def _health_html(rows: List[TaskRow]) -> str:
    def number(value, digits=0):
        return "" if value is None else f"{value:,.{digits}f}"

    def state(r: TaskRow) -> Html:
        warning = "&#9888; " if r.state == "dead" else ""
        return Html(f"<span style='{_STATE_STYLE.get(r.state, '')}'>"
                    f"{warning}{html.escape(r.state)}</span>")

    cells = [[r.task, state(r), r.host, number(r.global_step), number(r.examples_per_sec),
              number(r.cpu_percent), number(r.rss_mb), r.devices, r.waiting, str(r.restarts),
              r.error]
             for r in rows]
    table = html_table("", _HEALTH_HEADER, cells, css_class="tfj-health",
                       table_style="border-collapse:collapse;font-size:12px",
                       cell_style="text-align:left;padding:2px 6px;white-space:nowrap",
                       row_styles=["background:#fde8e8" if r.state == "dead" else ""
                                   for r in rows])
    return table + ("" if rows else "<i>no tasks yet</i>")

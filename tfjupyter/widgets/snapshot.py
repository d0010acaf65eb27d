"""The dashboard's static snapshot: what a saved or exported notebook shows without a kernel.

One ``text/html`` block: summary tables first (plain HTML: they survive GitHub's viewer, which
runs no scripts), then the dashboard's Bokeh document embedded standalone (nbconvert's HTML,
nbviewer, JupyterLab without a kernel): it uses the page's BokehJS when one of the same version
is loaded (the live dashboard's), else the Jupyter server's, or Bokeh's CDN in a page that no
Jupyter server serves (an export; see tfjupyter/lab/bokehjs.py). Beside a live widget
(the same page holds ``.tfjupyter-live-<id>``) the snapshot folds into a one-line note so the
dashboard is not shown twice.
"""
from __future__ import annotations

import datetime
import html
import json
import uuid
from typing import Dict, List

from ..tables import html_table
from .feed import TaskRow

__all__ = ["snapshot_html", "summary_tables", "summary_lines", "live_class"]


def live_class(dashboard_id: str) -> str:
    return f"tfjupyter-live-{dashboard_id}"


def _fmt(value, digits: int = 1) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def summary_tables(tasks: List[TaskRow], scalars: Dict[str, Dict[str, tuple]],
                   device_counts: Dict[str, int], soft_placed: int) -> str:
    """Plain-HTML tables: tasks, last value of each scalar, ops per device."""
    parts = []
    if tasks:
        parts.append(html_table("Tasks", ["task", "state", "host", "global step",
                                      "examples/s (mean)", "examples/s (now)", "devices",
                                      "error"],
                            [[t.task, t.state, t.host, _fmt(t.global_step),
                              _fmt(t.mean_examples_per_sec), _fmt(t.examples_per_sec),
                              t.devices, t.error] for t in tasks]))
    if scalars:
        rows = [[tag, task, _fmt(step), f"{value:.6g}"]
                for tag, per_task in sorted(scalars.items())
                for task, (step, value) in sorted(per_task.items())]
        parts.append(html_table("Scalar summaries (last value)", ["tag", "task", "step", "value"],
                            rows))
    if device_counts:
        parts.append(html_table(f"Placement ({soft_placed} ops soft-placed)", ["device", "ops"],
                            sorted(device_counts.items())))
    return "".join(parts) or "<p><i>No training seen yet.</i></p>"


def summary_lines(tasks: List[TaskRow], scalars: Dict[str, Dict[str, tuple]]) -> List[str]:
    """The same summary as text (terminals, text/plain)."""
    lines = []
    for t in tasks:
        step = f" step {t.global_step}" if t.global_step is not None else ""
        lines.append(f"{t.task:<12} {t.state:<7}{step:>12}  {t.examples_per_sec:10,.1f} ex/s now "
                     f"({t.mean_examples_per_sec:,.1f} mean), {t.steps_per_sec:.2f} steps/s"
                     + (f"  ({t.error})" if t.error else ""))
    for tag, per_task in sorted(scalars.items()):
        values = ", ".join(f"{task} {value:.4g}" for task, (_, value) in sorted(per_task.items()))
        lines.append(f"{tag}: {values}")
    return lines


_LOADER = """
(function() {
  var snap = document.getElementById(%(snap_id)s);
  if (!snap) return;
  var body = snap.querySelector('.tfj-body'), note = snap.querySelector('.tfj-folded');
  var embedded = false;
  function embed() {
    if (embedded) return; embedded = true;
    var docs = JSON.parse(document.getElementById(%(docs_id)s).textContent);
    var items = %(render_items)s;
    // The page's BokehJS when its version matches, else this Jupyter server's (the CDN's in
    // a page without one: an export); see tfjupyter/lab/bokehjs.py.
    %(load_bokehjs)s(false).then(function() { window.Bokeh.embed.embed_items(docs, items); },
      function(error) { body.querySelector('.tfj-plots').textContent =
        '(the interactive figures are missing) ' + error.message; });
  }
  function live() { return document.querySelector('.%(live)s') !== null; }
  note.querySelector('a').onclick = function(e) {
    e.preventDefault(); note.style.display = 'none'; body.style.display = ''; embed(); };
  function fold() {
    if (!live()) return false;
    body.style.display = 'none'; note.style.display = ''; return true;
  }
  if (!fold()) {
    embed();
    var tries = 0, timer = setInterval(function() {
      if (fold() || ++tries > 20) clearInterval(timer); }, 500);
  }
})();
"""


def snapshot_html(root, dashboard_id: str, title: str, summary: str) -> str:
    """The snapshot block for the Bokeh layout ``root`` (call with the dashboard's lock held)."""
    from bokeh.embed.elements import div_for_render_item
    from bokeh.embed.util import standalone_docs_json_and_render_items

    from ..lab import bokehjs
    docs_json, [render_item] = standalone_docs_json_and_render_items(
        [root], suppress_callback_warning=True)
    snap_id = f"tfj-snapshot-{uuid.uuid4().hex[:12]}"
    docs_id = f"{snap_id}-docs"
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    script = _LOADER % {
        "snap_id": json.dumps(snap_id), "docs_id": json.dumps(docs_id),
        "render_items": json.dumps([render_item.to_json()]),
        "load_bokehjs": bokehjs.loader_js("cdn" if bokehjs.mode() == "cdn" else "server"),
        "live": live_class(dashboard_id)}
    docs = json.dumps(docs_json, separators=(",", ":")).replace("</", "<\\/")
    return (
        f"<div id='{snap_id}' class='tfjupyter-dashboard-snapshot'>"
        f"<div class='tfj-folded' style='display:none;color:#777'>{html.escape(title)}: static "
        f"snapshot of {when} (what this notebook shows without a kernel) — "
        f"<a href='#'>show</a></div>"
        f"<div class='tfj-body'><div><b>{html.escape(title)}</b> — snapshot of {when}</div>"
        f"{summary}<div class='tfj-plots'>{div_for_render_item(render_item)}</div></div>"
        f"<script type='application/json' id='{docs_id}'>{docs}</script>"
        f"<script type='text/javascript'>{script}</script></div>")

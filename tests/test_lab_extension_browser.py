"""tfjupyter's JupyterLab extension in a real JupyterLab in Chromium.

notebooks/placement.ipynb (plus a cell that starts a local cluster) runs in the page: its graph
views are drawn with the device colors the session's placement implies, a name scope expands,
an op's details name its soft placement; the cluster panel lists the cluster's tasks, and its
stop button stops the cluster (the engines exit, the kernel's Cluster says who stopped it).

Screenshots go to the test's tmp dir; TFJUPYTER_DOCS_SCREENSHOT=docs/lab.png also writes the
README's picture (graph view + cluster panel).
"""
import os
import time
from pathlib import Path

import nbformat

from notebook_util import without_outputs
from lab import (browser_page, jupyter_lab, open_notebook,  # noqa: F401
                 requires_chromium, run_all, run_cell, shot, wait_idle, widget_errors)

pytestmark = requires_chromium

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "placement.ipynb"
GRAPH_MIME = "application/vnd.tfjupyter.graph+json"
CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"


def _graph_outputs(page) -> list:
    """The graph documents of the notebook's outputs, in cell order (from the notebook model)."""
    return page.evaluate("""(mime) => {
      const panel = window.jupyterapp.shell.currentWidget;
      const found = [];
      for (const cell of panel.content.widgets) {
        const outputs = cell.model.outputs;
        if (!outputs) continue;
        for (let i = 0; i < outputs.length; i++) {
          const data = outputs.get(i).data;
          if (data[mime]) found.push(data[mime]);
        }
      }
      return found;
    }""", GRAPH_MIME)


def _output_text(page, index: int) -> str:
    """The text of a cell's outputs: streams, errors, text/plain (from the notebook model)."""
    return page.evaluate("""(i) => {
      const outputs = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs;
      const texts = [];
      for (let k = 0; k < outputs.length; k++) {
        const o = outputs.get(k).toJSON();
        texts.push(o.text || '', o.evalue || '', (o.data || {})['text/plain'] || '');
      }
      return texts.flat().join('\\n');
    }""", index)


def _node_fill(node) -> str:
    """The fill of a graph node's shape, as the browser computes it (rgb(...))."""
    return node.evaluate("""(g) => {
      const shape = g.querySelector('rect, path, ellipse, polygon');
      return getComputedStyle(shape).fill;
    }""")


def _rgb(hex_color: str) -> str:
    h = hex_color.lstrip("#")
    return "rgb(%d, %d, %d)" % tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def _wait(predicate, timeout: float, what: str, page=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        (page.wait_for_timeout(100) if page is not None else time.sleep(0.1))
    raise AssertionError(f"{what} within {timeout:.0f} s")


def _ipyparallel_processes(lab) -> list:
    return [p for p in lab.child_processes()
            if "ipyparallel" in " ".join(_cmdline(p))]


def _cmdline(process) -> list:
    try:
        return process.cmdline()
    except Exception:
        return []


def test_graph_view_and_cluster_panel(jupyter_lab, browser_page, tmp_path):
    page = browser_page
    nb = without_outputs(nbformat.read(NOTEBOOK, as_version=4))
    nb.cells.append(nbformat.v4.new_code_cell("%tf_cluster start --ps 1 --workers 1"))
    nb.cells.append(nbformat.v4.new_code_cell("%tf_cluster status"))
    nbformat.write(nb, jupyter_lab.root_dir / "placement.ipynb")
    open_notebook(page, jupyter_lab, "placement.ipynb")
    run_all(page)
    state = wait_idle(page, timeout=180)
    errors = [c["errors"] for c in state["cells"] if c["errors"]]
    assert not errors, errors

    # -- the graph views -------------------------------------------------------------------
    docs = _graph_outputs(page)
    assert len(docs) == 2, [d.get("title") for d in docs]
    small, towers = docs
    graphs = page.locator(".jp-OutputArea .tfj-graph")
    _wait(lambda: graphs.count() == 2, 30, "two rendered graph views", page)
    for i in range(2):
        assert float(graphs.nth(i).get_attribute("data-render-ms")) > 0

    # placement_demo: a small graph, drawn expanded; c = a + b was asked for /gpu:1 and was
    # soft-placed on the CPU.
    view = graphs.nth(0)
    add = view.locator('g.tfj-node[data-kind="op"][data-name="add"]')
    assert add.count() == 1
    node_doc = {n["name"]: n for n in small["nodes"]}
    assert node_doc["add"]["soft"] and node_doc["add"]["requested"].endswith("GPU:1")
    add.click()
    details = view.locator(".tfj-details")
    _wait(lambda: "soft placement" in details.inner_text(), 10, "the details of 'add'", page)
    assert "/device:GPU:1" in details.inner_text()

    # towers: three devices, each tower on its own CPU, colored as the document says.
    view = graphs.nth(1)
    view.scroll_into_view_if_needed()
    colors = {d["name"]: d["color"] for d in towers["devices"]}
    assert {CPU % 0, CPU % 1, CPU % 2} <= set(colors), colors
    assert len({colors[CPU % i] for i in range(3)}) == 3
    legend = view.locator(".tfj-legend").inner_text()
    for i in range(3):
        assert f"CPU:{i}" in legend, legend
    for i in range(2):
        group = view.locator(f'g.tfj-node[data-kind="group"][data-name="tower_{i}"]')
        assert group.count() == 1, f"tower_{i} is not drawn as a collapsed group"
        assert _node_fill(group) == _rgb(colors[CPU % (i + 1)])
    assert view.locator('g.tfj-node[data-name="tower_0/hidden"]').count() == 0
    shot(view, tmp_path / "towers-collapsed.png")

    # Expanding tower_0 shows its ops, each in its device's color.
    view.locator('g.tfj-node[data-kind="group"][data-name="tower_0"]').dblclick()
    hidden = view.locator('g.tfj-node[data-kind="op"][data-name="tower_0/hidden"]')
    _wait(lambda: hidden.count() == 1, 10, "tower_0/hidden after expanding tower_0", page)
    assert hidden.get_attribute("data-device") == CPU % 1
    assert _node_fill(hidden) == _rgb(colors[CPU % 1])
    # The losses' tf.stack asked for /gpu:0: soft-placed on CPU:0, and marked so.
    soft = view.locator('g.tfj-node[data-kind="op"][data-name="stack"]')
    assert soft.count() == 1 and soft.get_attribute("data-device") == CPU % 0
    assert "tfj-soft" in soft.get_attribute("class")
    assert _node_fill(soft) == _rgb(colors[CPU % 0])
    shot(view, tmp_path / "towers-expanded.png")

    # -- the cluster panel -------------------------------------------------------------------
    page.evaluate("() => window.jupyterapp.shell.activateById('tfjupyter-clusters')")
    panel = page.locator("#tfjupyter-clusters")
    task = panel.locator('.tfj-task[data-task="worker:0"]')
    _wait(lambda: task.count() == 1 and task.get_attribute("data-state") in ("idle", "running"),
          30, "worker:0 listed as up in the cluster panel", page)
    assert panel.locator('.tfj-task[data-task="ps:0"]').count() == 1
    assert "CPU:0" in task.inner_text()
    shot(panel, tmp_path / "panel.png")
    docs_picture = os.environ.get("TFJUPYTER_DOCS_SCREENSHOT")
    if docs_picture:
        graphs.nth(1).scroll_into_view_if_needed()
        shot(page, docs_picture)

    # Dashboard: the cluster's live dashboard, run in the notebook's kernel, in a tab of its own.
    panel.locator(".tfj-cluster").first.locator(".tfj-open-dashboard").click()
    dashboard = page.locator(".jp-MainAreaWidget .tfjupyter-dashboard")
    dashboard.first.wait_for(timeout=60_000)
    _wait(lambda: "worker:0" in dashboard.first.locator(".tfj-health").inner_text(), 30,
          "the dashboard's health table lists worker:0", page)
    assert not widget_errors(page)
    shot(page, tmp_path / "dashboard-tab.png")
    page.evaluate("""() => {
      const app = window.jupyterapp;
      for (const w of app.shell.widgets('main'))
        if (w.context && w.context.path === 'placement.ipynb') app.shell.activateById(w.id);
    }""")

    before = _ipyparallel_processes(jupyter_lab)
    assert before, "the notebook's cluster runs no ipyparallel process under the lab"
    cluster_row = panel.locator(".tfj-cluster").first
    cluster_row.locator(".tfj-stop").click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    _wait(lambda: not [p for p in before if p.is_running() and p.status() != "zombie"], 30,
          "the cluster's ipyparallel processes exit after Stop", page)
    _wait(lambda: panel.locator(".tfj-cluster").count() == 0
          or cluster_row.get_attribute("data-state") == "stopped",
          15, "the panel shows the cluster stopped", page)
    shot(panel, tmp_path / "panel-stopped.png")

    # The kernel's Cluster learns who stopped it at its next use.
    run_cell(page, len(nb.cells) - 1)
    wait_idle(page, timeout=60)
    said = _output_text(page, len(nb.cells) - 1)
    assert "stopped from JupyterLab's cluster panel" in said, said

"""tfjupyter in Notebook 7 (``jupyter notebook``, installed with the project) in Chromium.

One notebook, run cell by cell at /notebooks/<name>: the graph view draws its op nodes in their
devices' colors, the live dashboard's Bokeh canvases draw while a cell trains, and the cluster
magics work (start, a %%tf_worker cell, the status table, stop) while the cluster side panel,
which Notebook 7 puts in its left area too (View > Left Sidebar), lists the cluster's tasks,
without the Dashboard button of JupyterLab (Notebook 7's main area holds one document).
Nothing of tfjupyter's reaches the page's console errors.

Screenshots go to the test's tmp dir.
"""
import time

import nbformat
import pytest

from lab import (VIEWPORT, browser_page, jupyter_notebook,  # noqa: F401 (fixtures)
                 console_errors, open_notebook, requires_chromium, run_cell, shot, wait_idle,
                 widget_errors)

pytestmark = requires_chromium

NAME = "notebook7.ipynb"
GRAPH_MIME = "application/vnd.tfjupyter.graph+json"
CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"
DASHBOARD = ".jp-OutputArea-output .tfjupyter-dashboard"

CELLS = [
    "%load_ext tfjupyter\nimport tfjupyter as tf",
    # 1-2: a graph over two CPUs, shown as the session placed it
    "with tf.device('/cpu:0'):\n"
    "    a = tf.constant([1.0, 2.0], name='a')\n"
    "with tf.device('/cpu:1'):\n"
    "    b = tf.multiply(a, 2.0, name='b')\n"
    "sess = tf.Session(config=tf.ConfigProto(device_count={'CPU': 2}))\n"
    "print(sess.run(b))",
    "%tf_graph show --session sess",
    # 3-4: the live dashboard of a local training loop
    "%tf_dashboard --local",
    "tf.reset_default_graph()\n"
    "data = tf.datasets.load_digits(seed=0)\n"
    "x = tf.placeholder(tf.float32, [None, 64], name='x')\n"
    "y = tf.placeholder(tf.int64, [None], name='y')\n"
    "w = tf.get_variable('w', [64, 10], initializer=tf.zeros_initializer())\n"
    "loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(\n"
    "    labels=y, logits=tf.matmul(x, w)))\n"
    "tf.summary.scalar('loss', loss)\n"
    "global_step = tf.train.get_or_create_global_step()\n"
    "train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss, global_step=global_step)\n"
    "summaries = tf.summary.merge_all()\n"
    "with tf.Session() as train:\n"
    "    train.run(tf.global_variables_initializer())\n"
    "    for step in range(1, 401):\n"
    "        images, labels = data.train.next_batch(64)\n"
    "        train.run([train_op, summaries], {x: images, y: labels})\n"
    "print('trained', step, 'steps')",
    # 5-8: the cluster magics
    "%tf_cluster start --ps 1 --workers 1",
    "%%tf_worker\n"
    "with tf.device('/job:worker/task:%d' % task_index):\n"
    "    total = tf.reduce_sum(tf.constant([1.0, 2.0, 3.0]))\n"
    "with tf.Session(server.target) as s:\n"
    "    print('worker', task_index, 'sum', s.run(total))",
    "%tf_cluster status",
    "%tf_cluster stop",
]
GRAPH, TRAIN, START, WORKER, STATUS, STOP = 2, 4, 5, 6, 7, 8


def _run(page, index: int, timeout: float = 120.0) -> None:
    """Runs cell ``index`` and waits for it; its errors fail the test."""
    run_cell(page, index)
    state = wait_idle(page, timeout=timeout)
    cell = state["cells"][index]
    assert cell["count"] is not None and not cell["errors"], (index, cell)


def _cell_output(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def _graph_document(page, index: int) -> dict:
    """The graph document of cell ``index``'s output (from the notebook model)."""
    return page.evaluate("""([i, mime]) => {
      const outputs = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs;
      for (let k = 0; k < outputs.length; k++) {
        const data = outputs.get(k).data;
        if (data[mime]) return data[mime];
      }
      return null;
    }""", [index, GRAPH_MIME])


def _fill(node) -> str:
    return node.evaluate("(g) => getComputedStyle(g.querySelector('rect, path')).fill")


def _rgb(hex_color: str) -> str:
    h = hex_color.lstrip("#")
    return "rgb(%d, %d, %d)" % tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


# The number of distinct opaque colors on a figure's canvases (a blank figure has at most one).
_CANVAS_COLORS_JS = """(canvases) => {
  const colors = new Set();
  for (const canvas of canvases) {
    if (!canvas.width || !canvas.height) continue;
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < pixels.length && colors.size < 50; i += 4 * 97)
      if (pixels[i + 3] > 0) colors.add(pixels[i] + ',' + pixels[i + 1] + ',' + pixels[i + 2]);
  }
  return colors.size;
}"""


def _wait(predicate, timeout: float, what: str, page):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        page.wait_for_timeout(200)
    raise AssertionError(f"{what} within {timeout:.0f} s")


@pytest.mark.timeout(300)
def test_graph_view_dashboard_and_cluster_magics(jupyter_notebook, browser_page, tmp_path):
    page = browser_page
    # uncaught errors with their stacks: one thrown by our bundle names its file
    stacks = []
    page.on("pageerror", lambda e: stacks.append(e.stack or str(e)))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, jupyter_notebook.root_dir / NAME)
    open_notebook(page, jupyter_notebook, NAME)
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"

    # -- the graph view: op nodes in their devices' colors --------------------------------------
    for i in range(GRAPH + 1):
        _run(page, i)
    document = _graph_document(page, GRAPH)
    assert document is not None, "the %tf_graph cell has no graph output"
    colors = {d["name"]: d["color"] for d in document["devices"]}
    assert {CPU % 0, CPU % 1} <= set(colors) and colors[CPU % 0] != colors[CPU % 1], colors
    view = _cell_output(page, GRAPH).locator(".tfj-graph")
    view.first.wait_for(timeout=30_000)
    for name, device in (("a", CPU % 0), ("b", CPU % 1)):
        op = view.locator(f'svg g.tfj-node[data-kind="op"][data-name="{name}"]')
        assert op.count() == 1, f"op {name} is not drawn"
        assert op.get_attribute("data-device") == device
        assert _fill(op) == _rgb(colors[device])
    shot(view, tmp_path / "nb7-graph.png")

    # -- the dashboard: its Bokeh canvases draw while the cell trains ---------------------------
    _run(page, TRAIN - 1)
    run_cell(page, TRAIN)
    figure = page.locator(f"{DASHBOARD} .bk-Figure").first
    figure.wait_for(timeout=60_000)
    # Bokeh's canvases sit in shadow roots, which Playwright's CSS selectors pierce
    _wait(lambda: figure.locator("canvas").evaluate_all(_CANVAS_COLORS_JS) > 3, 60, "the dashboard's first figure "
          "draws (more than a background on its canvases)", page)
    state = wait_idle(page, timeout=120)
    assert not state["cells"][TRAIN]["errors"], state["cells"][TRAIN]
    assert "trained 400 steps" in _cell_output(page, TRAIN).inner_text()
    assert widget_errors(page) == []
    page.locator(DASHBOARD).first.scroll_into_view_if_needed()
    shot(page, tmp_path / "nb7-dashboard.png")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": 2200})
    page.locator(".jp-Notebook .jp-Cell").nth(GRAPH).evaluate(
        "e => e.scrollIntoView({block: 'start'})")
    shot(page, tmp_path / "nb7-graph-and-dashboard.png")
    page.set_viewport_size(VIEWPORT)

    # -- the cluster magics, and the side panel ------------------------------------------------
    _run(page, START, timeout=180)
    _run(page, WORKER)
    assert "worker 0 sum 6.0" in _cell_output(page, WORKER).inner_text()
    _run(page, STATUS)
    table = _cell_output(page, STATUS).locator("table")
    assert table.count() == 1, "%tf_cluster status shows no table"
    text = table.inner_text()
    assert "2/2 tasks up" in text and "ps:0" in text and "worker:0" in text, text

    page.evaluate("() => window.jupyterapp.shell.activateById('tfjupyter-clusters')")
    panel = page.locator("#tfjupyter-clusters")
    task = panel.locator('.tfj-task[data-task="worker:0"]')
    _wait(lambda: task.count() == 1 and task.get_attribute("data-state") in ("idle", "running"),
          30, "worker:0 listed as up in the cluster panel", page)
    assert panel.locator(".tfj-stop").first.is_visible()
    assert panel.locator(".tfj-open-dashboard").first.is_hidden()
    shot(page, tmp_path / "nb7-panel.png")

    _run(page, STOP, timeout=60)
    _wait(lambda: panel.locator(".tfj-cluster").count() == 0
          or panel.locator(".tfj-cluster").first.get_attribute("data-state") == "stopped",
          30, "the panel shows the cluster stopped", page)
    ours = [e for e in console_errors(page) + stacks if "tfjupyter" in e or "tfj-" in e]
    assert ours == [], ours

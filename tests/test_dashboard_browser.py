"""notebooks/dashboard.ipynb in a real JupyterLab in a Chromium that reaches nothing but the lab:
the dashboards render (BokehJS from the Jupyter server), update while training runs, list the
soft-placed ops, and the saved notebook exports with its static snapshots.

Set TFJUPYTER_DOCS_SCREENSHOT=docs/dashboard.png to also write the README's picture.
"""
import os
import re
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from bokeh.resources import CDN

from dashboard_figures import figure_png
from notebook_util import without_outputs
from lab import (browser_page, jupyter_lab,  # noqa: F401 (fixtures)
                 open_notebook, requires_chromium, run_all, save, shot, wait_idle,
                 websocket_counter, widget_errors)

pytestmark = requires_chromium

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "dashboard.ipynb"
DASHBOARD = ".jp-OutputArea-output .tfjupyter-dashboard"


def _shot_whole(page, element, path) -> None:
    """A screenshot of all of ``element``, in a viewport tall enough to hold it."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 2600})
    try:
        element.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        shot(element, path)
    finally:
        page.set_viewport_size(size)


def _serve_the_cdn_locally(page) -> list:
    """Answers the page's requests for Bokeh's CDN files with the installed bokeh's own files;
    returns the list of CDN URLs asked for, in order."""
    import bokeh
    static = Path(bokeh.__file__).parent / "server" / "static" / "js"
    asked = []

    def answer(route):
        url = route.request.url
        asked.append(url)
        name = url.rsplit("/", 1)[1].replace(f"-{bokeh.__version__}", "")
        route.fulfill(status=200, content_type="application/javascript",
                      body=(static / name).read_bytes())

    page.route("https://cdn.bokeh.org/**", answer)
    return asked


@pytest.mark.timeout(420)
def test_dashboard_notebook_in_jupyterlab(jupyter_lab, browser_page, tmp_path):  # noqa: F811
    # The browser reaches nothing but the lab; the dashboards load BokehJS from its server.
    lab, page = jupyter_lab, browser_page
    offline = page.offline   # every request outside 127.0.0.1 fails (lab.browser_page)
    notebook = without_outputs(nbformat.read(NOTEBOOK, as_version=4))
    nbformat.write(notebook, lab.root_dir / NOTEBOOK.name)
    open_notebook(page, lab, NOTEBOOK.name)
    patches = websocket_counter(page, b"PATCH-DOC", msg_type="comm_msg")
    run_all(page)

    # The local run's dashboard renders its figures (Bokeh canvases inside the widget).
    page.locator(f"{DASHBOARD} .bk-Figure canvas").first.wait_for(timeout=120_000)
    assert widget_errors(page) == []

    # While the four towers train, the examples/s figure keeps changing.
    frames, missed, start = [], 0, time.monotonic()
    while time.monotonic() - start < 90:
        frame = figure_png(page, DASHBOARD, 0)   # examples/s, the first of the top row
        if frame is None:
            missed += 1
        else:
            frames.append(frame)
        if page.locator(".jp-OutputArea-output", has_text="step 1000").count():
            break
        page.wait_for_timeout(300)
    changes = sum(a != b for a, b in zip(frames, frames[1:]))
    assert changes >= 2, (f"the examples/s figure changed {changes} times in {len(frames)} looks "
                          f"({missed} missed: the page was too busy for a screenshot)")
    patches.stop()
    rate = patches.rate()
    assert patches.count >= 5, (patches.count, rate)

    # The placement table, filtered to the soft-placed ops (a filter that runs in the page):
    # the towers asked for /gpu:0-3, which this machine does not have.
    dashboard = page.locator(DASHBOARD).first
    dashboard.get_by_text("soft-placed only").first.click()
    page.wait_for_timeout(500)
    cells = dashboard.locator(".slick-cell")
    soft = dashboard.locator(".slick-cell", has_text="soft placement")
    soft.first.wait_for(timeout=10_000)
    texts = cells.all_inner_texts()
    assert any(t.startswith("tower_") for t in texts), texts[:20]
    assert any("GPU:" in t for t in texts), texts[:20]   # the requested device
    rows = [t for t in texts if t.startswith("soft placement")]
    assert rows and all(t.startswith("soft placement") for t in rows)
    _shot_whole(page, dashboard, tmp_path / "dashboard-local.png")
    docs = os.environ.get("TFJUPYTER_DOCS_SCREENSHOT")
    if docs:
        shutil.copy(tmp_path / "dashboard-local.png", docs)

    # The cluster part: a second dashboard follows the cluster; closing leaves snapshots.
    state = wait_idle(page, timeout=300)
    errors = [c for c in state["cells"] if c.get("errors")]
    assert not errors, errors
    cluster_dash = page.locator(DASHBOARD).nth(1)
    # The health table follows the tasks: the global step each one last saw nears the last
    # step (200; a worker that stopped early saw a few less).
    health = cluster_dash.locator(".tfj-health")
    deadline = time.monotonic() + 15
    while True:
        rows = [r.split("\t") for r in health.locator("tr").all_inner_texts()]
        steps = {r[0]: r[3] for r in rows[1:] if len(r) > 3}
        if set(steps) == {"ps:0", "worker:0", "worker:1"} and all(
                v.strip().isdigit() and int(v) >= 150 for v in steps.values()):
            break
        assert time.monotonic() < deadline, rows
        page.wait_for_timeout(500)
    _shot_whole(page, cluster_dash, tmp_path / "dashboard-cluster.png")
    # Beside their live widgets, the snapshots fold into a one-line note.
    folded = page.locator(".tfjupyter-dashboard-snapshot .tfj-folded")
    assert folded.count() == 2
    assert folded.first.is_visible() and folded.nth(1).is_visible()

    # Saved and exported: the HTML carries both static snapshots with their final data.
    path = save(page)
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(path, as_version=4))
    assert len(re.findall(r"class=[\"']tfjupyter-dashboard-snapshot[\"']", body)) == 2
    assert "soft placement: " in body and "worker:1" in body and "Scalar summaries" in body
    exported = tmp_path / "dashboard.html"
    exported.write_text(body)

    # Opened without a kernel or a Jupyter server, the export draws the snapshots' figures
    # with BokehJS from Bokeh's CDN: here, the installed bokeh's files answer for the CDN.
    cdn = _serve_the_cdn_locally(page)
    page.goto(exported.as_uri())
    snapshot = page.locator(".tfjupyter-dashboard-snapshot")
    snapshot.nth(1).locator(".bk-Figure canvas").first.wait_for(timeout=30_000)
    assert cdn == CDN.js_files, cdn
    assert not [u for u in offline.blocked if "bokeh" in u], offline.blocked
    assert snapshot.nth(0).locator(".bk-Figure").count() >= 5
    shot(snapshot.nth(1), tmp_path / "exported-snapshot.png")
    print(f"\nPATCH-DOC updates during the local run: {patches.count} at {rate:.1f}/s; "
          f"figure changes seen: {changes} in {len(frames)} looks; screenshots in {tmp_path}")

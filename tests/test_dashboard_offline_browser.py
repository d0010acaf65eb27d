"""A dashboard in JupyterLab in a Chromium that can reach nothing but 127.0.0.1, with no
TFJUPYTER_BOKEHJS in the kernel: BokehJS comes from the Jupyter server (the tfjupyter server
extension), the canvases draw and change while a cell trains. And when BokehJS cannot be
loaded, the output says so in words, with the fix.

Set TFJUPYTER_OFFLINE_SCREENSHOT=<path> to also keep the screenshot of the offline dashboard.
"""
import os
import re
import shutil
import time

import bokeh
import nbformat
import pytest

from dashboard_figures import figure_png
from lab import (browser_page, jupyter_lab,  # noqa: F401 (fixtures)
                 open_notebook, requires_chromium, run_all, shot, wait_for_text, wait_idle,
                 widget_errors)

pytestmark = [requires_chromium, pytest.mark.timeout(300)]

DASHBOARD = ".jp-OutputArea-output .tfjupyter-dashboard"
BOKEHJS_ERROR = ".jp-OutputArea-output .tfjupyter-bokehjs-error"

SETUP = """\
import os
os.environ.pop("TFJUPYTER_BOKEHJS", None)   # the default, whatever the test runner's env says
import time
import numpy as np
import tfjupyter as tf
from tfjupyter.widgets import Dashboard
x = tf.placeholder(tf.float32, [None, 8])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([8, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
tf.summary.scalar("loss", loss)
train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
summaries = tf.summary.merge_all()
sess = tf.Session()
sess.run(tf.global_variables_initializer())
Dashboard(sess, trace_every=0)
"""

TRAIN = """\
rng = np.random.RandomState(0)
start = time.time()
while time.time() - start < {seconds}:
    xs = rng.rand(64, 8).astype(np.float32)
    sess.run([train, summaries], {{x: xs, y: xs.sum(axis=1, keepdims=True)}})
    time.sleep(0.005)
print("trained")
"""


def _notebook(path, seconds):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP),
                nbformat.v4.new_code_cell(TRAIN.format(seconds=seconds))]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


def test_the_dashboard_draws_offline_with_the_jupyter_servers_bokehjs(jupyter_lab, browser_page,
                                                                      tmp_path):
    lab, page = jupyter_lab, browser_page
    offline = page.offline   # every request outside 127.0.0.1 fails (lab.browser_page)
    _notebook(lab.root_dir / "offline_dashboard.ipynb", seconds=40)
    open_notebook(page, lab, "offline_dashboard.ipynb")
    run_all(page)

    page.locator(f"{DASHBOARD} .bk-Figure canvas").first.wait_for(timeout=120_000)
    assert widget_errors(page) == []
    assert page.locator(BOKEHJS_ERROR).first.is_hidden()
    frames, start = [], time.monotonic()
    trained = page.locator(".jp-OutputArea-output", has_text="trained")
    while time.monotonic() - start < 60 and not trained.count():
        frame = figure_png(page, DASHBOARD, 1)   # steps/s: a rate that moves while it trains
        if frame is not None:
            frames.append(frame)
        if len(frames) == 10:          # the picture of a dashboard while it trains, offline
            shot(page.locator(DASHBOARD).first, tmp_path / "offline-dashboard.png")
        page.wait_for_timeout(500)
    changes = sum(a != b for a, b in zip(frames, frames[1:]))
    assert changes >= 2, f"the steps/s figure changed {changes} times in {len(frames)} looks"
    state = wait_idle(page, timeout=120)
    assert not [c for c in state["cells"] if c.get("errors")], state

    # BokehJS came from this Jupyter server, at the kernel's bokeh version; nothing was
    # fetched from elsewhere (what was tried is listed in the message).
    served = f"{lab.base_url}tfjupyter/static/bokeh/{bokeh.__version__}/bokeh.min.js"
    assert served in offline.served, [u for u in offline.served if "bokeh" in u]
    assert not [u for u in offline.blocked if "bokeh" in u], offline.blocked
    keep = os.environ.get("TFJUPYTER_OFFLINE_SCREENSHOT")
    if keep:
        shutil.copy(tmp_path / "offline-dashboard.png", keep)
    print(f"\nfigure changes while training offline: {changes} in {len(frames)} looks; "
          f"blocked requests: {offline.blocked}; screenshot {tmp_path / 'offline-dashboard.png'}")


def test_when_bokehjs_cannot_be_loaded_the_output_says_why_and_the_fix(jupyter_lab, browser_page):
    lab, page = jupyter_lab, browser_page
    # As a Jupyter server without the tfjupyter server extension answers: Lab's 404 page.
    page.route("**/tfjupyter/static/bokeh/**", lambda route: route.fulfill(
        status=404, content_type="text/html", body="<html>404: Not Found</html>"))
    _notebook(lab.root_dir / "bokehjs_missing.ipynb", seconds=1)
    open_notebook(page, lab, "bokehjs_missing.ipynb")
    run_all(page)
    wait_for_text(page, "BokehJS", timeout=120)
    message = page.locator(BOKEHJS_ERROR).first
    message.wait_for(state="visible", timeout=30_000)
    text = message.inner_text()
    url = f"{lab.base_url}tfjupyter/static/bokeh/{bokeh.__version__}/bokeh.min.js"
    assert text == (
        f"BokehJS {bokeh.__version__} could not be loaded from {url} (HTTP 404). Is the "
        "tfjupyter server extension enabled in this Jupyter server? Run `jupyter server "
        "extension enable tfjupyter.lab` and restart Jupyter, or set TFJUPYTER_BOKEHJS=inline "
        "in the kernel's environment to embed BokehJS in the notebook.")
    # The dashboard's widget, without BokehJS, shows no error box of its own: the words say it.
    page.locator(DASHBOARD).first.wait_for(timeout=60_000)
    wait_idle(page, timeout=120)
    boxes = page.locator(f"{DASHBOARD} .jupyter-widgets-error-widget")
    boxes.first.wait_for(state="attached", timeout=30_000)   # ipywidgets' box is there...
    assert not boxes.first.is_visible()                       # ...and hidden
    assert not page.get_by_text(re.compile("Click to show javascript error")).first.is_visible()

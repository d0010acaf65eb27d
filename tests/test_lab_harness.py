"""The browser-test harness (tests/lab.py) against a real JupyterLab and Chromium.

An ipywidgets slider and a jupyter_bokeh plot must render (their lab extensions come
from site-packages), a cell that streams into the plot must reach the page as a run
of Bokeh PATCH-DOC comm messages, and saving must write the outputs to disk.
"""
import time

import nbformat
import pytest

from lab import (browser_page, jupyter_lab,  # noqa: F401 (fixtures)
                 open_notebook, requires_chromium, run_all, run_cell, save, shot, wait_for_text,
                 wait_idle, websocket_counter, widget_errors)

pytestmark = requires_chromium

CELLS = [
    "import ipywidgets as w; s = w.IntSlider(value=7); s",
    # BokehModel's view needs BokehJS in the page (window.Bokeh): output_notebook loads
    # it, inline because the browser has no network.
    "from bokeh.io import output_notebook; from bokeh.resources import INLINE\n"
    "output_notebook(INLINE, hide_banner=True)\n"
    "from bokeh.plotting import figure; from jupyter_bokeh import BokehModel\n"
    "f = figure(width=300, height=200); src = f.line([1,2,3],[1,4,9]).data_source\n"
    "BokehModel(f)",
    "import time\n"
    "for i in range(20):\n"
    "    src.stream({'x':[4+i],'y':[i]}); time.sleep(0.1)\n"
    "print('streamed', i + 1)",
]

# How many non-empty canvases the outputs hold, shadow roots included (Bokeh 3 puts
# its DOM into shadow roots; a second way to check what the locator below checks).
BOKEH_CANVAS_JS = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName === 'CANVAS' && el.width > 0 && el.height > 0) found.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  for (const out of document.querySelectorAll('.jp-OutputArea-output')) walk(out);
  return found.length;
}"""


@pytest.mark.timeout(120)
def test_widgets_bokeh_stream_and_save(jupyter_lab, browser_page, tmp_path):  # noqa: F811
    t0 = time.monotonic()
    page = browser_page
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    name = "harness.ipynb"
    nbformat.write(nb, jupyter_lab.root_dir / name)

    open_notebook(page, jupyter_lab, name)
    t_open = time.monotonic()
    # Only cell 3 makes PATCH-DOC comm messages (BokehJS itself, sent inline by cell 2
    # as a display_data, contains the string too: hence msg_type).
    patches = websocket_counter(page, b"PATCH-DOC", msg_type="comm_msg")
    run_all(page)
    state = wait_idle(page, timeout=60)
    t_run = time.monotonic()
    wait_for_text(page, "streamed 20")

    assert [c["count"] for c in state["cells"]] == [1, 2, 3], state
    assert widget_errors(page) == []
    page.locator(".jp-OutputArea-output .widget-slider").first.wait_for(timeout=10000)
    assert page.locator(".jp-OutputArea-output .widget-readout").first.inner_text() == "7"
    # Playwright's CSS engine pierces open shadow roots: the figure and its canvas.
    figure = page.locator(".jp-OutputArea-output .bk-Figure").first
    figure.wait_for(timeout=10000)
    assert figure.locator("canvas").count() >= 1
    assert page.evaluate(BOKEH_CANVAS_JS) >= 1
    # Each stream() sends one PATCH-DOC comm message (header, metadata and content
    # are three comm messages; only the header names PATCH-DOC).
    assert patches.count >= 5, patches.count
    patches.stop()
    first_span = patches.span()

    # Run cell 3 again with the page at rest (during run-all the browser was still
    # busy evaluating BokehJS and took the patches in one batch): the frames now
    # arrive about 0.1 s apart.
    rerun = websocket_counter(page, b"PATCH-DOC", msg_type="comm_msg")
    run_cell(page, 2)
    state = wait_idle(page, timeout=30)
    rerun.stop()
    assert [c["count"] for c in state["cells"]] == [1, 2, 4], state
    assert rerun.count == 20, rerun.count
    assert rerun.span() > 0.9, f"20 patches came within {rerun.span():.2f} s"

    shot(figure, tmp_path / "bokeh.png")
    shot(page, tmp_path / "page.png")
    assert (tmp_path / "bokeh.png").stat().st_size > 1000

    path = save(page)
    saved = nbformat.read(path, as_version=4)
    outputs = [c.get("outputs", []) for c in saved.cells]
    assert all(outputs), outputs
    view = "application/vnd.jupyter.widget-view+json"
    for cell in outputs[:2]:
        assert any(view in o.get("data", {}) for o in cell), cell
    assert "streamed 20" in "".join(o.get("text", "") for o in outputs[2])
    assert [c.execution_count for c in saved.cells] == [1, 2, 4]

    print(f"\nopen {t_open - t0:.1f} s, run all {t_run - t_open:.1f} s, "
          f"total {time.monotonic() - t0:.1f} s; PATCH-DOC frames: run all {patches.count} "
          f"over {first_span:.2f} s, rerun {rerun.count} over {rerun.span():.2f} s "
          f"({rerun.rate():.1f}/s)")

"""How long the JupyterLab graph view takes to draw 1,000- and 5,000-op graphs in Chromium.

    python bench/lab_graph.py [--rounds 3] [--sizes 1000,5000]

Starts a JupyterLab (tests/lab.py's harness: 127.0.0.1, temp dirs, /usr/bin/chromium through
Playwright), builds in the kernel a graph of N ops in N/100 name scopes placed by a session over
four CPU devices, and displays it ``rounds`` times. Reported per size: the renderer's own
``data-render-ms`` (model + layout + SVG, first draw with every scope collapsed), the time from
``display()`` to the drawn view as the page sees it (includes the kernel building the MIME
bundle and the message transfer), the time to expand one scope of 100 ops, the size of the
bundle. These are absolute latencies (what a user waits for), not ratios: no other graph view
runs inside a notebook to compare with.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import nbformat  # noqa: E402

from lab import open_notebook, run_cell, start_lab, track_page, wait_idle  # noqa: E402

BUILD = '''
import json, time, tfjupyter as tf
from tfjupyter.lab import GraphView
from IPython.display import display

def scoped_graph(n_ops):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x")
        for s in range(n_ops // 100):
            with tf.device("/cpu:%d" % (s % 4)), tf.name_scope("layer_%d" % s):
                for _ in range(49):
                    x = tf.add(x, tf.constant(0.001), name="add")
    return g, x

views = {}
for n in SIZES:
    g, out = scoped_graph(n)
    sess = tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 4}))
    sess.run(out)
    views[n] = GraphView(g, session=sess)
sizes = {n: len(json.dumps(v._repr_mimebundle_()["application/vnd.tfjupyter.graph+json"]))
         for n, v in views.items()}
'''


def measure(page, size: int, cell: int) -> dict:
    count_before = page.locator(".tfj-graph").count()
    t0 = time.perf_counter()
    run_cell(page, cell)
    page.wait_for_function(f"() => document.querySelectorAll('.tfj-graph[data-render-ms]').length"
                           f" > {count_before}", timeout=120_000)
    seen_ms = (time.perf_counter() - t0) * 1000
    wait_idle(page, timeout=120)
    view = page.locator(".tfj-graph").nth(count_before)
    render_ms = float(view.get_attribute("data-render-ms"))
    group = view.locator('g.tfj-node[data-kind="group"]').first
    group.dblclick()
    page.wait_for_function("(g) => Number(g.getAttribute('data-render-ms')) !== %r" % render_ms,
                           arg=view.element_handle(), timeout=60_000)
    expand_ms = float(view.get_attribute("data-render-ms"))
    return {"render_ms": render_ms, "seen_ms": seen_ms, "expand_ms": expand_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1000,5000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from playwright.sync_api import sync_playwright

    cells = [nbformat.v4.new_code_cell(BUILD.replace("SIZES", repr(sizes)))]
    order = [n for _ in range(args.rounds) for n in sizes]
    cells += [nbformat.v4.new_code_cell(f"display(views[{n}])") for n in order]
    cells.append(nbformat.v4.new_code_cell("print(sizes)"))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    results = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory() as tmp, start_lab(Path(tmp)) as lab, \
            sync_playwright() as p:
        nbformat.write(nb, lab.root_dir / "bench.ipynb")
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--no-proxy-server"])
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        track_page(page)
        open_notebook(page, lab, "bench.ipynb")
        run_cell(page, 0)
        wait_idle(page, timeout=300)
        for i, n in enumerate(order):
            results[n].append(measure(page, n, i + 1))
        run_cell(page, len(cells) - 1)
        wait_idle(page)
        printed = page.locator(".jp-OutputArea-output").last.inner_text()
        browser.close()
    print(f"bundle sizes (bytes of JSON): {printed.strip()}")
    print(f"{'ops':>6} {'render ms (min/median)':>24} {'display->drawn ms':>20} "
          f"{'expand ms':>12}")
    for n, rows in results.items():
        render = [r["render_ms"] for r in rows]
        seen = [r["seen_ms"] for r in rows]
        expand = [r["expand_ms"] for r in rows]
        print(f"{n:>6} {min(render):>11.0f} / {statistics.median(render):<10.0f} "
              f"{statistics.median(seen):>20.0f} {statistics.median(expand):>12.0f}")


if __name__ == "__main__":
    main()

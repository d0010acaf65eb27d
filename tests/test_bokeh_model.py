"""The dashboard's one adapter of jupyter_bokeh's internals (tfjupyter/widgets/bokeh_model.py),
pinned to the jupyter_bokeh range it was written for: the installed version is in it, setup.py
asks for it, and both overridden behaviours hold (batched PATCH-DOC, browser edits under the
dashboard's lock).
"""
import json
import re
import threading
import time
from pathlib import Path

import jupyter_bokeh
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tfjupyter.widgets.bokeh_model import SUPPORTED_JUPYTER_BOKEH, LockedBokehModel

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def test_the_installed_jupyter_bokeh_is_the_supported_one_and_setup_py_pins_it():
    assert Version(jupyter_bokeh.__version__) in SpecifierSet(SUPPORTED_JUPYTER_BOKEH), \
        (f"jupyter_bokeh {jupyter_bokeh.__version__} is outside {SUPPORTED_JUPYTER_BOKEH}: read "
         "its BokehModel._sync_model and _document_patched again before widening the range")
    pinned = re.findall(r'"jupyter_bokeh([^"]*)"', SETUP.read_text())
    assert [SpecifierSet(p) for p in pinned] == [SpecifierSet(SUPPORTED_JUPYTER_BOKEH)]


def _model():
    source = ColumnDataSource({"x": [0], "y": [0]})
    plot = figure()
    plot.line("x", "y", source=source)
    lock = threading.RLock()
    model = LockedBokehModel(plot, lock)
    sent = []
    model.send = lambda content, buffers=None: sent.append((content, buffers))
    return model, plot, source, lock, sent


def _patch_docs(sent):
    """The PATCH-DOC messages in what was sent: each is header, metadata, content (+ buffers)."""
    headers = [json.loads(c["payload"]) for c, _ in sent
               if "payload" in c and '"msgtype"' in c["payload"]]
    return [h for h in headers if h["msgtype"] == "PATCH-DOC"]


def test_changes_in_a_batch_go_out_as_one_patch_doc_and_outside_one_each():
    model, plot, source, lock, sent = _model()
    plot.title.text = "a"
    source.data = {"x": [0, 1], "y": [0, 1]}
    assert len(_patch_docs(sent)) == 2
    sent.clear()
    with model.batch():
        plot.title.text = "b"
        source.stream({"x": [2], "y": [4]})
        plot.width = 500
        assert sent == []                       # held until the batch ends
    assert len(_patch_docs(sent)) == 1
    content = json.loads(sent[2][0]["payload"])
    kinds = sorted(event["kind"] for event in content["events"])
    assert kinds == ["ColumnsStreamed", "ModelChanged", "ModelChanged"]
    sent.clear()
    with model.batch():
        pass
    assert sent == []                           # nothing changed: nothing sent


def test_the_browsers_edits_wait_for_the_dashboards_lock_and_are_not_echoed():
    model, plot, source, lock, sent = _model()
    edit = {"event": "jsevent", "kind": "ModelChanged", "attr": "text", "new": "from the browser",
            "model": {"id": plot.title.id}}
    applied = threading.Event()

    def browser():
        model._sync_model(model, dict(edit), [])
        applied.set()

    with lock:                                   # the pump is changing the document
        thread = threading.Thread(target=browser)
        thread.start()
        time.sleep(0.3)
        assert not applied.is_set() and plot.title.text != "from the browser"
    assert applied.wait(10)
    thread.join(10)
    assert plot.title.text == "from the browser"
    assert _patch_docs(sent) == []               # the browser knows its own edit

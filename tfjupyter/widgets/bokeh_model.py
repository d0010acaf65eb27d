"""The one place that reaches into jupyter_bokeh: its ``BokehModel`` (the ipywidget of a Bokeh
layout), adapted for the dashboard's pump.

jupyter_bokeh has no public hook for either change, so two of its private methods are
overridden; ``SUPPORTED_JUPYTER_BOKEH`` is the range they were read in (setup.py pins it, and
tests/test_bokeh_model.py checks the installed version and both behaviours):

- ``_sync_model`` applies the browser's edits (on the kernel's shell thread): it takes the
  dashboard's lock, which the pump holds while it changes the document.
- ``_document_patched`` sends each document change as its own PATCH-DOC (three comm messages);
  inside ``batch()`` the changes are held and go out as one. Every send hands the GIL to a busy
  training thread and waits up to a switch interval to get it back, so sends, not work, set how
  long an update takes while a cell trains.
"""
from __future__ import annotations

import contextlib
import json

from bokeh.protocol import Protocol
from jupyter_bokeh import BokehModel

__all__ = ["LockedBokehModel", "SUPPORTED_JUPYTER_BOKEH"]

SUPPORTED_JUPYTER_BOKEH = ">=4.0,<5"


class LockedBokehModel(BokehModel):
    """``BokehModel(root)`` whose browser edits take ``lock`` and whose document changes made
    inside ``batch()`` go out as one PATCH-DOC message."""

    def __init__(self, root, lock):
        # Set before BokehModel.__init__, which registers for the document's changes.
        self.tfjupyter_lock = lock
        self.tfjupyter_batch = None
        super().__init__(root)

    def _sync_model(self, *args, **kwargs):
        with self.tfjupyter_lock:
            return super()._sync_model(*args, **kwargs)

    def _document_patched(self, event) -> None:
        if self.tfjupyter_batch is None:
            super()._document_patched(event)
        elif event.setter is not self:   # the browser's own edits are not echoed back
            self.tfjupyter_batch.append(event)

    @contextlib.contextmanager
    def batch(self):
        """Holds the document's changes made inside, then sends them as one PATCH-DOC."""
        self.tfjupyter_batch = []
        try:
            yield
        finally:
            patched, self.tfjupyter_batch = self.tfjupyter_batch, None
            if patched:
                message = Protocol().create("PATCH-DOC", patched)
                self.send({"msg": "patch", "payload": message.header_json})
                self.send({"msg": "patch", "payload": message.metadata_json})
                self.send({"msg": "patch", "payload": message.content_json})
                for buffer in message.buffers:
                    self.send({"msg": "patch", "payload": json.dumps(buffer.ref)})
                    self.send({"msg": "patch"}, [buffer.to_bytes()])

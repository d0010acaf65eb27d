"""The cells an experiment ran, read from IPython's public cell events.

An experiment starts and ends inside a cell (``%tf_experiment start``, a ``with Experiment``
cell), so the cell running at that moment must be known: ``watch_cells(shell)`` keeps it from
the shell's ``pre_run_cell`` events (their ``ExecutionInfo.raw_cell``). ``%load_ext tfjupyter``
starts watching; so does an experiment's start, for a shell not watched yet (the cell that
started it is then recorded when it ends, from ``post_run_cell``, and a ``with Experiment``
cell that ends the experiment too is not recorded).

``CellCapture`` writes one line per cell to ``cells.jsonl``: ``cell`` (its place in the
record), ``execution_count`` (the one post_run_cell's result gives; None for a cell written
before it ended), ``code``, ``success`` (None: not ended when written), ``error``, ``t``. The
cell that starts the experiment is written at once and again when it ends (readers keep the last
line of each ``cell``); the cell that ends it is written by ``stop()``; the cells between, when
each ends. ``write_notebook`` turns the lines into ``cells.ipynb``.
"""
from __future__ import annotations

import os
import time
import weakref
from typing import List, Optional

from . import store

__all__ = ["CellWatcher", "CellCapture", "watch_cells", "write_notebook"]

_watchers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # shell -> CellWatcher


class CellWatcher:
    """The cell a shell is running now, from its pre_run_cell and post_run_cell events."""

    def __init__(self, shell):
        self._running: List = []   # ExecutionInfo of each cell running now (a cell can run one)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)

    @property
    def running(self):
        """The ``ExecutionInfo`` of the innermost cell running now; None between cells, or in
        a cell that began before watching."""
        return self._running[-1] if self._running else None

    def _pre_run_cell(self, info) -> None:
        self._running.append(info)

    def _post_run_cell(self, result) -> None:
        info = getattr(result, "info", None)
        # An empty cell ends without having begun (IPython skips its pre_run_cell).
        for i in range(len(self._running) - 1, -1, -1):
            if self._running[i] is info:
                del self._running[i]
                break


def watch_cells(shell) -> CellWatcher:
    """The shell's CellWatcher, registered on its first call for that shell."""
    watcher = _watchers.get(shell)
    if watcher is None:
        watcher = _watchers[shell] = CellWatcher(shell)
    return watcher


class CellCapture:
    """Writes the cells of one experiment to ``path``/cells.jsonl (see the module docstring)."""

    def __init__(self, shell, path: str):
        self._shell = shell
        self._watcher = watch_cells(shell)
        self._lines = store.JsonLines(os.path.join(path, store.CELLS))
        self._cells = 0                   # cells written so far
        self._start_info = None           # the ExecutionInfo of the cell that started it
        self._start_cell: Optional[int] = None
        self._following = False

    def start(self) -> None:
        """Writes the cell running now, then follows the cells as they end."""
        info = self._watcher.running
        if info is not None:
            self._start_info, self._start_cell = info, self._new_cell()
            self._write(self._start_cell, None, info.raw_cell, None, None)
        self._shell.events.register("post_run_cell", self._post_run_cell)
        self._following = True

    def stop(self) -> None:
        """Stops following, and writes the cell running now (the one that ends the experiment)
        unless it started the experiment too."""
        if self._following:
            self._unfollow()
            info = self._watcher.running
            if info is not None and info is not self._start_info:
                self._write(self._new_cell(), None, info.raw_cell, None, None)

    def close(self) -> None:
        """Stops following (the cell running now is not written) and closes the file."""
        self._unfollow()
        self._lines.close()

    def _unfollow(self) -> None:
        if self._following:
            self._following = False
            try:
                self._shell.events.unregister("post_run_cell", self._post_run_cell)
            except ValueError:
                pass

    def _post_run_cell(self, result) -> None:
        info = getattr(result, "info", None)
        code = getattr(info, "raw_cell", None)
        if not code or code.isspace():
            return
        cell = self._start_cell if info is self._start_info else self._new_cell()
        error = result.error_in_exec or result.error_before_exec
        self._write(cell, result.execution_count, code, bool(result.success),
                    f"{type(error).__name__}: {error}" if error is not None else None)

    def _new_cell(self) -> int:
        self._cells += 1
        return self._cells - 1

    def _write(self, cell: int, execution_count, code: str, success, error) -> None:
        self._lines.write({"cell": cell, "execution_count": execution_count, "code": code,
                           "success": success, "error": error, "t": time.time()})
        self._lines.flush()


def write_notebook(path: str, name: str, record_id: str) -> int:
    """Writes ``path``/cells.ipynb, the record's cells as a notebook to run the experiment
    again; returns how many cells it has."""
    from .record import read_cells
    cells = read_cells(path)
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "tfjupyter_experiment": {"name": name, "id": record_id}},
        "cells": [{"cell_type": "code", "id": f"cell-{i}", "metadata": {},
                   "execution_count": None, "outputs": [], "source": c["code"]}
                  for i, c in enumerate(cells)]}
    store.write_json(os.path.join(path, "cells.ipynb"), notebook)
    return len(cells)

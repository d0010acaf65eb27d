"""Files of an experiment record, written so that a crash at any moment leaves them readable.

* Metadata (``experiment.json``) is replaced atomically: written to a temporary file in the same
  folder, fsync'd, then renamed over the old one, so a reader sees the old or the new file whole.
* Timelines (``events.jsonl``, ``cells.jsonl``) are append-only JSON lines. A process killed in
  the middle of a write can leave a torn last line; ``read_jsonl`` skips lines that do not parse.
* Folders are made with ``os.mkdir``, which fails if the folder exists: a record never lands on
  top of another one, even when two kernels start the same name at once.
"""
from __future__ import annotations

import json
import os
import re
from typing import IO, Iterator, Optional

from ..train.tensor_bundle import atomic_write

__all__ = ["write_json", "write_bytes", "read_json", "JsonLines", "read_jsonl",
           "check_name", "make_folder", "METADATA", "EVENTS", "CELLS"]

METADATA = "experiment.json"
EVENTS = "events.jsonl"
CELLS = "cells.jsonl"

# A name becomes one folder: letters, digits and . _ - (no separators, no leading dot).
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def check_name(name) -> str:
    """``name`` if it can name an experiment folder, else a ValueError that says why."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"an experiment name must be a non-empty string, got {name!r}")
    if "/" in name or "\\" in name or os.sep in name:
        raise ValueError(f"an experiment name cannot contain a path separator: {name!r} "
                         "(use dir=... / --dir to choose where records go)")
    if not _NAME.match(name) or len(name) > 128:
        raise ValueError(f"an experiment name may hold letters, digits, '_', '-' and '.' "
                         f"(not first), at most 128 characters: {name!r}")
    return name


def make_folder(parent: str, name: str) -> str:
    """Creates ``parent/name``, or ``parent/name-2``, ``-3``... if taken; returns its path."""
    os.makedirs(parent, exist_ok=True)
    for n in range(1, 10000):
        path = os.path.join(parent, name if n == 1 else f"{name}-{n}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free folder name for experiment {name!r} in {parent}")


def shown_path(path: str) -> str:
    """``path`` as messages show it: relative to the working directory when it lies below it
    (``experiments/run1``: what a notebook's reader can follow, wherever it ran), else
    absolute."""
    path = os.path.abspath(path)
    here = os.getcwd()
    return os.path.relpath(path, here) if path.startswith(here + os.sep) else path


def write_json(path: str, data) -> None:
    """Replaces ``path`` with ``data`` as JSON, atomically (temp file, fsync, rename, fsync of
    the folder: the checkpoints' own ``atomic_write``)."""
    text = json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"
    atomic_write(path, text.encode("utf-8"))


def read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class JsonLines:
    """An append-only JSON-lines file: ``write(obj)`` buffers, ``flush()`` hands the lines to
    the OS (enough to survive the process being killed), ``sync()`` also fsyncs them."""

    def __init__(self, path: str):
        self.path = path
        self._file: Optional[IO[str]] = open(path, "a", encoding="utf-8")

    def write(self, obj) -> None:
        # One write per line: the line is either whole in the file or (at a crash) torn at its
        # end, never interleaved with another.
        self._file.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")

    def flush(self) -> None:
        self._file.flush()

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def read_jsonl(path: str) -> Iterator[dict]:
    """The objects of a JSON-lines file; lines that do not parse (a torn last line) are
    skipped. A missing file reads as empty."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            if not line.endswith("\n"):
                return   # the last line was being written when the writer stopped
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj


write_bytes = atomic_write  # replaces a file with bytes, atomically

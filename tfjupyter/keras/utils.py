"""``tf.keras.utils``: ``to_categorical``, ``get_file`` (Keras's download cache, read only:
tfjupyter never downloads) and ``Progbar``, the progress bar of ``fit``'s logs, in TF 1.15
Keras's format::

    8/8 [==============================] - 0s 120us/sample - loss: 0.6940 - acc: 0.5000
"""
from __future__ import annotations

import hashlib
import os
import sys
import tarfile
import time
import zipfile
from typing import Dict, List, Optional

import numpy as np

__all__ = ["to_categorical", "get_file", "Progbar"]


def to_categorical(y, num_classes: Optional[int] = None, dtype: str = "float32") -> np.ndarray:
    """Class indices (any shape; a trailing axis of 1 is dropped) -> one-hot rows."""
    y = np.array(y, dtype="int")
    input_shape = y.shape
    if input_shape and input_shape[-1] == 1 and len(input_shape) > 1:
        input_shape = tuple(input_shape[:-1])
    y = y.ravel()
    if num_classes is None:
        num_classes = int(np.max(y)) + 1
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"to_categorical: class indices must be in [0, {num_classes}); got "
                         f"values from {y.min()} to {y.max()}.")
    categorical = np.zeros((y.shape[0], num_classes), dtype=dtype)
    categorical[np.arange(y.shape[0]), y] = 1
    return np.reshape(categorical, input_shape + (num_classes,))


def get_file(fname: str, origin: str, untar: bool = False, md5_hash: Optional[str] = None,
             file_hash: Optional[str] = None, cache_subdir: str = "datasets",
             hash_algorithm: str = "auto", extract: bool = False, archive_format="auto",
             cache_dir: Optional[str] = None) -> str:
    """The path of ``fname`` in Keras's cache, as TF 1.15's ``get_file`` returns it
    (``cache_dir`` or ``$KERAS_HOME`` or ``~/.keras``, then ``cache_subdir``; an absolute
    ``fname`` is itself), checked against ``file_hash``/``md5_hash`` and extracted on
    ``untar``/``extract`` as Keras does. The file must already be there: where Keras would
    download ``origin``, this raises FileNotFoundError naming both."""
    if cache_dir is None:
        cache_dir = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    datadir = os.path.join(os.path.expanduser(cache_dir), cache_subdir)
    untar_path = os.path.join(datadir, fname)
    path = untar_path + ".tar.gz" if untar else untar_path
    if untar and os.path.exists(untar_path) and not os.path.exists(path):
        return untar_path                      # extracted earlier; the archive may be gone
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"get_file: {path} does not exist, and tfjupyter never downloads. Copy {origin} "
            f"there (or set KERAS_HOME / cache_dir to a folder that has {cache_subdir}/"
            f"{os.path.basename(path)}).")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if file_hash is not None:
        algorithm = hash_algorithm if hash_algorithm != "auto" else (
            "sha256" if len(file_hash) == 64 else "md5")
        digest = hashlib.new(algorithm)
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != str(file_hash):
            raise ValueError(f"get_file: {path}'s {algorithm} hash is {digest.hexdigest()}, not "
                             f"{file_hash}: the file is incomplete or outdated, and tfjupyter "
                             f"never downloads; copy {origin} there again.")
    if untar:
        if not os.path.exists(untar_path):
            _extract_archive(path, datadir, "tar")
        return untar_path
    if extract:
        _extract_archive(path, datadir, archive_format)
    return path


def _extract_archive(path: str, into: str, archive_format="auto") -> bool:
    """Keras's ``_extract_archive``: the first of the formats ('tar', 'zip') that opens the file
    is extracted into ``into``; False when none does."""
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format or ()))
    for kind in formats:
        if kind == "tar" and tarfile.is_tarfile(path):
            with tarfile.open(path) as archive:
                archive.extractall(into, filter="data")   # no paths outside ``into``
            return True
        if kind == "zip" and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                archive.extractall(into)
            return True
    return False


def _format_value(value: float) -> str:
    return f" {value:.4f}" if abs(value) > 1e-3 else f" {value:.4e}"


class Progbar:
    """Keras's progress bar. ``update(current, values)`` averages each value over the units
    seen (a batch's value counts for its size), except ``stateful_metrics`` (shown as given).
    On a terminal the line redraws in place; elsewhere (a log file) verbose=1 prints only the
    finished line, and verbose=2 prints ``current/target - 0s - loss: ...`` at the end."""

    def __init__(self, target: Optional[int], width: int = 30, verbose: int = 1,
                 interval: float = 0.05, stateful_metrics=None, unit_name: str = "step",
                 file=None):
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._file = file or sys.stdout
        self._dynamic = getattr(self._file, "isatty", lambda: False)() or \
            "ipykernel" in sys.modules
        self._totals: Dict[str, List[float]] = {}
        self._order: List[str] = []
        self._seen = 0
        self._width_written = 0
        self._start = self._last_update = time.time()

    def update(self, current: int, values=None) -> None:
        for name, value in values or ():
            if name not in self._order:
                self._order.append(name)
            if name in self.stateful_metrics:
                self._totals[name] = [float(value), 1]
            else:
                count = max(current - self._seen, 1)
                total = self._totals.setdefault(name, [0.0, 0])
                total[0] += float(value) * count
                total[1] += count
        self._seen = current
        now = time.time()
        finished = self.target is not None and current >= self.target
        if self.verbose == 1:
            if not finished and (not self._dynamic or now - self._last_update < self.interval):
                return
            self._write_bar(current, now, finished)
        elif self.verbose == 2 and finished:
            digits = len(str(self.target))
            self._file.write(f"{current:{digits}d}/{self.target} - {now - self._start:.0f}s"
                             f"{self._metrics_text()}\n")
            self._file.flush()
        self._last_update = now

    def add(self, n: int, values=None) -> None:
        self.update(self._seen + n, values)

    def _metrics_text(self) -> str:
        return "".join(f" - {name}:{_format_value(total / max(count, 1))}"
                       for name, (total, count) in ((n, self._totals[n]) for n in self._order))

    def _write_bar(self, current: int, now: float, finished: bool) -> None:
        if self._dynamic:
            self._file.write("\b" * self._width_written + "\r")
        if self.target is not None:
            digits = len(str(self.target))
            bar = f"{current:{digits}d}/{self.target} ["
            filled = int(self.width * current / self.target)
            if filled > 0:
                bar += "=" * (filled - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - filled) + "]"
        else:
            bar = f"{current:7d}/Unknown"
        elapsed = now - self._start
        per_unit = elapsed / current if current else 0.0
        if finished:
            if per_unit >= 1:
                speed = f"{per_unit:.0f}s/{self.unit_name}"
            elif per_unit >= 1e-3:
                speed = f"{per_unit * 1e3:.0f}ms/{self.unit_name}"
            else:
                speed = f"{per_unit * 1e6:.0f}us/{self.unit_name}"
            info = f" - {elapsed:.0f}s {speed}"
        else:
            eta = per_unit * (self.target - current) if self.target is not None else 0.0
            info = f" - ETA: {eta:.0f}s"
        line = bar + info + self._metrics_text()
        self._width_written = len(line)
        self._file.write(line + ("\n" if finished else ""))
        self._file.flush()

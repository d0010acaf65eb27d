"""The "checkpoint" state file and checkpoint files on disk, as TensorFlow 1.x's
``checkpoint_management``; plus reading checkpoints directly (``NewCheckpointReader``).

The state file is a ``CheckpointState`` in protobuf text format::

    model_checkpoint_path: "model.ckpt-2000"
    all_model_checkpoint_paths: "model.ckpt-1000"
    all_model_checkpoint_paths: "model.ckpt-2000"

Paths inside the checkpoint directory are written relative to it (so a directory can be moved);
readers resolve relative paths against the directory.
"""
from __future__ import annotations

import glob
import logging
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from google.protobuf import text_encoding

from ..framework import dtypes
from . import tensor_bundle

__all__ = ["CheckpointState", "generate_checkpoint_state_proto", "update_checkpoint_state",
           "get_checkpoint_state", "latest_checkpoint", "checkpoint_exists",
           "get_checkpoint_mtimes", "remove_checkpoint", "NewCheckpointReader", "load_checkpoint",
           "load_variable", "list_variables"]

_log = logging.getLogger("tfjupyter")

V1, V2 = 1, 2   # SaverDef.CheckpointFormatVersion


class CheckpointState:
    """What the "checkpoint" file records: the newest checkpoint and all those kept."""

    def __init__(self, model_checkpoint_path: str = "",
                 all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                 all_model_checkpoint_timestamps: Optional[Sequence[float]] = None,
                 last_preserved_timestamp: float = 0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps or [])
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        """The protobuf text format, as TensorFlow writes it."""
        lines = []
        if self.model_checkpoint_path:
            lines.append(f'model_checkpoint_path: "{_escape(self.model_checkpoint_path)}"')
        lines += [f'all_model_checkpoint_paths: "{_escape(p)}"'
                  for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}"
                  for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "".join(line + "\n" for line in lines)

    @classmethod
    def from_text(cls, text: str) -> "CheckpointState":
        """Parses the text format; ValueError names what is wrong."""
        state = cls()
        pos = 0
        for m in _FIELD_RE.finditer(text):
            gap = text[pos:m.start()]
            if gap.strip():
                raise ValueError(f"unexpected text {gap.strip()[:40]!r}")
            pos = m.end()
            name, quoted, number = m.group(1), m.group(2), m.group(3)
            if name in ("model_checkpoint_path", "all_model_checkpoint_paths"):
                if quoted is None:
                    raise ValueError(f"field {name} needs a quoted string")
                value = text_encoding.CUnescape(quoted).decode("utf-8", "surrogateescape")
                if name == "model_checkpoint_path":
                    state.model_checkpoint_path = value
                else:
                    state.all_model_checkpoint_paths.append(value)
            elif name in ("all_model_checkpoint_timestamps", "last_preserved_timestamp"):
                if number is None:
                    raise ValueError(f"field {name} needs a number")
                if name == "last_preserved_timestamp":
                    state.last_preserved_timestamp = float(number)
                else:
                    state.all_model_checkpoint_timestamps.append(float(number))
            else:
                raise ValueError(f"unknown field {name!r}")
        if text[pos:].strip():
            raise ValueError(f"unexpected text {text[pos:].strip()[:40]!r}")
        return state

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return (f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
                f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})")

    def __eq__(self, other) -> bool:
        return isinstance(other, CheckpointState) and self.to_text() == other.to_text()


_FIELD_RE = re.compile(r'([A-Za-z_]\w*)\s*:\s*(?:"((?:[^"\\\n]|\\.)*)"|([-+]?[\w.]+))')


def _escape(path: str) -> str:
    return text_encoding.CEscape(path.encode("utf-8", "surrogateescape"), as_utf8=False)


def _state_filename(save_dir: str, latest_filename: Optional[str]) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def _path_for_state(path: str, save_dir: str, always_relative: bool) -> str:
    """How the state file records ``path``: relative to save_dir when inside it (or always,
    with ``save_relative_paths``, or when save_dir itself is relative); else absolute.
    A relative ``path`` is relative to the working directory, as everywhere else."""
    full = path if os.path.isabs(path) else os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(save_dir or "."))
    if always_relative or not os.path.isabs(save_dir) or not rel.startswith(os.pardir):
        return rel
    return full


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None) -> CheckpointState:
    """The CheckpointState to write for save_dir; the newest path is listed last."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps and len(all_model_checkpoint_timestamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"({len(all_model_checkpoint_timestamps)} vs {len(paths)})")
    # Relative paths are relative to the process's working directory; rewrite them relative to
    # save_dir, which is what readers resolve them against.
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir or ".")
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir or ".") for p in paths]
    return CheckpointState(model_checkpoint_path, paths, all_model_checkpoint_timestamps,
                           last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Optional[Sequence[str]] = None,
                            latest_filename: Optional[str] = None,
                            all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None,
                            save_relative_paths: bool = False) -> None:
    """Writes the "checkpoint" state file of save_dir atomically (temp file, fsync, rename)."""
    filename = _state_filename(save_dir, latest_filename)
    model_checkpoint_path = _path_for_state(model_checkpoint_path, save_dir, save_relative_paths)
    paths = [_path_for_state(p, save_dir, save_relative_paths)
             for p in all_model_checkpoint_paths or []]
    # save_dir made absolute: the paths are already what the file should say.
    state = generate_checkpoint_state_proto(os.path.abspath(save_dir or "."),
                                            model_checkpoint_path, paths,
                                            all_model_checkpoint_timestamps,
                                            last_preserved_timestamp)
    if os.path.normpath(filename) == os.path.normpath(
            os.path.join(save_dir, state.model_checkpoint_path)):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    try:
        tensor_bundle.atomic_write(filename, state.to_text().encode())
    except OSError as e:
        raise tensor_bundle.as_os_error(e, f"Failed to write checkpoint state {filename}") from None


def get_checkpoint_state(checkpoint_dir: str, latest_filename: Optional[str] = None
                         ) -> Optional[CheckpointState]:
    """The CheckpointState of checkpoint_dir (paths resolved against it), or None if there is
    no readable state file."""
    filename = _state_filename(checkpoint_dir, latest_filename)
    if not os.path.isfile(filename):
        return None
    try:
        with open(filename, "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
        state = CheckpointState.from_text(text)
    except (OSError, ValueError) as e:
        _log.warning("%s: %s", type(e).__name__, e)
        _log.warning("%s: Checkpoint ignored", filename)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
        for p in state.all_model_checkpoint_paths]
    return state


def _prefix_to_checkpoint_path(prefix: str, format_version: int) -> str:
    return prefix + ".index" if format_version == V2 else prefix


def _roll_forward(checkpoint_prefix: str) -> None:
    """Completes an interrupted save of the prefix (see ``tensor_bundle``), so that what is
    looked at next is a whole checkpoint. Glob patterns are left alone."""
    if glob.has_magic(checkpoint_prefix):
        return
    try:
        tensor_bundle.roll_forward_commit(checkpoint_prefix)
    except OSError as e:
        raise tensor_bundle.as_os_error(
            e, f"Failed to complete an interrupted save of {checkpoint_prefix}") from None


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a V2 checkpoint (``<prefix>.index``) or a V1 file matches checkpoint_prefix."""
    _roll_forward(checkpoint_prefix)
    return bool(glob.glob(_prefix_to_checkpoint_path(checkpoint_prefix, V2))
                or glob.glob(checkpoint_prefix))


def latest_checkpoint(checkpoint_dir: str, latest_filename: Optional[str] = None
                      ) -> Optional[str]:
    """The prefix of the newest checkpoint recorded in checkpoint_dir, if its files exist."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes: Sequence[str]) -> List[float]:
    """Modification times of the checkpoints' index (or V1) files; missing ones are skipped."""
    mtimes = []
    for prefix in checkpoint_prefixes:
        _roll_forward(prefix)
        for pattern in (_prefix_to_checkpoint_path(prefix, V2), prefix):
            names = glob.glob(pattern)
            if names:
                mtimes.append(os.stat(names[0]).st_mtime_ns / 1e9)
                break
    return mtimes


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return ".".join([basename, meta_graph_suffix])


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: int = V2,
                      meta_graph_suffix: str = "meta") -> None:
    """Deletes a checkpoint's files: index, data shards and meta graph (and what interrupted
    saves of it left: a commit journal, temporary files)."""
    meta_file = meta_graph_filename(checkpoint_prefix, meta_graph_suffix)
    patterns = [meta_file]
    if not glob.has_magic(checkpoint_prefix):
        tensor_bundle.remove_stale_temp_files(meta_file)
    if checkpoint_format_version == V2:
        if not glob.has_magic(checkpoint_prefix):
            # The journal goes first: nothing may roll forward into a deleted checkpoint.
            tensor_bundle.discard_interrupted_writes(checkpoint_prefix)
        patterns += [checkpoint_prefix + ".index", checkpoint_prefix + ".data-?????-of-?????"]
    else:
        patterns.append(checkpoint_prefix)
    for pattern in patterns:
        for name in glob.glob(pattern):
            try:
                os.remove(name)
            except FileNotFoundError:
                pass


# -- reading checkpoints directly ------------------------------------------------------------------
class CheckpointReader:
    """``tf.train.NewCheckpointReader(prefix)``: the tensors of a checkpoint, by name."""

    def __init__(self, filepattern: str):
        self._reader = tensor_bundle.BundleReader(filepattern)

    def has_tensor(self, name: str) -> bool:
        return name in self._reader and not name.startswith("\x00")

    def get_tensor(self, name: str) -> np.ndarray:
        value = self._reader.read(name)
        return value.copy() if not value.flags.writeable else value

    def get_variable_to_shape_map(self) -> Dict[str, List[int]]:
        return {k: list(self._reader.entries[k].shape) for k in self._reader.tensor_names()}

    def get_variable_to_dtype_map(self) -> Dict[str, dtypes.DType]:
        return {k: self._reader.dtype(k) for k in self._reader.tensor_names()}

    def debug_string(self) -> bytes:
        entries = self._reader.entries
        return "".join(f"{k} ({entries[k].dtype_name}) {list(entries[k].shape)}\n"
                       for k in sorted(self._reader.tensor_names())).encode()


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # noqa: N802 - TensorFlow's name
    return CheckpointReader(str(filepattern))


def checkpoint_filename(ckpt_dir_or_file: str) -> str:
    """The checkpoint prefix itself, or the latest checkpoint of a directory."""
    if os.path.isdir(ckpt_dir_or_file):
        path = latest_checkpoint(ckpt_dir_or_file)
        if path is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
        return path
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader for a checkpoint prefix, or for the latest checkpoint of a directory."""
    return NewCheckpointReader(checkpoint_filename(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file: str) -> List[Tuple[str, List[int]]]:
    """(name, shape) of every tensor in the checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]

"""``tf.io.gfile``: the lower-case names TensorFlow 1.13+ gives the ``tf.gfile`` functions."""
from __future__ import annotations

from typing import Callable, Iterator, List, Optional, Tuple

from .. import gfile as _gfile
from ..framework import errors as _errors

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
           "rename", "rmtree", "stat", "walk"]

GFile = _gfile.GFile
exists = _gfile.Exists
glob = _gfile.Glob
isdir = _gfile.IsDirectory
listdir = _gfile.ListDirectory
makedirs = _gfile.MakeDirs
mkdir = _gfile.MkDir
remove = _gfile.Remove
rmtree = _gfile.DeleteRecursively
stat = _gfile.Stat


def copy(src, dst, overwrite: bool = False) -> None:
    """Copies a file; AlreadyExistsError if ``dst`` exists, unless ``overwrite``."""
    _gfile.Copy(src, dst, overwrite)


def rename(src, dst, overwrite: bool = False) -> None:
    """Renames a file or directory; AlreadyExistsError if ``dst`` exists, unless ``overwrite``."""
    _gfile.Rename(src, dst, overwrite)


def walk(top, topdown: bool = True,
         onerror: Optional[Callable[[_errors.OpError], None]] = None
         ) -> Iterator[Tuple[str, List[str], List[str]]]:
    """As ``os.walk``: ``(dirname, subdirectory names, file names)`` under ``top``; a missing
    ``top`` is reported to ``onerror`` (if given) and yields nothing."""
    if onerror is not None and not _gfile.IsDirectory(top):
        onerror(_errors.NotFoundError(None, None, f"Could not find directory {top}"))
        return
    yield from _gfile.Walk(top, in_order=topdown)

"""``tf.gfile``: TensorFlow's file API over the local file system.

TensorFlow routes these through its own file systems (local, GCS, HDFS); here they are the local
one, with TensorFlow's behaviour: failures raise ``tf.errors`` classes (``NotFoundError`` for a
missing file, ``AlreadyExistsError`` when a rename or copy would overwrite, ...), a ``GFile``
opens its file on the first read or write, and text-mode reads return ``str``, binary ones
``bytes`` (writes take either).
"""
from __future__ import annotations

import contextlib
import errno
import glob as _glob
import os
import shutil
from typing import Iterator, List, NamedTuple, Optional, Tuple, Union

from .framework import errors

__all__ = ["GFile", "FastGFile", "Open", "Exists", "IsDirectory", "MakeDirs", "MkDir", "Remove",
           "DeleteRecursively", "ListDirectory", "Glob", "Rename", "Copy", "Stat", "Walk",
           "FileStatistics"]

_MODES = {m + b for m in ("r", "w", "a", "r+", "w+", "a+") for b in ("", "b")}


def _path(name) -> str:
    return os.fsdecode(os.fspath(name))


def _error_class(e: OSError) -> type:
    """The tf.errors class TensorFlow's POSIX file system returns for an errno."""
    return {errno.ENOENT: errors.NotFoundError, errno.EEXIST: errors.AlreadyExistsError,
            errno.EACCES: errors.PermissionDeniedError, errno.EPERM: errors.PermissionDeniedError,
            errno.ENOTDIR: errors.FailedPreconditionError,
            errno.EISDIR: errors.FailedPreconditionError,
            errno.ENOTEMPTY: errors.FailedPreconditionError}.get(e.errno, errors.UnknownError)


@contextlib.contextmanager
def _as_tf_errors(path: str):
    """Turns the OSError of a file operation into TensorFlow's error class for it."""
    try:
        yield
    except OSError as e:
        cls = _error_class(e)
        raise cls(None, None, f"{path}; {e.strerror or e}") from e


# -- files -----------------------------------------------------------------------------------------
class GFile:
    """A file, as ``tf.gfile.GFile(name, mode="r")``: ``read``, ``readline``, ``readlines``,
    iteration over lines, ``write``, ``seek``/``tell``, ``size``, ``flush``, ``close``, and use
    as a context manager. Like TensorFlow's, it opens the file on the first read or write, so a
    missing file raises ``NotFoundError`` there."""

    def __init__(self, name, mode: str = "r"):
        if mode not in _MODES:
            raise errors.InvalidArgumentError(None, None, f"mode {mode!r} not supported; use one "
                                              f"of {', '.join(sorted(_MODES))}")
        self._name = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        self._file = None
        self._closed = False

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    @property
    def closed(self) -> bool:
        return self._closed

    def _opened(self):
        if self._closed:
            raise errors.FailedPreconditionError(None, None, f"File {self._name} is closed.")
        if self._file is None:
            with _as_tf_errors(self._name):
                # Always binary underneath: TensorFlow does not translate newlines.
                self._file = open(self._name, self._mode.replace("b", "") + "b")
        return self._file

    def _readable(self):
        if self._mode[0] != "r" and "+" not in self._mode:
            raise errors.PermissionDeniedError(None, None,
                                               f"File {self._name} isn't open for reading")
        return self._opened()

    def _writable(self):
        if self._mode[0] == "r" and "+" not in self._mode:
            raise errors.PermissionDeniedError(None, None,
                                               f"File {self._name} isn't open for writing")
        return self._opened()

    def _out(self, data: bytes) -> Union[str, bytes]:
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The file's length in bytes."""
        if self._file is not None:
            self._file.flush()
        return Stat(self._name).length

    def read(self, n: int = -1) -> Union[str, bytes]:
        """``n`` bytes (all the rest when ``n`` is -1) from the current position."""
        f = self._readable()
        with _as_tf_errors(self._name):
            return self._out(f.read(-1 if n is None else n))

    def readline(self) -> Union[str, bytes]:
        """The next line with its newline; empty at the end of the file."""
        f = self._readable()
        with _as_tf_errors(self._name):
            return self._out(f.readline())

    def readlines(self) -> List[Union[str, bytes]]:
        return list(self)

    def __iter__(self) -> "GFile":
        return self

    def __next__(self) -> Union[str, bytes]:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content: Union[str, bytes]) -> None:
        """Writes ``file_content`` (str is written as UTF-8)."""
        f = self._writable()
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        with _as_tf_errors(self._name):
            f.write(data)

    def tell(self) -> int:
        return self._opened().tell()

    def seek(self, offset: Optional[int] = None, whence: int = 0,
             position: Optional[int] = None) -> int:
        """Moves to ``offset`` from the start (``whence`` 0), the current position (1) or the
        end (2); ``position`` is TensorFlow's older name for ``offset``."""
        if position is not None:
            if offset is not None:
                raise TypeError("seek() takes 'offset' or the deprecated 'position', not both")
            offset = position
        return self._opened().seek(0 if offset is None else offset, whence)

    def flush(self) -> None:
        if self._file is not None:
            with _as_tf_errors(self._name):
                self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            with _as_tf_errors(self._name):
                self._file.close()
            self._file = None
        self._closed = True

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<tf.gfile.GFile {self._name!r} mode {self._mode!r}>"


FastGFile = GFile   # TensorFlow's older names for the same class
Open = GFile


# -- the file system -------------------------------------------------------------------------------
class FileStatistics(NamedTuple):
    """What ``Stat`` returns: the length in bytes, modification time in ns, is it a dir."""
    length: int
    mtime_nsec: int
    is_directory: bool


def Exists(filename) -> bool:  # noqa: N802 - TensorFlow's names
    """Whether a file or directory exists."""
    return os.path.exists(_path(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    """Whether ``dirname`` is a directory (False when it does not exist)."""
    return os.path.isdir(_path(dirname))


def MakeDirs(dirname) -> None:  # noqa: N802
    """Creates ``dirname`` and any missing parents; nothing to do if it exists already."""
    path = _path(dirname)
    with _as_tf_errors(path):
        os.makedirs(path, exist_ok=True)


def MkDir(dirname) -> None:  # noqa: N802
    """Creates the directory ``dirname``: AlreadyExistsError if it exists, NotFoundError if its
    parent does not."""
    path = _path(dirname)
    with _as_tf_errors(path):
        os.mkdir(path)


def Remove(filename) -> None:  # noqa: N802
    """Deletes the file ``filename``: NotFoundError if it does not exist."""
    path = _path(filename)
    with _as_tf_errors(path):
        os.remove(path)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Deletes a directory and everything in it (or a single file): NotFoundError if missing."""
    path = _path(dirname)
    with _as_tf_errors(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def ListDirectory(dirname) -> List[str]:  # noqa: N802
    """The names (not paths) of the entries of ``dirname``: NotFoundError if it is not a
    directory."""
    path = _path(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    with _as_tf_errors(path):
        return os.listdir(path)


def Glob(filename) -> List[str]:  # noqa: N802
    """The paths matching a pattern (``*``, ``?``, ``[...]``), or any of a list of patterns."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else filename
    return [match for pattern in patterns for match in sorted(_glob.glob(_path(pattern)))]


def _check_target(newpath: str, overwrite: bool) -> None:
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {newpath}")


def Rename(oldname, newname, overwrite: bool = False) -> None:  # noqa: N802
    """Renames a file or directory; AlreadyExistsError if ``newname`` exists, unless
    ``overwrite``."""
    old, new = _path(oldname), _path(newname)
    if not os.path.exists(old):
        raise errors.NotFoundError(None, None, f"{old}; No such file or directory")
    _check_target(new, overwrite)
    with _as_tf_errors(old):
        os.replace(old, new)


def Copy(oldpath, newpath, overwrite: bool = False) -> None:  # noqa: N802
    """Copies a file; AlreadyExistsError if ``newpath`` exists, unless ``overwrite``."""
    old, new = _path(oldpath), _path(newpath)
    if not os.path.exists(old):
        raise errors.NotFoundError(None, None, f"{old}; No such file or directory")
    _check_target(new, overwrite)
    with _as_tf_errors(old):
        shutil.copyfile(old, new)


def Stat(filename) -> FileStatistics:  # noqa: N802
    """The file's FileStatistics: NotFoundError if it does not exist."""
    path = _path(filename)
    with _as_tf_errors(path):
        st = os.stat(path)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


def Walk(top, in_order: bool = True) -> Iterator[Tuple[str, List[str], List[str]]]:  # noqa: N802
    """``(dirname, subdirectory names, file names)`` for ``top`` and every directory under it:
    parents before children when ``in_order``, else children first. Nothing for a missing
    ``top``."""
    top = _path(top)
    try:
        names = ListDirectory(top)
    except errors.NotFoundError:
        return
    subdirs = [n for n in names if os.path.isdir(os.path.join(top, n))]
    files = [n for n in names if n not in subdirs]
    here = (top, subdirs, files)
    if in_order:
        yield here
    for sub in subdirs:
        yield from Walk(os.path.join(top, sub), in_order)
    if not in_order:
        yield here

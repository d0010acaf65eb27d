"""The registry of the clusters that kernels started: one JSON file per cluster, on disk.

A kernel's ``Cluster`` writes its entry once its tasks serve (``register``) and removes it at
``stop()``; the Jupyter server extension (``tfjupyter.lab.server``) reads the entries to show
every cluster in JupyterLab's cluster panel and to stop one from there (``mark_stopped(id,
"panel")``, which the kernel's ``Cluster`` notices at its next use; ``undo_mark_stopped`` when
that stop failed).

Where: ``$TFJUPYTER_REGISTRY_DIR`` if set, else ``jupyter_runtime_dir()/tfjupyter-clusters``
(the directory Jupyter keeps kernels' connection files in, so a server and its kernels agree).
Every file is 0600: an entry holds the cluster's gRPC token. The directory is made 0700; one
that exists keeps its mode (it may be one the user chose, like $HOME), with a warning when other
users may enter it.

An entry (``<id>.json``)::

    {"id": "3f2a…", "created": 1700000000.0, "state": "running" | "stopped",
     "stopped_by": "" | "panel" | "kernel",
     "kernel": {"pid": 1234, "connection_file": "/…/kernel-<uuid>.json" or "",
                "kernel_id": "<uuid>" or "", "host": "…", "create_time": 1699999000.0},
     "engines": "local", "detached": false, "profile_dir": "…",
     "cluster_file": "…/security/cluster-….json" or "",
     "token": "<hex>",
     "tasks": [{"job": "worker", "index": 0, "engine_id": 1, "host": "h", "pid": 99,
                "address": "127.0.0.1:45678", "devices": [{"name": …, "type": …, …}]}]}

``kernel.host`` and ``kernel.create_time`` let a reader tell the kernel's process from another
one that got its pid later (or that runs on another host sharing this directory).

Files are written whole (a temporary file, then ``os.replace``), so a reader sees the old entry
or the new one, never half of one. A file that is not a valid entry anyway (edited by hand, a
disk that filled up) is skipped with a warning; readers never fail on it.

The functions that read or write entries take the registry's directory as ``directory``
(default ``registry_dir()``): a ``Cluster`` keeps using the one it registered in, whatever the
environment says later.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import stat
import sys
import tempfile
import time
from typing import Dict, Iterator, List, Optional, Tuple

__all__ = ["registry_dir", "register", "entry_for", "write", "entries", "read", "mark_stopped",
           "undo_mark_stopped", "remove", "kernel_identity", "kernel_id_from_connection_file"]

_log = logging.getLogger("tfjupyter.cluster")

ENV_DIR = "TFJUPYTER_REGISTRY_DIR"
STOPPED_BY = ("panel", "kernel")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_KERNEL_FILE = re.compile(r"^kernel-(.+)\.json$")

# Files already warned about, by (path, mtime, size), and open directories, by (path, mode): a
# panel polls every few seconds and one problem should be said once, not at every poll.
_warned: set = set()


# -- where ----------------------------------------------------------------------------------------
def registry_dir(create: bool = True) -> str:
    """The registry's directory (made, 0700, when ``create`` and it does not exist)."""
    path = os.environ.get(ENV_DIR)
    if not path:
        from jupyter_core.paths import jupyter_runtime_dir
        path = os.path.join(jupyter_runtime_dir(), "tfjupyter-clusters")
    path = os.path.abspath(path)
    if create:
        _make_private_dir(path)
    return path


def _make_private_dir(path: str) -> None:
    try:
        os.makedirs(path, mode=0o700)
    except FileExistsError:
        # Not ours to chmod: $TFJUPYTER_REGISTRY_DIR may name a directory shared on purpose, or
        # $HOME. The entries stay 0600; others could still list or remove them.
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077 and (path, mode) not in _warned:
            _warned.add((path, mode))
            _log.warning("tfjupyter cluster registry: %s is open to other users (mode %o); "
                         "its entries are not, but make it private: chmod 700 %s",
                         path, mode, path)
        return
    os.chmod(path, 0o700)  # makedirs' mode yields to the umask


def _path(cluster_id: str, directory: Optional[str] = None) -> str:
    # An id reaches here from URLs too: it must never name a file outside the registry.
    if not isinstance(cluster_id, str) or not _ID.match(cluster_id):
        raise ValueError(f"not a cluster id: {cluster_id!r} (letters, digits, '-' and '_')")
    return os.path.join(directory or registry_dir(), f"{cluster_id}.json")


@contextlib.contextmanager
def _locked(directory: str) -> Iterator[None]:
    """Serializes read-modify-write and removal between processes (kernel and server): without
    it a mark_stopped racing a remove() would bring the removed entry back."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): atomic replaces still keep every file whole
        yield
        return
    fd = os.open(os.path.join(directory, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# -- the kernel -----------------------------------------------------------------------------------
def kernel_id_from_connection_file(path: str) -> str:
    """``/…/kernel-<id>.json`` -> ``<id>`` (Jupyter names connection files so); else ""."""
    match = _KERNEL_FILE.match(os.path.basename(path or ""))
    return match.group(1) if match else ""


def kernel_identity() -> dict:
    """This process: pid, host, start time, and its Jupyter kernel's connection file and id
    when it is an ipykernel (empty strings in a script or a terminal IPython)."""
    connection_file = ""
    if "ipykernel" in sys.modules:  # never import ipykernel just to learn there is no kernel
        try:
            from ipykernel import get_connection_file
            connection_file = get_connection_file()
        except Exception:  # not running in a kernel (RuntimeError), or an ipykernel without it
            connection_file = ""
    return {"pid": os.getpid(), "connection_file": connection_file,
            "kernel_id": kernel_id_from_connection_file(connection_file),
            "host": socket.gethostname(), "create_time": _process_create_time(os.getpid())}


def _process_create_time(pid: int) -> float:
    try:
        import psutil
        return psutil.Process(pid).create_time()
    except Exception:
        return 0.0


# -- writing --------------------------------------------------------------------------------------
def entry_for(cluster) -> dict:
    """The registry entry of a started (or attached) ``Cluster``."""
    ipp = cluster.ipyparallel_cluster
    if ipp is not None:
        profile_dir, cluster_file = ipp.profile_dir, ipp.cluster_file or ""
    else:  # attached: ipyparallel's own cluster is someone else's to stop
        profile_dir = getattr(getattr(cluster.client, "_profile_dir", None), "location", "") or ""
        cluster_file = ""
    return {
        "id": cluster.id,
        "created": time.time(),
        "state": "running",
        "stopped_by": "",
        "kernel": kernel_identity(),
        "engines": cluster.engines if cluster._owns_engines else "attached",
        "detached": bool(getattr(cluster, "detach", False)),  # outlives its kernel on purpose
        "profile_dir": profile_dir,
        "cluster_file": cluster_file,
        "token": cluster.token,
        "tasks": [{"job": t.job, "index": t.index, "engine_id": t.engine_id, "host": t.host,
                   "pid": t.pid, "address": t.address, "devices": list(t.devices)}
                  for t in cluster.tasks],
    }


def write(entry: dict, directory: Optional[str] = None) -> str:
    """Writes ``entry`` atomically (0600) as ``<id>.json``; returns its path."""
    directory = directory or registry_dir()
    path = _path(entry["id"], directory)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{entry['id']}.", suffix=".tmp")
    try:
        # mkstemp makes the file 0600 already; say so anyway, it is why the token may be here.
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entry, f, indent=1)
        # No fsync: the registry describes running processes, which a crash ends too; what
        # matters is that readers never see half a file, and os.replace gives that.
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def register(cluster, directory: Optional[str] = None) -> str:
    """Records a started ``Cluster``; returns the entry's path."""
    return write(entry_for(cluster), directory)


def mark_stopped(cluster_id: str, by: str, directory: Optional[str] = None) -> Optional[dict]:
    """Sets ``state: "stopped"`` and who stopped it ("panel" or "kernel"); returns the updated
    entry, or None when there is no (valid) entry."""
    if by not in STOPPED_BY:
        raise ValueError(f"stopped_by must be one of {STOPPED_BY}, got {by!r}")
    return _update(cluster_id, directory, lambda entry: True, state="stopped", stopped_by=by)


def undo_mark_stopped(cluster_id: str, by: str, before: dict,
                      directory: Optional[str] = None) -> Optional[dict]:
    """Undoes ``mark_stopped(cluster_id, by)`` when the stop it announced failed: the entry gets
    the ``state`` and ``stopped_by`` of ``before`` (the entry as it was) back. An entry no longer
    stopped by ``by`` is left alone (its kernel saw the mark and let go of it, or stopped it);
    returns the entry written, or None."""
    return _update(cluster_id, directory, lambda entry: entry["stopped_by"] == by,
                   state=before["state"], stopped_by=before["stopped_by"])


def _update(cluster_id: str, directory: Optional[str], applies, **changes) -> Optional[dict]:
    """Sets ``changes`` in the entry if ``applies(entry)``, all under the registry's lock;
    returns the entry written, or None."""
    directory = directory or registry_dir()
    path = _path(cluster_id, directory)
    with _locked(directory):
        entry = _load(path)
        if entry is None or not applies(entry):
            return None
        entry.update(changes)
        write(entry, directory)
    return entry


def remove(cluster_id: str, directory: Optional[str] = None) -> bool:
    """Forgets a cluster; True if there was an entry."""
    directory = directory or registry_dir()
    path = _path(cluster_id, directory)
    with _locked(directory):
        try:
            os.unlink(path)
            return True
        except FileNotFoundError:
            return False


# -- reading --------------------------------------------------------------------------------------
def read(cluster_id: str, directory: Optional[str] = None) -> Optional[dict]:
    """The entry of ``cluster_id``, or None if there is none (or it is not a valid entry)."""
    return _load(_path(cluster_id, directory or registry_dir()))


def entries(directory: Optional[str] = None) -> List[dict]:
    """Every valid entry, oldest first."""
    directory = directory or registry_dir()
    found = []
    for name in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(name)
        if ext != ".json" or not _ID.match(stem):  # temporary files, the lock, strangers
            continue
        entry = _load(os.path.join(directory, name))
        if entry is not None:
            found.append(entry)
    found.sort(key=lambda e: (e["created"], e["id"]))
    return found


def _load(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        stat = os.stat(path)
    except FileNotFoundError:  # none, or removed while we listed the directory
        return None
    except OSError as e:
        _warn_once(path, None, f"cannot read it: {e}")
        return None
    try:
        entry = json.loads(text)
    except ValueError as e:
        _warn_once(path, stat, f"not JSON: {e}")
        return None
    problem = _problem(entry, os.path.basename(path)[:-len(".json")])
    if problem:
        _warn_once(path, stat, problem)
        return None
    # Keys a reader may rely on, whatever wrote the file.
    for key in ("stopped_by", "engines", "profile_dir", "cluster_file"):
        entry.setdefault(key, "")
    entry.setdefault("detached", False)
    for task in entry["tasks"]:
        task.setdefault("host", "")
        task.setdefault("pid", 0)
        task.setdefault("devices", [])
    return entry


def _problem(entry, stem: str) -> str:
    """What makes ``entry`` unusable, or ""."""
    if not isinstance(entry, dict):
        return f"an entry is a JSON object, not {type(entry).__name__}"
    expected: Dict[str, Tuple[type, ...]] = {
        "id": (str,), "created": (int, float), "state": (str,), "kernel": (dict,),
        "token": (str,), "tasks": (list,)}
    for key, types in expected.items():
        if not isinstance(entry.get(key), types):
            return f"{key!r} is missing or not a {types[0].__name__}"
    if entry["id"] != stem:
        return f"its id {entry['id']!r} is not its file name's"
    if entry["state"] not in ("running", "stopped"):
        return f"unknown state {entry['state']!r}"
    if not isinstance(entry["kernel"].get("pid"), int):
        return "kernel.pid is missing or not an int"
    for task in entry["tasks"]:
        if not (isinstance(task, dict) and isinstance(task.get("job"), str)
                and isinstance(task.get("index"), int) and isinstance(task.get("address"), str)):
            return f"a task without job, index and address: {task!r:.200}"
    return ""


def _warn_once(path: str, stat, problem: str) -> None:
    key = (path, stat.st_mtime_ns, stat.st_size) if stat is not None else (path, problem)
    if key in _warned:
        return
    _warned.add(key)
    _log.warning("tfjupyter cluster registry: skipping %s: %s", path, problem)

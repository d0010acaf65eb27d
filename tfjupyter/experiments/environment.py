"""What an experiment ran on: package versions, host, GPUs, the notebook and its git state."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from typing import Dict, List, Optional

__all__ = ["environment", "notebook_path", "git_state", "PACKAGES"]

PACKAGES = ("tfjupyter", "numpy", "numba", "ipyparallel", "grpcio", "bokeh", "protobuf",
            "ipykernel", "tensorboard")


def _versions() -> Dict[str, Optional[str]]:
    from importlib import metadata
    out: Dict[str, Optional[str]] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def notebook_path(shell=None) -> Optional[str]:
    """The notebook's path when the front end tells the kernel: ``__session__`` in the user
    namespace (ipykernel sets it from the session's path) or ``JPY_SESSION_NAME``."""
    if shell is not None:
        value = shell.user_ns.get("__session__")
        if isinstance(value, str) and value:
            return value
    return os.environ.get("JPY_SESSION_NAME") or None


def git_state(folder: str) -> Optional[dict]:
    """{"commit", "dirty", "root"} of the git work tree holding ``folder``; None outside one
    (or without git). Bounded: each git call gets 5 s."""
    def git(*args: str) -> Optional[str]:
        try:
            done = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True,
                                  timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None
    root = git("rev-parse", "--show-toplevel")
    if root is None:
        return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"root": root, "commit": commit, "dirty": bool(status) if status is not None else None}


def _gpus() -> List[str]:
    """Names of this host's GPUs, as the runtime's devices found them. Only asked when a session
    of this process already looked for GPUs: the first look imports numba.cuda (1-2 s)."""
    runtime = sys.modules.get("tfjupyter.kernels.cuda._runtime")
    if runtime is None:
        return []
    try:
        return [gpu.name for gpu in runtime.physical_gpus()]
    except Exception:   # no driver: no GPUs
        return []


def environment(shell=None) -> dict:
    """The environment of this process (the notebook's kernel)."""
    path = notebook_path(shell)
    folder = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    if path and not os.path.isdir(folder):
        folder = os.getcwd()
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "packages": _versions(),
        "gpus": _gpus(),
        "notebook": path,
        "git": git_state(folder),
        "argv": list(sys.argv),
    }

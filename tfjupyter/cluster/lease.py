"""The owner watch: a cluster's processes end when the process that started it is gone.

A kernel that dies without a goodbye (SIGKILL, the OOM killer, a crash) runs no ``atexit``, so
ipyparallel's controller (with its scheduler and heart-monitor processes), the engines and their
nannies would run on, holding their ports and GPU memory. ipyparallel itself covers only part
of this: an engine's nanny exits with its engine, and an engine exits after missing the
controller's heartbeats, but only while idle (the check runs on the engine's event loop, which
a cell blocked in a step holds) and after 50 misses of 3.5 s; its controller watches nothing.
So two small watches, each a daemon thread in a process the cluster has anyway:

- **The controller watches its owner's process** (pid and start time, so a recycled pid does not
  pass for it). It runs as ``python -c "...lease.main..." --owner PID:START
  ipyparallel.controller ARGS`` (``controller_command``): ipyparallel's own controller, in this
  process, with the watch beside it. Once the owner is gone it sends itself SIGTERM, which is
  ipyparallel's own shutdown (it ends the scheduler and heart-monitor processes too). Those
  are forked from the controller, and each watches its parent, so a controller killed outright
  (SIGKILL, the OOM killer) leaves none of them behind either.
- **Each engine holds a lease on the controller**: ``engine.bind`` calls
  ``hold_controller_lease()``, whose thread connects to the controller's registration port every
  ``PROBE_S``; when no connection has succeeded for ``LEASE_S``, the engine exits, and its nanny
  with it. This works for engines on other hosts (ssh, batch launchers), where the owner's pid
  cannot be watched, and for engines whose cell is blocked in a step.

Owner gone -> the controller exits within ``OWNER_POLL_S`` and its shutdown -> every engine
within ``LEASE_S + PROBE_S`` more: about 15 s in all (the 30 s bound of the tests).

A cluster started with ``detach=True`` has neither watch: it outlives its kernel on purpose,
until a kernel that reattached to it stops it.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import List, Optional, Tuple

__all__ = ["LEASE_ENV", "LEASE_S", "PROBE_S", "OWNER_POLL_S", "controller_command",
           "owner_identity", "owner_alive", "hold_controller_lease", "main"]

_log = logging.getLogger("tfjupyter.cluster")

# In a task's environment when its engine must hold the lease (a cluster not detached): the
# lease's length in seconds.
LEASE_ENV = "TFJUPYTER_CONTROLLER_LEASE_S"
LEASE_S = 10.0          # an engine exits once the controller has been unreachable this long
PROBE_S = 2.0           # how often an engine connects to the controller
OWNER_POLL_S = 1.0      # how often the controller checks its owner
SHUTDOWN_GRACE_S = 10.0  # after SIGTERM, the controller's own shutdown has this long

_lease_thread: Optional[threading.Thread] = None


# -- the owner, as the controller sees it ----------------------------------------------------------
def owner_identity(pid: Optional[int] = None) -> str:
    """``PID:START`` of this process (or ``pid``): what the controller watches."""
    import psutil
    process = psutil.Process(pid or os.getpid())
    return f"{process.pid}:{process.create_time()!r}"


def owner_alive(identity: str) -> bool:
    """Whether the process ``identity`` (from ``owner_identity``) still runs: same pid, same
    start time, not a zombie."""
    import psutil
    pid, _, started = identity.partition(":")
    try:
        process = psutil.Process(int(pid))
        return (abs(process.create_time() - float(started)) < 1e-3
                and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def controller_command(owner: Optional[str] = None) -> List[str]:
    """The controller's command line for ipyparallel's local controller launcher: its own
    controller, watching ``owner`` (default: this process). It keeps "ipyparallel" in it, which
    is how ``processes.local_processes`` tells ipyparallel's processes from others."""
    # -c, not -m: the package imports this module, and runpy warns when it runs it again.
    return [sys.executable, "-c", f"import sys; from {__name__} import main; main(sys.argv[1:])",
            "--owner", owner or owner_identity(), "ipyparallel.controller"]


def _watch_owner(owner: str) -> None:
    while owner_alive(owner):
        time.sleep(OWNER_POLL_S)
    print(f"tfjupyter: the process that started this cluster ({owner.partition(':')[0]}) is gone; "
          "stopping the controller", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)   # ipyparallel's controller shuts down on it
    time.sleep(SHUTDOWN_GRACE_S)
    _kill_children_and_exit()


def _kill_children_and_exit() -> None:
    """The controller's shutdown did not finish: its children must not outlive it."""
    import psutil
    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass
    os._exit(1)


# -- the lease, as an engine holds it --------------------------------------------------------------
def hold_controller_lease() -> bool:
    """In an engine: exits the process once its controller has been unreachable for the lease
    given in its environment (``LEASE_ENV``); nothing when none is (a detached cluster, engines
    started by others). Idempotent; True when the lease is held."""
    global _lease_thread
    seconds = os.environ.get(LEASE_ENV)
    if not seconds:
        return False
    if _lease_thread is not None and _lease_thread.is_alive():
        return True
    address = _controller_address()
    if address is None:
        return False
    if not _reachable(address):
        # Behind an ssh tunnel, say: this engine cannot see its controller directly, so the
        # lease cannot be held. (Its controller's own heartbeats still stop it when idle.)
        _log.warning("tfjupyter: the controller at %s:%d is not reachable from this engine; "
                     "it will not exit by itself if the cluster's kernel dies", *address)
        return False
    _lease_thread = threading.Thread(target=_keep_lease, args=(address, float(seconds)),
                                     name="tfjupyter-controller-lease", daemon=True)
    _lease_thread.start()
    return True


def _controller_address() -> Optional[Tuple[str, int]]:
    """(host, port) of the controller's registration socket, as this engine reached it."""
    try:
        from ipyparallel.engine.app import IPEngine
        if not IPEngine.initialized():
            return None
        url = IPEngine.instance().registration_url       # tcp://host:port
    except Exception as e:
        _log.warning("tfjupyter: cannot find this engine's controller: %s", e)
        return None
    host, _, port = url.partition("://")[2].rpartition(":")
    return host.strip("[]"), int(port)


def _reachable(address: Tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=PROBE_S):
            return True
    except OSError:
        return False


def _keep_lease(address: Tuple[str, int], lease_s: float) -> None:
    renewed = time.monotonic()
    while True:
        time.sleep(PROBE_S)
        if _reachable(address):
            renewed = time.monotonic()
        elif time.monotonic() - renewed > lease_s:
            break
    print(f"tfjupyter: the controller at {address[0]}:{address[1]} has been gone for "
          f"{lease_s:.0f} s (its kernel died?); this engine exits", file=sys.stderr, flush=True)
    # A cell may hold the main thread in a step; nothing there can run, so no orderly exit.
    # Exiting releases the task's ports and GPU memory; the nanny follows its engine.
    os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(OWNER_POLL_S)
    os._exit(1)


def _watch_parent_after_fork() -> None:
    """In a process the controller forks (its schedulers): exit once the controller is gone.
    The owner watch does not survive a fork (threads do not), and a controller that was killed
    rather than stopped leaves its schedulers serving nobody."""
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="tfjupyter-parent-watch",
                     daemon=True).start()


def main(argv: List[str]) -> None:
    """``--owner PID:START MODULE ARGS...``: runs MODULE as ``__main__`` (ipyparallel's
    controller) in this process, stopping it when the owner is gone."""
    import runpy
    if len(argv) < 3 or argv[0] != "--owner":
        sys.exit(f"usage: {__name__}.main(['--owner', 'PID:START', MODULE, ARGS...])")
    owner, module = argv[1], argv[2]
    threading.Thread(target=_watch_owner, args=(owner,), name="tfjupyter-owner-watch",
                     daemon=True).start()
    os.register_at_fork(after_in_child=_watch_parent_after_fork)
    sys.argv = [module] + argv[3:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)

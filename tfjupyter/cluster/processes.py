"""The processes ipyparallel runs for a cluster: its controller and one engine set per task,
started through ipyparallel's launchers, and stopped with nothing of them left on this machine.

``Cluster`` (cluster.py) decides what to start and keeps the engine -> task table; this module
only deals with ipyparallel's ``Cluster`` object (``ipp`` below) and the processes it started.
The server extension's Stop (lab/server.py) stops a cluster with ``stop_ipyparallel`` too.
The controller it starts watches this process, and its engines the controller (lease.py), so
that a driver that dies without stopping them leaves nothing behind either.
"""
from __future__ import annotations

import copy
import logging
import time
from typing import Dict, List, Sequence

from .launch import ClusterError, TaskPlan

__all__ = ["start_controller", "start_engine", "wait_for_engines", "wait_for_new_engines",
           "forget_engine_set", "stop_ipyparallel",
           "local_processes", "reap"]

_log = logging.getLogger("tfjupyter.cluster")

# Stopping, step by step (stop_ipyparallel). A cell blocked in a step is interrupted first
# (Cluster.stop); then each step waits at most this long before the next, harder one:
SHUTDOWN_WAIT_S = 3.0   # engines asked to exit through the controller (client.shutdown)
TERM_WAIT_S = 5.0       # ipyparallel's launchers' stop: SIGTERM (ssh kill for remote engines),
                        # this long (their stop_seconds_until_kill), then SIGKILL
REAP_WAIT_S = 3.0       # what is left here (nannies, children): SIGTERM, this long, SIGKILL
STOP_STEP_S = 2.0       # attached engines: their servers' stop, which cancels their steps
STOP_BOUND_S = 15.0     # the whole of Cluster.stop(), with margin over the sum


# -- starting --------------------------------------------------------------------------------------
def start_controller(ipp, launcher: str, watch_owner: bool = True) -> None:
    """Starts the controller; with ``watch_owner``, one that stops itself once this process
    is gone (lease.py), which ends the engines too."""
    from ipyparallel.cluster.launcher import LocalControllerLauncher
    from . import lease

    kwargs = {}
    if watch_owner:
        if issubclass(ipp.controller_launcher_class, LocalControllerLauncher):
            kwargs["controller_cmd"] = lease.controller_command()
        else:
            _log.warning("the controller is started by %s, not on this machine: it cannot watch "
                         "this process, so the cluster will outlive it if it dies without "
                         "stopping it", ipp.controller_launcher_class.__name__)
    _call_launcher(launcher, "the controller", ipp.start_controller_sync, **kwargs)


def start_engine(ipp, plan: TaskPlan, launcher: str, launcher_config: Dict) -> None:
    """Starts the engine set of one task (one engine, with the task's environment, on its
    host for the ssh launcher)."""
    # Launchers edit what they are given (ssh_args gains -p): a copy for each.
    launcher_kwargs = dict(copy.deepcopy(launcher_config), environment=dict(plan.environment))
    if plan.host:
        launcher_kwargs["engines"] = {plan.host: 1}
    try:
        _call_launcher(launcher, f"/job:{plan.job}/task:{plan.index}", ipp.start_engines_sync, 1,
                       engine_set_id=plan.engine_set_id, **launcher_kwargs)
    except ClusterError:
        # Nothing of it started, so there is nothing for ipyparallel to stop (and its ssh
        # launcher would try to reach the host again to stop it).
        ipp.engines.pop(plan.engine_set_id, None)
        raise


def wait_for_engines(ipp, client, n: int, launcher: str, timeout: float, started: float) -> None:
    """Waits until ``n`` engines registered with the controller, at most ``timeout`` s from
    ``started`` (time.monotonic()); fails at once, with its output, if an engine exits."""
    wait_for_new_engines(ipp, client, set(), n, launcher, timeout, started)


def wait_for_new_engines(ipp, client, known, n: int, launcher: str, timeout: float,
                         started: float) -> List[int]:
    """Waits until ``n`` engines whose ids are not in ``known`` registered (see
    wait_for_engines); their ids."""
    deadline = started + timeout
    while True:
        new = [i for i in client.ids if i not in known]
        if len(new) >= n:
            return new
        for set_id, engine_set in list(ipp.engines.items()):
            stopped = getattr(engine_set, "stop_data", None)
            if stopped and not engine_set.running:
                raise ClusterError(f"the engine of {_set_task(set_id)} exited while starting "
                                   f"({stopped}):\n{_engine_output(engine_set)}")
        if time.monotonic() > deadline:
            outputs = "\n".join(f"{_set_task(s)}: {_engine_output(e)}"
                                for s, e in ipp.engines.items())
            raise ClusterError(f"only {len(new)} of {n} engines registered with the "
                               f"controller within {timeout:.0f} s (launcher {launcher!r}).\n"
                               f"{outputs}")
        time.sleep(0.1)


def forget_engine_set(ipp, engine_set_id: str) -> None:
    """Lets go of a task's engine set whose engine is gone (it died, or was shut down), so that
    a new one can start under the same id; whatever of it is left is stopped."""
    if engine_set_id not in ipp.engines:
        return
    try:
        ipp.stop_engines_sync(engine_set_id)
    except Exception as e:   # its launcher's processes are gone already
        _log.debug("stopping the engine set %s: %s", engine_set_id, e)
    ipp.engines.pop(engine_set_id, None)


def _call_launcher(launcher: str, what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        detail = getattr(e, "output", None) or getattr(e, "stderr", None) or ""
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        raise ClusterError(f"ipyparallel's {launcher!r} launcher failed to start {what}: "
                           f"{type(e).__name__}: {e}"
                           + (f"\n{detail.strip()[-2000:]}" if detail.strip() else "")) from e


def _set_task(engine_set_id: str) -> str:
    job, _, index = engine_set_id.rpartition("-")
    return f"/job:{job}/task:{index}"


def _engine_output(engine_set) -> str:
    try:
        text = engine_set.get_output() or ""
    except Exception as e:
        text = f"(output unavailable: {e})"
    return text.strip()[-2000:] or "(no output)"


# -- stopping --------------------------------------------------------------------------------------
def stop_ipyparallel(ipp, client, task_pids: Sequence[int] = ()) -> None:
    """Stops the controller and engines of ``ipp``, an ipyparallel.Cluster that is a tfjupyter
    cluster's alone, and every process of it on this machine (``task_pids``: its tasks' engines
    here). ``client``, connected to it (or None), asks the engines to exit first and is closed
    then. Raises what ipyparallel's stop raises, once the processes are reaped anyway."""
    ours = local_processes(ipp, task_pids)   # before they exit, while their children are theirs
    try:
        if client is not None:
            _shutdown_engines(client)
            client.close()
        ipp.stop_cluster_sync()
    finally:
        reap(ours)


def _shutdown_engines(client, timeout: float = SHUTDOWN_WAIT_S) -> None:
    """Asks every engine to exit through the controller: they exit at once and cleanly, where
    the launchers' stop signals them, waits 5 s, then kills. That stop follows anyway, so a
    failure here costs nothing but time."""
    try:
        ids = list(client.ids)
        if ids:
            client.shutdown(targets=ids, block=False)
        deadline = time.monotonic() + timeout
        while set(ids) & set(client.ids) and time.monotonic() < deadline:
            time.sleep(0.05)
    except Exception as e:
        _log.warning("asking the engines to shut down failed: %s", e)


def local_processes(ipp, task_pids=(), engine_set_ids=None) -> List:
    """The processes of ``ipp`` (an ipyparallel.Cluster) that run on this machine: the ones its
    local launchers started (controller, engines or their nannies) and ``task_pids`` (engines
    serving tasks here), each only if ipyparallel's (its command line says so, so a pid that
    another process got since is left alone), with their children. ``engine_set_ids``: only
    those engine sets' (and not the controller's)."""
    import psutil
    from ipyparallel.cluster.launcher import LocalProcessLauncher, SSHLauncher

    pids = set(task_pids)
    sets = [e for set_id, e in ipp.engines.items()
            if engine_set_ids is None or set_id in engine_set_ids]
    launchers = ([ipp.controller] if engine_set_ids is None else []) + [
        launcher for engine_set in sets
        for launcher in getattr(engine_set, "launchers", {}).values()]
    for launcher in launchers:
        if isinstance(launcher, LocalProcessLauncher) and not isinstance(launcher, SSHLauncher):
            pids.add(getattr(launcher, "pid", None))
    found = []
    for pid in pids - {None, 0}:
        try:
            process = psutil.Process(pid)
            if "ipyparallel" in " ".join(process.cmdline()):
                found += [process] + process.children(recursive=True)
        except psutil.Error:
            pass
    return found


def reap(processes, timeout: float = REAP_WAIT_S) -> None:
    """After ipyparallel's stop: nothing of ours may outlive the cluster.

    Engine nannies linger a few seconds after their engine exits (they poll it), so whatever is
    still there after a second is asked to terminate, and killed if it does not.
    """
    import psutil
    _, alive = psutil.wait_procs(processes, timeout=1.0)
    for process in alive:
        try:
            process.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(alive, timeout=timeout)
    for process in alive:
        try:
            _log.warning("killing %s (pid %d): still running after the cluster stopped",
                         " ".join(process.cmdline()[:3]), process.pid)
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)

"""The Jupyter server extension behind JupyterLab's cluster panel.

A jupyter_server ``ExtensionApp`` (``TfjupyterExtension``), so that the server calls its
``stop_extension`` at exit. Routes, under the server's ``base_url``; the API's need the server's
authentication and its authorizer's leave for resource ``tfjupyter`` (a GET is a "read", a POST
or DELETE a "write"); a request without either gets 403::

    GET    tfjupyter/api/clusters              every registered cluster and its tasks' status
    POST   tfjupyter/api/clusters/<id>/stop    stops it with ipyparallel (the kernel's Cluster
                                               raises a clear ClusterError at its next use)
    DELETE tfjupyter/api/clusters/<id>         forgets a stopped or orphaned cluster
    GET    tfjupyter/static/bokeh/<version>/<file>
                                               the installed bokeh's BokehJS files, for the
                                               dashboards (bokehjs.py); public, as the
                                               server's own static files: a 404 names the
                                               version served when <version> differs

Which clusters exist comes from the registry kernels write (``tfjupyter.cluster.registry``);
how their tasks are comes over the tasks' own token-checked telemetry gRPC: one
``telemetry.watch()`` per cluster, made when a request first asks about it and closed when its
entry goes, when its tasks are all gone after a stop, or when no request asked for
``IDLE_WATCH_S`` seconds.

A cluster is ``running`` (its kernel lives), ``stopping`` (a stop is under way, or it was
stopped and a task still answers), ``stopped``, or ``orphaned`` (its kernel is gone but a task
still answers); see ``cluster_state``. An entry whose kernel is gone and whose tasks are all
gone is removed. A stop that fails puts the entry back as it was, and the cluster's ``error``
says why for ``STOP_ERROR_S`` seconds. A task
is ``starting`` (no answer yet), ``idle``/``running`` (stepped in the last 2 s), ``dead`` (its
process on this machine has exited) or ``unreachable`` (it does not answer, or it refused the
token the registry holds). Errors are ``{"error": "..."}``, naming the cluster and the task.

The server's event loop never waits: registry files, psutil checks, creating and closing
watchers and ipyparallel's stop run in the extension's thread pool; a watcher polls from its
own thread and its snapshot is a copy taken under a lock.

The server imports this module at start: it imports neither the TF API nor bokeh, numpy or
ipyparallel (tests/test_lab_server.py measures it).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Set, Tuple

import tornado.web
from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import PeriodicCallback

from ..cluster import registry
from ..cluster.cluster import await_first_replies
from ..cluster.processes import stop_ipyparallel
from ..cluster.status import alive_state, describe_devices
from ..distributed.cluster import is_this_host
from . import bokehjs

API_PATH = "tfjupyter/api/clusters"
AUTH_RESOURCE = "tfjupyter"
SETTINGS_KEY = "tfjupyter_cluster_monitor"
IDLE_WATCH_S = 30.0      # a watcher nobody asked about for this long is closed
SWEEP_EVERY_S = 5.0
PANEL_FIRST_REPLY_WAIT_S = 1.5   # at most, for a new watcher's first replies: a panel's
                                 # first answer is then not all "starting"
WATCH_INTERVAL_S = 1.0   # a panel refreshes every second or two; polling faster buys nothing
STOP_ERROR_S = 60.0      # a failed stop's error stays in the cluster's answers this long

STOPPED_AND_GONE = "stopped, and its tasks are gone"

_ID_PATTERN = r"[A-Za-z0-9_-]+"
_REFUSED = re.compile(r"\((UNAUTHENTICATED|PERMISSION_DENIED)\)")


class ApiError(Exception):
    """An error a handler answers with ``{"error": message}`` and ``status``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class _Watch:
    """The extension's watcher of one cluster."""

    def __init__(self, watcher, key: tuple):
        self.watcher = watcher
        self.key = key                      # (token, addresses): a new entry needs a new one
        self.last_asked = time.monotonic()


# =================================================================================================
# The monitor: everything but HTTP. Its public methods block; handlers call them in its pool.
# =================================================================================================
class ClusterMonitor:
    def __init__(self, log, idle_after: float = IDLE_WATCH_S):
        self.log = log
        self.idle_after = idle_after
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tfjupyter-clusters")
        self._lock = threading.Lock()
        self._watches: Dict[str, _Watch] = {}
        self._gone: Set[str] = set()        # stopped clusters whose tasks are all gone
        self._stopping: Set[str] = set()    # stops under way
        self._stop_errors: Dict[str, Tuple[str, float]] = {}   # id -> (error, shown until)
        self._sweeper: Optional[PeriodicCallback] = None
        self._closed = False

    # -- on the event loop -------------------------------------------------------------------------
    async def call(self, fn, *args):
        """Runs ``fn(*args)`` in the pool; starts the idle sweep on first use (the loop runs by
        then, which it may not when the extension is loaded)."""
        if self._sweeper is None and not self._closed:
            self._sweeper = PeriodicCallback(self._sweep_soon, SWEEP_EVERY_S * 1000)
            self._sweeper.start()
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def _sweep_soon(self) -> None:
        if not self._closed:
            try:
                self.executor.submit(self.sweep)
            except RuntimeError:  # the pool shut down under us (close())
                pass

    # -- in the pool -------------------------------------------------------------------------------
    def clusters(self) -> dict:
        """The GET answer: every valid registry entry, described."""
        entries = registry.entries()
        present = {e["id"] for e in entries}
        with self._lock:
            vanished = [cid for cid in self._watches if cid not in present]
            closing = [self._watches.pop(cid) for cid in vanished]
            self._gone &= present
            for cid in list(self._stop_errors):
                if cid not in present:
                    del self._stop_errors[cid]
        self._close(closing)
        # Every watcher first, then one wait for the new ones' first replies, not one per cluster.
        watched = {entry["id"]: self._watch(entry) for entry in entries}
        await_first_replies([w.watcher for w, _, fresh in watched.values() if fresh],
                            PANEL_FIRST_REPLY_WAIT_S)
        described = [self.describe(entry, watched=watched[entry["id"]]) for entry in entries]
        return {"version": 1, "clusters": [c for c in described if c is not None]}

    def describe(self, entry: dict, clean_up: bool = True,
                 watched: Optional[tuple] = None) -> Optional[dict]:
        """One cluster as the API shows it; None when ``clean_up`` removed its entry (kernel
        gone and every task gone). ``watched``: what ``_watch(entry)`` gave, if called."""
        cid = entry["id"]
        kernel = entry["kernel"]
        alive = kernel_alive(kernel)
        if watched is None:
            watched = self._watch(entry)
            await_first_replies([watched[0].watcher] if watched[2] else [],
                                PANEL_FIRST_REPLY_WAIT_S)
        watch, why_not, _ = watched
        if watch is not None:
            statuses = watch.watcher.snapshot()
        else:
            statuses = None if why_not else {}   # {}: it has no task to watch
        views = [self._task_view(cid, task, statuses, why_not) for task in entry["tasks"]]
        tasks = [view for view, _ in views]
        tasks_gone = all(gone for _, gone in views)
        with self._lock:
            stopping = cid in self._stopping
            error = self._stop_error(cid)
            state = cluster_state(entry["state"], stopping, alive, tasks_gone)
            finished = self._watches.pop(cid, None) if state == "stopped" else None
            if state == "stopped":   # nothing left to watch, until its entry is rewritten
                self._gone.add(cid)
        self._close([finished] if finished else [])
        if clean_up and not alive and tasks_gone and not stopping:
            self.log.info("tfjupyter: forgetting cluster %s: its kernel (pid %s) and its tasks "
                          "are gone", cid, kernel.get("pid"))
            self._forget_entry(cid)
            return None
        if not error and state == "orphaned":
            error = (f"cluster {cid}: its kernel (pid {kernel.get('pid')}) has exited but its "
                     "tasks still run; stop them here")
        if not error and why_not != STOPPED_AND_GONE:
            error = why_not
        if not error and state == "running" and tasks and tasks_gone:
            error = f"cluster {cid}: none of its tasks answers"
        return {"id": cid, "created": entry["created"], "state": state,
                "engines": entry["engines"],
                "kernel": {"pid": kernel.get("pid"), "kernel_id": kernel.get("kernel_id", ""),
                           "alive": alive},
                "tasks": tasks, "error": error}

    def stop(self, cluster_id: str) -> dict:
        """Stops a cluster's controller and engines with ipyparallel; returns it described."""
        entry = self._entry(cluster_id)
        with self._lock:
            under_way = cluster_id in self._stopping
            if not under_way:
                self._stopping.add(cluster_id)
                self._stop_errors.pop(cluster_id, None)
        if under_way:  # a second click: the first stop answers for both
            return self.describe(entry, clean_up=False)
        try:
            if self._stoppable(entry):
                entry = self._mark_and_stop(entry)
        finally:
            with self._lock:
                self._stopping.discard(cluster_id)
        # The kernel may have noticed and removed its entry already: describe what we know.
        return self.describe(registry.read(cluster_id) or entry, clean_up=False)

    def forget(self, cluster_id: str) -> dict:
        """Removes a stopped or orphaned cluster's entry (its processes are left as they are)."""
        entry = self._entry(cluster_id)
        view = self.describe(entry, clean_up=False)
        if view["state"] in ("running", "stopping"):
            raise ApiError(409, f"cluster {cluster_id} is {view['state']}: only a stopped or "
                                "orphaned cluster can be forgotten")
        self._forget_entry(cluster_id)
        self.log.info("tfjupyter: forgot cluster %s (%s)", cluster_id, view["state"])
        return {"id": cluster_id, "deleted": True}

    def watching(self) -> List[str]:
        """The ids of the clusters whose watcher is open."""
        with self._lock:
            return sorted(self._watches)

    def sweep(self) -> None:
        """Closes the watchers nobody asked about lately."""
        now = time.monotonic()
        with self._lock:
            idle = [cid for cid, w in self._watches.items() if now - w.last_asked > self.idle_after]
            closing = [self._watches.pop(cid) for cid in idle]
        self._close(closing)

    def close(self) -> None:
        """Stops the sweep, every watcher and the pool (the server is going away). Bounded: a
        watcher's close waits for its last poll (~1 s); work queued in the pool is cancelled,
        and a stop still running there is not waited for."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.stop()
        with self._lock:
            closing = list(self._watches.values())
            self._watches.clear()
        self._close(closing)
        self.executor.shutdown(wait=False, cancel_futures=True)

    # -- helpers -----------------------------------------------------------------------------------
    @staticmethod
    def _stoppable(entry: dict) -> bool:
        """Whether ipyparallel can stop the cluster from here; False when nothing is left to
        stop; ApiError 409 when only its kernel can."""
        cluster_file = entry["cluster_file"]
        if cluster_file and os.path.exists(cluster_file):
            return True
        if entry["state"] == "stopped":
            return False
        if entry["engines"] == "attached":
            why = "it runs on engines of an ipyparallel cluster that someone else started"
        elif cluster_file:
            why = f"its ipyparallel cluster file {cluster_file} is gone"
        else:
            why = "its entry names no ipyparallel cluster file"
        raise ApiError(409, f"cluster {entry['id']} cannot be stopped from here: {why}; "
                            "stop it from its kernel (cluster.stop())")

    def _mark_and_stop(self, entry: dict) -> dict:
        """Marks the entry stopped by the panel, then stops the cluster; returns the entry.

        The mark comes first, so the kernel stops using the cluster even while ipyparallel is at
        work. If the stop fails, the entry is put back as it was, so the kernel keeps its cluster
        (and a retry can stop it), and the failure shows in the cluster's ``error``."""
        cid = entry["id"]
        marked = registry.mark_stopped(cid, "panel") or dict(entry, state="stopped",
                                                              stopped_by="panel")
        self.log.info("tfjupyter: stopping cluster %s (kernel pid %s) from the cluster panel",
                      cid, entry["kernel"].get("pid"))
        try:
            self._stop_with_ipyparallel(marked)
        except Exception as e:
            message = f"stopping cluster {cid} with ipyparallel failed: {type(e).__name__}: {e}"
            self.log.error("tfjupyter: %s", message)
            with self._lock:
                self._stop_errors[cid] = (message, time.monotonic() + STOP_ERROR_S)
            registry.undo_mark_stopped(cid, "panel", entry)
            raise ApiError(500, message) from None
        return marked

    def _stop_error(self, cluster_id: str) -> str:
        """The error of the cluster's last stop, if it failed lately. Under ``self._lock``."""
        message, until = self._stop_errors.get(cluster_id, ("", 0.0))
        if message and time.monotonic() > until:
            del self._stop_errors[cluster_id]
            return ""
        return message

    def _entry(self, cluster_id: str) -> dict:
        entry = registry.read(cluster_id)
        if entry is None:
            raise ApiError(404, f"no cluster {cluster_id!r} in the tfjupyter cluster registry "
                                f"({registry.registry_dir()})")
        return entry

    def _forget_entry(self, cluster_id: str) -> None:
        registry.remove(cluster_id)
        with self._lock:
            closing = self._watches.pop(cluster_id, None)
            self._gone.discard(cluster_id)
            self._stop_errors.pop(cluster_id, None)
        self._close([closing] if closing else [])

    def _watch(self, entry: dict) -> Tuple[Optional[_Watch], str, bool]:
        """The cluster's watcher (made if need be, then ``fresh``), or None and why not:
        STOPPED_AND_GONE, the error that kept it from being watched, or "" (no tasks)."""
        cid = entry["id"]
        if not entry["tasks"]:
            return None, "", False
        addresses = tuple(sorted((t["job"], t["index"], t["address"]) for t in entry["tasks"]))
        key = (entry["token"], addresses)
        stale = None
        with self._lock:
            if cid in self._gone:
                return None, STOPPED_AND_GONE, False
            watch = self._watches.get(cid)
            if watch is not None and watch.key != key:  # the entry was rewritten
                stale, watch = self._watches.pop(cid), None
            fresh = watch is None
            if fresh:
                try:
                    watch = self._watches[cid] = _Watch(self._new_watcher(entry), key)
                except Exception as e:
                    return None, (f"cluster {cid}: cannot watch its tasks: "
                                  f"{type(e).__name__}: {e}"), False
            watch.last_asked = time.monotonic()
        self._close([stale] if stale else [])
        return watch, "", fresh

    @staticmethod
    def _new_watcher(entry: dict):
        jobs: Dict[str, Dict[int, str]] = {}
        for task in entry["tasks"]:
            jobs.setdefault(task["job"], {})[task["index"]] = task["address"]
        from ..distributed import telemetry   # gRPC: imported by the first watch, not at start
        # Only snapshot() is read: events nobody takes would pile up for as long as it watches.
        return telemetry.watch(jobs, token=entry["token"] or None, interval=WATCH_INTERVAL_S,
                               max_events=1)

    def _task_view(self, cid: str, task: dict, statuses: Optional[dict],
                   why_not: str) -> Tuple[dict, bool]:
        """A task as the API shows it, and whether it is gone (its process exited, it stopped
        answering, or its cluster was stopped and gone before)."""
        name = f"{task['job']}:{task['index']}"
        where = f"cluster {cid}: {name} ({task['address']})"
        status = statuses.get(f"/job:{task['job']}/replica:0/task:{task['index']}") \
            if statuses is not None else None
        view = {"name": name, "job": task["job"], "index": task["index"], "host": task["host"],
                "address": task["address"],
                "devices": describe_devices(task["devices"] or (status.devices if status else [])),
                "state": "starting", "error": "", "global_step": None,
                "steps_per_sec": 0.0, "examples_per_sec": 0.0}
        if process_exited(task["host"], task["pid"]):
            view.update(state="dead", error=f"{where}: its process {task['pid']} on "
                                            f"{task['host']} has exited")
            return view, True
        if statuses is None and why_not == STOPPED_AND_GONE:
            view.update(state="dead", error=f"{where}: stopped")
            return view, True
        if status is None:  # it could not be watched
            view.update(state="unreachable", error=why_not or f"{where}: not watched")
            return view, False
        if status.state == "alive":
            view.update(state=alive_state(status.last_step_time), global_step=status.global_step,
                        steps_per_sec=round(status.steps_per_sec or 0.0, 3),
                        examples_per_sec=round(status.examples_per_sec or 0.0, 3))
            return view, False
        if status.state == "dead":
            view.update(state="unreachable",
                        error=f"{where} does not answer: {_strip_where(status.error)}")
            return view, True
        if status.error:
            refused = _REFUSED.search(status.error)
            if refused:   # it answered, so something runs there
                view.update(state="unreachable",
                            error=f"{where} refused the token in the cluster's registry entry "
                                  f"({refused.group(1)}): the entry is stale, or another "
                                  "cluster now serves at that address")
            else:
                view.update(state="unreachable", error=f"{where}: {_strip_where(status.error)}")
        return view, False

    def _stop_with_ipyparallel(self, entry: dict) -> None:
        import ipyparallel  # not at import: a server without clusters never needs it
        ipp = ipyparallel.Cluster.from_file(entry["cluster_file"], log=self.log)
        stop_ipyparallel(ipp, self._client_of(ipp),
                         [t["pid"] for t in entry["tasks"] if is_this_host(t["host"])])

    def _client_of(self, ipp, timeout: float = 3.0):
        """A client of ``ipp`` to ask its engines to exit, or None (its launchers' stop, which
        follows anyway, will end them)."""
        try:
            return ipp.connect_client_sync(timeout=timeout)
        except Exception as e:
            self.log.debug("tfjupyter: no ipyparallel client for a clean shutdown: %s", e)
            return None

    def _close(self, watches: List[_Watch]) -> None:
        for watch in watches:
            try:
                watch.watcher.close()
            except Exception as e:
                self.log.warning("tfjupyter: closing a cluster watcher failed: %s", e)


def cluster_state(entry_state: str, stopping: bool, kernel_alive: bool,
                  tasks_gone: bool) -> str:
    """A cluster's ``state`` in the API, from its registry entry's ``state`` and what is seen:

        stop under way here   entry state   every task gone   kernel alive   state
        yes                   any           any               any            "stopping"
        no                    "stopped"     yes               any            "stopped"
        no                    "stopped"     no                any            "stopping"
        no                    "running"     any               yes            "running"
        no                    "running"     any               no             "orphaned"

    A task is gone when its process has exited or it stopped answering. (An entry whose kernel
    and tasks are all gone, no stop under way, is removed rather than shown.)
    """
    if stopping:
        return "stopping"
    if entry_state == "stopped":
        return "stopped" if tasks_gone else "stopping"
    return "running" if kernel_alive else "orphaned"


def _strip_where(error: Optional[str]) -> str:
    """A watcher's error without its "/job:…/task:… (address)" prefix, which we say better."""
    error = error or ""
    return re.sub(r"^/job:\S+ \([^)]*\):?\s*", "", error)


# -- this machine's processes ---------------------------------------------------------------------
def _running(pid: int):
    """psutil's Process of ``pid`` if it runs (a zombie has exited), else None."""
    import psutil
    try:
        process = psutil.Process(pid)
    except (psutil.Error, ValueError):
        return None
    try:
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:  # another user's process: it runs, we may not look closer
        pass
    return process


def process_exited(host: str, pid: int) -> bool:
    """True only when ``pid`` is of this machine and no longer runs."""
    return bool(pid) and is_this_host(host) and _running(pid) is None


def kernel_alive(kernel: dict) -> bool:
    """Whether the kernel that registered a cluster still runs. A kernel of another host (a
    registry shared over NFS) cannot be checked from here and counts as alive."""
    if kernel.get("host") and not is_this_host(kernel["host"]):
        return True
    process = _running(kernel["pid"])
    if process is None:
        return False
    created = kernel.get("create_time")
    if created:
        try:  # another process may have got the pid since
            return abs(process.create_time() - created) < 1.0
        except Exception:
            return True
    return True


# =================================================================================================
# HTTP
# =================================================================================================
class _Handler(APIHandler):
    """JSON in, JSON out; errors as {"error": ...}."""

    # For the server's Authorizer (``@authorized``): a GET is a "read" of it, a POST or DELETE a
    # "write", so an Authorizer may let users watch clusters but not stop them.
    auth_resource = AUTH_RESOURCE

    @property
    def monitor(self) -> ClusterMonitor:
        return self.settings[SETTINGS_KEY]

    async def _answer(self, fn, *args) -> None:
        try:
            result = await self.monitor.call(fn, *args)
        except ApiError as e:
            self.set_status(e.status)
            result = {"error": e.message}
        except Exception as e:
            self.log.exception("tfjupyter: %s %s failed", self.request.method, self.request.path)
            self.set_status(500)
            result = {"error": f"{type(e).__name__}: {e}"}
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(result))

    def write_error(self, status_code: int, **kwargs) -> None:
        # Tornado's own errors (403 unauthenticated, 405, ...) in our shape too.
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": f"{self.request.method} {self.request.path}: "
                                         f"{status_code} {message}"}))


class ClustersHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        await self._answer(self.monitor.clusters)


class StopHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def post(self, cluster_id: str) -> None:
        await self._answer(self.monitor.stop, cluster_id)


class ClusterHandler(_Handler):
    @tornado.web.authenticated
    @authorized
    async def delete(self, cluster_id: str) -> None:
        await self._answer(self.monitor.forget, cluster_id)


class BokehJSHandler(JupyterHandler, tornado.web.StaticFileHandler):
    """The installed bokeh's BokehJS files; ``<version>`` in the URL must be its version (a
    kernel with another bokeh gets a 404 that says which it is)."""

    @allow_unauthenticated
    def get(self, version: str, path: str, include_body: bool = True):
        self._check_version(version)
        return super().get(path, include_body)

    @allow_unauthenticated
    def head(self, version: str, path: str):
        self._check_version(version)
        return super().head(path)

    def _check_version(self, version: str) -> None:
        served = bokehjs.bokeh_version()
        if version != served:
            raise tornado.web.HTTPError(
                404, log_message=f"this Jupyter server has bokeh {served}, not {version}: "
                                 f"install bokeh {served} in the kernel's environment, or set "
                                 f"{bokehjs.ENV}=inline there")

    def write_error(self, status_code: int, **kwargs) -> None:
        # In words the dashboard's loader shows (it shows text/plain answers), not an HTML page.
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code} {message}")


class TfjupyterExtension(ExtensionApp):
    """The server extension: the cluster panel's API and the dashboards' BokehJS."""

    name = "tfjupyter"
    description = "tfjupyter: the cluster panel's API and BokehJS for the dashboards"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        self.monitor = ClusterMonitor(self.log)
        self.settings[SETTINGS_KEY] = self.monitor
        self.log.info("tfjupyter: cluster panel API at %s (registry %s); BokehJS %s at %s",
                      API_PATH, os.environ.get(registry.ENV_DIR) or "the Jupyter runtime dir",
                      bokehjs.bokeh_version(), bokehjs.STATIC_PATH)

    def initialize_handlers(self) -> None:
        self.handlers.extend([
            (API_PATH, ClustersHandler),
            (f"{API_PATH}/({_ID_PATTERN})/stop", StopHandler),
            (f"{API_PATH}/({_ID_PATTERN})", ClusterHandler),
            (f"{bokehjs.STATIC_PATH}/([^/]+)/(.*)", BokehJSHandler,
             {"path": bokehjs.bokehjs_dir()}),
        ])

    async def stop_extension(self) -> None:
        """At server exit: closes the monitor's watchers and its thread pool (bounded, ~1 s)."""
        self.monitor.close()

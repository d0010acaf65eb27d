"""``Dashboard``: a live view of training — throughput, summaries, placement, a device timeline,
cluster health and sync replicas — as one ipywidget of Bokeh figures.

Threads. Events arrive on the training thread and on telemetry watcher threads and only go into
the Feed. One **pump** drains the Feed at most ``max_rate`` times a second and applies the
result to the Bokeh document; it is the only code that touches the document or the widgets.
In a Jupyter kernel the pump runs on the kernel's IOPub thread's IO loop: a thread ipykernel
owns that never runs user code, so the dashboard stays live while a cell blocks the main thread
in a training loop, and every message it sends leaves from the thread that writes IOPub (in
ipykernel 7, output and comm messages from arbitrary threads are re-routed by parent; this
path is not). Edits coming back from the browser (handled on the shell thread when the kernel
is idle) take the same lock (bokeh_model.py adapts jupyter_bokeh's widget for both). Outside a
kernel (a terminal IPython, a script) the pump is a daemon thread and the dashboard prints
text lines instead. BokehJS comes from the Jupyter server by default (lab/bokehjs.py).

Sharing. When the dashboard closes — ``close()``, the followed session closing, a
``DashboardHook`` ending — and after every cell that brought new data, the output below the
widget is replaced by a static snapshot (snapshot.py) that a saved or exported notebook shows
without a kernel.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import uuid
from typing import List

from ..lab import bokehjs
from .feed import Feed
from .snapshot import live_class, snapshot_html, summary_lines, summary_tables
from .sources import ClusterSource, LocalSource

__all__ = ["Dashboard"]

_log = logging.getLogger("tfjupyter.widgets")


def _kernel():
    """The running ipykernel with an IOPub thread, or None (terminal, script, in-process)."""
    kernelbase = sys.modules.get("ipykernel.kernelbase")
    if kernelbase is None or not kernelbase.Kernel.initialized():
        return None
    kernel = kernelbase.Kernel.instance()
    return kernel if getattr(kernel, "iopub_thread", None) is not None else None


_nothing = contextlib.nullcontext


class _KernelPump:
    """Calls ``fn`` every ``period`` s on the kernel's IOPub IO loop."""

    def __init__(self, kernel, fn, period: float):
        from tornado.ioloop import PeriodicCallback
        self.loop = kernel.iopub_thread.io_loop
        self.callback = PeriodicCallback(fn, period * 1000.0)
        self.loop.add_callback(self.callback.start)
        self.thread_name = "IOPub"

    def stop(self) -> None:
        self.loop.add_callback(self.callback.stop)


class _ThreadPump:
    """Calls ``fn`` every ``period`` s on a daemon thread."""

    def __init__(self, fn, period: float):
        self._stop = threading.Event()
        self.thread_name = "tfjupyter-dashboard"

        def loop():
            while not self._stop.wait(period):
                fn()

        self.thread = threading.Thread(target=loop, name=self.thread_name, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()


def _session_type():
    from ..client.session import BaseSession
    return BaseSession


class Dashboard:
    """A live training dashboard.

    ``Dashboard()`` follows every session of this process and every running cluster (also ones
    started later); ``Dashboard(sess)`` one session, until it closes; ``Dashboard(cluster)`` a
    ``tfjupyter.cluster.Cluster``; also a telemetry ``Watcher``, a ClusterSpec, a dict of job ->
    addresses, or the strings ``"local"`` and ``"clusters"``. Display it (last expression of a
    cell, or ``display(dash)``); ``close()`` stops it and leaves the static snapshot.

    ``trace_every``: trace one run in that many (0: never) for the device timeline;
    ``history``: points kept per throughput line (4 per second: 3600 = the last 15 min);
    ``max_rate``: most updates per second sent to the browser; ``window``: seconds the rates
    average; ``text_every``: seconds between text lines where widgets cannot show.
    """

    def __init__(self, *sources, trace_every: int = 100, history: int = 3600,
                 max_rate: float = 10.0, window: float = 5.0, title: str = "tfjupyter dashboard",
                 text_every: float = 10.0):
        if not (isinstance(trace_every, int) and trace_every >= 0):
            raise ValueError(f"Dashboard: trace_every must be an int >= 0, got {trace_every!r}")
        if not (isinstance(history, int) and history > 0):
            raise ValueError(f"Dashboard: history must be a positive int, got {history!r}")
        if not 0 < max_rate <= 10:
            raise ValueError(f"Dashboard: max_rate must be in (0, 10] updates/s, got {max_rate!r}")
        from .panels import Panels   # Bokeh is imported when a dashboard is made, not before
        self.id = uuid.uuid4().hex[:12]
        self.title = title
        self.trace_every = trace_every
        self.max_rate = float(max_rate)
        self.text_every = float(text_every)
        self.feed = Feed(window=window)
        self.panels = Panels(history=history)
        self._lock = threading.RLock()
        self._sources: list = []
        self._followed_clusters: set = set()
        self._follow_clusters = False
        self._closed = False
        self._widget = None
        self._model = None
        self._header = None
        self._snapshot_handle = None
        self._snapshot_events = -1
        self._text = False
        self._last_text = 0.0
        self._next_discovery = 0.0
        self._next_header = 0.0
        self.updates = 0           # updates applied to the document
        self.update_times: List[float] = []   # monotonic times of the last updates (<= 200)
        self.pump_threads: set = set()        # the threads that applied updates (one expected)
        self._shell = None
        self._resolve(sources)
        kernel = _kernel()
        # Ticks at twice the rate, and an update only once 1/max_rate has passed since the last
        # one: at most max_rate a second however the ticks jitter, and close to it.
        self._min_gap = 1.0 / self.max_rate
        self._last_update = -1e9
        period = self._min_gap / 2
        self._pump = _KernelPump(kernel, self._tick, period) if kernel is not None \
            else _ThreadPump(self._tick, period)

    # -- sources -----------------------------------------------------------------------------------
    def _resolve(self, sources) -> None:
        from ..distributed.cluster import ClusterSpec
        from ..distributed.telemetry import watch
        if not sources:
            sources = ("local", "clusters")
        for source in sources:
            if isinstance(source, str) and source in ("local", "clusters"):
                if source == "local":
                    self._sources.append(LocalSource(self.feed, trace_every=self.trace_every))
                else:
                    self._follow_clusters = True
                    self._discover_clusters()
            elif isinstance(source, _session_type()):
                if source._cluster is not None:
                    raise ValueError("Dashboard: a distributed session's steps run on the "
                                     "cluster's tasks; pass the Cluster (or its ClusterSpec)")
                self._sources.append(LocalSource(self.feed, session=source,
                                                 trace_every=self.trace_every))
            elif hasattr(source, "add_callback") and hasattr(source, "snapshot"):   # a Watcher
                self._sources.append(ClusterSource(self.feed, source, owned=False))
            elif hasattr(source, "watch") and hasattr(source, "spec"):   # a Cluster
                self._follow_cluster(source)
            elif isinstance(source, (ClusterSpec, dict, list, tuple)):
                self._sources.append(ClusterSource(
                    self.feed, watch(source, trace_every=self.trace_every)))
            else:
                raise TypeError(f"Dashboard: cannot follow {source!r}: pass a Session, a Cluster, "
                                "a telemetry Watcher, a ClusterSpec, 'local' or 'clusters'")

    def _follow_cluster(self, cluster) -> None:
        if id(cluster) in self._followed_clusters:
            return
        self._followed_clusters.add(id(cluster))
        self._sources.append(ClusterSource(self.feed, cluster.watch(trace_every=self.trace_every),
                                           label=repr(cluster), restarts=lambda: {
                                               t.name: t.restarts for t in cluster.tasks}))

    def _discover_clusters(self) -> None:
        from ..cluster.cluster import serving_clusters
        for cluster in serving_clusters():
            self._follow_cluster(cluster)

    # -- the pump ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        try:
            self._pump_once()
        except Exception:   # the pump must keep going: log what broke, every time it breaks
            _log.exception("tfjupyter dashboard: an update failed")

    def _pump_once(self, final: bool = False) -> None:
        if self._closed and not final:
            return
        now = time.monotonic()
        if now - self._last_update < self._min_gap and not final:
            return
        with self._lock:
            if self._follow_clusters and now >= self._next_discovery and not final:
                self._next_discovery = now + 1.0
                self._discover_clusters()
            update = self.feed.drain(force_sample=final)
            if update and not final:
                self.pump_threads.add(threading.current_thread().name)
            if update:
                with self._model.batch() if self._model is not None else _nothing():
                    self.panels.apply(update)
                self._last_update = now
                self.updates += 1
                self.update_times.append(now)
                del self.update_times[:-200]
            if self._header is not None and (now >= self._next_header or final):
                self._next_header = now + 0.5
                text = self._header_html(final)
                if self._header.value != text:
                    self._header.value = text
        if self._text and (now - self._last_text >= self.text_every or final) and self.feed.events:
            self._last_text = now
            self._print_text()
        if not final and self._sources and all(getattr(s, "finished", False)
                                               for s in self._sources):
            self.close()

    def _header_html(self, final: bool) -> str:
        rows = self.feed.rows()
        total = sum(r.examples_per_sec for r in rows)
        steps = [r.global_step for r in rows if r.global_step is not None]
        dead = [r.task for r in rows if r.state == "dead"]
        state = "closed" if (final or self._closed) else "live"
        parts = [f"<b>{self.title}</b>", state, f"{len(rows)} task{'s' * (len(rows) != 1)}"]
        if steps:
            parts.append(f"global step {max(steps)}")
        parts.append(f"{total:,.0f} examples/s")
        if dead:
            parts.append(f"<span style='color:#d62728'><b>dead: {', '.join(dead)}</b></span>")
        return " · ".join(parts)

    def _print_text(self) -> None:
        rows = self.feed.rows()
        lines = summary_lines(rows, self.feed.last_scalars)
        stamp = time.strftime("%H:%M:%S")
        total = sum(r.examples_per_sec for r in rows)
        print(f"[dashboard {stamp}] {total:,.1f} examples/s in total", flush=True)
        for line in lines:
            print(f"[dashboard {stamp}]   {line}", flush=True)

    @property
    def update_rate(self) -> float:
        """Updates per second sent over the last ~10 s (0 when idle)."""
        now = time.monotonic()
        recent = [t for t in self.update_times if t > now - 10.0]
        if len(recent) < 2:
            return 0.0
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-9)

    # -- display -----------------------------------------------------------------------------------
    @property
    def widget(self):
        """The ipywidgets box: a status line over the Bokeh layout (made on first use)."""
        if self._widget is None:
            import ipywidgets

            from .bokeh_model import LockedBokehModel
            with self._lock:
                self._header = ipywidgets.HTML(value=self._header_html(False))
                model = self._model = LockedBokehModel(self.panels.root, self._lock)
                self._widget = ipywidgets.VBox([self._header, model])
                self._widget.add_class("tfjupyter-dashboard")
                self._widget.add_class(live_class(self.id))
        return self._widget

    def _ipython_display_(self) -> None:
        from IPython import get_ipython
        from IPython.display import display
        shell = get_ipython()
        if _kernel() is None or shell is None:
            self._text = True
            print(f"{self.title}: no widget front end here; printing a summary every "
                  f"{self.text_every:g} s (and when it closes)")
            return
        bokehjs.display_loader()   # before the widget: its view needs window.Bokeh when made
        display(self.widget)
        self._snapshot_handle = display({"text/plain": ""}, raw=True, display_id=True)
        if self._shell is None:
            self._shell = shell
            shell.events.register("post_run_cell", self._after_cell)
        if self._closed:
            self.snapshot()

    def show(self) -> "Dashboard":
        """Displays the dashboard (what IPython does with it as a cell's last expression)."""
        self._ipython_display_()
        return self

    def _after_cell(self, *args) -> None:
        if self._snapshot_handle is not None and self.feed.events != self._snapshot_events:
            self.snapshot()

    # -- the static snapshot -----------------------------------------------------------------------
    def snapshot_html(self) -> str:
        """The static snapshot as an HTML block (summary tables + standalone Bokeh)."""
        with self._lock:
            self._snapshot_events = self.feed.events
            summary = summary_tables(self.feed.rows(), self.feed.last_scalars,
                                     self.feed.device_counts, self.feed.soft_placed)
            return snapshot_html(self.panels.root, self.id, self.title, summary)

    def snapshot(self) -> None:
        """Writes the static snapshot below the widget (the display made with it)."""
        if self._snapshot_handle is None:
            return
        rows = self.feed.rows()
        text = "\n".join([f"{self.title} (snapshot)"] +
                         summary_lines(rows, self.feed.last_scalars))
        self._snapshot_handle.update({"text/html": self.snapshot_html(), "text/plain": text},
                                     raw=True)

    def save(self, path: str) -> str:
        """Writes the dashboard as a standalone HTML page; returns the path. The page loads
        BokehJS from Bokeh's CDN (no Jupyter server is behind a file), or embeds it when
        ``TFJUPYTER_BOKEHJS=inline``."""
        from bokeh.embed import file_html
        from bokeh.resources import CDN, INLINE
        resources = INLINE if bokehjs.mode() == "inline" else CDN
        with self._lock:
            page = file_html(self.panels.root, resources, self.title)
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
        return path

    # -- closing -----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stops following, applies the last events and leaves the static snapshot."""
        if self._closed:
            return
        self._closed = True
        for source in self._sources:
            try:
                source.close()
            except Exception:
                _log.exception("tfjupyter dashboard: closing %r failed", source)
        self._pump.stop()
        self._pump_once(final=True)
        if self._shell is not None:
            try:
                self._shell.events.unregister("post_run_cell", self._after_cell)
            except ValueError:
                pass
        self.snapshot()

    def __enter__(self) -> "Dashboard":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        following = []
        for s in self._sources:
            if isinstance(s, LocalSource):
                following.append(f"session {s.session.id}" if s.session is not None
                                 else "local sessions")
            else:
                following.append(s.label or "a cluster")
        if self._follow_clusters:
            following.append("running clusters")
        state = "closed" if self._closed else "live"
        return f"<Dashboard {state}: {', '.join(following) or 'nothing'}; {self.updates} updates>"

"""``DashboardHook``: a live dashboard for one MonitoredTrainingSession.

    hooks = [tf.train.StopAtStepHook(last_step=2000), DashboardHook(trace_every_n_steps=100)]
    with tf.train.MonitoredTrainingSession(hooks=hooks) as sess: ...

It shows the dashboard when the session is made (``begin``), follows the session it creates,
asks for a FULL_TRACE run every ``trace_every_n_steps`` steps the way TensorFlow's ProfilerHook
does (through the step's RunOptions, so nothing else is traced), and closes the dashboard —
leaving the static snapshot — when the session ends or is closed after an error.
"""
from __future__ import annotations

from typing import Optional

from ..client.config import RunOptions
from ..train.basic_session_run_hooks import SessionRunArgs, SessionRunHook
from .dashboard import Dashboard
from .sources import LocalSource

__all__ = ["DashboardHook"]


class DashboardHook(SessionRunHook):
    """``dashboard``: show this one instead of a new one; ``display``: show it at ``begin``;
    other keyword arguments go to ``Dashboard``."""

    def __init__(self, trace_every_n_steps: int = 50, dashboard: Optional[Dashboard] = None,
                 display: bool = True, **dashboard_kwargs):
        if not (isinstance(trace_every_n_steps, int) and trace_every_n_steps >= 0):
            raise ValueError("DashboardHook: trace_every_n_steps must be an int >= 0, got "
                             f"{trace_every_n_steps!r}")
        self.trace_every_n_steps = trace_every_n_steps
        self.dashboard = dashboard
        self._display = display
        self._kwargs = dashboard_kwargs
        self._steps = 0
        self._source: Optional[LocalSource] = None

    def begin(self) -> None:
        self._steps = 0
        if self.dashboard is None or self.dashboard.closed:
            # Sampled by this hook through RunOptions, not by the process-wide trace requests.
            self.dashboard = Dashboard("local", trace_every=0, **self._kwargs)
            if self._display:
                self.dashboard.show()

    def after_create_session(self, session, coord) -> None:
        for source in self.dashboard._sources:
            if isinstance(source, LocalSource) and source.session is None:
                source.session = session   # from now on, this session only

    def before_run(self, run_context) -> Optional[SessionRunArgs]:
        self._steps += 1
        every = self.trace_every_n_steps
        if every and self._steps % every == 0:
            return SessionRunArgs(None, options=RunOptions(trace_level=RunOptions.FULL_TRACE))
        return None

    def end(self, session) -> None:
        if self.dashboard is not None:
            self.dashboard.close()

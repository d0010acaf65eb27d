"""``%tf_dashboard``: shows a live Dashboard (a thin client of ``Dashboard``).

    %tf_dashboard                       this kernel's sessions and every running cluster
    %tf_dashboard --cluster             the running clusters only
    %tf_dashboard --local               this kernel's sessions only
    %tf_dashboard --trace-every 50 --history 3600 --max-rate 10
    %tf_dashboard close                 closes the last one (leaving its static snapshot)
"""
from __future__ import annotations

import argparse
import shlex
from typing import Optional

from IPython.core.magic import Magics, UsageError, line_magic, magics_class

__all__ = ["DashboardMagics"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"%tf_dashboard: {message}\n{__doc__}")


def _parser() -> _Parser:
    p = _Parser(prog="%tf_dashboard", add_help=False)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--cluster", action="store_true")
    which.add_argument("--local", action="store_true")
    p.add_argument("--trace-every", type=int, default=100)
    p.add_argument("--history", type=int, default=3600)
    p.add_argument("--max-rate", type=float, default=10.0)
    p.add_argument("--title", default="tfjupyter dashboard")
    return p


@magics_class
class DashboardMagics(Magics):
    def __init__(self, shell=None):
        super().__init__(shell=shell)
        self.dashboard = None

    @line_magic
    def tf_dashboard(self, line: str = "") -> Optional[object]:
        """%tf_dashboard [--cluster | --local] [--trace-every N] | close"""
        words = shlex.split(line)
        if words[:1] == ["close"]:
            if self.dashboard is None:
                raise UsageError("%tf_dashboard close: no dashboard is open")
            self.dashboard.close()
            return None
        args = _parser().parse_args(words)
        from .dashboard import Dashboard
        sources = ("clusters",) if args.cluster else ("local",) if args.local else ()
        try:
            dashboard = Dashboard(*sources, trace_every=args.trace_every, history=args.history,
                                  max_rate=args.max_rate, title=args.title)
        except (ValueError, TypeError) as e:
            raise UsageError(f"%tf_dashboard: {e}") from None
        if self.dashboard is not None and not self.dashboard.closed:
            self.dashboard.close()   # one kernel-wide dashboard at a time
        self.dashboard = dashboard
        dashboard.show()
        return None

"""``%tf_dashboard``: shows a live Dashboard (a thin client of ``Dashboard``).

    %tf_dashboard                       this kernel's sessions and every running cluster
    %tf_dashboard --cluster             the running clusters only (--local: the sessions only)
    %tf_dashboard close                 closes the last one (leaving its static snapshot)

``%tf_dashboard?`` lists every option.
"""
from __future__ import annotations

from typing import Optional

from IPython.core.magic import Magics, UsageError, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..magic_args import one_of, parse_line

__all__ = ["DashboardMagics"]


@magics_class
class DashboardMagics(Magics):
    def __init__(self, shell=None):
        super().__init__(shell=shell)
        self.dashboard = None

    @magic_arguments()
    @one_of(argument("--cluster", action="store_true",
                     help="follow the running clusters only (also ones started later)"),
            argument("--local", action="store_true",
                     help="follow this kernel's sessions only"))
    @argument("--trace-every", type=int, default=100, metavar="N",
              help="trace one run in N for the device timeline (0: never; default 100)")
    @argument("--history", type=int, default=3600, metavar="POINTS",
              help="points kept per throughput line, 4 a second (default 3600: 15 minutes)")
    @argument("--max-rate", type=float, default=10.0, metavar="HZ",
              help="most updates a second sent to the browser (at most 10, the default)")
    @argument("--title", default="tfjupyter dashboard", metavar="TEXT",
              help="the dashboard's title")
    @argument("action", nargs="?", choices=["close"], metavar="close",
              help="close the last dashboard, leaving its static snapshot")
    @line_magic
    def tf_dashboard(self, line: str = "") -> Optional[object]:
        """Show a live training dashboard: throughput, summaries, placement, the device
        timeline and the cluster's health.

        Without --cluster or --local it follows this kernel's sessions and every running
        cluster. A new dashboard closes the previous one.
        """
        args = parse_line(self.tf_dashboard, line)
        if args.action == "close":
            if line.split() != ["close"]:
                raise UsageError(f"%tf_dashboard close takes no options; got {line.strip()!r}")
            if self.dashboard is None:
                raise UsageError("%tf_dashboard close: no dashboard is open")
            self.dashboard.close()
            return None
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

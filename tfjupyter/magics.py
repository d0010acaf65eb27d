"""IPython magics for building and inspecting graphs cell by cell (``%load_ext tfjupyter``).

``%%tf_device DEVICE``  runs the cell with every op it creates under ``tf.device(DEVICE)``.
``%%tf_graph NAME``     runs the cell with the named graph (created on first use) as default.
``%tf_graph NAME``      makes the named graph the default from here on (``--reset`` to leave it,
                        ``--drop NAME`` to forget one); ``%tf_graph`` alone lists the graphs.
``%tf_graph show [NAME] [--session VAR]``
                        shows a graph (the named one, else the cell's default graph) with its
                        devices: the lab extension's graph view, static HTML elsewhere
                        (``tfjupyter.lab.GraphView``). ``--session VAR``: as placed by the session
                        bound to VAR (alone: just the ops that session placed, on every task).
``%tf_placement``       where the ops of the last ``Session.run`` ran (``--all``: every decision
                        that session has made).

``%tf_graph?`` (and so on) lists each magic's options.

Named graphs are pushed onto tfjupyter's default-graph stack around each top-level cell (IPython's
pre_run_cell/post_run_cell events), never left pushed between cells, so code that manages graphs
itself (``with tf.Graph().as_default():``, ``tf.InteractiveSession()``) still nests normally.
"""
from __future__ import annotations

import html
import weakref
from typing import Dict, List, Optional, Sequence

from IPython.core.magic import (Magics, UsageError, cell_magic, line_cell_magic, line_magic,
                                magics_class)
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from .framework import ops as _ops
from .framework.device import DeviceSpec
from .framework.ops import Graph
from .magic_args import parse_line, usage
from .tables import html_table, text_table

__all__ = ["TFMagics", "MagicCellError", "PlacementTable", "GraphTable",
           "load_ipython_extension", "unload_ipython_extension"]


class MagicCellError(Exception):
    """The cell run by a cell magic failed; its traceback has already been shown.

    Raised so that the magic's own cell counts as failed too (stopping "Run All"); it displays
    as one line instead of a second traceback.
    """

    def __init__(self, magic: str, error: BaseException):
        super().__init__(f"the cell run by {magic} raised {type(error).__name__}: {error}")
        self.magic = magic
        self.error = error

    def _render_traceback_(self) -> List[str]:
        return [f"({self.magic}: the cell raised {type(self.error).__name__}; see above)"]


# -- display objects -------------------------------------------------------------------------------
class PlacementTable:
    """Placement records (op, type, requested device, assigned device, reason) for display:
    an HTML table in Jupyter, aligned text in a terminal."""

    def __init__(self, records: Sequence, caption: str):
        self.records = list(records)
        self.caption = caption

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def _rows(self) -> List[List[str]]:
        return [[f"{r.op}: ({r.type})", r.requested or "-", r.assigned, r.reason]
                for r in self.records]

    def __repr__(self) -> str:
        header = ["op: (type)", "requested", "assigned", "reason"]
        lines = text_table(header, self._rows())
        return "\n".join([self.caption] + ["  " + line for line in lines])

    def _repr_html_(self) -> str:
        rows = [[r.op, r.type, r.requested, r.assigned, r.reason] for r in self.records]
        return html_table(self.caption, ["op", "type", "requested", "assigned", "reason"], rows)


class GraphTable:
    """The named graphs with their op counts; ``active`` is the one ``%tf_graph NAME`` chose."""

    def __init__(self, graphs: Dict[str, Graph], active: Optional[str]):
        self.counts = {name: len(g.get_operations()) for name, g in graphs.items()}
        self.active = active

    _EMPTY = ("No named graphs yet: %%tf_graph NAME runs a cell in one, "
              "%tf_graph NAME makes one the default for the cells that follow.")

    def _rows(self) -> List[List[str]]:
        return [["*" if name == self.active else "", name, f"{n} op" + ("" if n == 1 else "s")]
                for name, n in self.counts.items()]

    def __repr__(self) -> str:
        if not self.counts:
            return self._EMPTY
        rows = [[f"{mark or ' '} {name}", size] for mark, name, size in self._rows()]
        return "\n".join(["Named graphs (* = default for new cells):"] + text_table((), rows))

    def _repr_html_(self) -> str:
        if not self.counts:
            return f"<p>{html.escape(self._EMPTY)}</p>"
        return html_table("Named graphs (* = default for new cells)", ["", "graph", "ops"],
                          [[mark, name, str(self.counts[name])] for mark, name, _ in self._rows()])


def _graph_label(graphs: Dict[str, Graph], graph: Graph) -> str:
    """"graph 'NAME'" for a named graph, else "the default graph"."""
    name = next((n for n, g in graphs.items() if g is graph), None)
    return f"graph {name!r}" if name is not None else "the default graph"


# -- the default-graph stack -----------------------------------------------------------------------
def _push_graph(graph: Graph) -> int:
    _ops._default_graph_stack.push(graph)
    return len(_ops._default_graph_stack.stack) - 1


def _remove_graph(graph: Graph, index: int) -> None:
    """Removes the entry we pushed at ``index``; if the cell reshuffled the stack, the last entry
    holding ``graph``. Entries pushed above ours (e.g. by an InteractiveSession) stay."""
    stack = _ops._default_graph_stack.stack
    if index < len(stack) and stack[index] is graph:
        del stack[index]
        return
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is graph:
            del stack[i]
            return


def _check_device(magic: str, device: str) -> None:
    try:
        DeviceSpec.from_string(device)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{magic}: {e} The cell was not run.") from None


@magics_class
class TFMagics(Magics):
    """The %tf_* magics; ``graphs`` holds the named graphs of ``%tf_graph``/``%%tf_graph``."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.graphs: Dict[str, Graph] = {}
        self.active: Optional[str] = None      # the %tf_graph NAME graph, if any
        self._cell_info = None                 # ExecutionInfo of the top-level cell now running
        self._pushed: Optional[tuple] = None   # (graph, stack index) pushed for that cell

    # -- state ------------------------------------------------------------------------------------
    def graph(self, name: str) -> Graph:
        """The named graph, created on first use."""
        g = self.graphs.get(name)
        if g is None:
            g = self.graphs[name] = Graph()
        return g

    def reset(self) -> None:
        """Forgets every named graph and leaves %tf_graph mode."""
        self._deactivate()
        self.graphs.clear()

    # -- events: the %tf_graph NAME graph is the default inside each top-level cell ----------------
    def pre_run_cell(self, info) -> None:
        if self._cell_info is not None:
            # Either a cell run from inside a cell (by a cell magic: the outer push holds), or a
            # cell whose post_run_cell never came. Cells a user runs are stored in the history;
            # cells magics run are not, so a stored one means the previous cell has ended.
            if not getattr(info, "store_history", False):
                return
            self._pop_active()
        self._cell_info = info
        if self.active is not None:
            self._push_active()

    def post_run_cell(self, result) -> None:
        # ipykernel reports a cell whose coroutine died with result None: that ends ours too.
        if self._cell_info is None or (result is not None and result.info is not self._cell_info):
            return
        self._cell_info = None
        self._pop_active()

    def _push_active(self) -> None:
        graph = self.graph(self.active)
        self._pushed = (graph, _push_graph(graph))

    def _pop_active(self) -> None:
        if self._pushed is not None:
            _remove_graph(*self._pushed)
            self._pushed = None

    def _activate(self, name: str) -> None:
        self._pop_active()
        self.active = name
        self.graph(name)
        if self._cell_info is not None:  # takes effect for the rest of this cell too
            self._push_active()

    def _deactivate(self) -> None:
        self._pop_active()
        self.active = None

    # -- running a cell ----------------------------------------------------------------------------
    def _run(self, magic: str, cell: str) -> None:
        result = self.shell.run_cell(cell)
        if result is not None and not result.success:
            error = result.error_before_exec or result.error_in_exec
            raise MagicCellError(magic, error) from error

    # -- magics ------------------------------------------------------------------------------------
    @magic_arguments("%tf_device")
    @argument("device", metavar="DEVICE",
              help="a device name, e.g. /cpu:0 or /job:worker/task:1/device:GPU:0")
    @cell_magic
    def tf_device(self, line: str, cell: str) -> None:
        """Run the cell with the ops it creates placed under tf.device(DEVICE).

        The device merges with enclosing scopes field by field (the cell's own tf.device scopes
        win), in the default graph (the %tf_graph/%%tf_graph one if active). A malformed device
        is reported and the cell is not run.
        """
        device = parse_line(self.tf_device, line).device
        _check_device("%%tf_device", device)
        with _ops.get_default_graph().device(device):
            self._run(f"%%tf_device {device}", cell)

    @magic_arguments()
    @kwds(usage="%(prog)s [NAME | --reset | --drop NAME [NAME ...] | show [NAME] "
                "[--session VAR]]\n  %%%%tf_graph NAME")   # argparse formats it: %% is %
    @argument("words", nargs="*", metavar="NAME",
              help="a graph's name (created on first use); 'show [NAME]': show that graph, "
                   "else the cell's default graph")
    @argument("--reset", action="store_true", help="back to tfjupyter's own default graph")
    @argument("--drop", nargs="+", metavar="NAME", help="forget these named graphs")
    @argument("--session", metavar="VAR",
              help="with show: as placed by the session (or MonitoredSession) bound to VAR")
    @line_cell_magic
    def tf_graph(self, line: str, cell: Optional[str] = None) -> Optional[GraphTable]:
        """Build graphs by name, cell by cell, and show them with their devices.

        %%tf_graph NAME: run the cell with the named graph as the default graph.
        %tf_graph NAME: make it the default for this and the following cells.
        %tf_graph --reset: back to tfjupyter's own default graph.
        %tf_graph --drop NAME [NAME ...]: forget named graphs.
        %tf_graph: list the named graphs and their op counts.
        %tf_graph show [NAME] [--session VAR]: show a graph and where its ops were placed.

        ``show`` shows the named graph, or without NAME the cell's default graph, as placed by the
        session that ran last if that session runs it; ``--session VAR`` takes the placement of
        the session (or MonitoredSession) bound to VAR instead, and without NAME shows just the
        ops that session placed (in a cluster, over every task, with its _Send/_Recv edges
        between tasks). In the line form "show" is this command, not a graph name
        (``%%tf_graph show`` still names a graph).
        """
        if cell is not None:
            args = parse_line(self.tf_graph, line, "%%tf_graph")
            if len(args.words) != 1 or args.reset or args.drop or args.session is not None:
                raise UsageError(f"%%tf_graph takes one graph name, e.g. '%%tf_graph model'; "
                                 f"got {line.strip()!r}")
            graph = self.graph(args.words[0])
            index = _push_graph(graph)
            try:
                self._run(f"%%tf_graph {args.words[0]}", cell)
            finally:
                _remove_graph(graph, index)
            return None
        args = parse_line(self.tf_graph, line)
        words = args.words
        if words[:1] == ["show"] and not (args.reset or args.drop):
            return self._show(words[1:], args.session)
        if args.session is not None:
            raise UsageError("%tf_graph: --session goes with show, e.g. "
                             f"'%tf_graph show --session sess'; got {line.strip()!r}")
        if len(words) + args.reset + bool(args.drop) > 1:
            raise UsageError(f"%tf_graph takes one of NAME, --reset, --drop NAME... and show; "
                             f"got {line.strip()!r}\n{usage(self.tf_graph)}")
        if args.reset:
            self._deactivate()
        elif args.drop:
            self._drop(args.drop)
        elif words:
            self._activate(words[0])
        else:
            return GraphTable(self.graphs, self.active)
        return None

    def _drop(self, names: List[str]) -> None:
        unknown = [n for n in names if n not in self.graphs]
        if unknown:
            raise UsageError(f"%tf_graph --drop: no graph named {', '.join(map(repr, unknown))}"
                             f"; named graphs: {', '.join(self.graphs) or '(none)'}")
        for name in names:
            if name == self.active:
                self._deactivate()
            del self.graphs[name]

    def _show(self, names: List[str], var: Optional[str]):
        """%tf_graph show [NAME] [--session VAR] -> a tfjupyter.lab.GraphView."""
        if len(names) > 1:
            raise UsageError(f"%tf_graph show takes at most one graph name, got "
                             f"{' '.join(names)}\n{usage(self.tf_graph)}")
        if names and names[0] not in self.graphs:
            raise UsageError(f"%tf_graph show: no graph named {names[0]!r}; named graphs: "
                             f"{', '.join(self.graphs) or '(none)'}")
        session = self._session_named(var) if var is not None else None
        from .lab.graph import GraphView
        if not names and session is not None:
            return GraphView(session, title=f"{var} (session {session.id})")
        graph = self.graphs[names[0]] if names else _ops.get_default_graph()
        if session is not None and session.graph is not graph:
            raise UsageError(f"%tf_graph show: {var} runs another graph than "
                             f"{_graph_label(self.graphs, graph)}")
        return GraphView(graph, session=session, title=_graph_label(self.graphs, graph))

    def _session_named(self, var: str):
        from .lab.graph import as_session
        if var not in self.shell.user_ns:
            raise UsageError(f"%tf_graph show --session: no variable named {var!r}")
        value = self.shell.user_ns[var]
        session = as_session(value)
        if session is None:
            raise UsageError(f"%tf_graph show --session: {var} is a {type(value).__name__}, "
                             "not a tf.Session (or an open MonitoredSession)")
        return session

    @magic_arguments()
    @argument("--all", action="store_true",
              help="every placement decision of that session, not just its last run's")
    @line_magic
    def tf_placement(self, line: str = "") -> Optional[PlacementTable]:
        """Where each op of the last Session.run ran, and why: requested and assigned device
        and the reason (a table)."""
        args = parse_line(self.tf_placement, line)
        from .client import session as session_module
        last = getattr(session_module, "last_run_session", None)
        sess = last() if callable(last) else None
        if sess is None:
            print("No session has run yet.")
            return None
        if args.all:
            records = sess.placement
            caption = f"Placement of every op session {sess.id} has run ({len(records)} ops):"
        else:
            records = sess.last_placement
            caption = (f"Placement for the last Session.run (session {sess.id}, "
                       f"{len(records)} ops):")
        return PlacementTable(records, caption)


# -- extension entry points ------------------------------------------------------------------------
_loaded: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def load_ipython_extension(ipython) -> TFMagics:
    """Registers the magics and the cell events on ``ipython`` (once per shell)."""
    magics = _loaded.get(ipython)
    if magics is None:
        magics = _loaded[ipython] = TFMagics(shell=ipython)
        ipython.register_magics(magics)
        from .cluster.magics import ClusterMagics
        from .widgets.magics import DashboardMagics
        from .experiments.magics import ExperimentMagics
        ipython.register_magics(ClusterMagics(shell=ipython))
        ipython.register_magics(DashboardMagics(shell=ipython))
        ipython.register_magics(ExperimentMagics(shell=ipython))
        from .experiments.cells import watch_cells
        watch_cells(ipython)   # an experiment started in a later cell knows that cell's code
        ipython.events.register("pre_run_cell", magics.pre_run_cell)
        ipython.events.register("post_run_cell", magics.post_run_cell)
    return magics


def unload_ipython_extension(ipython) -> None:
    """Removes the magics and events; a named graph pushed for the running cell is popped."""
    magics = _loaded.pop(ipython, None)
    if magics is None:
        return
    ipython.events.unregister("pre_run_cell", magics.pre_run_cell)
    ipython.events.unregister("post_run_cell", magics.post_run_cell)
    magics._deactivate()
    table = ipython.magics_manager.magics
    registry = ipython.magics_manager.registry
    for instance in (magics, registry.get("ClusterMagics"), registry.get("DashboardMagics"),
                     registry.get("ExperimentMagics")):
        if instance is None:
            continue
        for kind, names in instance.magics.items():
            for name in names:
                table[kind].pop(name, None)
        registry.pop(type(instance).__name__, None)

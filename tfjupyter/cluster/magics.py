"""``%tf_cluster``, ``%%tf_worker`` and ``%%tf_ps``: thin clients of ``Cluster``.

    %tf_cluster start --ps 1 --workers 2 [--engines local|ssh|slurm|...] [--hosts a,b]
                      [--gpus-per-worker N] [--profile P] [--controller-ip IP] [--location HOST]
    %tf_cluster attach --profile default --ps 0 --workers 1,2,3
    %tf_cluster [status] | wait [--timeout S] | interrupt | stop
    %%tf_worker [--tasks 0,2] [--no-block] [--timeout S]     the cell runs on the worker tasks
    %%tf_ps     [--tasks 0]   [--no-block] [--timeout S]     the cell runs on the ps tasks
"""
from __future__ import annotations

import argparse
import shlex
from typing import List, Optional

from IPython.core.magic import Magics, UsageError, cell_magic, line_magic, magics_class

from .cluster import Cluster
from .launch import ClusterError

__all__ = ["ClusterMagics"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")


def _indices(text: str) -> List[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated indices, got {text!r}")


def _start_parser() -> _Parser:
    p = _Parser(prog="%tf_cluster start", add_help=False)
    p.add_argument("--ps", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--engines", default="local", help="an ipyparallel launcher name")
    p.add_argument("--hosts", default="", help="comma-separated hosts, for --engines ssh")
    p.add_argument("--gpus-per-worker", type=int, default=0)
    p.add_argument("--profile", default=None)
    p.add_argument("--controller-ip", default=None)
    p.add_argument("--location", default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    return p


def _attach_parser() -> _Parser:
    p = _Parser(prog="%tf_cluster attach", add_help=False)
    p.add_argument("--profile", default="default")
    p.add_argument("--cluster-id", default="")
    p.add_argument("--ps", type=_indices, default=[0])
    p.add_argument("--workers", type=_indices, required=True)
    return p


def _cell_parser(magic: str) -> _Parser:
    p = _Parser(prog=magic, add_help=False)
    p.add_argument("--tasks", type=_indices, default=None)
    p.add_argument("--no-block", action="store_true")
    p.add_argument("--timeout", type=float, default=None)
    return p


@magics_class
class ClusterMagics(Magics):
    """The cluster magics; ``cluster`` is the kernel's cluster (one at a time)."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.cluster: Optional[Cluster] = None

    def _split(self, magic: str, line: str) -> List[str]:
        try:
            return shlex.split(line)
        except ValueError as e:
            raise UsageError(f"{magic}: {e}") from None

    def _require(self) -> Cluster:
        if self.cluster is None:
            raise UsageError("no cluster: start one with '%tf_cluster start --ps 1 --workers 2' "
                             "or attach with '%tf_cluster attach --profile default --ps 0 "
                             "--workers 1,2'")
        return self.cluster

    @line_magic
    def tf_cluster(self, line: str = ""):
        """%tf_cluster start|attach|status|wait|interrupt|stop (see the module's help)."""
        args = self._split("%tf_cluster", line)
        command, rest = (args[0], args[1:]) if args else ("status", [])
        try:
            if command == "start":
                return self._start(_start_parser().parse_args(rest))
            if command == "attach":
                return self._attach(_attach_parser().parse_args(rest))
            if command == "status" and not rest:
                return self._require().status()
            if command == "wait":
                p = _Parser(prog="%tf_cluster wait", add_help=False)
                p.add_argument("--timeout", type=float, default=None)
                self._require().wait(p.parse_args(rest).timeout)
                return None
            if command == "interrupt" and not rest:
                self._require().interrupt()
                print("Sent KeyboardInterrupt to every task's engine.")
                return None
            if command == "stop" and not rest:
                cluster, self.cluster = self._require(), None
                cluster.stop()
                print("Cluster stopped: its engines, controller and servers have exited.")
                return None
        except ClusterError as e:
            raise UsageError(str(e)) from None
        raise UsageError(f"usage: %tf_cluster [start ... | attach ... | status | wait | "
                         f"interrupt | stop]; got {line.strip()!r}")

    def _start(self, a) -> object:
        if self.cluster is not None:
            raise UsageError("a cluster is already running in this kernel; "
                             "'%tf_cluster stop' it first")
        cluster = Cluster(ps=a.ps, workers=a.workers, engines=a.engines,
                          hosts=[h for h in a.hosts.split(",") if h], profile=a.profile,
                          gpus_per_worker=a.gpus_per_worker, controller_ip=a.controller_ip,
                          controller_location=a.location, start_timeout=a.timeout)
        print(f"Starting {a.ps} ps and {a.workers} worker task(s) on {a.engines!r} engines...",
              flush=True)
        self.cluster = cluster.start()
        print(f"Cluster up in {cluster.start_time:.1f} s: {cluster.spec.as_dict()}")
        return cluster.status()

    def _attach(self, a) -> object:
        if self.cluster is not None:
            raise UsageError("a cluster is already running in this kernel; "
                             "'%tf_cluster stop' it first")
        self.cluster = Cluster.attach(profile=a.profile, ps=a.ps, workers=a.workers,
                                      cluster_id=a.cluster_id)
        return self.cluster.status()

    def _run_cell(self, magic: str, job: str, line: str, cell: str):
        a = _cell_parser(magic).parse_args(self._split(magic, line))
        cluster = self._require()
        try:
            run = cluster.run(cell, job=job, tasks=a.tasks, block=not a.no_block,
                              timeout=a.timeout)
        except ClusterError as e:
            raise UsageError(f"{magic}: {e}") from None
        if a.no_block:
            print(f"Running on {', '.join(run.task_names)}; '%tf_cluster wait' shows the rest of "
                  "the output and any errors.")
        return None

    @cell_magic
    def tf_worker(self, line: str, cell: str):
        """%%tf_worker [--tasks 0,1] [--no-block] [--timeout S]: run the cell on worker tasks.

        The cell sees tf, cluster, server, job_name, task_index, is_chief and num_workers.
        """
        return self._run_cell("%%tf_worker", "worker", line, cell)

    @cell_magic
    def tf_ps(self, line: str, cell: str):
        """%%tf_ps [--tasks 0] [--no-block] [--timeout S]: run the cell on the ps tasks."""
        return self._run_cell("%%tf_ps", "ps", line, cell)

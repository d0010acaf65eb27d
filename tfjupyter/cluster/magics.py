"""``%tf_cluster``, ``%%tf_worker`` and ``%%tf_ps``: thin clients of ``Cluster``.

    %tf_cluster start --ps 1 --workers 2          ps and worker tasks on new engines
    %tf_cluster start ... --restart               dead tasks come back (cluster/recovery.py)
    %tf_cluster scale --workers 4                 add or remove workers while cells run
    %tf_cluster attach --ps 0 --workers 1,2,3     roles for a running ipyparallel cluster's engines
    %tf_cluster start ... --detach                outlives the kernel; later, in any kernel:
    %tf_cluster attach --cluster ID               take it over (ID: printed at start)
    %tf_cluster [status] | wait | why [--task worker:1] | interrupt | stop
    %%tf_worker / %%tf_ps                         the cell runs on the worker / ps tasks

``%tf_cluster?``, ``%%tf_worker?`` and ``%%tf_ps?`` list every option.
"""
from __future__ import annotations

import argparse
from typing import List, Optional

from IPython.core.magic import Magics, UsageError, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..magic_args import parse_line, subcommand
from .cluster import Cluster
from .launch import ClusterError

__all__ = ["ClusterMagics"]


def _indices(text: str) -> List[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated indices, got {text!r}")


_CELL_OPTIONS = (
    argument("--tasks", type=_indices, default=None, metavar="INDICES",
             help="comma-separated indices of the job's tasks to run on (default: all)"),
    argument("--no-block", action="store_true",
             help="return at once; '%%tf_cluster wait' shows the output and errors"),
    argument("--timeout", type=float, default=None, metavar="S",
             help="give up waiting after S seconds (the cell keeps running there)"))


def _runs_cells(magic_func):
    """Declares the options of %%tf_worker and %%tf_ps."""
    for option in reversed(_CELL_OPTIONS):   # as if written as decorators, top to bottom
        magic_func = option(magic_func)
    return magic_func


@magics_class
class ClusterMagics(Magics):
    """The cluster magics; ``cluster`` is the kernel's cluster (one at a time)."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.cluster: Optional[Cluster] = None

    def _require(self) -> Cluster:
        if self.cluster is None:
            raise UsageError("no cluster: start one with '%tf_cluster start --ps 1 --workers 2' "
                             "or attach with '%tf_cluster attach --profile default --ps 0 "
                             "--workers 1,2'")
        return self.cluster

    @magic_arguments()
    @subcommand(
        "start", "Start ps and worker tasks, each on an ipyparallel engine of its own, and show "
                 "the status table.",
        argument("--ps", type=int, default=1, metavar="N", help="ps tasks (default 1)"),
        argument("--workers", type=int, default=2, metavar="N", help="worker tasks (default 2)"),
        argument("--engines", default="local", metavar="LAUNCHER",
                 help="an ipyparallel engine launcher: local (default), ssh, slurm, mpi, ..."),
        argument("--hosts", default="", metavar="HOSTS",
                 help="comma-separated hosts for the ssh launcher"),
        argument("--gpus-per-worker", type=int, default=0, metavar="N",
                 help="GPUs each worker task sees (default 0)"),
        argument("--profile", default=None, metavar="P", help="the ipyparallel profile"),
        argument("--controller-ip", default=None, metavar="IP",
                 help="the address the controller listens on"),
        argument("--location", default=None, metavar="HOST",
                 help="the controller's address as the engines reach it"),
        argument("--timeout", type=float, default=120.0, metavar="S",
                 help="seconds the tasks have to come up (default 120)"),
        argument("--restart", action="store_true",
                 help="start a task whose engine dies again, on its address: a worker reruns "
                      "its cell, a ps comes back empty (3 restarts per task in 10 min at most)"),
        argument("--detach", action="store_true",
                 help="the cluster outlives this kernel (else it exits when the kernel dies); "
                      "'%%tf_cluster attach --cluster ID' takes it over, from any kernel"))
    @subcommand(
        "scale", "Change the number of worker tasks; new workers run the worker cell that runs.",
        argument("--workers", type=int, required=True, metavar="N",
                 help="the worker count to reach (the highest-numbered ones go first)"))
    @subcommand(
        "attach", "Give the roles to the engines of a running ipyparallel cluster, or take "
                  "over a detached cluster (--cluster).",
        argument("--cluster", default="", metavar="ID",
                 help="the id of a cluster started with --detach (printed at its start)"),
        argument("--workers", type=_indices, default=None, metavar="IDS",
                 help="comma-separated engine ids of the worker tasks"),
        argument("--ps", type=_indices, default=[0], metavar="IDS",
                 help="comma-separated engine ids of the ps tasks (default 0)"),
        argument("--profile", default="default", metavar="P",
                 help="its ipyparallel profile (default: default)"),
        argument("--cluster-id", default="", metavar="ID", help="its ipyparallel cluster id"))
    @subcommand("status", "The status table: each task's engine, host, address, devices, "
                          "state, global step and throughput (the default).")
    @subcommand("wait", "Wait for the cells run with --no-block: show their output and errors.",
                argument("--timeout", type=float, default=None, metavar="S",
                         help="give up after S seconds"))
    @subcommand("why", "Why the steps wait: what each task is blocked in, followed across tasks "
                       "to a root cause and the usual fix.",
                argument("--task", default=None, metavar="TASK",
                         help="ask about one task only, e.g. worker:1"))
    @subcommand("interrupt", "Interrupt the cells running on every task (KeyboardInterrupt).")
    @subcommand("stop", "Stop the cluster: its servers, engines and controller exit.")
    @line_magic
    def tf_cluster(self, line: str = ""):
        """Start, attach to, watch or stop this kernel's TensorFlow cluster."""
        args = parse_line(self.tf_cluster, line)
        command = args.subcommand or "status"
        try:
            if command == "start":
                return self._start(args)
            if command == "attach":
                return self._attach(args)
            if command == "scale":
                cluster = self._require()
                before = sum(t.job == "worker" for t in cluster.tasks)
                cluster.scale(args.workers)
                print(f"Scaled from {before} to {args.workers} worker task(s).")
                return cluster.status()
            if command == "status":
                return self._require().status()
            if command == "wait":
                self._require().wait(args.timeout)
                return None
            if command == "why":
                return self._require().diagnose(args.task)
            if command == "interrupt":
                self._require().interrupt()
                print("Sent KeyboardInterrupt to every task's engine.")
                return None
            if command == "stop":
                cluster, self.cluster = self._require(), None
                cluster.stop()
                print("Cluster stopped: its engines, controller and servers have exited.")
            return None
        except ClusterError as e:
            raise UsageError(str(e)) from None

    def _start(self, a) -> object:
        if self.cluster is not None:
            raise UsageError("a cluster is already running in this kernel; "
                             "'%tf_cluster stop' it first")
        cluster = Cluster(ps=a.ps, workers=a.workers, engines=a.engines,
                          hosts=[h for h in a.hosts.split(",") if h], profile=a.profile,
                          gpus_per_worker=a.gpus_per_worker, controller_ip=a.controller_ip,
                          controller_location=a.location, start_timeout=a.timeout,
                          restart=a.restart, detach=a.detach)
        print(f"Starting {a.ps} ps and {a.workers} worker task(s) on {a.engines!r} engines...",
              flush=True)
        self.cluster = cluster.start()
        print(f"Cluster up in {cluster.start_time:.1f} s: {cluster.spec.as_dict()}")
        if a.detach:
            print(f"Detached: it outlives this kernel. Take it over, from any kernel, with "
                  f"'%tf_cluster attach --cluster {cluster.id}'; '%tf_cluster stop' ends it.")
        return cluster.status()

    def _attach(self, a) -> object:
        if self.cluster is not None:
            raise UsageError("a cluster is already running in this kernel; "
                             "'%tf_cluster stop' it first")
        if a.cluster:
            self.cluster = Cluster.attach(cluster=a.cluster)
        elif a.workers is None:
            raise UsageError("%tf_cluster attach needs --cluster ID (a detached cluster) or "
                             "--workers IDS (engines of a running ipyparallel cluster)")
        else:
            self.cluster = Cluster.attach(profile=a.profile, ps=a.ps, workers=a.workers,
                                          cluster_id=a.cluster_id)
        return self.cluster.status()

    def _run_cell(self, magic_func, job: str, line: str, cell: str):
        magic = "%%" + magic_func.__name__
        a = parse_line(magic_func, line, magic)
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

    @magic_arguments("%tf_worker")
    @_runs_cells
    @cell_magic
    def tf_worker(self, line: str, cell: str):
        """Run the cell on the worker tasks, each line of output prefixed with its task.

        The cell sees tf, cluster, server, job_name, task_index, is_chief and num_workers.
        """
        return self._run_cell(self.tf_worker, "worker", line, cell)

    @magic_arguments("%tf_ps")
    @_runs_cells
    @cell_magic
    def tf_ps(self, line: str, cell: str):
        """Run the cell on the ps tasks (it sees the names %%tf_worker's cells see)."""
        return self._run_cell(self.tf_ps, "ps", line, cell)

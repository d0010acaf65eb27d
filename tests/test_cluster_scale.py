"""``Cluster.scale`` / ``%tf_cluster scale``: workers come and go while a cell trains.

Real ipyparallel engines on loopback: async between-graph training goes on from one worker to
three and back to two; sync replicas refuse; bad input is named.
"""
import contextlib
import os
import re
import sys
import time

import psutil
import pytest

pytest.importorskip("ipyparallel")

from IPython.core.error import UsageError  # noqa: E402

from tfjupyter.cluster import Cluster, ClusterError  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from cluster_util import ipyparallel_children, ipython_shell, isolated_ipython  # noqa: E402
from clusters.cells import train_cell  # noqa: E402
from test_cluster import _accuracies, _assert_no_processes_left  # noqa: E402
from test_cluster_recovery import _wait_until  # noqa: E402

STEPS = 1500


@pytest.fixture(scope="module")
def ipython_dir(tmp_path_factory):
    yield from isolated_ipython(tmp_path_factory.mktemp("scale"))


def _value(reply):
    return reply.execute_result["data"]["text/plain"]


@pytest.mark.timeout(200)
def test_workers_come_and_go_while_async_training_goes_on(ipython_dir, capsys):
    before = ipyparallel_children()
    with Cluster(ps=1, workers=1) as cluster:
        run = cluster.run(train_cell("async", steps=STEPS, pause=0.02), block=False)

        def global_step():
            return cluster.status().row("ps:0").global_step or 0

        _wait_until(lambda: global_step() >= 100, 60, "the first 100 steps")
        cluster.scale(3)
        assert [t.name for t in cluster.tasks] == ["ps:0", "worker:0", "worker:1", "worker:2"]
        addresses = cluster.spec.as_dict()["worker"]
        assert len(set(addresses)) == 3 and [t.address for t in cluster.tasks[1:]] == addresses
        # The new workers run the cell that runs, and step.
        for name in ("worker:1", "worker:2"):
            _wait_until(lambda: cluster.status().row(name).steps_per_sec > 0, 60,
                        f"{name} to step")
        assert sorted(run.pending_tasks()) == ["worker:0", "worker:1", "worker:2"]
        at_scale_down = global_step()
        assert at_scale_down < STEPS - 300, "training ended before the scale-down"
        leaving = cluster.task("worker:2")
        cluster.scale(2)
        assert [t.name for t in cluster.tasks] == ["ps:0", "worker:0", "worker:1"]
        assert cluster.spec.as_dict()["worker"] == addresses[:2]
        assert not psutil.pid_exists(leaving.pid) or \
            psutil.Process(leaving.pid).status() == psutil.STATUS_ZOMBIE
        # Training goes on with the two left, to the end, and the removed one is no failure.
        _wait_until(lambda: global_step() > at_scale_down + 100, 60, "steps after the scale-down")
        results = run.result(120)
        assert sorted(results) == ["worker:0", "worker:1"]
        out = capsys.readouterr().out
        assert "[worker:1] added by a scale to 3 workers; running the cell" in out
        assert "[worker:2] removed by a scale to 2 workers" in out
        accuracies = _accuracies(out)
        assert set(accuracies) == {"worker:0", "worker:1"}, out
        assert min(accuracies.values()) >= 0.9, out
        _wait_until(lambda: global_step() >= STEPS, 5, f"the ps's global step {STEPS}")
        # Every task's names and server follow the new cluster (the ps's too).
        names = cluster.run("(num_workers, len(cluster.as_dict()['worker']), "
                            "len(server.server_def.cluster.as_dict()['worker']))", job=None)
        assert {task: _value(reply) for task, reply in names.items()} == {
            "ps:0": "(2, 2, 2)", "worker:0": "(2, 2, 2)", "worker:1": "(2, 2, 2)"}
        pids = [t.pid for t in cluster.tasks]
        controller = cluster.ipyparallel_cluster.controller.pid

        # Sync replicas aggregate a fixed count of gradients: scaling them is refused.
        run = cluster.run(train_cell("sync", steps=STEPS + 300), block=False)  # the ps goes on
        _wait_until(lambda: global_step() >= STEPS + 20, 60, "sync steps")
        with pytest.raises(ClusterError, match=r"SyncReplicasOptimizer, whose "
                                               r"replicas_to_aggregate and token queue are fixed"):
            cluster.scale(3)
        assert len(cluster.tasks) == 3
        cluster.interrupt()
        assert run.stream(60)
    _assert_no_processes_left(pids + [leaving.pid, controller], before)


def test_bad_scales_are_named(ipython_dir):
    cluster = Cluster(ps=1, workers=1)
    for count in (0, -1, 1.5, True):
        with pytest.raises(ClusterError, match=rf"scale: a cluster needs at least one worker "
                                               rf"task \(got --workers {re.escape(repr(count))}\)"):
            cluster.scale(count)
    with pytest.raises(ClusterError, match="not started"):
        cluster.scale(2)
    with contextlib.contextmanager(ipython_shell)(ipython_dir / "ipython") as shell:
        with pytest.raises(UsageError, match=r"no cluster: start one"):
            shell.run_line_magic("tf_cluster", "scale --workers 2")
        with pytest.raises(UsageError, match=r"argument --workers: expected one argument"):
            shell.run_line_magic("tf_cluster", "scale --workers")

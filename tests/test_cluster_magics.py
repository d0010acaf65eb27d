"""%tf_cluster, %%tf_worker and %%tf_ps in a real IPython shell, on a real local cluster."""
import os
import re
import time

import psutil
import pytest

pytest.importorskip("ipyparallel")

from IPython.core.error import UsageError  # noqa: E402
from cluster_util import ipython_shell  # noqa: E402

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def ipython_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("magics") / "ipython"


@pytest.fixture(scope="module")
def ip(ipython_dir):
    """One shell, and one cluster, for the whole module; ipyparallel's profile in a temp dir."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IPYTHONDIR", str(ipython_dir))
        mp.setenv("TFJUPYTER_TOKEN_DIR", str(ipython_dir.parent / "tokens"))
        yield from ipython_shell(ipython_dir)


def _ipyparallel_processes(ipython_dir) -> list:
    """Controllers, engines and nannies started with our IPYTHONDIR (not this process)."""
    found = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            if p.pid != os.getpid() and "ipyparallel" in " ".join(p.info["cmdline"] or ()) \
                    and (p.info["environ"] or {}).get("IPYTHONDIR") == str(ipython_dir):
                found.append(p)
        except psutil.Error:
            pass
    return found


def _magics(ip):
    return ip.magics_manager.registry["ClusterMagics"]


def _error(result):
    return result.error_before_exec or result.error_in_exec


def test_usage_errors_before_a_cluster(ip):
    for line, message in [
        ("start --workers 0", r"at least one worker task \(got --workers 0\)"),
        ("start --engines nosuchlauncher",
         r"unknown engine launcher 'nosuchlauncher'; ipyparallel's launchers are: "
         r".*\blocal\b.*\bslurm\b.*\bssh\b"),
        ("start --workers two", r"invalid int value: 'two'"),
        ("bogus", r"usage: %tf_cluster"),
        ("status", r"no cluster: start one with '%tf_cluster start"),
    ]:
        with pytest.raises(UsageError, match=message):
            ip.run_line_magic("tf_cluster", line)
    result = ip.run_cell("%%tf_worker\nprint(1)")
    assert isinstance(_error(result), UsageError) and "no cluster" in str(_error(result))


def test_magics_drive_a_cluster(ip, ipython_dir, capsys):
    status = ip.run_line_magic("tf_cluster", "start --ps 1 --workers 2")
    cluster = _magics(ip).cluster
    out = capsys.readouterr().out
    assert re.search(r"Cluster up in [0-9.]+ s: \{'ps': \['127\.0\.0\.1:\d+'\]", out), out
    assert [r.task for r in status.rows] == ["ps:0", "worker:0", "worker:1"]
    assert {r.state for r in status.rows} == {"idle"}, str(status)
    with pytest.raises(UsageError, match="already running"):
        ip.run_line_magic("tf_cluster", "start")

    assert ip.run_cell("%%tf_worker\nprint(task_index, is_chief, num_workers)").success
    out = capsys.readouterr().out
    assert "[worker:0] 0 True 2" in out and "[worker:1] 1 False 2" in out
    assert ip.run_cell("%%tf_ps\nprint(job_name, task_index, len(cluster.job_tasks('worker')))"
                       ).success
    assert "[ps:0] ps 0 2" in capsys.readouterr().out

    result = ip.run_cell("%%tf_worker --tasks 5\npass")
    assert isinstance(_error(result), UsageError)
    assert "--tasks 5: job 'worker' has tasks 0, 1" in str(_error(result))

    result = ip.run_cell("%%tf_worker\nif task_index == 1:\n    raise KeyError('no such batch')")
    error = _error(result)
    assert type(error).__name__ == "TaskError" and set(error.failures) == {"worker:1"}
    assert "[worker:1] KeyError: 'no such batch'" in str(error)
    shown = capsys.readouterr().out  # IPython shows the remote traceback, not the driver's
    assert "---- [worker:1] remote traceback ----" in shown and "no such batch" in shown, shown
    assert "[worker:0]" not in shown, shown

    result = ip.run_cell("%%tf_worker\nfor i in range(3)\n    print(i)")
    assert isinstance(_error(result), SyntaxError)
    assert "does not compile" in str(_error(result)) and "(line 1)" in str(_error(result))
    capsys.readouterr()

    assert ip.run_cell("%%tf_worker --no-block\nimport time\nprint('napping', flush=True)\n"
                       "time.sleep(60)").success
    assert "Running on worker:0, worker:1" in capsys.readouterr().out
    assert ip.run_cell("1 + 1").success  # the notebook stays usable meanwhile
    time.sleep(1.0)
    assert {r.task: r.state for r in cluster.status().rows}["worker:1"] == "running"
    ip.run_line_magic("tf_cluster", "interrupt")
    t0 = time.monotonic()
    result = ip.run_cell("%tf_cluster wait --timeout 30")
    assert time.monotonic() - t0 < 25
    error = _error(result)
    assert type(error).__name__ == "TaskError"
    assert set(error.failures) == {"worker:0", "worker:1"}
    assert "KeyboardInterrupt" in str(error)
    assert "[worker:1] napping" in capsys.readouterr().out

    pids = [t.pid for t in cluster.tasks]
    running = {p.pid for p in _ipyparallel_processes(ipython_dir)}
    assert set(pids) < running and len(running) >= 4, running  # the engines and a controller
    ip.run_line_magic("tf_cluster", "stop")
    assert _magics(ip).cluster is None
    deadline = time.monotonic() + 15
    while any(psutil.pid_exists(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if psutil.pid_exists(p)]
    while _ipyparallel_processes(ipython_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ipyparallel_processes(ipython_dir), "the controller and nannies exit too"
    with pytest.raises(UsageError, match="no cluster"):
        ip.run_line_magic("tf_cluster", "wait")

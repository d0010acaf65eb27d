"""Clusters on real ipyparallel engines, driven through the Python API (tfjupyter.cluster).

Every cluster here is started by the test with ipyparallel's own launchers, on loopback, with its
profile in a temp IPYTHONDIR, and stopped by it; each test checks that nothing outlives it.
"""
import os
import re
import signal
import sys
import time

import psutil
import pytest

pytest.importorskip("ipyparallel")

from tfjupyter.cluster import Cluster, ClusterError, TaskError  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from cluster_util import ipyparallel_children  # noqa: E402
from clusters.cells import train_cell  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def _assert_no_processes_left(pids, before=(), timeout=15.0):
    """``pids`` have exited and no ipyparallel process but those in ``before`` remains."""
    before = {p.pid for p in before}
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if psutil.pid_exists(p)
                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        new = [p for p in ipyparallel_children() if p.pid not in before]
        if not alive and not new:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left running: pids {alive}, processes {new}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def ipython_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("ipython")
        mp.setenv("IPYTHONDIR", str(path))
        mp.setenv("TFJUPYTER_TOKEN_DIR", str(path / "tokens"))
        yield path


@pytest.fixture(scope="module")
def cluster(ipython_dir):
    c = Cluster(ps=1, workers=2, start_timeout=120)
    try:
        yield c.start()
    finally:
        c.stop()


def _accuracies(text):
    return {task: float(value) for task, value in
            re.findall(r"^\[(worker:\d)\] accuracy ([0-9.]+)$", text, re.M)}


def test_tasks_and_spec_come_from_the_ports_the_servers_hold(cluster):
    spec = cluster.spec.as_dict()
    assert sorted(spec) == ["ps", "worker"] and len(spec["worker"]) == 2
    assert [t.name for t in cluster.tasks] == ["ps:0", "worker:0", "worker:1"]
    assert len({t.pid for t in cluster.tasks}) == 3 and os.getpid() not in {t.pid for t in cluster.tasks}
    for task in cluster.tasks:
        assert spec[task.job][task.index] == task.address
        assert task.address.startswith("127.0.0.1:")
        assert task.devices[0]["name"] == f"/job:{task.job}/replica:0/task:{task.index}/device:CPU:0"
    names = cluster.run("(job_name, task_index, is_chief, num_workers, server.target, "
                        "cluster.as_dict())", job=None)
    got = {task: re.sub(r"\s+", " ", reply.execute_result["data"]["text/plain"])
           for task, reply in names.items()}
    assert "'worker', 0, True, 2" in got["worker:0"] and "'worker', 1, False, 2" in got["worker:1"]
    assert "'ps', 0, False, 2" in got["ps:0"]
    # Each engine's server holds the address the spec gives it.
    for task in cluster.tasks:
        assert f"'grpc://{task.address}'" in got[task.name]


def test_async_between_graph_training(cluster, capsys):
    cluster.run(train_cell("async"))
    out = capsys.readouterr().out
    assert re.search(r"^\[worker:[01]\] step [123]00$", out, re.M), out
    accuracies = _accuracies(out)
    assert set(accuracies) == {"worker:0", "worker:1"}, out
    assert min(accuracies.values()) >= 0.9, out


def test_sync_training_with_a_backup_worker_streams_telemetry(cluster, capsys):
    watcher = cluster.watch(interval=0.2)
    try:
        run = cluster.run(train_cell("sync", backups=1), block=False)
        assert cluster.busy_tasks() == {"worker:0", "worker:1"}
        steps, summaries, seen_running = [], [], False
        deadline = time.monotonic() + 120
        while not run.done() and time.monotonic() < deadline:
            for event in watcher.events(timeout=0.5):
                if event.kind == "step" and event.data.get("examples"):
                    steps.append(event)
                elif event.kind == "summary":
                    summaries.append(event)
            if not seen_running and steps:
                rows = {r.task: r for r in cluster.status().rows}
                seen_running = any(r.state == "running" for r in rows.values())
        cluster.wait(60)
    finally:
        watcher.close()
    out = capsys.readouterr().out
    accuracies = _accuracies(out)
    assert set(accuracies) == {"worker:0", "worker:1"} and min(accuracies.values()) >= 0.9, out
    # Telemetry came over the gRPC plane while the cell was still running.
    assert steps, "no step telemetry received while training"
    # Examples are the batch's leading dimension: 50 per training step, the test set's 359.
    assert {e.data["examples"] for e in steps} <= {50, 359}
    assert sum(e.data["examples"] == 50 for e in steps) >= 100
    assert {e.task for e in steps} <= {t.device_name for t in cluster.tasks}
    assert any(e.data.get("tag", "").endswith("loss") for e in summaries)
    assert seen_running
    deadline = time.monotonic() + 5  # the status watcher polls every 0.5 s
    while True:
        table = cluster.status()
        rows = {r.task: r for r in table.rows}
        if rows["ps:0"].global_step >= 300 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert set(rows) == {"ps:0", "worker:0", "worker:1"}
    assert all(r.state in ("idle", "running") for r in rows.values()), str(table)
    assert rows["ps:0"].global_step >= 300, str(table)  # the ps holds the global step
    text = str(table)
    for task in cluster.tasks:
        assert task.name in text and task.address in text and str(task.pid) in text
    assert "<table>" in table._repr_html_()


def test_errors_name_the_failing_task(cluster):
    with pytest.raises(TaskError) as info:
        cluster.run("if task_index == 1:\n    raise ValueError('bad batch on ' + job_name)")
    assert set(info.value.failures) == {"worker:1"}
    assert "[worker:1] ValueError: bad batch on worker" in str(info.value)
    with pytest.raises(SyntaxError, match=r"does not compile: .*line 2"):
        cluster.run("x = 1\ndef f(:\n    pass")
    with pytest.raises(ClusterError, match=r"--tasks 7: job 'worker' has tasks 0, 1"):
        cluster.run("pass", tasks=[7])
    with pytest.raises(ClusterError, match=r"no job 'chief'"):
        cluster.run("pass", job="chief")


def test_no_block_runs_report_errors_at_wait_and_can_be_interrupted(cluster, capsys):
    run = cluster.run("import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                      tasks=[0], block=False)
    time.sleep(1.0)
    assert run.pending_tasks() == ["worker:0"]
    t0 = time.monotonic()
    cluster.interrupt()
    with pytest.raises(TaskError, match=r"\[worker:0\] KeyboardInterrupt"):
        cluster.wait(30)
    assert time.monotonic() - t0 < 20
    assert "[worker:0] sleeping" in capsys.readouterr().out
    assert cluster.run("1 + 1", tasks=[0])  # the engine is usable again


def test_wait_leaves_out_the_runs_whose_result_was_taken(cluster):
    taken = cluster.run("raise ValueError('seen already')", tasks=[1], block=False)
    with pytest.raises(TaskError, match="seen already"):
        taken.result(30)
    cluster.run(abs, -3, job="ps", block=False)
    assert cluster.wait(30) == {"ps:0": 3}   # and no second report of worker:1's error
    assert cluster.wait(30) == {} and cluster.busy_tasks() == set()


def test_stop_leaves_no_process(cluster):
    pids = [t.pid for t in cluster.tasks]
    controller = cluster.ipyparallel_cluster.controller.pid
    cluster.stop()
    _assert_no_processes_left(pids + [controller])
    with pytest.raises(ClusterError, match="stopped"):
        cluster.run("pass")


def test_a_killed_worker_shows_dead_and_sync_training_goes_on(ipython_dir, capsys):
    before = ipyparallel_children()
    with Cluster(ps=1, workers=3) as cluster:
        pids = [t.pid for t in cluster.tasks]
        victim = cluster.task("worker:2")
        run = cluster.run(train_cell("sync", backups=1, steps=400), block=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill it mid-training, once it has stepped
            if (cluster.status().row("worker:2").global_step or 0) >= 50:
                break
            time.sleep(0.2)
        os.kill(victim.pid, signal.SIGKILL)
        killed = time.monotonic()
        while cluster.status().row("worker:2").state != "dead":
            assert time.monotonic() - killed < 10, str(cluster.status())
            time.sleep(0.2)
        assert cluster.status().row("worker:0").state != "dead"
        with pytest.raises(TaskError) as info:
            run.result(120)
        assert set(info.value.failures) == {"worker:2"}, str(info.value)
        accuracies = _accuracies(capsys.readouterr().out)
        assert accuracies["worker:0"] >= 0.9 and accuracies["worker:1"] >= 0.9, accuracies
        controller = cluster.ipyparallel_cluster.controller.pid
    _assert_no_processes_left(pids + [controller], before)


# -- bad input ----------------------------------------------------------------------------------
def test_bad_arguments_are_named():
    with pytest.raises(ClusterError, match=r"unknown engine launcher 'nosuch'.*local.*slurm.*ssh"):
        Cluster(engines="nosuch")
    with pytest.raises(ClusterError, match=r"at least one worker task \(got --workers 0\)"):
        Cluster(workers=0)
    with pytest.raises(ClusterError, match=r"--ps must be a non-negative integer"):
        Cluster(ps=-1)
    with pytest.raises(ClusterError, match=r"ssh launcher needs --hosts"):
        Cluster(engines="ssh")
    with pytest.raises(ClusterError, match=r"--hosts is for the ssh launcher"):
        Cluster(engines="local", hosts=["gpu1"])


def test_engine_without_tfjupyter_is_named(ipython_dir, tmp_path, monkeypatch):
    # A Python where `import tfjupyter` fails, as on a host where it was never installed (the
    # engines start in the driver's directory, which must not be the source checkout here).
    monkeypatch.chdir(tmp_path)
    shadow = tmp_path / "site" / "tfjupyter"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'tfjupyter'\", name='tfjupyter')\n")
    cluster = Cluster(ps=0, workers=1, environment={"PYTHONPATH": str(shadow.parent)})
    before = ipyparallel_children()
    with pytest.raises(ClusterError, match=r"(?s)tfjupyter cannot be imported on the engines.*"
                                           r"install it in the Python.*No module named"):
        cluster.start()
    _assert_no_processes_left([], before)


def test_failing_launcher_reports_its_own_error_in_bounded_time(ipython_dir):
    cluster = Cluster(ps=0, workers=1, engines="ssh", hosts=["127.0.0.1:1"],
                      launcher_config={"ssh_args": ["-o", "BatchMode=yes",
                                                    "-o", "ConnectTimeout=5"]})
    before = ipyparallel_children()
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=r"ipyparallel's 'ssh' launcher failed to start "
                                           r"/job:worker/task:0"):
        cluster.start()
    assert time.monotonic() - t0 < 30
    _assert_no_processes_left([], before)


def test_attach_gives_roles_to_a_running_ipyparallel_cluster(ipython_dir):
    import ipyparallel
    ipp = ipyparallel.Cluster(n=2, controller_ip="127.0.0.1", cluster_id="attachme",
                              log_level=40)
    before = ipyparallel_children()
    client = ipp.start_and_connect_sync()
    try:
        client.wait_for_engines(2, timeout=60)
        engine_pids = client[:].apply_sync(os.getpid)
        cluster = Cluster.attach(profile="default", cluster_id="attachme", ps=[0], workers=[1])
        assert [t.name for t in cluster.tasks] == ["ps:0", "worker:0"]
        assert cluster.run("import numpy as np\n"
                           "with tf.device('/job:ps/task:0'):\n"
                           "    v = tf.Variable(np.float32(2.0))\n"
                           "with tf.Session(server.target) as s:\n"
                           "    s.run(v.initializer); value = s.run(v * 3.0)\n"
                           "print('value', value)") is not None
        cluster.stop()
        # Attached engines stay: they belong to whoever started them.
        assert client[:].apply_sync(os.getpid) == engine_pids
    finally:
        client.close()
        ipp.stop_cluster_sync()
    _assert_no_processes_left(engine_pids, before)


def test_engines_on_a_remote_host_started_by_the_ssh_launcher(ipython_dir, tmp_path, capsys):
    from sshd import SshServer
    with SshServer(tmp_path / "sshd") as host:
        config = {"ssh_args": host.ssh_args, "scp_args": host.scp_args,
                  "remote_python": sys.executable,
                  "remote_profile_dir": str(tmp_path / "remote_profile")}
        with Cluster(ps=1, workers=1, engines="ssh", hosts=[host.location],
                     launcher_config=config) as cluster:
            # Every engine was started through the ssh server (its sessions are tagged).
            assert {t.pid for t in cluster.tasks} <= set(host.session_pids())
            assert all(t.address.startswith("127.0.0.1:") for t in cluster.tasks)
            cluster.run("import numpy as np\n"
                        "with tf.device('/job:ps/task:0'):\n"
                        "    v = tf.Variable(np.arange(4, dtype=np.float32))\n"
                        "with tf.device('/job:worker/task:0'):\n"
                        "    total = tf.reduce_sum(v * 2.0)\n"
                        "with tf.Session(server.target) as sess:\n"
                        "    sess.run(v.initializer)\n"
                        "    print('total', sess.run(total))")
            assert "[worker:0] total 12.0" in capsys.readouterr().out
            pids = [t.pid for t in cluster.tasks]
        deadline = time.monotonic() + 15
        while any(psutil.pid_exists(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in pids if psutil.pid_exists(p)]


def test_launch_plan_deals_hosts_and_gpus():
    from tfjupyter.cluster.launch import plan_tasks
    plans = plan_tasks(1, 4, "ssh", ["me@gpu1", "gpu2:2222"], gpus_per_worker=2)
    got = [(p.name, p.host, p.advertise_host, p.bind_host, p.environment["CUDA_VISIBLE_DEVICES"],
            p.environment["TFJUPYTER_TASK"]) for p in plans]
    assert got == [
        ("ps:0", "me@gpu1", "gpu1", "0.0.0.0", "", "ps:0"),
        ("worker:0", "me@gpu1", "gpu1", "0.0.0.0", "0,1", "worker:0"),
        ("worker:1", "gpu2:2222", "gpu2", "0.0.0.0", "0,1", "worker:1"),
        ("worker:2", "me@gpu1", "gpu1", "0.0.0.0", "2,3", "worker:2"),
        ("worker:3", "gpu2:2222", "gpu2", "0.0.0.0", "2,3", "worker:3"),
    ]
    local = plan_tasks(1, 2, "local")
    assert {(p.advertise_host, p.bind_host) for p in local} == {("127.0.0.1", "127.0.0.1")}
    assert all("CUDA_VISIBLE_DEVICES" not in p.environment for p in local)
    batch = plan_tasks(0, 2, "slurm")  # the engine names its own host when it binds
    assert {(p.advertise_host, p.bind_host) for p in batch} == {(None, "0.0.0.0")}


def test_output_comes_in_whole_labelled_lines_and_keeps_blank_ones():
    import io
    from tfjupyter.cluster.runs import Run

    class Result:  # what Run reads of ipyparallel's AsyncResult: per-engine metadata
        metadata = [{"stdout": "", "stderr": ""}, {"stdout": "", "stderr": ""}]

    run, out = Run("cell", Result(), ["worker:0", "worker:1"]), io.StringIO()
    Result.metadata[0]["stdout"] = "a\n\nhalf"
    Result.metadata[1]["stderr"] = "oops\n"
    run.flush_output(out)
    assert out.getvalue() == "[worker:0] a\n[worker:0] \n[worker:1] oops\n"
    Result.metadata[0]["stdout"] += " line\nend"
    run.flush_output(out, final=True)
    assert out.getvalue().splitlines()[3:] == ["[worker:0] half line", "[worker:0] end"]

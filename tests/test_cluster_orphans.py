"""A cluster never outlives its kernel by accident, and stopping one ends every process.

Real ipyparallel engines; the "kernel" that owns a cluster is a real Python process started
here and really SIGKILLed (no atexit, no goodbye). Every process a test sees is killed at its
end, whatever happened.
"""
import contextlib
import io
import json
import logging
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

pytest.importorskip("ipyparallel")

from tfjupyter.cluster import Cluster, ClusterError, lease, processes, registry  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from cluster_util import ipyparallel_children  # noqa: E402

ORPHAN_BOUND_S = 30.0   # what the issue asks: every process gone this long after the owner

# A worker blocked in a step: a dequeue from a queue on the ps that nobody fills, no timeout.
BLOCKED_CELL = textwrap.dedent("""\
    with tf.device('/job:ps/task:0'):
        q = tf.FIFOQueue(10, tf.float32, shapes=[], shared_name='never_filled')
    with tf.Session(server.target) as sess:
        print('dequeueing', flush=True)
        sess.run(q.dequeue())
""")
# The same, in a cell that also ignores the interrupt: only SIGTERM or SIGKILL end it.
DEAF_BLOCKED_CELL = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + BLOCKED_CELL

# The owner: starts a cluster (argv: "detach" or not, the cell, Cluster's keyword arguments as
# JSON), blocks worker:0 in a dequeue, says which processes it has, waits.
OWNER = textwrap.dedent("""\
    import io, json, sys, time, psutil
    from tfjupyter.cluster import Cluster
    cluster = Cluster(ps=1, workers=2, detach=sys.argv[1] == "detach",
                      **json.loads(sys.argv[3])).start()
    run, out = cluster.run(sys.argv[2], tasks=[0], block=False), io.StringIO()
    deadline = time.monotonic() + 60
    while "dequeueing" not in out.getvalue():
        if run.done() or time.monotonic() > deadline:
            run.result(1)   # raises the cell's error, if it failed
            sys.exit(f"worker:0 never reached its dequeue: {out.getvalue()}")
        run.flush_output(out)
        time.sleep(0.1)
    ours = [p.pid for p in psutil.Process().children(recursive=True)
            if "ipyparallel" in " ".join(p.cmdline())]
    print(json.dumps({"id": cluster.id, "pids": ours, "tasks": [t.pid for t in cluster.tasks],
                      "ports": [int(t.address.rpartition(":")[2]) for t in cluster.tasks]}),
          flush=True)
    time.sleep(600)
""")

# A new "kernel": takes over a detached cluster, runs a cell on it, stops it.
REATTACH = textwrap.dedent("""\
    import sys
    from tfjupyter.cluster import Cluster
    cluster = Cluster.attach(cluster=sys.argv[1])
    print("tasks", [t.name for t in cluster.tasks], flush=True)
    cluster.run("import numpy as np\\n"
                "with tf.device('/job:ps/task:0'):\\n"
                "    v = tf.Variable(np.float32(7.0), name='reattached_v')\\n"
                "with tf.Session(server.target) as s:\\n"
                "    s.run(v.initializer)\\n"
                "    print('value', s.run(v * 6.0))", tasks=[1])
    cluster.stop()
    print("stopped", flush=True)
""")


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """A private IPYTHONDIR, token folder and cluster registry, for this module and the owner
    processes it starts."""
    path = tmp_path_factory.mktemp("orphans")
    env = {"IPYTHONDIR": str(path / "ipython"), "TFJUPYTER_TOKEN_DIR": str(path / "tokens"),
           "TFJUPYTER_REGISTRY_DIR": str(path / "registry")}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        yield dict(os.environ, PYTHONUNBUFFERED="1", **env)


@pytest.fixture
def seen():
    """Processes the test saw (owners, controllers, engines, nannies): all killed at its end."""
    found = []
    yield found
    for process in list(found):   # an owner that failed early still has its children
        try:
            found.extend(process.children(recursive=True))
        except psutil.Error:
            pass
    for process in found:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(found, timeout=10)


def _start_owner(env, seen, mode, cluster_kwargs=None, cell=BLOCKED_CELL):
    """The owner's process, what it said, and its cluster's processes here (local engines)."""
    owner = subprocess.Popen([sys.executable, "-c", OWNER, mode, cell,
                              json.dumps(cluster_kwargs or {})], env=env,
                             stdout=subprocess.PIPE, text=True)
    seen.append(psutil.Process(owner.pid))
    line = owner.stdout.readline()
    assert line, f"the owner exited ({owner.wait(10)}) before its cluster was up"
    info = json.loads(line)
    processes_ = [psutil.Process(pid) for pid in info["pids"]]
    seen.extend(processes_)
    return owner, info, processes_


def _engines_and_nannies(processes_):
    return sum(p.cmdline()[1:3] in (["-m", "ipyparallel.engine"],
                                    ["-m", "ipyparallel.engine.nanny"]) for p in processes_)


def _alive(processes_):
    alive = []
    for p in processes_:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            pass
    return alive


def _sigkill(owner):
    owner.send_signal(signal.SIGKILL)
    owner.wait(10)
    owner.stdout.close()
    return time.monotonic()


def _port_is_free(port):
    """Nothing listens on it (connections that ended may linger in TIME_WAIT, as they do)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.mark.timeout(150)
@pytest.mark.parametrize("engines", ["local", "ssh"])
def test_a_killed_owner_leaves_no_process_and_no_port(environment, seen, engines, tmp_path,
                                                      capsys):
    with contextlib.ExitStack() as stack:
        if engines == "local":
            owner, info, cluster_processes = _start_owner(environment, seen, "watch")
        else:   # engines on a "remote host", which cannot watch the owner's pid
            from sshd import SshServer
            host = stack.enter_context(SshServer(tmp_path / "sshd"))   # skips without sshd
            config = {"ssh_args": host.ssh_args, "scp_args": host.scp_args,
                      "remote_python": sys.executable,
                      "remote_profile_dir": str(tmp_path / "remote_profile")}
            owner, info, cluster_processes = _start_owner(
                environment, seen, "watch",
                {"engines": "ssh", "hosts": [host.location], "launcher_config": config})
            remote = [psutil.Process(pid) for pid in host.session_pids()
                      if "ipyparallel" in " ".join(psutil.Process(pid).cmdline())]
            seen.extend(remote)
            assert set(info["tasks"]) <= {p.pid for p in remote}, (info, remote)
            cluster_processes = cluster_processes + remote
        _expect_gone_after_owner(owner, info, cluster_processes, engines, capsys)


def _expect_gone_after_owner(owner, info, cluster_processes, engines, capsys):
    # 1 ps + 2 workers: the controller and its schedulers, 3 engines and their 3 nannies.
    assert _engines_and_nannies(cluster_processes) == 6, cluster_processes
    killed = _sigkill(owner)
    while _alive(cluster_processes):
        elapsed = time.monotonic() - killed
        assert elapsed < ORPHAN_BOUND_S, (
            f"{elapsed:.0f} s after its owner was SIGKILLed, still running: "
            f"{[' '.join(p.cmdline()[-3:]) for p in _alive(cluster_processes)]}")
        time.sleep(0.2)
    gone_after = time.monotonic() - killed
    # The tasks' ports are free again (worker:0's engine was blocked in a step).
    assert all(_port_is_free(port) for port in info["ports"]), info["ports"]
    with capsys.disabled():
        print(f"\n[orphans] {engines} engines: {len(cluster_processes)} processes gone "
              f"{gone_after:.1f} s after their owner was SIGKILLed")


@pytest.mark.timeout(180)
def test_a_detached_cluster_outlives_its_owner_and_can_be_taken_over(environment, seen):
    owner, info, cluster_processes = _start_owner(environment, seen, "detach")
    entry_path = os.path.join(environment["TFJUPYTER_REGISTRY_DIR"], f"{info['id']}.json")
    # Its entry holds the token: this user's alone.
    assert stat.S_IMODE(os.stat(entry_path).st_mode) == 0o600
    assert registry.read(info["id"])["detached"] is True
    _sigkill(owner)
    # As long as the processes of a cluster that is not detached take to go, at most (the test
    # above): the owner watch's poll, the controller's shutdown (< 1 s), the lease, a probe.
    time.sleep(lease.OWNER_POLL_S + 1 + lease.LEASE_S + lease.PROBE_S)
    assert len(_alive(cluster_processes)) == len(cluster_processes)

    # A new process takes it over (worker:0 still blocked in its dequeue), runs a cell, stops.
    t0 = time.monotonic()
    result = subprocess.run([sys.executable, "-c", REATTACH, info["id"]], env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "tasks ['ps:0', 'worker:0', 'worker:1']" in result.stdout, result.stdout
    assert "[worker:1] value 42.0" in result.stdout, result.stdout
    assert "stopped" in result.stdout
    assert time.monotonic() - t0 < 60
    assert not _alive(cluster_processes), _alive(cluster_processes)
    assert not os.path.exists(entry_path)
    assert all(_port_is_free(port) for port in info["ports"]), info["ports"]


@pytest.mark.timeout(150)
@pytest.mark.parametrize("stopped_by", ["kernel", "panel"])
def test_stop_ends_engines_blocked_in_a_step(environment, stopped_by, capsys):
    from tfjupyter.lab.server import ClusterMonitor

    before = ipyparallel_children()
    cluster = Cluster(ps=1, workers=2).start()
    try:
        everything = [p for p in ipyparallel_children() if p not in before]
        # worker:0 waits in a dequeue; worker:1 too, and ignores the interrupt.
        runs = [cluster.run(DEAF_BLOCKED_CELL, tasks=[1], block=False)]
        runs.append(cluster.run(BLOCKED_CELL, tasks=[0], block=False))
        out, deadline = io.StringIO(), time.monotonic() + 30
        while out.getvalue().count("dequeueing") < 2:
            assert time.monotonic() < deadline, f"the workers never reached their dequeue: {out}"
            for run in runs:
                run.flush_output(out)
            time.sleep(0.1)
        assert cluster.busy_tasks() == {"worker:0", "worker:1"}
        # Only a detached cluster can be taken over.
        with pytest.raises(ClusterError, match="only a running cluster started with --detach"):
            Cluster.attach(cluster=cluster.id)
        t0 = time.monotonic()
        if stopped_by == "kernel":
            cluster.stop()
        else:
            monitor = ClusterMonitor(logging.getLogger("test"))
            try:
                monitor.stop(cluster.id)
            finally:
                monitor.close()
        _, alive = psutil.wait_procs(everything, timeout=max(
            0.1, processes.STOP_BOUND_S - (time.monotonic() - t0)))
        took = time.monotonic() - t0
        assert not alive, f"left running {took:.1f} s after stop: {alive}"
        assert took < processes.STOP_BOUND_S
        with capsys.disabled():
            print(f"\n[orphans] stop from the {stopped_by}: {len(everything)} processes gone "
                  f"in {took:.1f} s, two workers blocked in a dequeue")
    finally:
        cluster.stop()
    if stopped_by == "panel":
        with pytest.raises(ClusterError, match="stopped from JupyterLab's cluster panel"):
            cluster.run("pass")


def test_the_owner_is_its_pid_and_start_time():
    me = lease.owner_identity()
    assert lease.owner_alive(me)
    pid, _, started = me.partition(":")
    assert not lease.owner_alive(f"{pid}:{float(started) - 5.0!r}")   # its pid, reused
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    gone = lease.owner_identity(child.pid)
    child.wait(30)
    assert not lease.owner_alive(gone)


def test_attaching_an_unknown_or_attached_cluster_is_a_clear_error(environment):
    with pytest.raises(ClusterError, match=r"no cluster 'feedbeef' in the tfjupyter cluster "
                                           r"registry"):
        Cluster.attach(cluster="feedbeef")
    with pytest.raises(ClusterError, match=r"not a cluster id"):
        Cluster.attach(cluster="../etc")


@pytest.mark.timeout(120)
def test_magics_start_detached_and_attach_by_id(environment, capsys):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config,
                                      ipython_dir=environment["IPYTHONDIR"])
    before = ipyparallel_children()
    try:
        shell.run_line_magic("load_ext", "tfjupyter")
        magics = shell.magics_manager.registry["ClusterMagics"]
        with pytest.raises(UsageError, match=r"attach needs --cluster ID .* or --workers IDS"):
            shell.run_line_magic("tf_cluster", "attach")
        shell.run_line_magic("tf_cluster", "start --ps 0 --workers 1 --detach")
        started = magics.cluster
        cluster_id = re.search(r"%tf_cluster attach --cluster (\w+)",
                               capsys.readouterr().out).group(1)
        assert cluster_id == started.id and started.detach
        magics.cluster = None   # as a new kernel: nothing but the id
        shell.run_line_magic("tf_cluster", f"attach --cluster {cluster_id}")
        assert magics.cluster is not started and magics.cluster.token == started.token
        shell.run_cell("%%tf_worker\nprint('task', job_name, task_index, is_chief)")
        assert "[worker:0] task worker 0 True" in capsys.readouterr().out
        shell.run_line_magic("tf_cluster", "stop")
        assert not _alive([p for p in ipyparallel_children() if p not in before])
        assert registry.read(cluster_id) is None
    finally:
        for cluster in (magics.cluster, locals().get("started")):
            if cluster is not None:
                cluster.stop()
        shell.run_line_magic("unload_ext", "tfjupyter")
        InteractiveShell.clear_instance()

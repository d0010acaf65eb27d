"""The sshd fixture (tests/sshd.py): plain ssh, and ipyparallel engines launched through it."""
import os
import sys
import time

import pytest

from sshd import SshServer, ssh_server  # noqa: F401  (ssh_server is a fixture)


def _wait_gone(pids, timeout):
    import psutil

    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive
                 if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if alive:
            time.sleep(0.1)
    return alive


def test_ssh_echo(ssh_server):
    r = ssh_server.ssh("echo", "ok", timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    # the session runs with the marker env and finds this interpreter
    r = ssh_server.ssh(
        "sh", "-c",
        f"'echo $TFJUPYTER_SSHD_TAG; {sys.executable} -c \"import ipyparallel\" && echo py'",
        timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [ssh_server.tag, "py"]


def test_close_stops_sshd_and_sessions(tmp_path):
    srv = SshServer(tmp_path).start()
    try:
        r = srv.ssh("sh", "-c", "'nohup sleep 120 >/dev/null 2>&1 </dev/null & echo $!'",
                    timeout=20)
        assert r.returncode == 0, r.stderr
        bg = int(r.stdout.strip())
        assert bg in srv.session_pids()
        sshd_pid = srv.proc.pid
    finally:
        t = time.monotonic()
        srv.close()
        assert time.monotonic() - t < 10
    assert not srv.running
    assert _wait_gone([sshd_pid, bg], 5) == []
    assert bg in srv.killed_leftovers
    assert srv.session_pids() == []


def test_ipyparallel_ssh_engine(ssh_server, tmp_path):
    ipp = pytest.importorskip("ipyparallel")

    srv = ssh_server
    cluster = ipp.Cluster(
        n=0,
        engines="ssh",
        controller_ip="127.0.0.1",
        profile_dir=str(tmp_path / "profile"),
        cluster_id="sshd-fixture",
        log_level=10,
        shutdown_atexit=True,
    )
    client = None
    engine_pid = None
    try:
        cluster.start_controller_sync()
        cluster.start_engines_sync(
            1,
            engine_set_id="w",
            engines={srv.location: 1},
            ssh_args=srv.ssh_args,
            scp_args=srv.scp_args,
            remote_python=sys.executable,
            remote_profile_dir=str(tmp_path / "remote_profile"),
            environment={"TFJUPYTER_ROLE": "worker:0"},
        )
        (launcher,) = cluster.engines["w"].launchers.values()
        client = cluster.connect_client_sync()
        client.wait_for_engines(1, timeout=60)
        # not apply(f): a function from this module is unpickled on the engine by
        # importing its module, and tests/ is not on the engine's sys.path
        view = client[0]
        view.execute("import os; _info = (os.getpid(), os.getppid(), dict(os.environ))",
                     block=True)
        pid, ppid, env = view.pull("_info", block=True)
        engine_pid = pid

        assert env["TFJUPYTER_ROLE"] == "worker:0"
        # started through our sshd: carries its session marker; not our child
        assert env.get("TFJUPYTER_SSHD_TAG") == srv.tag
        assert pid != os.getpid() and ppid != os.getpid()
        assert pid == launcher.pid
        assert pid in srv.session_pids()
    finally:
        if client is not None:
            client.close()
        t = time.monotonic()
        cluster.stop_cluster_sync()
        stop_s = time.monotonic() - t
    # ipyparallel's own stop (ssh kill) must have ended the engine
    assert _wait_gone([engine_pid], 10) == [], f"engine {engine_pid} survived stop_cluster"
    assert stop_s < 30
    sshd_pid = srv.proc.pid
    srv.close()
    assert not srv.running and _wait_gone([sshd_pid], 5) == []
    assert srv.killed_leftovers == []

"""The sshd fixture (tests/sshd.py). Engines launched through it: tests/test_cluster.py."""
import sys
import time

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

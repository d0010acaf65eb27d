"""Helpers for multi-process cluster tests: loopback ports, task processes, bounded waits."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional

import pytest

from tfjupyter.runtime import events

TOKEN = "test-token-" + "0" * 20


@pytest.fixture
def token_env(monkeypatch, tmp_path):
    """The cluster token and a private token folder, for this test's tasks and clients."""
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", TOKEN)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    return {"TFJUPYTER_CLUSTER_TOKEN": TOKEN, "TFJUPYTER_TOKEN_DIR": str(tmp_path / "tokens")}


def free_ports(n: int) -> List[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def loopback_cluster(**jobs: int) -> Dict[str, List[str]]:
    """{"ps": 1, "worker": 2} -> addresses on free loopback ports."""
    ports = iter(free_ports(sum(jobs.values())))
    return {job: [f"localhost:{next(ports)}" for _ in range(n)] for job, n in jobs.items()}


class TaskProcesses:
    """Task processes (`tfjupyter server`), each killed at close() — bounded, always."""

    def __init__(self, env: Optional[dict] = None):
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.procs: Dict[tuple, subprocess.Popen] = {}

    def start(self, cluster: dict, job: str, task: int, wait: bool = True,
              timeout: float = 30) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tfjupyter.cli", "server", "--cluster", json.dumps(cluster),
             "--job", job, "--task", str(task), "--max-seconds", "600"],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs[(job, task)] = proc
        if wait:
            deadline = time.monotonic() + timeout
            line = proc.stdout.readline()
            if not line.startswith("serving") or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"task {job}:{task} did not start: {line!r} "
                                   f"{proc.stderr.read() if proc.poll() is not None else ''}")
        return proc

    def kill(self, job: str, task: int) -> None:
        proc = self.procs[(job, task)]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
        self.procs.clear()


@pytest.fixture
def listen():
    """listen(kind) -> a list that receives that kind's events until the test ends."""
    subscribed = []

    def start(kind):
        got = []
        events.subscribe(kind, got.append)
        subscribed.append((kind, got.append))
        return got
    yield start
    for kind, fn in subscribed:
        events.unsubscribe(kind, fn)


def two_phase_cluster(cleanup, jobs=("ps", "worker")):
    """In-process servers on ports the OS picks, each learning the whole cluster before serving
    (``cleanup(server)`` stops them when the test ends)."""
    import tfjupyter as tf
    servers = {}
    for job in jobs:
        server = tf.train.Server({job: ["localhost:0"]}, job_name=job, task_index=0,
                                 start=False, token=TOKEN)
        cleanup(server)
        servers[job] = server
    spec = tf.train.ClusterSpec({job: [f"localhost:{s.port}"] for job, s in servers.items()})
    for server in servers.values():
        server.complete_cluster(spec)
        server.start()
    return spec, servers


def ipyparallel_children():
    """ipyparallel processes (controller, engines, nannies) started from this process."""
    import psutil
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "ipyparallel" in " ".join(p.cmdline()):
                found.append(p)
        except psutil.Error:
            pass
    return found


def isolated_ipython(path):
    """IPYTHONDIR (ipyparallel's profiles) and the token folder under ``path``, for the
    duration of the generator: a module fixture's body (``yield from isolated_ipython(p)``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IPYTHONDIR", str(path / "ipython"))
        mp.setenv("TFJUPYTER_TOKEN_DIR", str(path / "tokens"))
        yield path


def ipython_shell(ipython_dir):
    """A real IPython shell with tfjupyter's magics, history in memory, for the duration of the
    generator; a cluster its magics left running is stopped at the end."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config, ipython_dir=str(ipython_dir))
    shell.run_line_magic("load_ext", "tfjupyter")
    try:
        yield shell
    finally:
        magics = shell.magics_manager.registry["ClusterMagics"]
        if magics.cluster is not None:
            magics.cluster.stop()
        shell.run_line_magic("unload_ext", "tfjupyter")
        InteractiveShell.clear_instance()

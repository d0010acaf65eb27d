"""A throwaway OpenSSH server on 127.0.0.1 that stands in for a "remote host".

``SshServer(tmp_dir)`` makes an ed25519 host key and client key with ssh-keygen,
writes its own ``sshd_config`` and runs ``/usr/sbin/sshd -D -e -f CONFIG`` on a
free loopback port. Logins go as the current user (root in CI) with the test's
key only. ``close()`` stops sshd and every process started through it, and
always returns within a few seconds.

    with SshServer(tmp_path) as srv:
        subprocess.run(["ssh", *srv.ssh_args, srv.destination, "echo", "ok"])
        srv.ssh("echo", "ok")              # the same thing, returns CompletedProcess

The pytest fixture ``ssh_server`` (function scope) yields a started server. To use
it, import it into the test module: ``from sshd import ssh_server  # noqa: F401``.
For a server per module or session, write a fixture that does
``with SshServer(tmp_path_factory.mktemp("sshd")) as srv: yield srv``.
If ``/usr/sbin/sshd``, ``ssh-keygen``, ``ssh`` or ``scp`` is missing, the fixture
skips, naming them, or fails where ``TFJUPYTER_TEST_SYSTEM_PROGRAMS=require`` (as
``.ci/run`` sets it): see system_programs.py.

How a remote session sees the environment
-----------------------------------------
sshd gives a session a fresh environment: HOME and the cwd are the user's home
directory, and PATH is sshd's built-in default, so a pyenv or virtualenv
interpreter is *not* on it. The config uses ``SetEnv`` (which needs no
``PermitUserEnvironment``) to give every session:

* ``PATH`` = ``dirname(sys.executable)`` + the test process's own PATH, so the
  remote ``python3`` is the test interpreter;
* ``TFJUPYTER_SSHD_TAG=<random>`` (``SshServer.tag``), a marker that is inherited
  by everything started through this server. ``session_pids()`` finds those
  processes through /proc, and ``close()`` kills them (and also the server's
  per-connection sshd children);
* ``SHLVL=1``, so that bash (root's login shell) does not source ``~/.bashrc`` for
  ssh commands (Debian's bash does that otherwise). On a dev box with pyenv this
  reorders PATH and costs about 0.2 s per connection;
* whatever you pass as ``SshServer(tmp, env={...})`` (PYTHONPATH, for example).

Even so, pass ``remote_python=sys.executable`` (an absolute path) to ipyparallel.

Recipe: ipyparallel 9.x engines through this server
---------------------------------------------------
Plain constructor kwargs work. ``Cluster.start_engines(**kw)`` passes ``kw`` to
the ``SSHEngineSetLauncher`` constructor, and all of these are traits of that
class. You do not need a traitlets Config, but
``c.SSHEngineSetLauncher.<trait> = ...`` would work as well::

    cluster = ipyparallel.Cluster(
        n=0, engines="ssh", controller_ip="127.0.0.1",
        profile_dir=str(tmp / "profile"),      # local profile dir (controller, client)
        cluster_id="x", log_level=10,
    )
    cluster.start_controller_sync()
    cluster.start_engines_sync(
        1,                                     # upper bound; `engines` says where
        engine_set_id="w",
        engines={srv.location: 1},             # {"root@127.0.0.1:PORT": n}
        ssh_args=srv.ssh_args,                 # fresh list on each access
        scp_args=srv.scp_args,
        remote_python=sys.executable,
        remote_profile_dir=str(tmp / "remote_profile"),   # its own dir, see below
        environment={"TFJUPYTER_ROLE": "worker:0"},       # pass a fresh dict
    )
    client = cluster.connect_client_sync()
    client.wait_for_engines(1, timeout=60)
    ...
    client.close(); cluster.stop_cluster_sync()

The same kwargs go to ``ipyparallel.Cluster(..., config=c)`` with
``c.SSHEngineSetLauncher.ssh_args = srv.ssh_args`` and so on. Gotchas:

* Give ``remote_profile_dir`` a directory of its own. By default it is
  ``profile_dir`` with ``$HOME/`` stripped, which on the same machine is the local
  profile dir, so the launcher would scp the controller's connection files onto
  themselves (that happens to work with OpenSSH 9.2, but it is a trap). With a
  separate dir the "remote host" gets its own ``security/*.json`` copies, and the
  engine logs go to ``<remote_profile_dir>/log/ipengine-*.out``. These logs are
  fetched and deleted when the engines stop.
* ``start_engines`` stores ``IPP_CONNECTION_INFO`` in the ``environment`` dict
  that you pass, so do not reuse one dict for several engine sets.
* ipyparallel runs ``ssh ARGS user@host PYTHON`` with a Python script on stdin
  (``ShellCommandSend``, not ``sh -``). The script ``Popen``s the engine with
  ``start_new_session=True``, and the ssh session then ends. So the engine is
  reparented to pid 1 (or the nearest subreaper): its parent chain does *not*
  contain sshd, and it is not a descendant of the test process. It does carry
  ``TFJUPYTER_SSHD_TAG`` and the exported ``environment`` (plus IPP_* variables).
* Stopping: ``stop_engines``/``stop_cluster_sync`` ssh a SIGTERM (then waits up
  to ``stop_seconds_until_kill``, 5 s, and then sends SIGKILL), fetch the
  remote log with scp and delete it. Every step is a new ssh connection
  (~0.1-0.3 s each). Starting one engine takes roughly 10 ssh/scp round trips
  plus an ``ipython profile create`` on the remote side.
* The launcher's watcher thread polls each remote pid over ssh every 60 s
  (``poll_seconds``), so it notices a dead engine late.
* The ``-p PORT`` in ``ssh_args`` is enough. ``engines={"user@127.0.0.1:PORT": n}``
  also works (the launcher then adds ``-p``/``-P`` itself if they are missing).
* Engines do not have ``tests/`` on sys.path. ``view.apply(f)`` with a function
  defined in a test module (even a nested one) fails with
  ``ModuleNotFoundError: No module named 'test_...'``, because ipyparallel loads the
  function's globals by importing its module. Use functions from an importable
  package (tfjupyter) or ``view.execute(code)`` + ``view.pull(name)``.
* Cost on the 2-core dev box: every remote step runs ``python`` and imports
  ipyparallel (~1.2 s), so ``start_engines_sync`` takes about 7 s per engine, and
  registration then takes another 5-8 s. Stopping takes 6-12 s. The whole
  1-engine test runs in about 20 s.
* scp needs the ``sftp`` subsystem (OpenSSH >= 9 scp speaks SFTP). This config
  sets ``Subsystem sftp internal-sftp``.
* ``ssh_args`` include ``-F /dev/null``, so neither ~/.ssh/config nor
  /etc/ssh/ssh_config can interfere.
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from system_programs import missing_executables, need

SSHD = "/usr/sbin/sshd"
TAG_VAR = "TFJUPYTER_SSHD_TAG"


def missing_tools() -> List[str]:
    return missing_executables([SSHD, "ssh-keygen", "ssh", "scp"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quote_conf(value: str) -> str:
    if '"' in value or "\n" in value:
        raise ValueError(f"cannot put {value!r} in sshd_config")
    return f'"{value}"' if any(c.isspace() for c in value) else value


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _environ(pid: int) -> Optional[List[bytes]]:
    """pid's environment; None while it reads empty in a user process (mid-execve)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
        if raw:
            return raw.split(b"\0")
        with open(f"/proc/{pid}/stat") as f:
            flags = int(f.read().rsplit(")", 1)[1].split()[6])
    except (OSError, IndexError, ValueError):
        return []
    is_kernel_thread = flags & 0x00200000  # PF_KTHREAD
    return [] if is_kernel_thread or not _pid_alive(pid) else None


def _children(pid: int) -> List[int]:
    """Descendants of pid (from /proc; those that exist right now)."""
    parent_of: Dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent_of[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent_of.items() if pp == p]
        out += kids
        todo += kids
    return out


class SshServer:
    """OpenSSH server on 127.0.0.1:port with keys of its own. Use it as a context manager."""

    host = "127.0.0.1"

    def __init__(self, tmp_dir, env: Optional[Dict[str, str]] = None,
                 start_timeout: float = 10.0, multiplex: bool = True):
        """tmp_dir: where keys, config and log go. env: extra session variables.
        multiplex: share one ssh connection between calls (ControlMaster)."""
        self.dir = Path(tmp_dir).absolute() / f"sshd-{secrets.token_hex(3)}"
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.tag = secrets.token_hex(8)
        self.extra_env = dict(env or {})
        self.start_timeout = start_timeout
        self.port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None
        self.host_key = self.dir / "ssh_host_ed25519_key"
        self.client_key = self.dir / "id_ed25519"
        self.config = self.dir / "sshd_config"
        self.log_file = self.dir / "sshd.log"
        self.killed_leftovers: List[int] = []  # pids that close() had to kill
        # ssh connection sharing (ControlMaster): ~0.05 s instead of ~0.3 s per ssh call.
        # Unix socket paths are short (~100 bytes), so the sockets live in /tmp.
        self.multiplex = multiplex
        self.control_dir: Optional[str] = None  # made by start()

    # -- client side ---------------------------------------------------------------
    def _common_args(self) -> List[str]:
        return [
            "-F", "/dev/null",
            "-i", str(self.client_key),
            "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null",
            "-o", "BatchMode=yes",
            "-o", "LogLevel=ERROR",
            "-o", "IdentitiesOnly=yes",
            "-o", "ConnectTimeout=10",
        ] + ([
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self.control_dir}/%C",
            "-o", "ControlPersist=60",
        ] if self.control_dir else [])

    @property
    def ssh_args(self) -> List[str]:
        """Arguments for ssh (before the destination). A fresh list each time."""
        return ["-p", str(self.port)] + self._common_args()

    @property
    def scp_args(self) -> List[str]:
        return ["-P", str(self.port)] + self._common_args()

    @property
    def location(self) -> str:
        """``user@127.0.0.1:PORT``: a key for ipyparallel's ``engines`` dict."""
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def destination(self) -> str:
        """``user@127.0.0.1`` for a plain ssh command line (the port is in ssh_args)."""
        return f"{self.user}@{self.host}"

    def ssh(self, *command: str, timeout: float = 30, check: bool = False,
            input: Optional[str] = None) -> subprocess.CompletedProcess:
        """Run a command through this server; stdout/stderr captured as text."""
        stdin = {} if input is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run(
            ["ssh", *self.ssh_args, self.destination, "--", *command],
            input=input, capture_output=True, text=True, timeout=timeout, check=check,
            **stdin,
        )

    # -- server side ---------------------------------------------------------------
    def _keygen(self, path: Path) -> None:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfjupyter-test",
             "-f", str(path)],
            check=True, capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
        )

    def _write_config(self) -> None:
        py_dir = os.path.dirname(sys.executable)
        path = os.pathsep.join(
            [py_dir] + [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                        if p and p != py_dir])
        # SHLVL=1: bash (the login shell) then counts itself as nested and does not
        # source ~/.bashrc, which it otherwise does for ssh commands on Debian.
        env = {"PATH": path, "SHLVL": "1", TAG_VAR: self.tag, **self.extra_env}
        lines = [
            "ListenAddress 127.0.0.1",
            f"Port {self.port}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            f"PidFile {self.dir / 'sshd.pid'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            f"AllowUsers {self.user}",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "UseDNS no",
            # ipyparallel opens many short connections in parallel (one watcher
            # thread per engine); the default MaxStartups 10:30:100 may drop some.
            "MaxStartups 200",
            "MaxSessions 200",
            "LoginGraceTime 30",
            "Subsystem sftp internal-sftp",
            "SetEnv " + " ".join(f"{k}={_quote_conf(v)}" for k, v in env.items()),
            "LogLevel INFO",
        ]
        self.config.write_text("\n".join(lines) + "\n")

    def start(self) -> "SshServer":
        need("tests with a real OpenSSH server", missing_tools(),
             "apt-get install openssh-server openssh-client")
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            if self.multiplex and self.control_dir is None:
                self.control_dir = tempfile.mkdtemp(prefix="tfjssh-", dir="/tmp")
            self._keygen(self.host_key)
            self._keygen(self.client_key)
            pub = self.client_key.with_suffix(".pub").read_text()
            (self.dir / "authorized_keys").write_text(pub)
            os.chmod(self.dir / "authorized_keys", 0o600)
            if os.getuid() == 0:  # privilege separation dir that sshd requires when root
                os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
            last_error = ""
            for _ in range(3):  # the free port can be taken between probe and bind
                self.port = _free_port()
                self._write_config()
                last_error = self._start_once()
                if not last_error:
                    return self
            raise RuntimeError(f"sshd did not come up: {last_error}")
        except BaseException:
            self.close()
            raise

    def _start_once(self) -> str:
        """Start sshd and wait until ``ssh true`` works; '' if it does, else why not."""
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_timeout
        why = "timed out"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                why = f"sshd exited with {self.proc.returncode}"
                break
            try:
                r = self.ssh("true", timeout=max(1.0, deadline - time.monotonic()))
                if r.returncode == 0:
                    return ""
                why = f"ssh true: rc={r.returncode} {r.stderr.strip()}"
            except subprocess.TimeoutExpired:
                why = "ssh true timed out"
            time.sleep(0.1)
        self._stop_sshd()
        return f"{why}; sshd log:\n{self.read_log()}"

    def read_log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def session_pids(self) -> List[int]:
        """Live processes started through this server (they carry the tag in their env)."""
        needle = f"{TAG_VAR}={self.tag}".encode()
        me = os.getpid()
        out, in_exec = [], []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == me:
                continue
            env = _environ(int(d))
            if env is None:
                in_exec.append(int(d))
            elif needle in env and _pid_alive(int(d)):
                out.append(int(d))
        # A process inside execve has an empty environ for an instant (the new image's
        # is not mapped yet): a just-started `nohup cmd &` read then is missed. Read
        # those again shortly; kernel threads, which never have one, are left out.
        deadline = time.monotonic() + 1.0
        while in_exec and time.monotonic() < deadline:
            time.sleep(0.01)
            still = []
            for pid in in_exec:
                env = _environ(pid)
                if env is None:
                    still.append(pid)
                elif needle in env and _pid_alive(pid):
                    out.append(pid)
            in_exec = still
        return out

    def _stop_sshd(self) -> None:
        p = self.proc
        if p is None or p.poll() is not None:  # never signal a reaped (reusable) pid
            return
        kids = _children(p.pid)
        for pid in [p.pid] + kids:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
        for pid in kids:
            if _pid_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def close(self, timeout: float = 5.0) -> None:
        """Stop sshd, its connection processes and anything started through it. Bounded."""
        if self.control_dir and self.port and os.path.isdir(self.control_dir) \
                and os.listdir(self.control_dir):
            try:  # the shared-connection master (a client process) exits with it
                subprocess.run(["ssh", *self.ssh_args, "-O", "exit", self.destination],
                               capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
            except (subprocess.TimeoutExpired, OSError):
                pass  # it also exits by itself once sshd's side of the connection is gone
        self._stop_sshd()
        leftovers = self.session_pids()
        if leftovers:
            self.killed_leftovers += leftovers
            for pid in leftovers:
                try:
                    os.kill(pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(_pid_alive(p) for p in leftovers):
                time.sleep(0.05)
            for pid in leftovers:
                if _pid_alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and any(_pid_alive(p) for p in leftovers):
                time.sleep(0.05)
        if self.control_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> "SshServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


try:
    import pytest

    @pytest.fixture
    def ssh_server(tmp_path):
        """A started SshServer; closed (with all it started) after the test."""
        with SshServer(tmp_path) as srv:
            yield srv
except ImportError:  # pragma: no cover
    pass

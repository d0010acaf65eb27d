"""The cluster's shared token, and TLS.

Every RPC carries the cluster token in its metadata; servers refuse calls without it. Where a
token comes from, first match wins:

1. ``ClusterSpec``-level: ``tf.train.Server(..., token=...)`` / ``Session(config=ConfigProto(
   cluster_token=...))``;
2. the environment variable ``TFJUPYTER_CLUSTER_TOKEN``;
3. token files in ``~/.tfjupyter/tokens/`` (override the folder with ``TFJUPYTER_TOKEN_DIR``),
   so the tutorials' separately started tasks on one host find each other with no set-up.

A token file belongs to the server that holds its address: it names the server's process
(pid and start time) and goes away when the server stops. A file whose process is gone is
stale, never read, and removed by the next task that starts. A starting task takes the token
of any live task of its cluster, or makes a new one; the look-up and the writing of its own
file happen under a lock on the folder, so tasks started at the same instant agree, and a
file appears whole (written aside, then renamed) or not at all. Tokens thus live exactly as
long as some task of the cluster incarnation does: a new cluster on reused ports never reads
an old cluster's token.

TLS: set ``TFJUPYTER_TLS_CERT`` and ``TFJUPYTER_TLS_KEY`` (PEM files; ``TFJUPYTER_TLS_CA`` for
the authority clients trust) or pass them to Server; channels then use grpc.ssl_* credentials.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import threading
from typing import Iterable, Optional, Tuple

import grpc

__all__ = ["resolve_token", "withdraw_token", "token_for_target",
           "TokenInterceptor", "TOKEN_METADATA_KEY", "TlsConfig"]

TOKEN_METADATA_KEY = "tfjupyter-cluster-token"
ENV_TOKEN = "TFJUPYTER_CLUSTER_TOKEN"
_SUFFIX = ".token"


def _token_dir() -> str:
    return os.environ.get("TFJUPYTER_TOKEN_DIR") or os.path.join(os.path.expanduser("~"),
                                                                   ".tfjupyter", "tokens")


def _token_path(address: str) -> str:
    # The host name is part of the key: a home folder shared between hosts keeps their
    # "localhost:2222"s apart.
    key = f"{socket.gethostname()}|{address.strip()}"
    return os.path.join(_token_dir(), hashlib.sha256(key.encode()).hexdigest()[:32] + _SUFFIX)


def _process_start(pid: int) -> Optional[str]:
    """When process ``pid`` started (Linux), so a reused pid is not taken for the owner."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int, start: Optional[str]) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process, alive
    return start is None or _process_start(pid) in (None, start)


def _read_live(path: str) -> Optional[str]:
    """The token in ``path`` if the file's owner is alive on this host; removes a stale file."""
    try:
        with open(path, encoding="ascii") as f:
            entry = json.load(f)
        token, pid, host = entry["token"], int(entry["pid"]), entry["host"]
    except OSError:
        return None
    except (ValueError, KeyError, TypeError):  # an older release's file: never trusted
        with contextlib.suppress(OSError):
            os.remove(path)
        return None
    if host != socket.gethostname():
        return None
    if not _alive(pid, entry.get("start")):
        with contextlib.suppress(OSError):
            os.remove(path)
        return None
    return token or None


_process_lock = threading.Lock()


@contextlib.contextmanager
def _folder_lock():
    """Excludes other tasks (threads here, processes on this host) from the token folder."""
    folder = _token_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with _process_lock:
        fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl
                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # no flock (Windows): the process lock is all there is
                pass
            yield folder
        finally:
            os.close(fd)   # releases the flock


def _sweep(folder: str) -> None:
    """Removes the files of tasks that are gone (a SIGKILLed task could not remove its own)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name.endswith(_SUFFIX):
                _read_live(os.path.join(folder, name))
            elif ".tmp" in name:
                tmp = os.path.join(folder, name)
                pid = name.rpartition(".tmp")[2]
                if pid.isdigit() and not _alive(int(pid), None):
                    with contextlib.suppress(OSError):
                        os.remove(tmp)


def resolve_token(addresses: Iterable[str], explicit: Optional[str] = None,
                  own_address: Optional[str] = None) -> Tuple[str, bool]:
    """The token of the cluster whose tasks have these addresses — the explicit one, the
    environment's, a live task's, or a new one — and whether this process now holds the token
    file of ``own_address`` (its server withdraws it when it stops). A live file of another
    process at ``own_address`` is left alone: that process holds the port."""
    if explicit:
        return explicit, False
    env = os.environ.get(ENV_TOKEN)
    if env:
        return env, False
    with _folder_lock() as folder:
        _sweep(folder)
        token = next(filter(None, (_read_live(_token_path(a)) for a in sorted(set(addresses)))),
                     None) or secrets.token_hex(32)
        published = own_address is not None and _read_live(_token_path(own_address)) is None
        if published:
            _write(_token_path(own_address), token)
    return token, published


def _write(path: str, token: str) -> None:
    entry = {"token": token, "pid": os.getpid(), "start": _process_start(os.getpid()),
             "host": socket.gethostname()}
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        json.dump(entry, f)
    os.replace(tmp, path)


def withdraw_token(address: str, token: str) -> None:
    """Removes the token file of ``address`` if it is still this process's, for ``token``."""
    path = _token_path(address)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError), _folder_lock():
        with open(path, encoding="ascii") as f:
            entry = json.load(f)
        if entry["pid"] == os.getpid() and entry["token"] == token:
            os.remove(path)


def token_for_target(address: str, explicit: Optional[str] = None) -> Optional[str]:
    """The token a client presents to the task at ``address`` (None if none is known)."""
    return explicit or os.environ.get(ENV_TOKEN) or _read_live(_token_path(address))


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks the cluster token, before any handler runs."""

    def __init__(self, token: str):
        self._token = token.encode()

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "tfjupyter: missing or wrong cluster token (set "
                          f"{ENV_TOKEN} or pass the cluster's token)")
        self._deny = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream = grpc.stream_stream_rpc_method_handler(
            lambda requests, context: deny(None, context))
        self._deny_unary_stream = grpc.unary_stream_rpc_method_handler(deny)

    def intercept_service(self, continuation, handler_call_details):
        presented = dict(handler_call_details.invocation_metadata or ()).get(TOKEN_METADATA_KEY, "")
        if hmac.compare_digest(str(presented).encode(), self._token):
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        if handler.request_streaming:
            return self._deny_stream
        if handler.response_streaming:
            return self._deny_unary_stream
        return self._deny


class TlsConfig:
    """PEM files for TLS; from arguments or the TFJUPYTER_TLS_* environment variables."""

    def __init__(self, cert: Optional[str] = None, key: Optional[str] = None,
                 ca: Optional[str] = None):
        self.cert = cert or os.environ.get("TFJUPYTER_TLS_CERT")
        self.key = key or os.environ.get("TFJUPYTER_TLS_KEY")
        self.ca = ca or os.environ.get("TFJUPYTER_TLS_CA")
        if bool(self.cert) != bool(self.key):
            raise ValueError("TLS needs both a certificate and its private key "
                             "(TFJUPYTER_TLS_CERT and TFJUPYTER_TLS_KEY)")

    @property
    def enabled(self) -> bool:
        return bool(self.cert)

    @staticmethod
    def _load(path: Optional[str]) -> Optional[bytes]:
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self._load(self.key), self._load(self.cert))])

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=self._load(self.ca or self.cert))


def channel_options() -> Tuple:
    from .wire import MAX_MESSAGE_BYTES
    return (("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            # A frozen peer (SIGSTOP, hung host, cut cable) must fail its calls within 15 s:
            # a ping every 5 s, each given 5 s. gRPC core times pings out after
            # grpc.http2.ping_timeout_ms (60 s by default), whatever keepalive_timeout_ms says.
            ("grpc.keepalive_time_ms", 5000), ("grpc.keepalive_timeout_ms", 5000),
            ("grpc.http2.ping_timeout_ms", 5000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000))

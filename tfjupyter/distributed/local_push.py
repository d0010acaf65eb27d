"""Pushes between tasks of one host by a Unix socket instead of a gRPC call.

A step moves its small tensors (and, by shared memory, its big ones) in PushTensors messages:
two per async step of a ps and a worker. From Python a gRPC unary call between two processes
costs ~1.1-1.6 ms on the 2-core reference VM; the same message and a one-byte answer over a
Unix socket cost ~70 us. So a task also listens on an abstract Unix socket (Linux), and a peer
of the same host (same shm.host_id()) sends its pushes there; anything else, or any failure
to connect, goes by gRPC as before.

Messages are the PushTensors request bytes (wire.pack frames), length-prefixed; the answer is
one status byte, followed by an error text when the receiver refused the message. A connection
starts with the cluster token, and each side checks that the other runs as the same user
(SO_PEERCRED): only the tasks' own user, holding the token, can push, and no other user's
process squatting the name learns the token. The name is derived from the token and the
receiver's address, so clusters of one host do not meet. ``TFJUPYTER_LOCAL_PUSH=0`` (or
``TFJUPYTER_SHM=0``) turns it off.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import os
import socket
import struct
import sys
import threading
import time
from typing import Callable, Dict, List, Optional

from ..framework import errors

__all__ = ["socket_name", "enabled", "Listener", "Sender", "stats"]

_OK, _REFUSED = b"\x00", b"\x01"
_LENGTH = struct.Struct("<Q")
_HANDSHAKE_TIMEOUT_S = 5.0
# A push only puts tensors in the receiver's rendezvous: its answer comes at once unless the
# receiving process is frozen, which gRPC then reports (with its keepalive) after the fallback.
_ANSWER_TIMEOUT_S = 5.0
# A peer without a listener (another platform, turned off, name taken) is asked again after this.
_RETRY_UNREACHABLE_S = 30.0

_counts = {"pushes": 0, "fallbacks": 0, "received": 0}
_counts_lock = threading.Lock()


def _count(what: str) -> None:
    with _counts_lock:
        _counts[what] += 1


def stats() -> Dict[str, int]:
    """Pushes sent by socket, pushes that fell back to gRPC, messages received (this process)."""
    with _counts_lock:
        return dict(_counts)


def enabled() -> bool:
    from . import shm
    return (sys.platform.startswith("linux") and shm.enabled()
            and os.environ.get("TFJUPYTER_LOCAL_PUSH", "1").strip() not in ("0", "false", "no"))


@functools.lru_cache(maxsize=256)   # asked for every push of every step
def socket_name(token: str, address: str) -> bytes:
    """The abstract socket name of the task at ``address`` of the cluster of ``token``."""
    digest = hashlib.sha256(f"tfjupyter-push\n{token}\n{address}".encode()).hexdigest()[:40]
    return b"\0tfjupyter-push-" + digest.encode()


def _same_user(sock: socket.socket) -> bool:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise EOFError("connection closed")
        got += k
    return buffer


def _send_message(sock: socket.socket, message: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(message)))
    sock.sendall(message)


def _recv_message(sock: socket.socket, limit: int) -> bytearray:
    (n,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size))
    if n > limit:
        raise ValueError(f"message of {n} bytes, more than {limit}")
    return _recv_exact(sock, n)


class Listener:
    """The receiving side, in a task: one thread accepting, one per connection."""

    def __init__(self, name: bytes, token: str, deliver: Callable[[bytes], None],
                 max_message_bytes: int):
        self._token = token.encode()
        self._deliver = deliver
        self._limit = max_message_bytes
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(name)          # OSError when the name is taken: no listener
            self._sock.listen(64)
        except BaseException:
            self._sock.close()
            raise
        self._connections: List[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="tfjupyter-local-push", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return                      # closed
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="tfjupyter-local-push",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(_HANDSHAKE_TIMEOUT_S)
            token = _recv_message(conn, 4096)
            if not _same_user(conn) or not hmac.compare_digest(bytes(token), self._token):
                conn.sendall(_REFUSED)
                return
            conn.sendall(_OK)
            conn.settimeout(None)
            while True:
                message = _recv_message(conn, self._limit)
                try:
                    self._deliver(bytes(message))
                except Exception as e:      # malformed: refused, as gRPC's INVALID_ARGUMENT
                    text = str(e).encode()[:4000]
                    conn.sendall(_REFUSED + _LENGTH.pack(len(text)) + text)
                    continue
                _count("received")
                conn.sendall(_OK)
        except (OSError, EOFError, ValueError):
            pass                            # the peer went away, or broke the framing
        finally:
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Sender:
    """The sending side, in a task: idle connections kept per peer, one per concurrent push."""

    def __init__(self, token: str):
        self._token = token.encode()
        self._idle: Dict[bytes, List[socket.socket]] = {}
        self._unreachable: Dict[bytes, float] = {}   # name -> when a connection last failed
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def push(self, name: bytes, message: bytes, peer: str) -> bool:
        """Delivers ``message`` to the listener ``name``: True once it answered, False when it
        cannot be reached (the caller then pushes by gRPC). Raises InvalidArgumentError, naming
        ``peer``, when the receiver refused the message."""
        conn = self._checkout(name)
        if conn is None:
            _count("fallbacks")
            return False
        try:
            _send_message(conn, message)
            status = _recv_exact(conn, 1)
            if status != _OK:
                (n,) = _LENGTH.unpack(_recv_exact(conn, _LENGTH.size))
                text = _recv_exact(conn, n).decode(errors="replace")
                self._checkin(name, conn)
                raise errors.InvalidArgumentError(None, None, f"{peer} refused pushed tensors: "
                                                  f"{text}")
        except (OSError, EOFError):
            conn.close()
            _count("fallbacks")
            return False
        self._checkin(name, conn)
        _count("pushes")
        return True

    def _checkout(self, name: bytes) -> Optional[socket.socket]:
        with self._lock:
            if self._pid != os.getpid():   # a forked child must not share its parent's sockets
                self._idle, self._pid = {}, os.getpid()
            idle = self._idle.get(name)
            if idle:
                return idle.pop()
            failed = self._unreachable.get(name)
            if failed is not None and time.monotonic() - failed < _RETRY_UNREACHABLE_S:
                return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(_HANDSHAKE_TIMEOUT_S)
            conn.connect(name)
            if not _same_user(conn):
                raise OSError("the listener runs as another user")
            _send_message(conn, self._token)
            if _recv_exact(conn, 1) != _OK:
                raise OSError("the listener refused the token")
            conn.settimeout(_ANSWER_TIMEOUT_S)
            return conn
        except (OSError, EOFError):
            conn.close()
            with self._lock:
                self._unreachable[name] = time.monotonic()
            return None

    def _checkin(self, name: bytes, conn: socket.socket) -> None:
        with self._lock:
            self._idle.setdefault(name, []).append(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

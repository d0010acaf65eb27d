"""Pushes and RunGraph calls between tasks of one host by a Unix socket instead of gRPC.

A step moves its small tensors (and, by shared memory, its big ones) in PushTensors messages,
and its master starts it on each task with a RunGraph call: per async step of a ps and a worker,
two pushes and one call. From Python a gRPC unary call between two processes costs ~1.1-1.6 ms
on the 2-core reference VM; the same message and its answer over a Unix socket cost ~70 us. So a
task also listens on an abstract Unix socket (Linux), and a peer of the same host (same
shm.host_id()) sends its pushes and RunGraph calls there; anything else, or any failure to
connect, goes by gRPC as before.

Messages are length-prefixed: a kind byte (push or RunGraph), then the request's bytes
(wire.pack frames). A push is answered by one status byte, followed by an error text when the
receiver refused the message; a RunGraph call by the status byte and the reply's frames, as
RunGraphUnary's. A connection starts with the cluster token, and each side checks that the other
runs as the same user (SO_PEERCRED): only the tasks' own user, holding the token, can call, and
no other user's process squatting the name learns the token. The name is derived from the token
and the receiver's address, so clusters of one host do not meet.

What gRPC gives a call, the socket gives too: a step whose caller's connection closes (the
master died) is cancelled on the task (one epoll thread watches the connections of running
steps), and a caller waiting on a task whose process is stopped gives up after
``FROZEN_AFTER_S`` as gRPC's keepalive would. ``TFJUPYTER_LOCAL_PUSH=0`` (or ``TFJUPYTER_SHM=0``)
turns it all off.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import os
import select
import socket
import struct
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

from ..framework import errors

__all__ = ["socket_name", "enabled", "Listener", "Sender", "stats"]

_OK, _REFUSED = b"\x00", b"\x01"
_PUSH, _RUN = b"P", b"R"
_LENGTH = struct.Struct("<Q")
_HANDSHAKE_TIMEOUT_S = 5.0
# A RunGraph reply is at most one gRPC message (bigger results are parked and fetched by gRPC).
_MAX_REPLY_BYTES = 64 << 20
# A push only puts tensors in the receiver's rendezvous: its answer comes at once unless the
# receiving process is frozen, which gRPC then reports (with its keepalive) after the fallback.
_ANSWER_TIMEOUT_S = 5.0
# A peer without a listener (another platform, turned off, name taken) is asked again after this.
_RETRY_UNREACHABLE_S = 30.0
# A RunGraph caller looks at its task's process this often while it waits; a process stopped
# this long (SIGSTOP, a debugger) fails the call, as gRPC's keepalive (5 s + 5 s) would.
_LOOK_EVERY_S = 1.0
FROZEN_AFTER_S = 10.0

_counts = {"pushes": 0, "fallbacks": 0, "received": 0, "calls": 0, "served": 0}
_counts_lock = threading.Lock()


# How many forks led to this process (a system call per push to ask its pid cost more).
_forks = 0


def _count_fork() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_count_fork)


def _count(what: str) -> None:
    with _counts_lock:
        _counts[what] += 1


def stats() -> Dict[str, int]:
    """This process's pushes sent by socket, pushes and calls that fell back to gRPC, pushes
    received, RunGraph calls made and served by socket."""
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


def _peer(sock: socket.socket) -> Tuple[int, int]:
    """(pid, uid) of the process at the other end."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return pid, uid


def _same_user(sock: socket.socket) -> bool:
    return _peer(sock)[1] == os.getuid()


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, traced); False when it cannot be told."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


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


# A step's request and reply, and a push of small tensors, fit in one read and one send: each
# send wakes the reader, and each wake costs more than the copy that joins a small message.
_FIRST_READ = 64 << 10
_JOIN_UP_TO = 64 << 10


def _send_message(sock: socket.socket, message, kind: bytes = b"", status: bytes = b"") -> None:
    """``status`` (a byte, or nothing), then the length of ``kind`` + ``message``, then both."""
    head = status + _LENGTH.pack(len(kind) + len(message)) + kind
    if len(message) <= _JOIN_UP_TO:
        sock.sendall(head + message)
    else:
        sock.sendall(head)
        sock.sendall(message)


def _recv_message(sock: socket.socket, limit: int, status: bool = False,
                  first: Optional[bytes] = None):
    """One message as _send_message sent it: ``(status byte, body)`` when ``status``, else the
    body (a bytes-like object). ``first``: what was already read of it. Small messages take one
    read; the protocol is call and answer, so nothing may follow the message."""
    data = first if first is not None else sock.recv(_FIRST_READ)
    head = (1 if status else 0) + _LENGTH.size
    while len(data) < head:
        more = sock.recv(head - len(data)) if data else b""
        if not more:
            raise EOFError("connection closed")
        data += more
    (n,) = _LENGTH.unpack_from(data, head - _LENGTH.size)
    if n > limit:
        raise ValueError(f"message of {n} bytes, more than {limit}")
    if len(data) > head + n:
        raise ValueError("bytes after the message, before its answer")
    if len(data) == head + n:
        body = memoryview(data)[head:]
    else:
        body = bytearray(n)
        got = len(data) - head
        body[:got] = memoryview(data)[head:]
        view = memoryview(body)
        while got < n:
            k = sock.recv_into(view[got:])
            if not k:
                raise EOFError("connection closed")
            got += k
    return (data[:1], body) if status else body


class CallContext:
    """What a RunGraph handler gets for gRPC's servicer context: callbacks for the call's end
    before its answer (the caller's connection closed)."""

    def __init__(self):
        self._callbacks: List[Callable[[], None]] = []

    def add_callback(self, fn: Callable[[], None]) -> None:
        self._callbacks.append(fn)

    def caller_left(self) -> None:
        for fn in self._callbacks:
            fn()


class _HangupWatch:
    """One epoll thread per process: calls a running call's ``caller_left`` when its caller's
    connection closes. A connection is watched from its first call to its end (``forget``);
    arming and disarming a call only mark it in a dict: no system call, nothing woken per step."""

    def __init__(self):
        self.pid = os.getpid()
        self._epoll = select.epoll()
        self._conns: Dict[int, socket.socket] = {}   # the watched connections, by descriptor
        self._calls: Dict[int, CallContext] = {}     # their running calls
        self._lock = threading.Lock()
        threading.Thread(target=self._watch, name="tfjupyter-local-calls", daemon=True).start()

    def arm(self, conn: socket.socket, context: CallContext) -> None:
        fd = conn.fileno()
        with self._lock:
            self._calls[fd] = context
            if self._conns.get(fd) is not conn:
                self._conns[fd] = conn
                try:
                    self._epoll.register(fd, select.EPOLLRDHUP)
                except FileExistsError:   # (a descriptor number used again)
                    self._epoll.modify(fd, select.EPOLLRDHUP)

    def disarm(self, conn: socket.socket) -> None:
        with self._lock:
            self._calls.pop(conn.fileno(), None)

    def forget(self, conn: socket.socket) -> None:
        """Before ``conn`` closes (its descriptor number may then serve another connection)."""
        fd = conn.fileno()
        with self._lock:
            if self._conns.get(fd) is conn:
                del self._conns[fd]
                self._calls.pop(fd, None)
                try:
                    self._epoll.unregister(fd)
                except OSError:
                    pass

    def _watch(self) -> None:
        while True:
            for fd, _ in self._epoll.poll():
                with self._lock:
                    conn = self._conns.get(fd)
                # An event read before its connection was forgotten may name a descriptor that
                # now serves another one: only a connection really at its end counts.
                if conn is None or not _hung_up(conn):
                    continue
                with self._lock:
                    if self._conns.get(fd) is not conn:
                        continue
                    del self._conns[fd]
                    context = self._calls.pop(fd, None)
                    try:
                        self._epoll.unregister(fd)   # (level-triggered: it would fire again)
                    except OSError:
                        pass
                if context is not None:
                    context.caller_left()


def _hung_up(conn: socket.socket) -> bool:
    """Whether the other end of ``conn`` closed (a caller sends nothing while it waits)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


_watch: Optional[_HangupWatch] = None
_watch_lock = threading.Lock()


def _hangup_watch() -> _HangupWatch:
    global _watch
    with _watch_lock:
        if _watch is None or _watch.pid != os.getpid():   # (a forked child has no thread)
            _watch = _HangupWatch()
        return _watch


class Listener:
    """The receiving side, in a task: one thread accepting, one per connection.

    ``deliver(message)`` takes a push; ``run(message, context) -> reply`` serves a RunGraph call
    (None: calls are refused, and their callers use gRPC)."""

    def __init__(self, name: bytes, token: str, deliver: Callable[[bytes], None],
                 max_message_bytes: int,
                 run: Optional[Callable[[bytes, CallContext], bytes]] = None):
        self._token = token.encode()
        self._deliver = deliver
        self._run = run
        self._watch = _hangup_watch() if run is not None else None
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
                kind, body = bytes(message[:1]), bytes(memoryview(message)[1:])  # one copy
                try:
                    if kind == _RUN and self._run is not None:
                        reply = self._serve_call(conn, body)
                    elif kind == _PUSH:
                        self._deliver(body)
                        reply = b""
                    else:
                        raise ValueError(f"unknown message kind {kind!r}")
                except Exception as e:      # malformed: refused, as gRPC's INVALID_ARGUMENT
                    _send_message(conn, str(e).encode()[:4000], status=_REFUSED)
                    continue
                if kind == _PUSH:
                    _count("received")
                    conn.sendall(_OK)
                else:
                    _send_message(conn, reply, status=_OK)
        except (OSError, EOFError, ValueError):
            pass                            # the peer went away, or broke the framing
        finally:
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            if self._watch is not None:
                self._watch.forget(conn)
            conn.close()

    def _serve_call(self, conn: socket.socket, message: bytes) -> bytes:
        context = CallContext()
        self._watch.arm(conn, context)
        try:
            reply = self._run(message, context)
        finally:
            self._watch.disarm(conn)
        _count("served")
        return reply

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
        self._pids: Dict[socket.socket, int] = {}     # the process at the other end
        self._unreachable: Dict[bytes, float] = {}   # name -> when a connection last failed
        self._lock = threading.Lock()
        self._forks = _forks

    def push(self, name: bytes, message: bytes, peer: str) -> bool:
        """Delivers ``message`` to the listener ``name``: True once it answered, False when it
        cannot be reached (the caller then pushes by gRPC). Raises InvalidArgumentError, naming
        ``peer``, when the receiver refused the message."""
        conn = self._send(name, message, _PUSH)
        if conn is None:
            return False
        try:
            status = _recv_exact(conn, 1)
            if status != _OK:
                text = self._refusal(conn)
                self._checkin(name, conn)
                raise errors.InvalidArgumentError(None, None, f"{peer} refused pushed tensors: "
                                                  f"{text}")
        except (OSError, EOFError):
            self._discard(conn)
            _count("fallbacks")
            return False
        self._checkin(name, conn)
        _count("pushes")
        return True

    def call(self, name: bytes, message: bytes, peer: str,
             timeout: Optional[float] = None):
        """RunGraphUnary's ``message`` to the listener ``name``: its reply (bytes-like), or None
        when the listener cannot be reached (nothing was run; the caller then calls by gRPC).

        Raises, naming ``peer``: DeadlineExceededError after ``timeout`` seconds;
        UnavailableError when the connection breaks during the call (the task died) or the
        task's process stays stopped for FROZEN_AFTER_S; InvalidArgumentError when the task
        refused the message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        conn = self.start(name, message)
        return None if conn is None else self.finish(name, conn, peer, deadline)

    def start(self, name: bytes, message: bytes) -> Optional[socket.socket]:
        """The first half of ``call``: sends ``message`` and returns the connection its answer
        comes by (for ``finish``), or None when the listener cannot be reached. A master sends
        every partition's request before it awaits any answer."""
        return self._send(name, message, _RUN)

    def finish(self, name: bytes, conn: socket.socket, peer: str, deadline: Optional[float]):
        """The second half of ``call``: the answer to what ``start`` sent on ``conn``, by the
        ``time.monotonic()`` ``deadline``; raises as ``call``."""
        try:
            first = self._answer(conn, peer, deadline)
            conn.settimeout(_ANSWER_TIMEOUT_S)
            status, reply = _recv_message(conn, _MAX_REPLY_BYTES, status=True, first=first)
            if status != _OK:
                self._checkin(name, conn)
                text = bytes(reply).decode(errors="replace")
                raise errors.InvalidArgumentError(None, None, f"{peer} refused RunGraph: {text}")
        except (OSError, EOFError) as e:
            self._discard(conn)
            raise errors.UnavailableError(
                None, None, f"{peer}: the connection to the task closed during the step "
                            f"({type(e).__name__}: {e}); the task may have died") from None
        except errors.InvalidArgumentError:
            raise
        except BaseException:   # its answer is still to come: the connection cannot be reused
            self._discard(conn)
            raise
        self._checkin(name, conn)
        _count("calls")
        return reply

    def _send(self, name: bytes, message: bytes, kind: bytes) -> Optional[socket.socket]:
        """A connection to ``name`` that took ``message``, or None (a fallback) when none could
        be made or the sending failed (a task that restarted: its old connections are gone);
        then nothing reached the listener."""
        conn = self._checkout(name)
        if conn is not None:
            try:
                _send_message(conn, message, kind)
                return conn
            except OSError:
                self._discard(conn)
        _count("fallbacks")
        return None

    def _answer(self, conn: socket.socket, peer: str, deadline: Optional[float]) -> bytes:
        """The answer's first bytes, looking at the task's process while it is awaited."""
        stopped_since = None
        while True:
            wait = _LOOK_EVERY_S
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise errors.DeadlineExceededError(None, None, f"{peer}: Deadline Exceeded")
            conn.settimeout(wait)
            try:
                first = conn.recv(_FIRST_READ)
                if not first:
                    raise EOFError("connection closed")
                return first
            except socket.timeout:
                pass
            pid = self._pids.get(conn)
            if pid is None or not _stopped(pid):
                stopped_since = None
                continue
            now = time.monotonic()
            stopped_since = now if stopped_since is None else stopped_since
            if now - stopped_since >= FROZEN_AFTER_S:
                raise errors.UnavailableError(
                    None, None, f"{peer}: its process {pid} has been stopped for "
                                f"{now - stopped_since:.0f} s (frozen): the task cannot answer")

    @staticmethod
    def _refusal(conn: socket.socket) -> str:
        (n,) = _LENGTH.unpack(_recv_exact(conn, _LENGTH.size))
        return _recv_exact(conn, n).decode(errors="replace")

    def _discard(self, conn: socket.socket) -> None:
        with self._lock:
            self._pids.pop(conn, None)
        conn.close()

    def _checkout(self, name: bytes) -> Optional[socket.socket]:
        with self._lock:
            if self._forks != _forks:   # a forked child must not share its parent's sockets
                self._idle, self._pids, self._forks = {}, {}, _forks
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
            pid, uid = _peer(conn)
            if uid != os.getuid():
                raise OSError("the listener runs as another user")
            _send_message(conn, self._token)
            if _recv_exact(conn, 1) != _OK:
                raise OSError("the listener refused the token")
            conn.settimeout(_ANSWER_TIMEOUT_S)
            with self._lock:
                self._pids[conn] = pid
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
            self._pids.clear()
        for conns in idle.values():
            for conn in conns:
                conn.close()

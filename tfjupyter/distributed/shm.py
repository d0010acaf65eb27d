"""Tensors between tasks of one host, by shared memory: the gRPC message carries only a header
naming a segment, the bytes are written once by the sender and mapped, not copied, by the
receiver.

Sender: a per-process pool of segments (files ``/dev/shm/tfjupyter-shm-<pid>-<start>-<random>``,
mode 0600, preallocated so a full /dev/shm fails here rather than with SIGBUS later), bounded by
``TFJUPYTER_SHM_BYTES`` in all. Lending a segment to a tensor bumps its generation (first 8
bytes of the segment's header page) and copies the tensor in; the header frame says (segment,
generation). Segments are reused, because first-touching tmpfs pages is what costs (measured:
~150 ms for 64 MiB on the reference VM, against ~12 ms for a copy into warm pages).

Receiver: maps the segment (cached), takes a shared OFD lock on its first byte, checks the
generation, and hands out a numpy view of the data. When the last view dies, it writes the
generation into the "released" slot and drops the lock; the sender may then lend the segment
again. The lock is what makes reuse safe: the sender takes it exclusively before reclaiming a
segment, and the kernel drops it when a receiver dies. A segment nobody claimed for
UNCLAIMED_TTL_S (the reply was lost) is reclaimed too, its generation bumped so a late reader
fails instead of reading other data.

Lifetimes: a task's segments are unlinked when its process exits; a task that was killed
leaves them behind, and the next task of the host sweeps those whose process is gone. Only
callers holding the cluster token ever learn a segment's name (it travels in replies and
requests of authenticated calls, and has 128 random bits); the files are readable by their
user only. ``TFJUPYTER_SHM=0`` turns the transport off (tensors go as gRPC bytes);
``TFJUPYTER_SHM_MIN_BYTES`` (64 KiB) is the smallest tensor sent this way.
"""
from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import mmap
import os
import re
import secrets
import socket
import stat
import struct
import threading
import time
import weakref
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..framework import errors

__all__ = ["host_id", "pool_for", "claim", "sweep_dead", "stats", "enabled"]

SHM_DIR = "/dev/shm"
PREFIX = "tfjupyter-shm-"
ENV_ENABLE, ENV_BOUND, ENV_MIN = "TFJUPYTER_SHM", "TFJUPYTER_SHM_BYTES", "TFJUPYTER_SHM_MIN_BYTES"
HEADER_BYTES = 4096          # a page: the data is page-aligned
_GENERATION, _RELEASED = 0, 1  # int64 slots of the header
UNCLAIMED_TTL_S = 60.0
_GRANULE = 64 << 10
_NAME = re.compile(r"^tfjupyter-shm-(\d+)-(\d+)-[0-9a-f]{32}$")
_MAX_MAPPED = 64             # receiver's cache of mapped segments (those no view holds)

_counters = {"sent_tensors": 0, "sent_bytes": 0, "received_tensors": 0, "received_bytes": 0,
             "fallbacks": 0}
_counters_lock = threading.Lock()


def _count(what: str, nbytes: Optional[int] = None) -> None:
    with _counters_lock:
        _counters[f"{what}_tensors" if nbytes is not None else what] += 1
        if nbytes is not None:
            _counters[f"{what}_bytes"] += nbytes


def stats() -> Dict[str, int]:
    """Counters of this process: tensors and bytes sent and received by shm, and tensors that
    fell back to gRPC bytes because the pool was full."""
    with _counters_lock:
        return dict(_counters)


def _env_bytes(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, "").strip() or default)
    except ValueError:
        return default
    return value if value >= 0 else default


@functools.lru_cache(maxsize=None)
def _supported() -> bool:
    # Asked once per process: enabled() runs several times per tensor of every step.
    return hasattr(fcntl, "F_OFD_SETLK") and os.path.isdir(SHM_DIR)


def enabled() -> bool:
    if os.environ.get(ENV_ENABLE, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return _supported()


def min_bytes() -> int:
    return _env_bytes(ENV_MIN, 64 << 10)


def _bound() -> int:
    return _env_bytes(ENV_BOUND, 1 << 30)


_host_id: Optional[str] = None


def host_id() -> str:
    """Equal for two processes exactly when they see the same /dev/shm: the boot, the host
    name and the tmpfs itself (containers of one host have their own). '' when shm is off."""
    global _host_id
    if not enabled():
        return ""
    if _host_id is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip()
        except OSError:
            boot = ""
        st = os.stat(SHM_DIR)
        key = f"{boot}|{socket.gethostname()}|{st.st_dev}:{st.st_ino}"
        _host_id = hashlib.sha256(key.encode()).hexdigest()[:32]
    return _host_id


def _lock(fd: int, kind: int, wait: bool) -> bool:
    """An open-file-description lock on the segment's first byte (per open file, unlike
    fcntl's process locks, so two tasks in one process exclude each other too)."""
    request = struct.pack("hhqqi4x", kind, os.SEEK_SET, 0, 1, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK, request)
        return True
    except OSError:
        if wait:
            raise
        return False


def _process_identity() -> Tuple[int, str]:
    from .auth import _process_start
    pid = os.getpid()
    return pid, _process_start(pid) or "0"


# -- sender -------------------------------------------------------------------------------------
class _Segment:
    def __init__(self, name: str, fd: int, capacity: int):
        self.name, self.fd, self.capacity = name, fd, capacity
        self.map = mmap.mmap(fd, HEADER_BYTES + capacity, flags=mmap.MAP_SHARED)
        self.header = np.frombuffer(self.map, np.int64, 2)
        self.data = np.frombuffer(self.map, np.uint8, capacity, HEADER_BYTES)
        self.generation = 0
        self.lent_at: Optional[float] = None


class SegmentPool:
    """This process's segments (see the module's doc)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._segments: List[_Segment] = []
        self._total = 0
        self._pid: Optional[int] = None

    def lend(self, value: np.ndarray) -> Optional[Tuple[str, int]]:
        """Copies ``value`` into a segment: (name, generation), or None when the pool is full."""
        nbytes = value.nbytes
        with self._lock:
            if self._pid != os.getpid():   # a forked child must not lend its parent's segments
                self._segments, self._total, self._pid = [], 0, os.getpid()
            segment = self._free_segment(nbytes) or self._new_segment(nbytes)
            if segment is None:
                _count("fallbacks")
                return None
            segment.generation += 1
            segment.lent_at = time.monotonic()
        target = segment.data[:nbytes].view(value.dtype).reshape(value.shape)
        np.copyto(target, value)           # one copy, without the GIL
        segment.header[_GENERATION] = segment.generation
        _count("sent", nbytes)
        return segment.name, segment.generation

    def _free_segment(self, nbytes: int) -> Optional[_Segment]:
        fits = sorted((s for s in self._segments if s.capacity >= nbytes), key=lambda s: s.capacity)
        for segment in fits:
            if segment.capacity <= 2 * nbytes + _GRANULE and self._reclaim(segment):
                return segment
        return None

    def _reclaim(self, segment: _Segment) -> bool:
        if segment.lent_at is None:
            return True
        released = int(segment.header[_RELEASED]) == segment.generation
        if not released and time.monotonic() - segment.lent_at < UNCLAIMED_TTL_S:
            return False
        if not _lock(segment.fd, fcntl.F_WRLCK, wait=False):
            return False                   # a receiver still holds it
        try:
            if int(segment.header[_RELEASED]) != segment.generation:
                # Never claimed: a late reader must see a generation it was not sent.
                segment.generation += 1
                segment.header[_GENERATION] = segment.generation
        finally:
            _lock(segment.fd, fcntl.F_UNLCK, wait=False)
        segment.lent_at = None
        return True

    def _new_segment(self, nbytes: int) -> Optional[_Segment]:
        capacity = -(-nbytes // _GRANULE) * _GRANULE
        size = HEADER_BYTES + capacity
        bound = _bound()
        if size > bound:
            return None
        while self._total + size > bound:   # make room: drop free segments, largest first
            free = [s for s in self._segments if self._reclaim(s)]
            if not free:
                return None
            self._drop(max(free, key=lambda s: s.capacity))
        pid, start = _process_identity()
        name = f"{PREFIX}{pid}-{start}-{secrets.token_hex(16)}"
        path = os.path.join(SHM_DIR, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return None
        try:
            os.posix_fallocate(fd, 0, size)  # ENOSPC here, not SIGBUS on a later write
            segment = _Segment(name, fd, capacity)
        except (OSError, ValueError):
            os.close(fd)
            _unlink(path)
            return None
        self._segments.append(segment)
        self._total += size
        return segment

    def _drop(self, segment: _Segment) -> None:
        self._segments.remove(segment)
        self._total -= HEADER_BYTES + segment.capacity
        _unlink(os.path.join(SHM_DIR, segment.name))
        segment.header = segment.data = None
        try:
            segment.map.close()
        except BufferError:
            pass  # a tensor being copied in still views it; the mapping goes with it
        os.close(segment.fd)

    def close(self) -> None:
        """Unlinks this process's segments (receivers keep what they mapped)."""
        with self._lock:
            if self._pid == os.getpid():
                for segment in list(self._segments):
                    self._drop(segment)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


_pool = SegmentPool()
atexit.register(_pool.close)


def pool_for(peer_host: str) -> Optional[SegmentPool]:
    """The pool to send to a peer by, or None when the peer is on another host (or shm is off
    on either side)."""
    if not peer_host or peer_host != host_id():   # (host_id() is '' when shm is off here)
        return None
    return _pool


# -- receiver -----------------------------------------------------------------------------------
class _Mapped:
    def __init__(self, fd: int, size: int):
        self.fd, self.size = fd, size
        self.map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED)
        self.header = np.frombuffer(self.map, np.int64, 2)
        self.holders = 0


_mapped: Dict[str, _Mapped] = {}
_mapped_lock = threading.Lock()


def claim(segment_name: str, generation: int, nbytes: int, what: str) -> np.ndarray:
    """The ``nbytes`` a peer lent in ``segment_name``, as a writable uint8 array that holds the
    segment until it (and every view of it) dies."""
    if not _NAME.match(segment_name):
        raise errors.InvalidArgumentError(None, None, f"{what}: bad shared-memory segment name "
                                          f"{segment_name[:80]!r}")
    with _mapped_lock:
        entry = _mapped.get(segment_name)
        if entry is None:
            entry = _map(segment_name, what)
            _mapped[segment_name] = entry
            _evict_unused()
        if HEADER_BYTES + nbytes > entry.size:
            raise errors.InvalidArgumentError(None, None, f"{what}: {nbytes} bytes do not fit "
                                              f"shared-memory segment {segment_name}")
        entry.holders += 1
    try:
        _lock(entry.fd, fcntl.F_RDLCK, wait=True)
        if int(entry.header[_GENERATION]) != generation:
            _lock(entry.fd, fcntl.F_UNLCK, wait=False)
            raise errors.UnavailableError(None, None, f"{what}: the sender reclaimed its "
                                          "shared-memory segment before it was read (unread for "
                                          f"{UNCLAIMED_TTL_S:g} s)")
    except BaseException:
        with _mapped_lock:
            entry.holders -= 1
        raise
    view = np.frombuffer(entry.map, np.uint8, nbytes, HEADER_BYTES)
    weakref.finalize(view, _release, entry, generation)
    _count("received", nbytes)
    return view


def _map(segment_name: str, what: str) -> _Mapped:
    try:
        fd = os.open(os.path.join(SHM_DIR, segment_name), os.O_RDWR | os.O_NOFOLLOW)
    except OSError as e:
        raise errors.UnavailableError(None, None, f"{what}: shared-memory segment "
                                      f"{segment_name} is gone ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size <= HEADER_BYTES:
            raise errors.InvalidArgumentError(None, None, f"{what}: {segment_name} is not a "
                                              "segment of this user's tasks")
        return _Mapped(fd, st.st_size)
    except BaseException:
        os.close(fd)
        raise


def _release(entry: _Mapped, generation: int) -> None:
    entry.header[_RELEASED] = generation
    _lock(entry.fd, fcntl.F_UNLCK, wait=False)
    with _mapped_lock:
        entry.holders -= 1


def _evict_unused() -> None:
    """Unmaps segments no view holds once more than _MAX_MAPPED are mapped (their sender may
    have dropped them)."""
    if len(_mapped) <= _MAX_MAPPED:
        return
    for name in [n for n, e in _mapped.items() if e.holders == 0][:len(_mapped) - _MAX_MAPPED]:
        entry = _mapped.pop(name)
        entry.header = None
        try:
            entry.map.close()
        except BufferError:
            pass
        os.close(entry.fd)


# -- cleanup ------------------------------------------------------------------------------------
def sweep_dead() -> int:
    """Unlinks the segments of tasks of this host whose process is gone; their number."""
    from .auth import _alive
    swept = 0
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    for name in names:
        match = _NAME.match(name)
        if match and not _alive(int(match.group(1)), match.group(2)):
            _unlink(os.path.join(SHM_DIR, name))
            swept += 1
    return swept

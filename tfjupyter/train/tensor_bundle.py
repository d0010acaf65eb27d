"""TensorFlow's V2 checkpoint format ("tensor bundles"), read and written byte for byte.

A checkpoint ``<prefix>`` is ``<prefix>.index`` plus ``<prefix>.data-SSSSS-of-NNNNN`` files:

- each data file holds tensors' raw little-endian bytes back to back (strings: varint lengths,
  a masked CRC of the lengths, then the bytes);
- the index is a LevelDB table (TensorFlow's ``table::TableBuilder``, no compression) mapping
  ``""`` to a ``BundleHeaderProto`` and each tensor name to a ``BundleEntryProto`` (dtype, shape,
  shard, offset, size, masked CRC-32C of the bytes); a tensor saved in slices (the parts of a
  partitioned variable) has an entry listing its slices and one entry per slice, under keys
  ``tensor_slices.slice_key`` makes.

Writes are atomic, also over an existing checkpoint of the same prefix (``saver.save(sess,
path)`` without ``global_step``). Replacing two files takes two renames, and a crash between
them would pair new data with the old index, so a write commits through a journal:

1. the data and the index are written under temporary names (``<final>.tempstate<random>``) in
   the checkpoint's directory, flushed and fsynced;
2. the commit point: ``<prefix>.tfjupyter-commit`` is written atomically (``atomic_write``:
   temporary file, fsync, rename, fsync of the directory). It lists the renames
   (temporary name -> final name, data files first, the index last);
3. the renames are done, the directory is fsynced, and the journal is deleted.

A crash before step 2 leaves the old checkpoint untouched; its temporary files are stale and
the next write of the prefix removes them (only this prefix's, and never one that a write in
this process is still working on). A crash after step 2 is completed by whoever opens the
prefix next (``roll_forward_commit``: ``BundleReader``, ``checkpoint_exists``, the next write):
it does the listed renames whose temporary file still exists and deletes the journal. So after
a crash at any instant the prefix reads as either the old or the new checkpoint, and once a
write has returned, the files are plain TensorFlow files under TensorFlow's names.

Commits and roll-forwards of a directory take a lock (a thread lock, and ``flock`` on the
directory where the platform has it), so that one never deletes a journal that another has
just written. ``merge_bundles`` (sharded savers) commits the same way.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import re
import struct
import threading
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

try:
    import fcntl
except ImportError:   # Windows: commits are serialized within the process only
    fcntl = None

import numpy as np

from ..framework import dtypes, errors
from ..summary._encoding import (ENUM_DATATYPE, ENUM_NAMES, crc32c, crc32c_extend, datatype_enum,
                                 field_bytes, field_fixed32, field_varint, mask_crc,
                                 parse_fields, read_varint, unmask_crc, varint)
from . import tensor_slices

__all__: List[str] = []

_BLOCK_SIZE = 262144          # table::Options defaults in TensorFlow
_RESTART_INTERVAL = 16
_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_SIZE = 48             # two padded BlockHandles (40 bytes) + magic
_BUNDLE_VERSION = 1           # kTensorBundleVersion


def index_filename(prefix: str) -> str:
    return prefix + ".index"


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


# -- entries ---------------------------------------------------------------------------------------
class BundleEntry:
    """A BundleEntryProto: where a tensor's bytes are and what they are."""

    __slots__ = ("dtype_enum", "shape", "shard_id", "offset", "size", "crc32c", "slices")

    def __init__(self, dtype_enum: int, shape: Tuple[int, ...], shard_id: int, offset: int,
                 size: int, crc: int, slices: Tuple[tensor_slices.Extents, ...] = ()):
        self.dtype_enum = dtype_enum
        self.shape = shape
        self.shard_id = shard_id
        self.offset = offset
        self.size = size
        self.crc32c = crc       # masked, as stored
        self.slices = slices    # a sliced tensor's stored slices (its entry has no bytes)

    @property
    def has_slices(self) -> bool:
        return bool(self.slices)

    def encode(self) -> bytes:
        dims = b"".join(field_bytes(2, field_varint(1, d)) for d in self.shape)
        return (field_varint(1, self.dtype_enum) + field_bytes(2, dims)
                + field_varint(3, self.shard_id) + field_varint(4, self.offset)
                + field_varint(5, self.size)
                + (field_fixed32(6, self.crc32c) if self.crc32c else b"")
                + b"".join(field_bytes(7, tensor_slices.encode_slice_proto(extents))
                           for extents in self.slices))

    @classmethod
    def decode(cls, payload: bytes) -> "BundleEntry":
        f = parse_fields(payload)
        shape: Tuple[int, ...] = ()
        if 2 in f:
            shape_fields = parse_fields(f[2][-1])
            if shape_fields.get(3, [0])[-1]:
                raise ValueError("tensor of unknown rank")
            shape = tuple(parse_fields(d).get(1, [0])[-1] for d in shape_fields.get(2, []))
        return cls(f.get(1, [0])[-1], shape, f.get(3, [0])[-1], f.get(4, [0])[-1],
                   f.get(5, [0])[-1], f.get(6, [0])[-1],
                   tuple(tensor_slices.decode_slice_proto(p) for p in f.get(7, [])))

    @property
    def dtype_name(self) -> str:
        return ENUM_NAMES.get(self.dtype_enum, f"DataType({self.dtype_enum})")


def _encode_header(num_shards: int) -> bytes:
    version = field_varint(1, _BUNDLE_VERSION)          # VersionDef.producer
    return field_varint(1, num_shards) + field_bytes(3, version)   # endianness LITTLE = 0


# -- the LevelDB table -----------------------------------------------------------------------------
class _BlockBuilder:
    def __init__(self, restart_interval: int):
        self.interval = restart_interval
        self.buf = bytearray()
        self.restarts = [0]
        self.counter = 0
        self.last_key = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.counter < self.interval:
            n = min(len(self.last_key), len(key))
            while shared < n and self.last_key[shared] == key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.counter = 0
        self.buf += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self.buf += key[shared:] + value
        self.last_key = key
        self.counter += 1

    def size_estimate(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        return bytes(self.buf) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + \
            struct.pack("<I", len(self.restarts))

    def empty(self) -> bool:
        return not self.buf


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i < n and start[i] < 0xFF and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    for i, b in enumerate(key):
        if b != 0xFF:
            return key[:i] + bytes([b + 1])
    return key


def _block_handle(offset: int, size: int) -> bytes:
    return varint(offset) + varint(size)


def build_table(items: Iterable[Tuple[bytes, bytes]]) -> bytes:
    """A LevelDB table of sorted, unique (key, value) pairs, as TensorFlow's TableBuilder."""
    out = bytearray()

    def write_block(contents: bytes) -> Tuple[int, int]:
        offset = len(out)
        out.extend(contents)
        out.extend(b"\x00" + struct.pack("<I", mask_crc(crc32c(contents + b"\x00"))))
        return offset, len(contents)

    data = _BlockBuilder(_RESTART_INTERVAL)
    index = _BlockBuilder(1)
    pending: Optional[Tuple[int, int]] = None
    last_key = b""
    for key, value in items:
        if pending is not None:
            index.add(_shortest_separator(last_key, key), _block_handle(*pending))
            pending = None
        data.add(key, value)
        last_key = key
        if data.size_estimate() >= _BLOCK_SIZE:
            pending = write_block(data.finish())
            data = _BlockBuilder(_RESTART_INTERVAL)
    if not data.empty():
        pending = write_block(data.finish())
    if pending is not None:
        index.add(_short_successor(last_key), _block_handle(*pending))
    meta_handle = write_block(_BlockBuilder(_RESTART_INTERVAL).finish())
    index_handle = write_block(index.finish())
    footer = _block_handle(*meta_handle) + _block_handle(*index_handle)
    footer += b"\x00" * (40 - len(footer))
    out.extend(footer + struct.pack("<Q", _TABLE_MAGIC))
    return bytes(out)


def _read_block(buf: bytes, handle: bytes, filename: str) -> bytes:
    offset, pos = read_varint(handle, 0)
    size, _ = read_varint(handle, pos)
    if offset + size + 5 > len(buf):
        raise _corrupt(filename, "block handle points past the end of the file")
    contents = buf[offset:offset + size]
    kind = buf[offset + size]
    stored = struct.unpack_from("<I", buf, offset + size + 1)[0]
    if unmask_crc(stored) != crc32c(buf[offset:offset + size + 1]):
        raise _corrupt(filename, "block checksum mismatch")
    if kind != 0:
        raise _corrupt(filename, f"compressed block (type {kind}) is not supported")
    return contents


def _block_entries(block: bytes, filename: str) -> List[Tuple[bytes, bytes]]:
    if len(block) < 4:
        raise _corrupt(filename, "block too short")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * num_restarts
    if end < 0:
        raise _corrupt(filename, "bad restart array")
    entries = []
    pos, key = 0, b""
    while pos < end:
        shared, pos = read_varint(block, pos)
        non_shared, pos = read_varint(block, pos)
        value_len, pos = read_varint(block, pos)
        if shared > len(key) or pos + non_shared + value_len > end:
            raise _corrupt(filename, "bad block entry")
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        entries.append((key, block[pos:pos + value_len]))
        pos += value_len
    return entries


def read_table(buf: bytes, filename: str) -> List[Tuple[bytes, bytes]]:
    """All (key, value) pairs of a LevelDB table, checksums verified."""
    if len(buf) < _FOOTER_SIZE or struct.unpack_from("<Q", buf, len(buf) - 8)[0] != _TABLE_MAGIC:
        raise _corrupt(filename, "not an sstable (bad magic number)")
    footer = buf[len(buf) - _FOOTER_SIZE:]
    _, pos = read_varint(footer, 0)   # metaindex handle: nothing in it that we need
    _, pos = read_varint(footer, pos)
    index = _read_block(buf, footer[pos:], filename)
    items: List[Tuple[bytes, bytes]] = []
    for _, handle in _block_entries(index, filename):
        items.extend(_block_entries(_read_block(buf, handle, filename), filename))
    return items


def _corrupt(filename: str, detail: str) -> errors.DataLossError:
    return errors.DataLossError(
        None, None, f"Unable to read file ({filename}). Perhaps the file is corrupt or was "
        f"produced by a newer version of TensorFlow with format changes ({detail})")


# -- atomic files ----------------------------------------------------------------------------------
_TEMP_MARKER = ".tempstate"

# Temporary files that a write of this process is working on (absolute paths). The sweep of
# stale temporary files skips them: a save in another thread may be writing one right now.
_in_flight_lock = threading.Lock()
_in_flight_temps: Set[str] = set()


def temp_name(path: str) -> str:
    return f"{path}{_TEMP_MARKER}{random.getrandbits(63)}"


def _claim_temp_name(path: str) -> str:
    """A fresh temporary name for ``path``, marked in flight before the file exists, so the
    stale-file sweep of a concurrent save never removes it. ``_release_temp_name`` when done."""
    tmp = temp_name(path)
    with _in_flight_lock:
        _in_flight_temps.add(os.path.abspath(tmp))
    return tmp


def _release_temp_name(tmp: str) -> None:
    with _in_flight_lock:
        _in_flight_temps.discard(os.path.abspath(tmp))


def _remove_stale_temps(directory: str, final_name_pattern: str) -> None:
    """Removes the temporary files in ``directory`` of final names matching the regular
    expression ``final_name_pattern`` (whole names), except those of this process's writes:
    they are what writes killed part-way left behind."""
    temp_re = re.compile(f"(?:{final_name_pattern}){re.escape(_TEMP_MARKER)}[0-9]+")
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return
    # Listed first, then the in-flight set: a temporary name is claimed before its file is
    # created, so every listed file of a live write is in the set read afterwards.
    with _in_flight_lock:
        in_flight = set(_in_flight_temps)
    for name in names:
        if temp_re.fullmatch(name):
            path = os.path.join(directory, name)
            if os.path.abspath(path) not in in_flight:
                _remove_quietly(path)


def remove_stale_temp_files(path: str) -> None:
    """Removes ``path``'s temporary files left by killed writes (see ``_remove_stale_temps``)."""
    _remove_stale_temps(os.path.dirname(path), re.escape(os.path.basename(path)))


def fsync_directory(path: str) -> None:
    try:
        fd = os.open(path or ".", os.O_RDONLY)
    except OSError:
        return  # not supported on this platform/filesystem
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_synced(path: str, payload) -> None:
    """Creates ``path`` with ``payload``, flushed and fsynced."""
    with open(path, "wb") as f:
        write_all(f, payload)
        f.flush()
        os.fsync(f.fileno())


def atomic_write(path: str, payload: bytes) -> None:
    """Writes a whole file under a temporary name, fsyncs, and renames it into place."""
    tmp = _claim_temp_name(path)
    try:
        _write_synced(tmp, payload)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise
    finally:
        _release_temp_name(tmp)
    fsync_directory(os.path.dirname(path))


def write_all(f, payload) -> None:
    """One write of a buffer; tests replace it to simulate a failure part-way."""
    f.write(payload)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# -- committing a checkpoint's files ---------------------------------------------------------------
_JOURNAL_SUFFIX = ".tfjupyter-commit"
_JOURNAL_FORMAT = "tfjupyter-commit"
_JOURNAL_VERSION = 1

_commit_lock = threading.Lock()


def commit_journal_filename(prefix: str) -> str:
    return prefix + _JOURNAL_SUFFIX


def _reset_locks_in_child() -> None:
    # A fork taken while another thread held a lock would leave the child's copy held forever.
    global _commit_lock, _in_flight_lock
    _commit_lock = threading.Lock()
    _in_flight_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_in_child)


@contextlib.contextmanager
def _directory_commit_lock(directory: str) -> Iterator[None]:
    """Held while a journal of ``directory`` is written, applied or deleted: by threads of this
    process (a lock) and by other processes (``flock`` on the directory, where available), so
    that a roll-forward never deletes a journal that a save has just written."""
    with _commit_lock:
        fd = None
        if fcntl is not None:
            try:
                fd = os.open(directory or ".", os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass   # a filesystem without flock: the thread lock still holds
        try:
            yield
        finally:
            if fd is not None:
                os.close(fd)   # releases the flock


def _encode_journal(renames: Sequence[Tuple[str, str]]) -> bytes:
    # Names relative to the directory (all files of a commit are in the prefix's directory),
    # so a directory moved after a crash still rolls forward.
    return json.dumps({"format": _JOURNAL_FORMAT, "version": _JOURNAL_VERSION,
                       "renames": [[os.path.basename(src), os.path.basename(dst)]
                                   for src, dst in renames]}).encode()


def _decode_journal(payload: bytes, filename: str) -> List[Tuple[str, str]]:
    try:
        journal = json.loads(payload.decode("utf-8"))
        if journal.get("format") != _JOURNAL_FORMAT or journal.get("version") != _JOURNAL_VERSION:
            raise ValueError("unknown journal format")
        renames = [(str(src), str(dst)) for src, dst in journal["renames"]]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise errors.DataLossError(None, None, f"Unreadable checkpoint commit journal "
                                   f"{filename} ({e}); the checkpoint's files may be from two "
                                   f"different saves") from None
    for name in (n for pair in renames for n in pair):
        if not name or name in (os.curdir, os.pardir) or os.path.basename(name) != name \
                or (os.altsep and os.altsep in name):
            raise errors.DataLossError(None, None, f"Checkpoint commit journal {filename} "
                                       f"names a file outside its directory: {name!r}")
    return renames


def _apply_renames(directory: str, renames: Sequence[Tuple[str, str]]) -> None:
    for src, dst in renames:
        try:
            os.replace(os.path.join(directory, src), os.path.join(directory, dst))
        except FileNotFoundError:
            pass   # done already, by an earlier roll-forward or by the save itself


def _commit_files(prefix: str, renames: Sequence[Tuple[str, str]]) -> None:
    """Moves a write's finished, fsynced temporary files (all in the prefix's directory) to
    their final names, all or none of them as far as readers of the prefix can tell.

    If writing the journal fails, nothing is committed and the temporary files are removed.
    Once the journal exists the write is committed: a failure after that point leaves the
    journal and the temporary files for the next roll-forward, and raises."""
    directory = os.path.dirname(prefix)
    journal = commit_journal_filename(prefix)
    with _directory_commit_lock(directory):
        try:
            atomic_write(journal, _encode_journal(renames))   # the commit point
        except BaseException:
            for tmp, _ in renames:
                _remove_quietly(tmp)
            raise
        _apply_renames(directory, [(os.path.basename(s), os.path.basename(d))
                                   for s, d in renames])
        fsync_directory(directory)   # the renames are durable before the journal goes
        # No fsync after this: a journal that reappears after a power loss names temporary
        # files that are gone, and rolling it forward does nothing.
        _remove_quietly(journal)


def roll_forward_commit(prefix: str) -> None:
    """Completes a write of ``prefix`` that was interrupted after its commit point: does the
    journal's renames whose temporary file still exists, then deletes the journal. Idempotent;
    a no-op (one ``stat``) when there is no journal. Call before reading or writing a prefix."""
    journal = commit_journal_filename(prefix)
    if not os.path.exists(journal):
        return
    directory = os.path.dirname(prefix)
    with _directory_commit_lock(directory):
        try:
            with open(journal, "rb") as f:
                payload = f.read()
        except FileNotFoundError:
            return   # the save finished, or another reader rolled it forward, meanwhile
        _apply_renames(directory, _decode_journal(payload, journal))
        fsync_directory(directory)
        _remove_quietly(journal)


def _prefix_temps_pattern(prefix: str) -> str:
    """The final names of ``prefix``'s files that a write creates under temporary names."""
    return re.escape(os.path.basename(prefix)) + \
        r"\.(?:index|data-[0-9]{5}-of-[0-9]{5}|" + re.escape(_JOURNAL_SUFFIX[1:]) + ")"


def _prepare_prefix_for_writing(prefix: str) -> None:
    """Before a write of ``prefix``: finishes an interrupted commit (its temporary files are
    the committed checkpoint), then removes what killed writes of the prefix left behind."""
    roll_forward_commit(prefix)
    _remove_stale_temps(os.path.dirname(prefix), _prefix_temps_pattern(prefix))


def discard_interrupted_writes(prefix: str) -> None:
    """For deleting a checkpoint: removes its journal (so nothing rolls forward into the
    deleted checkpoint) and its stale temporary files."""
    with _directory_commit_lock(os.path.dirname(prefix)):
        _remove_quietly(commit_journal_filename(prefix))
    _remove_stale_temps(os.path.dirname(prefix), _prefix_temps_pattern(prefix))


def as_os_error(e: OSError, what: str) -> errors.OpError:
    """An OSError as the TensorFlow error class a filesystem failure gives."""
    message = f"{what}: {e.strerror or e}"
    if isinstance(e, FileNotFoundError):
        return errors.NotFoundError(None, None, message)
    if isinstance(e, PermissionError):
        return errors.PermissionDeniedError(None, None, message)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return errors.ResourceExhaustedError(None, None, message)
    return errors.UnknownError(None, None, message)


# -- writing ---------------------------------------------------------------------------------------
def _string_tensor_bytes(arr: np.ndarray) -> Tuple[bytes, int]:
    items = [x if isinstance(x, bytes) else str(x).encode() for x in arr.reshape(-1)]
    lengths = b"".join(varint(len(x)) for x in items)
    crc = 0
    for x in items:
        crc = crc32c_extend(crc, struct.pack("<I" if len(x) <= 0xFFFFFFFF else "<Q", len(x)))
    length_checksum = struct.pack("<I", mask_crc(crc))
    crc = crc32c_extend(crc, length_checksum)
    for x in items:
        crc = crc32c_extend(crc, x)
    return lengths + length_checksum + b"".join(items), crc


class BundleWriter:
    """Writes one bundle (one data shard). ``add`` tensors, then ``finish``; ``abort`` on error."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._entries: Dict[str, BundleEntry] = {}
        self._size = 0
        directory = os.path.dirname(prefix)
        if directory and not os.path.isdir(directory):
            try:
                os.mkdir(directory)   # one level, as TensorFlow's Env::CreateDir
            except FileExistsError:
                pass
            except OSError as e:
                raise as_os_error(e, f"Failed to create a directory: {directory}") from None
        try:
            _prepare_prefix_for_writing(prefix)
        except OSError as e:
            raise as_os_error(e, f"Failed to complete an interrupted save of {prefix}") from None
        self._data_path = _claim_temp_name(data_filename(prefix, 0, 1))
        try:
            self._file = open(self._data_path, "wb")
        except OSError as e:
            _release_temp_name(self._data_path)
            raise as_os_error(e, f"Failed to open {self._data_path} for writing") from None

    def add(self, key: str, value) -> None:
        if not key:
            raise errors.InvalidArgumentError(None, None, "Tensor names in a checkpoint must "
                                              "not be empty")
        if key in self._entries:
            raise errors.InvalidArgumentError(None, None, f"Adding duplicate key: {key}")
        arr = np.asarray(value)
        shape = tuple(int(d) for d in arr.shape)
        tf_dtype = dtypes.as_dtype(arr.dtype)
        if tf_dtype is dtypes.string:
            payload, crc = _string_tensor_bytes(arr)
        else:
            flat = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
            payload = flat.reshape(-1).view(np.uint8)
            crc = crc32c(payload)
        self._entries[key] = BundleEntry(datatype_enum(tf_dtype), shape,
                                         0, self._size, len(payload), mask_crc(crc))
        try:
            write_all(self._file, payload)
        except OSError as e:
            raise as_os_error(e, f"Failed to write checkpoint data for {key} to "
                              f"{self._data_path}") from None
        self._size += len(payload)

    def add_slice(self, key: str, full_shape: Sequence[int], extents: tensor_slices.Extents,
                  value) -> None:
        """Adds one slice of tensor ``key`` (of shape ``full_shape``), as TensorFlow's
        BundleWriter::AddSlice: the full tensor's entry lists the slices, each slice's bytes
        are stored under its own key. A slice covering the whole tensor is stored plainly."""
        full_shape = tuple(int(d) for d in full_shape)
        value = np.asarray(value)
        try:
            tensor_slices.check_within(extents, full_shape, f"Tensor {key}")
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        expected = tensor_slices.slice_shape(extents, full_shape)
        if tuple(value.shape) != expected:
            raise errors.InvalidArgumentError(
                None, None, f"Slice {tensor_slices.format_extents(extents)} of tensor {key} has "
                f"shape {list(expected)}, but the value saved for it has shape {list(value.shape)}")
        if tensor_slices.is_full(extents, full_shape):
            self.add(key, value)
            return
        dtype_enum = datatype_enum(dtypes.as_dtype(value.dtype))
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = BundleEntry(dtype_enum, full_shape, 0, 0, 0, 0)
        elif not entry.slices or entry.shape != full_shape or entry.dtype_enum != dtype_enum:
            raise errors.InvalidArgumentError(
                None, None, f"Tensor {key} is saved twice: as slices of shape "
                f"{list(full_shape)}, and as another tensor of shape {list(entry.shape)}")
        entry.slices += (extents,)
        self.add(_key_str(tensor_slices.slice_key(key, extents)), value)

    def finish(self) -> None:
        """Flushes both files and commits them under their final names (see the module's
        docstring): readers see the old checkpoint or the new one, never a mix."""
        index_path = index_filename(self.prefix)
        index_tmp = _claim_temp_name(index_path)
        try:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                items = [(b"", _encode_header(1))]
                items += _sorted_items(self._entries)
                _write_synced(index_tmp, build_table(items))
            except BaseException:
                _remove_quietly(index_tmp)
                self.abort()
                raise
            _commit_files(self.prefix, [(self._data_path, data_filename(self.prefix, 0, 1)),
                                        (index_tmp, index_path)])
        except OSError as e:
            raise as_os_error(e, f"Failed to write checkpoint {self.prefix}") from None
        finally:
            _release_temp_name(index_tmp)
            _release_temp_name(self._data_path)

    def abort(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass
        _remove_quietly(self._data_path)
        _release_temp_name(self._data_path)


def _key_str(key: bytes) -> str:
    """Keys are kept as str; a slice's key (binary) round-trips through surrogate escapes."""
    return key.decode("utf-8", "surrogateescape")


def _sorted_items(entries: Dict[str, BundleEntry]) -> List[Tuple[bytes, bytes]]:
    """The index table's (key, entry) items, in the table's bytewise key order."""
    keyed = [(k.encode("utf-8", "surrogateescape"), e) for k, e in entries.items()]
    return [(k, e.encode()) for k, e in sorted(keyed, key=lambda kv: kv[0])]


def write_bundle(prefix: str, tensors: Sequence[Tuple[str, np.ndarray]],
                 slices: Optional[Sequence[Optional[Tuple[Sequence[int],
                                                          tensor_slices.Extents]]]] = None
                 ) -> None:
    """Writes ``tensors`` ((key, value) pairs) as one bundle; ``slices``, if given, has for each
    tensor None (the whole tensor) or (full shape, extents): the value is that slice."""
    writer = BundleWriter(prefix)
    try:
        for i, (name, value) in enumerate(tensors):
            if slices is not None and slices[i] is not None:
                writer.add_slice(name, slices[i][0], slices[i][1], value)
            else:
                writer.add(name, value)
    except BaseException:
        writer.abort()
        raise
    writer.finish()


# -- reading ---------------------------------------------------------------------------------------
class BundleReader:
    """Reads a V2 checkpoint: ``entry(name)``, ``read(name)``; verifies every checksum."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        filename = index_filename(prefix)
        try:
            roll_forward_commit(prefix)
        except OSError as e:
            raise as_os_error(e, f"Failed to complete an interrupted save of {prefix}") from None
        try:
            with open(filename, "rb") as f:
                buf = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                f"matching files for {prefix}") from None
        except OSError as e:
            raise as_os_error(e, f"Failed to read {filename}") from None
        try:
            items = read_table(buf, filename)
        except ValueError as e:
            raise _corrupt(filename, str(e)) from None
        if not items or items[0][0] != b"":
            raise _corrupt(filename, "failed to seek to header entry")
        try:
            header = parse_fields(items[0][1])
            self.entries: Dict[str, BundleEntry] = {
                k.decode("utf-8", "surrogateescape"): BundleEntry.decode(v) for k, v in items[1:]}
        except ValueError as e:
            raise _corrupt(filename, f"unable to parse an entry: {e}") from None
        self.num_shards = header.get(1, [0])[-1]
        self._big_endian = header.get(2, [0])[-1] == 1
        version = parse_fields(header[3][-1]) if 3 in header else {}
        min_consumer = version.get(2, [0])[-1]
        if min_consumer > _BUNDLE_VERSION:
            raise errors.InvalidArgumentError(
                None, None, f"Checkpoint min consumer version {min_consumer} above current "
                f"version {_BUNDLE_VERSION} for checkpoint {prefix}")

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def tensor_names(self) -> List[str]:
        """The names of the checkpoint's tensors: the keys, less those of stored slices."""
        return [k for k in self.entries if not k.startswith("\x00")]

    def entry(self, name: str) -> BundleEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint") from None

    def dtype(self, name: str) -> dtypes.DType:
        entry = self.entry(name)
        try:
            return ENUM_DATATYPE[entry.dtype_enum]
        except KeyError:
            raise errors.UnimplementedError(
                None, None, f"Checkpoint tensor {name} has dtype {entry.dtype_name}, which "
                "tfjupyter does not support") from None

    def read(self, name: str) -> np.ndarray:
        """The whole tensor ``name`` (assembled from its slices if it is stored in slices)."""
        entry = self.entry(name)
        if entry.has_slices:
            return self.read_slice(name, tuple((0, tensor_slices.FULL_EXTENT)
                                               for _ in entry.shape))
        return self._read_entry(name, entry)

    def read_slice(self, name: str, extents: tensor_slices.Extents) -> np.ndarray:
        """The slice ``extents`` of tensor ``name``, from the stored slices that overlap it."""
        entry = self.entry(name)
        try:
            tensor_slices.check_within(extents, entry.shape, f"Checkpoint tensor {name}")
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        want = tensor_slices.bounds(extents, entry.shape)
        if not entry.has_slices:
            return self._read_entry(name, entry)[tuple(slice(a, b) for a, b in want)]
        out = np.empty(tensor_slices.slice_shape(extents, entry.shape),
                       dtype=self.dtype(name).as_numpy_dtype)
        copied = 0
        for stored in entry.slices:
            have = tensor_slices.bounds(stored, entry.shape)
            if all(a < d and c < b for (a, b), (c, d) in zip(want, have)):
                key = _key_str(tensor_slices.slice_key(name, stored))
                copied += tensor_slices.copy_overlap(out, want, self._read_entry(
                    key, self.entry(key)), have)
        if copied < out.size:
            raise errors.NotFoundError(
                None, None, f"The slice {tensor_slices.format_extents(extents)} of checkpoint "
                f"tensor {name} (shape {list(entry.shape)}) is not fully covered by its stored "
                "slices")
        return out

    def _read_entry(self, name: str, entry: BundleEntry) -> np.ndarray:
        dtype = self.dtype(name)
        path = data_filename(self.prefix, entry.shard_id, self.num_shards)
        try:
            with open(path, "rb") as f:
                f.seek(entry.offset)
                buf = bytearray(entry.size)
                got = f.readinto(buf)
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Checkpoint data file {path} for tensor "
                                       f"{name} does not exist") from None
        except OSError as e:
            raise as_os_error(e, f"Failed to read {path}") from None
        if got != entry.size:
            raise errors.DataLossError(None, None, f"Requested {entry.size} bytes of {name} "
                                       f"but read {got} bytes from {path}")
        count = int(np.prod(entry.shape, dtype=np.int64))
        if dtype is dtypes.string:
            value, actual = self._parse_strings(buf, count, name)
        else:
            np_dtype = np.dtype(dtype.as_numpy_dtype).newbyteorder(">" if self._big_endian else "<")
            if entry.size != count * np_dtype.itemsize:
                raise errors.DataLossError(None, None, f"Invalid size in bundle entry: key "
                                           f"{name}; stored size {entry.size}; expected size "
                                           f"{count * np_dtype.itemsize}")
            actual = crc32c(buf)
            value = np.frombuffer(buf, dtype=np_dtype).reshape(entry.shape)
            if self._big_endian:
                value = value.astype(np_dtype.newbyteorder("="))
        if unmask_crc(entry.crc32c) != actual:
            raise errors.DataLossError(
                None, None, f"Checksum does not match: stored {unmask_crc(entry.crc32c):08d} vs. "
                f"calculated on the restored bytes {actual} (tensor {name} in {path})")
        return value

    def _parse_strings(self, buf: bytearray, count: int, name: str):
        data = bytes(buf)
        pos, lengths, crc = 0, [], 0
        try:
            for _ in range(count):
                n, pos = read_varint(data, pos)
                lengths.append(n)
                crc = crc32c_extend(crc, struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n))
            (length_checksum,) = struct.unpack_from("<I", data, pos)
        except (ValueError, struct.error):
            raise errors.DataLossError(None, None, f"Truncated string tensor {name}") from None
        if unmask_crc(length_checksum) != crc:
            raise errors.DataLossError(None, None, f"The length checksum does not match for "
                                       f"string tensor {name}")
        crc = crc32c_extend(crc, data[pos:pos + 4])
        pos += 4
        out = np.empty(count, dtype=object)
        for i, n in enumerate(lengths):
            out[i] = data[pos:pos + n]
            crc = crc32c_extend(crc, out[i])
            pos += n
        entry = self.entries[name]
        return out.reshape(entry.shape), crc


# -- sharded checkpoints ---------------------------------------------------------------------------
def merge_bundles(prefixes: Sequence[str], merged_prefix: str, delete_old_dirs: bool) -> None:
    """MergeV2Checkpoints: shard bundles -> one bundle under ``merged_prefix``."""
    readers = [BundleReader(p) for p in prefixes]
    entries: Dict[str, BundleEntry] = {}
    shard_data_files: List[str] = []   # of the shards, in merged shard order
    for reader in readers:
        if reader.num_shards != 1:
            raise errors.InvalidArgumentError(None, None, f"Can only merge single-shard "
                                              f"bundles; {reader.prefix} has {reader.num_shards}")
        for key, entry in reader.entries.items():
            if key in entries and entries[key].has_slices and entry.has_slices:
                entries[key].slices += entry.slices   # parts of one variable saved by two shards
                continue
            if key in entries:
                raise errors.InvalidArgumentError(
                    None, None, f"Duplicate tensor keyed by {key} encountered, when merging "
                    f"prefix: {reader.prefix}")
            shard = 0 if entry.has_slices else len(shard_data_files)
            entries[key] = BundleEntry(entry.dtype_enum, entry.shape, shard, entry.offset,
                                       entry.size, entry.crc32c, entry.slices)
        shard_data_files.append(data_filename(reader.prefix, 0, 1))
    total = len(shard_data_files)
    directory = os.path.dirname(merged_prefix)
    if directory and not os.path.isdir(directory):
        os.mkdir(directory)
    try:
        _prepare_prefix_for_writing(merged_prefix)
    except OSError as e:
        raise as_os_error(e, f"Failed to complete an interrupted save of {merged_prefix}") \
            from None
    # The shards' data files first move next to the merged prefix under fresh temporary names:
    # the journal then names only files that no later save can recreate, so a stale journal
    # can never install a later save's shard with this save's index.
    commit: List[Tuple[str, str]] = []
    index_path = index_filename(merged_prefix)
    index_tmp = _claim_temp_name(index_path)
    try:
        try:
            for shard, src in enumerate(shard_data_files):
                final = data_filename(merged_prefix, shard, total)
                tmp = _claim_temp_name(final)
                commit.append((tmp, final))
                os.replace(src, tmp)
            items = [(b"", _encode_header(total))]
            items += _sorted_items(entries)
            _write_synced(index_tmp, build_table(items))
        except BaseException:
            for tmp, _ in commit:
                _remove_quietly(tmp)
            _remove_quietly(index_tmp)
            raise
        commit.append((index_tmp, index_path))
        _commit_files(merged_prefix, commit)
    except OSError as e:
        raise as_os_error(e, f"Failed to merge checkpoint shards into {merged_prefix}") from None
    finally:
        for tmp, _ in commit:
            _release_temp_name(tmp)
        _release_temp_name(index_tmp)
    for prefix in prefixes:
        _remove_quietly(index_filename(prefix))
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(prefix))  # only if the shards had a directory of their own
            except OSError:
                pass

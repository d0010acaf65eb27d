"""CPU kernels for parsing: ParseExample, ParseSingleExample, DecodeRaw.

Parsing ``tf.train.Example`` protos one by one with the protobuf runtime costs ~13 us an example
in Python (parse, two map lookups, copying the values), too slow to feed a multi-tower trainer.
So, as TensorFlow's ``example_proto_fast_parsing.cc`` does, the hot path reads the protobuf wire
format directly: the batch is joined into one buffer and a Numba loop finds, for every example
and wanted key, the feature's kind, the span of its values and their count; a second loop
copies the float/int64 values into the output. Strings are taken from their spans in Python.

The fast path understands the encoding every serializer produces (each singular field once,
packed repeated numbers). Anything else that is still valid protobuf (a field repeated, so that
messages merge; unpacked numbers; groups) makes the indexer answer "not canonical" for that
example, which is then parsed by the protobuf runtime and serialized again, canonically, so
that the exact protobuf semantics decide. Undecodable input is an InvalidArgumentError.
"""
from __future__ import annotations

from typing import List

import numba
import numpy as np
from google.protobuf.message import DecodeError

from tfjupyter.example import BytesList, Example

from . import KERNELS
from .array_kernels import dims_text

# Feature kinds: the field numbers of Feature's oneof (0: no value, as for an absent feature).
_BYTES, _FLOAT, _INT64 = 1, 2, 3
_KIND_OF_DTYPE = {"string": _BYTES, "float32": _FLOAT, "int64": _INT64}
_TF_TYPE_NAME = {_BYTES: "string", _FLOAT: "float", _INT64: "int64"}

_OK, _NOT_CANONICAL = 0, 1


# -- the wire-format indexer ---------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _read_varint(buf, p, end):
    """(value, position after it); position -1 if the varint is truncated or too long."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while p < end:
        b = buf[p]
        p += 1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += np.uint64(7)
        if shift >= np.uint64(64):
            return np.uint64(0), -1
    return np.uint64(0), -1


@numba.njit(cache=True, nogil=True)
def _skip_field(buf, p, end, wire_type):
    """The position after an (unknown) field's value; -1 if we do not skip it (groups, bad
    wire types, truncation: the protobuf runtime decides those)."""
    if wire_type == 0:
        _, p = _read_varint(buf, p, end)
        return p
    if wire_type == 1:
        return p + 8 if p + 8 <= end else -1
    if wire_type == 5:
        return p + 4 if p + 4 <= end else -1
    if wire_type == 2:
        n, p = _read_varint(buf, p, end)
        if p < 0 or np.uint64(end - p) < n:
            return -1
        return p + np.int64(n)
    return -1


@numba.njit(cache=True, nogil=True)
def _read_length_delimited(buf, p, end):
    """(start, end) of a length-delimited value starting at p; (-1, -1) if truncated."""
    n, p = _read_varint(buf, p, end)
    if p < 0 or np.uint64(end - p) < n:
        return -1, -1
    return p, p + np.int64(n)


@numba.njit(cache=True, nogil=True)
def _match_key(buf, ks, ke, keys, key_starts, key_ends):
    """Index of the wanted key equal to buf[ks:ke], or -1."""
    for k in range(key_starts.shape[0]):
        a, b = key_starts[k], key_ends[k]
        if b - a != ke - ks:
            continue
        same = True
        for j in range(b - a):
            if keys[a + j] != buf[ks + j]:
                same = False
                break
        if same:
            return k
    return -1


@numba.njit(cache=True, nogil=True)
def _index_feature(buf, fs, fe, i, k, kind, vstart, vend, count):
    """Fills kind/vstart/vend/count[i, k] from the Feature message buf[fs:fe]; False if it is
    not in canonical form."""
    kind[i, k] = 0
    count[i, k] = 0
    vstart[i, k] = vend[i, k] = 0  # an earlier entry of the same key may have set them
    p = fs
    seen_list = False
    while p < fe:
        tag, p = _read_varint(buf, p, fe)
        if p < 0:
            return False
        field, wire_type = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
        if 1 <= field <= 3:
            if wire_type != 2 or seen_list:
                return False  # a second list merges with (or replaces) the first: not canonical
            seen_list = True
            ls, le = _read_length_delimited(buf, p, fe)
            if ls < 0:
                return False
            p = le
            kind[i, k] = field
            if field == 1:  # BytesList: repeated bytes value = 1
                vstart[i, k], vend[i, k] = ls, le
                q = ls
                n = 0
                while q < le:
                    t, q = _read_varint(buf, q, le)
                    if q < 0:
                        return False
                    if t != np.uint64(10):  # field 1, length-delimited
                        return False
                    s, e = _read_length_delimited(buf, q, le)
                    if s < 0:
                        return False
                    q = e
                    n += 1
                count[i, k] = n
            else:  # FloatList / Int64List: one packed `value = 1` field, or none
                q = ls
                seen_values = False
                while q < le:
                    t, q = _read_varint(buf, q, le)
                    if q < 0 or t != np.uint64(10) or seen_values:
                        return False  # unpacked values, several packed runs, unknown fields
                    seen_values = True
                    s, e = _read_length_delimited(buf, q, le)
                    if s < 0:
                        return False
                    q = e
                    vstart[i, k], vend[i, k] = s, e
                    if field == 2:
                        if (e - s) % 4:
                            return False
                        count[i, k] = (e - s) // 4
                    else:
                        n = 0
                        r = s
                        while r < e:
                            _, r = _read_varint(buf, r, e)
                            if r < 0:
                                return False
                            n += 1
                        count[i, k] = n
        else:
            p = _skip_field(buf, p, fe, wire_type)
            if p < 0:
                return False
    return True


@numba.njit(cache=True, nogil=True)
def _index_examples(buf, starts, ends, keys, key_starts, key_ends, kind, vstart, vend, count,
                    status):
    """For each example i and wanted key k: the kind of its feature (0: absent), the span of its
    values and their count. status[i] is _NOT_CANONICAL where the fast path cannot decide."""
    n_keys = key_starts.shape[0]
    for i in range(starts.shape[0]):
        status[i] = _OK
        for k in range(n_keys):
            kind[i, k] = 0
            count[i, k] = 0
        p, end = starts[i], ends[i]
        seen_features = False
        ok = True
        while p < end and ok:
            tag, p = _read_varint(buf, p, end)
            if p < 0:
                ok = False
                break
            field, wire_type = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
            if field != 1:
                p = _skip_field(buf, p, end, wire_type)
                ok = p >= 0
                continue
            if wire_type != 2 or seen_features:  # Example.features twice merges: not canonical
                ok = False
                break
            seen_features = True
            fs, fe = _read_length_delimited(buf, p, end)
            if fs < 0:
                ok = False
                break
            p = fe
            q = fs
            while q < fe and ok:  # Features: map<string, Feature> feature = 1
                t, q = _read_varint(buf, q, fe)
                if q < 0:
                    ok = False
                    break
                ef, ewt = np.int64(t >> np.uint64(3)), np.int64(t & np.uint64(7))
                if ef != 1:
                    q = _skip_field(buf, q, fe, ewt)
                    ok = q >= 0
                    continue
                if ewt != 2:
                    ok = False
                    break
                es, ee = _read_length_delimited(buf, q, fe)
                if es < 0:
                    ok = False
                    break
                q = ee
                # A map entry: key = 1, value = 2 (each may be absent: "" / an empty Feature).
                ks, ke, vs, ve = es, es, -1, -1
                seen_key = seen_value = False
                r = es
                while r < ee:
                    t2, r = _read_varint(buf, r, ee)
                    if r < 0:
                        ok = False
                        break
                    f2, w2 = np.int64(t2 >> np.uint64(3)), np.int64(t2 & np.uint64(7))
                    if f2 == 1 or f2 == 2:
                        if w2 != 2 or (seen_key if f2 == 1 else seen_value):
                            ok = False
                            break
                        s, e = _read_length_delimited(buf, r, ee)
                        if s < 0:
                            ok = False
                            break
                        r = e
                        if f2 == 1:
                            seen_key = True
                            ks, ke = s, e
                        else:
                            seen_value = True
                            vs, ve = s, e
                    else:
                        r = _skip_field(buf, r, ee, w2)
                        if r < 0:
                            ok = False
                            break
                if not ok:
                    break
                k = _match_key(buf, ks, ke, keys, key_starts, key_ends)
                if k < 0:
                    continue
                if vs < 0:  # an empty Feature: no kind, as if absent (a later entry wins)
                    kind[i, k] = 0
                    count[i, k] = 0
                elif not _index_feature(buf, vs, ve, i, k, kind, vstart, vend, count):
                    ok = False
        if not ok:
            status[i] = _NOT_CANONICAL
    return status


@numba.njit(cache=True)
def _index_one(buf, keys, key_starts, key_ends, index):
    """_index_examples of one record, all of buf, into index[0..3] = kind, vstart, vend, count
    (each [1, n_keys]); its status (_OK or _NOT_CANONICAL).

    Unlike the batch functions this one keeps the GIL: it runs for a microsecond or two, and
    each release would hand the GIL to another runner thread of a queue-based pipeline, a
    futex round trip and a context switch per record that cost more than the indexing."""
    starts = np.zeros(1, dtype=np.int64)
    ends = np.full(1, buf.shape[0], dtype=np.int64)
    status = np.empty(1, dtype=np.int8)
    _index_examples(buf, starts, ends, keys, key_starts, key_ends, index[0], index[1], index[2],
                    index[3], status)
    return status[0]


@numba.njit(cache=True, nogil=True)
def _fill_float32(buf, vstart, count, rows, offsets, out_bits):
    """Copies the packed little-endian floats of the given examples into out_bits (a uint32 view
    of the output) at offsets."""
    for j in range(rows.shape[0]):
        i = rows[j]
        p = vstart[i]
        o = offsets[j]
        for m in range(count[i]):
            out_bits[o + m] = (np.uint32(buf[p]) | (np.uint32(buf[p + 1]) << np.uint32(8))
                               | (np.uint32(buf[p + 2]) << np.uint32(16))
                               | (np.uint32(buf[p + 3]) << np.uint32(24)))
            p += 4


@numba.njit(cache=True, nogil=True)
def _fill_int64(buf, vstart, vend, rows, offsets, out):
    """Decodes the packed varints of the given examples into out at offsets (two's complement:
    negative int64 values are 10-byte varints)."""
    for j in range(rows.shape[0]):
        i = rows[j]
        p, e = vstart[i], vend[i]
        o = offsets[j]
        while p < e:
            v, p = _read_varint(buf, p, e)
            out[o] = np.int64(v)
            o += 1


# -- the kernels -----------------------------------------------------------------------------------
class _Index:
    """The indexer's answer for a batch: arrays [batch, n_keys]."""

    def __init__(self, records: List[bytes], spec: "_Spec"):
        self.records = records
        self._keys, self._key_starts, self._key_ends = spec.key_table
        self._op = spec.op
        self._build()
        bad = np.flatnonzero(self.status)
        if bad.size:
            self._canonicalize(bad)

    def _build(self) -> None:
        n, n_keys = len(self.records), len(self._key_starts)
        lens = np.fromiter(map(len, self.records), dtype=np.int64, count=n)
        self.ends = np.cumsum(lens)
        self.starts = self.ends - lens
        self.data = self.records[0] if n == 1 else b"".join(self.records)
        self.buf = np.frombuffer(self.data or b"\0", dtype=np.uint8)
        # The indexer sets kind, count and status everywhere, vstart/vend where kind != 0.
        self.kind = np.empty((n, n_keys), dtype=np.int64)
        self.vstart = np.zeros((n, n_keys), dtype=np.int64)
        self.vend = np.zeros((n, n_keys), dtype=np.int64)
        self.count = np.empty((n, n_keys), dtype=np.int64)
        self.status = np.empty(n, dtype=np.int8)
        _index_examples(self.buf, self.starts, self.ends, self._keys, self._key_starts,
                        self._key_ends, self.kind, self.vstart, self.vend, self.count,
                        self.status)

    def _canonicalize(self, bad) -> None:
        """Lets the protobuf runtime parse the examples the fast path could not, and indexes
        their canonical serialization instead."""
        records = list(self.records)
        for i in bad:
            try:
                example = Example.FromString(records[i])
            except DecodeError:
                raise ValueError(f"{self._op.type} '{self._op.name}': could not parse example "
                                 f"input {i}, value: {records[i][:64]!r}") from None
            # Unknown fields are all that could still be non-canonical after a round trip
            # (groups, say); they carry nothing we parse.
            example.DiscardUnknownFields()
            records[i] = example.SerializeToString(deterministic=True)
        self.records = records
        self._build()
        if self.status.any():  # the runtime's own output must be canonical
            raise RuntimeError(f"{self._op.type} '{self._op.name}': internal error: example "
                               f"{int(np.flatnonzero(self.status)[0])} is not canonical after "
                               f"re-serialization")

    def bytes_values(self, i: int, k: int) -> list:
        return list(BytesList.FromString(self.data[self.vstart[i, k]:self.vend[i, k]]).value)


def _example_name(names, i: int) -> str:
    if names is not None and names.size:
        name = names.reshape(-1)[i]
        return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    return "<unknown>"


class _Spec:
    """A parse op's features, from its attrs."""

    def __init__(self, op):
        self.op = op
        self.sparse_keys = list(op.get_attr("sparse_keys"))
        self.sparse_types = [t.name for t in op.get_attr("sparse_types")]
        self.dense_keys = list(op.get_attr("dense_keys"))
        self.dense_types = [t.name for t in op.get_attr("Tdense")]
        self.dense_shapes = [tuple(s.as_list()) for s in op.get_attr("dense_shapes")]
        self.dense_sizes = [int(np.prod(shape, dtype=np.int64)) for shape in self.dense_shapes]
        # The wanted keys (column k of the index), concatenated, with their spans.
        key_bytes = [k.encode("utf-8") for k in self.dense_keys + self.sparse_keys]
        key_lens = np.array([len(k) for k in key_bytes], dtype=np.int64)
        key_ends = np.cumsum(key_lens)
        self.key_table = (np.frombuffer(b"".join(key_bytes) or b"\0", dtype=np.uint8),
                          key_ends - key_lens, key_ends)

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.op.type} '{self.op.name}': {message}")

    def check_kinds(self, index: _Index, k: int, key: str, dtype: str, names) -> np.ndarray:
        """The examples that have feature k; a clear error where its kind is not dtype's."""
        want = _KIND_OF_DTYPE[dtype]
        kinds = index.kind[:, k]
        present = kinds != 0
        wrong = np.flatnonzero(present & (kinds != want))
        if wrong.size:
            i = int(wrong[0])
            raise self.error(f"Name: {_example_name(names, i)}, Feature: {key}.  Data types "
                             f"don't match. Data type: {_TF_TYPE_NAME[int(kinds[i])]} but "
                             f"expected type: {_TF_TYPE_NAME[want]}")
        return present

    def dense(self, index: _Index, d: int, default: np.ndarray, names) -> np.ndarray:
        key, dtype, shape = self.dense_keys[d], self.dense_types[d], self.dense_shapes[d]
        n, size = len(index.records), self.dense_sizes[d]
        out = np.empty((n, size), dtype=object if dtype == "string" else np.dtype(dtype))
        counts = index.count[:, d]
        if dtype != "string" and (index.kind[:, d] == _KIND_OF_DTYPE[dtype]).all() and \
                (counts == size).all():  # the usual case: every example has the right values
            self._fill(index, d, dtype, np.arange(n), out.reshape(-1), size)
            return out.reshape((n,) + shape)
        present = self.check_kinds(index, d, key, dtype, names)
        wrong = np.flatnonzero(present & (counts != size))
        if wrong.size:
            i = int(wrong[0])
            raise self.error(f"Name: {_example_name(names, i)}, Key: {key}, Index: {i}.  "
                             f"Number of {_TF_TYPE_NAME[_KIND_OF_DTYPE[dtype]]} values != "
                             f"expected.  Values size: {int(counts[i])} but output shape: "
                             f"{dims_text(shape)}")
        missing = np.flatnonzero(~present)
        # A required feature's default is empty (as in TensorFlow); a given default has exactly
        # `size` values (the op's shape rule checked that).
        if missing.size and default.size != size:
            i = int(missing[0])
            raise self.error(f"Name: {_example_name(names, i)}, Feature: {key} (data type: "
                             f"{_TF_TYPE_NAME[_KIND_OF_DTYPE[dtype]]}) is required but could "
                             f"not be found.")
        rows = np.flatnonzero(present)
        if dtype == "string":
            for i in rows:
                out[i] = index.bytes_values(int(i), d)
        elif rows.size:
            self._fill(index, d, dtype, rows, out.reshape(-1), size)
        if missing.size:
            out[missing] = default.reshape(size)
        return out.reshape((n,) + shape)

    @staticmethod
    def _fill(index: _Index, k: int, dtype: str, rows: np.ndarray, flat_out: np.ndarray,
              size: int) -> None:
        """Decodes the numbers of feature k of examples `rows` into flat_out, `size` apart."""
        offsets = rows * size
        if dtype == "float32":
            _fill_float32(index.buf, index.vstart[:, k], index.count[:, k], rows, offsets,
                          flat_out.view(np.uint32))
        else:
            _fill_int64(index.buf, index.vstart[:, k], index.vend[:, k], rows, offsets, flat_out)

    def sparse(self, index: _Index, s: int, names):
        k = len(self.dense_keys) + s
        key, dtype = self.sparse_keys[s], self.sparse_types[s]
        n = len(index.records)
        present = self.check_kinds(index, k, key, dtype, names)
        counts = np.where(present, index.count[:, k], 0)
        total = int(counts.sum())
        offsets_all = np.cumsum(counts) - counts
        indices = np.empty((total, 2), dtype=np.int64)
        indices[:, 0] = np.repeat(np.arange(n, dtype=np.int64), counts)
        indices[:, 1] = np.arange(total, dtype=np.int64) - np.repeat(offsets_all, counts)
        values = np.empty(total, dtype=object if dtype == "string" else np.dtype(dtype))
        rows = np.flatnonzero(counts)
        if dtype == "string":
            for i in rows:
                o = int(offsets_all[i])
                values[o:o + int(counts[i])] = index.bytes_values(int(i), k)
        elif rows.size:
            if dtype == "float32":
                _fill_float32(index.buf, index.vstart[:, k], counts, rows, offsets_all[rows],
                              values.view(np.uint32))
            else:
                _fill_int64(index.buf, index.vstart[:, k], index.vend[:, k], rows,
                            offsets_all[rows], values)
        dense_shape = np.array([n, int(counts.max()) if n else 0], dtype=np.int64)
        return indices, values, dense_shape


def _records(serialized, spec: _Spec) -> List[bytes]:
    flat = np.reshape(serialized, -1)
    records = flat.tolist()
    for i, r in enumerate(records):
        if not isinstance(r, bytes):
            raise spec.error(f"serialized[{i}] is a {type(r).__name__}, not bytes")
    return records


def _parse_batch(spec: _Spec, serialized, names, defaults):
    records = _records(serialized, spec)
    if names is not None and names.size and names.size != len(records):
        raise spec.error(f"names must have one name per example: {names.size} names for "
                         f"{len(records)} examples")
    index = _Index(records, spec)
    dense = [spec.dense(index, d, defaults[d], names) for d in range(len(spec.dense_keys))]
    sparse = [spec.sparse(index, s, names) for s in range(len(spec.sparse_keys))]
    return sparse, dense


def _outputs(values: tuple):
    """A kernel returns a one-output op's value itself, several outputs as a tuple."""
    return values[0] if len(values) == 1 else values


@KERNELS.register("ParseExample")
def parse_example(op, ctx):
    spec = _Spec(op)

    def run(serialized, names, *defaults):
        if np.ndim(serialized) != 1:
            raise spec.error(f"serialized must be a vector, got shape "
                             f"{dims_text(np.shape(serialized))}")
        sparse, dense = _parse_batch(spec, serialized, names, defaults)
        return _outputs(tuple(s[0] for s in sparse) + tuple(s[1] for s in sparse)
                        + tuple(s[2] for s in sparse) + tuple(dense))
    return run


# The dense features of one example, in the usual case, without the batch machinery.
_ZERO = np.zeros(1, dtype=np.int64)   # the rows and offsets of a batch of one


def _dense_values(record: bytes, spans) -> list:
    """The dense values of one record from their spans, (start, end, kind, size, shape) each:
    packed little-endian floats, packed int64 varints, or one string."""
    out = []
    for start, end, kind, size, shape in spans:
        if kind == _FLOAT:   # a copy, in native order
            value = np.frombuffer(record, dtype="<f4", count=size, offset=start).astype(
                np.float32)
        elif kind == _INT64 and not shape and end - start == 1:
            out.append(np.array(record[start], dtype=np.int64))   # a label, usually
            continue
        elif kind == _INT64 and end - start == size:
            # As many bytes as varints: every value is a one-byte varint (0..127), so the
            # bytes are the values (labels, mostly).
            value = np.frombuffer(record, dtype=np.uint8, count=size, offset=start).astype(
                np.int64)
        elif kind == _INT64:
            value = np.empty(size, dtype=np.int64)
            _fill_int64(np.frombuffer(record, dtype=np.uint8), np.array([start]),
                        np.array([end]), _ZERO, _ZERO, value)
        else:   # one string, kept as bytes in an object array
            value = np.empty(1, dtype=object)
            value[0] = record[start:end]
        out.append(value if len(shape) == 1 else value.reshape(shape))
    return out


class _Layout:
    """Where one record's dense values lie, and the bytes around them (its "frame": tags,
    lengths, keys, unwanted features).

    A record of the same length whose frame bytes are equal has its values at the same places,
    of the same kinds and counts: each of the indexer's decisions depends on frame bytes only,
    since floats are fixed-size, an int64 list whose bytes are all below 0x80 holds one value
    per byte (checked per record: layouts are made only of such lists) and a string's bytes are
    opaque. Records written by one program usually share one layout, so checking the frame
    (a few bytes compares) replaces indexing each record."""

    __slots__ = ("length", "frame", "spans", "int_spans")

    def __init__(self, record: bytes, spans: list):
        self.length = len(record)
        self.spans = spans
        self.frame = []   # (offset, the bytes there)
        at = 0
        for start, end, *_ in sorted(spans):
            if start > at:
                self.frame.append((at, record[at:start]))
            at = end
        if at < len(record):
            self.frame.append((at, record[at:]))
        self.int_spans = [(start, end) for start, end, kind, _, _ in spans
                          if kind == _INT64 and end > start]

    def matches(self, record: bytes) -> bool:
        if len(record) != self.length:
            return False
        for at, frame in self.frame:
            if not record.startswith(frame, at):
                return False
        for start, end in self.int_spans:
            if max(record[start:end]) >= 0x80:   # a longer varint: fewer values than bytes
                return False
        return True


def _one_string_span(record: bytes, start: int, end: int):
    """The span of the one value of the BytesList record[start:end] (its tag 0x0a, its length,
    its bytes), or None if the list is not exactly that."""
    if end - start < 2 or record[start] != 0x0A:
        return None
    length, shift, p = 0, 0, start + 1
    while p < end and shift < 64:
        b = record[p]
        p += 1
        length |= (b & 0x7F) << shift
        if b < 0x80:
            return (p, end) if p + length == end else None
        shift += 7
    return None


class _SingleDense:
    """ParseSingleExample's fast path: an example whose dense features are all present, of
    their declared kind and size (what the batch path calls "the usual case"), each string
    feature holding one value.

    The queue-based tutorial pipelines parse one record per step of each runner thread, so the
    batch path's fixed costs (joining, cumsums, [1, n_keys] index arrays, checks done with numpy
    reductions, a Numba call per feature) were most of a step. Here one Numba call indexes the
    record (the same indexer, so the same canonical-or-not decision) and the values are taken
    with numpy straight from the record's bytes. The record's _Layout is kept: the next records
    that share it skip the indexer too. Anything else (no such case, sparse features, a
    non-canonical encoding) returns None: the batch path then decides, with its errors and
    defaults."""

    def __init__(self, spec: _Spec):
        self.keys, self.key_starts, self.key_ends = spec.key_table
        self.n_keys = len(self.key_starts)
        self.usable = not spec.sparse_keys and all(
            t != "string" or size == 1 for t, size in zip(spec.dense_types, spec.dense_sizes))
        self.dense = [(_KIND_OF_DTYPE[t], size, shape) for t, size, shape in
                      zip(spec.dense_types, spec.dense_sizes, spec.dense_shapes)]
        # The last layout made (replaced whole: the runner threads that share this kernel need
        # no lock), and how many were made and reused. Where records rarely share one (an
        # unwanted feature that varies, say), making them would only cost: then they stop.
        self.layout = None
        self.layouts_made = self.layout_hits = 0

    def __call__(self, record: bytes):
        if not self.usable or not record:
            return None
        layout = self.layout
        if layout is not None and layout.matches(record):
            self.layout_hits += 1
            return _dense_values(record, layout.spans)
        spans = self._index(record)
        if spans is None:
            return None
        if self.layouts_made < 4 or self.layout_hits >= 4 * self.layouts_made:
            if all(kind != _INT64 or end - start == size
                   for start, end, kind, size, _ in spans):
                self.layout = _Layout(record, spans)
                self.layouts_made += 1
        return _dense_values(record, spans)

    def _index(self, record: bytes):
        """The spans of the dense features' values, (start, end, kind, size, shape) each, by
        the indexer; None unless this is the usual case."""
        buf = np.frombuffer(record, dtype=np.uint8)
        index = np.empty((4, 1, self.n_keys), dtype=np.int64)   # kind, vstart, vend, count
        if _index_one(buf, self.keys, self.key_starts, self.key_ends, index) != _OK:
            return None
        kinds, vstarts, vends, counts = index[:, 0, :].tolist()
        spans = []
        for k, (want, size, shape) in enumerate(self.dense):
            if kinds[k] != want or counts[k] != size:
                return None
            start, end = vstarts[k], vends[k]
            if want == _BYTES:
                span = _one_string_span(record, start, end)
                if span is None:
                    return None
                start, end = span
            spans.append((start, end, want, size, shape))
        return spans


@KERNELS.register("ParseSingleExample")
def parse_single_example(op, ctx):
    spec = _Spec(op)
    fast = _SingleDense(spec)

    def run(serialized, *defaults):
        if type(serialized) is np.ndarray and serialized.ndim == 0:   # a reader's record
            record = serialized[()]
        elif np.ndim(serialized) == 0:
            record = serialized
        else:
            raise spec.error(f"serialized must be a scalar, got shape "
                             f"{dims_text(np.shape(serialized))}")
        if type(record) is bytes:
            dense = fast(record)
            if dense is not None:
                return _outputs(tuple(dense))
        sparse, dense = _parse_batch(spec, np.reshape(serialized, 1), None, defaults)
        # One example: drop the batch dimension (the sparse indices' first column is all 0).
        return _outputs(tuple(np.ascontiguousarray(s[0][:, 1:]) for s in sparse)
                        + tuple(s[1] for s in sparse) + tuple(s[2][1:] for s in sparse)
                        # d[0, ...] keeps a scalar string an object array: a bare bytes value
                        # would become numpy's 'S' type downstream, which drops trailing NULs.
                        + tuple(d[0, ...] for d in dense))
    return run


@KERNELS.register("DecodeRaw")
def decode_raw(op, ctx):
    out_dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
    # The bytes are little endian unless little_endian is False; numpy reads them in that order.
    little = op.get_attr("little_endian")
    wire_dtype = out_dtype.newbyteorder("<" if little else ">")
    type_name = op.outputs[0].dtype.name

    def run(data):
        # As objects: numpy's fixed-width 'S' type would strip the strings' trailing NUL bytes.
        flat = np.reshape(np.asarray(data, dtype=object), -1).tolist()
        shape = np.shape(data)
        if not flat:
            return np.empty(shape + (0,), dtype=out_dtype)
        size = len(flat[0])
        for i, s in enumerate(flat):
            if not isinstance(s, bytes):
                raise ValueError(f"DecodeRaw '{op.name}': element {i} is a {type(s).__name__}, "
                                 f"not bytes")
            if len(s) != size:
                raise ValueError(f"DecodeRaw '{op.name}' requires input strings to all be the "
                                 f"same size, but element {i} has size {len(s)} != {size}")
        if size % out_dtype.itemsize:
            raise ValueError(f"DecodeRaw '{op.name}': input to DecodeRaw has length {size} that "
                             f"is not a multiple of {out_dtype.itemsize}, the size of "
                             f"{type_name}")
        values = np.frombuffer(b"".join(flat), dtype=wire_dtype).astype(out_dtype, copy=True)
        return values.reshape(shape + (size // out_dtype.itemsize,))
    return run

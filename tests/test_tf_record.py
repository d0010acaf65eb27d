"""TFRecord files (tf.python_io) and the CRC-32C they use: round trips, files written by real
TensorFlow (tests/data, made by tests/data/make_tfrecord_golden.py), and corrupt files."""
import gzip
import os
import struct
import zlib

import numpy as np
import pytest
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked_crc

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.python_io import (RecordReader, TFRecordCompressionType, TFRecordOptions,
                                 TFRecordWriter, tf_record_iterator)
from tfjupyter.summary import _encoding

DATA = os.path.join(os.path.dirname(__file__), "data")
# What make_tfrecord_golden.py wrote into golden*.tfrecord.
GOLDEN_RECORDS = [b"", b"a", b"hello tfrecord", bytes(range(256)) * 2, b"\x00\xff" * 10]
GOLDEN_FILES = [("golden.tfrecord", None), ("golden_zlib.tfrecord", "ZLIB"),
                ("golden_gzip.tfrecord", "GZIP")]


# -- CRC-32C ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("data,crc", [
    (bytes(32), 0x8A9136AA),               # RFC 3720 B.4: 32 bytes of zeros
    (b"\xff" * 32, 0x62A8AB43),            # 32 bytes of ones
    (bytes(range(32)), 0x46DD794E),        # incrementing
    (bytes(range(31, -1, -1)), 0x113FDB5C),  # decrementing
    (b"123456789", 0xE3069283),            # the CRC catalogue's check value
    (b"", 0),
])
def test_crc32c_published_vectors(data, crc):
    assert _encoding.crc32c(data) == crc
    # Every buffer type callers pass gives the same answer, and extending is concatenating.
    assert _encoding.crc32c(bytearray(data)) == crc
    assert _encoding.crc32c(memoryview(data)) == crc
    assert _encoding.crc32c(np.frombuffer(data, np.uint8)) == crc
    half = len(data) // 2
    assert _encoding.crc32c_extend(_encoding.crc32c(data[:half]), data[half:]) == crc


def test_crc32c_of_non_byte_arrays_covers_their_bytes():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert _encoding.crc32c(arr) == _encoding.crc32c(arr.tobytes())
    assert _encoding.crc32c(arr.T) == _encoding.crc32c(np.ascontiguousarray(arr.T).tobytes())


def test_masked_crc_matches_tensorflow():
    # Masked CRCs TensorFlow wrote into golden.tfrecord: of the 8-byte length 0 and of b"".
    raw = open(os.path.join(DATA, "golden.tfrecord"), "rb").read()
    assert struct.unpack("<I", raw[8:12])[0] == 0x07980329
    assert _encoding.masked_crc32c(bytes(8)) == 0x07980329
    assert struct.unpack("<I", raw[12:16])[0] == 0xA282EAD8
    assert _encoding.masked_crc32c(b"") == 0xA282EAD8
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 63, 64, 1000, 4097):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        masked = _encoding.masked_crc32c(data)
        assert masked == tb_masked_crc(data)  # TensorBoard's independent implementation
        assert _encoding.unmask_crc(masked) == _encoding.crc32c(data)


# -- options ---------------------------------------------------------------------------------------
def test_compression_type_strings():
    get = TFRecordOptions.get_compression_type_string
    assert get(None) == ""
    assert get(TFRecordOptions(TFRecordCompressionType.NONE)) == ""
    assert get(TFRecordOptions(TFRecordCompressionType.ZLIB)) == "ZLIB"
    assert get(TFRecordOptions(TFRecordCompressionType.GZIP)) == "GZIP"
    assert get(TFRecordOptions("GZIP")) == "GZIP"
    assert get("ZLIB") == "ZLIB"
    assert tf.python_io.TFRecordOptions is TFRecordOptions
    with pytest.raises(ValueError, match="unknown compression type 'LZ4'"):
        TFRecordOptions("LZ4")
    with pytest.raises(ValueError, match="compression_level"):
        TFRecordOptions("GZIP", compression_level=12)


# -- round trips -----------------------------------------------------------------------------------
def _records(n=300, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.integers(0, 256, int(rng.integers(0, 600)), dtype=np.uint8).tobytes()
           for _ in range(n)]
    out[5] = b""
    out[7] = bytes(3 << 20)  # larger than the reader's 1 MiB chunk
    return out


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP",
                                         TFRecordOptions(TFRecordCompressionType.GZIP)])
def test_round_trip(tmp_path, compression):
    path = str(tmp_path / "r.tfrecord")
    records = _records()
    with TFRecordWriter(path, compression) as writer:
        for r in records:
            writer.write(r)
    assert list(tf_record_iterator(path, compression)) == records
    reader = RecordReader(path, compression)
    offset = 0
    for r in records:  # offsets count bytes of the uncompressed stream
        assert reader.offset == offset
        assert reader.read() == r
        offset += 16 + len(r)
    assert reader.read() is None and reader.offset == offset
    assert reader.read() is None
    reader.close()
    size = os.path.getsize(path)
    assert (size == offset) == (TFRecordOptions.get_compression_type_string(compression) == "")


def test_compressed_files_are_standard_zlib_and_gzip(tmp_path):
    records = _records(50)
    stream = b"".join(struct.pack("<Q", len(r)) + struct.pack("<I", _encoding.masked_crc32c(
        struct.pack("<Q", len(r)))) + r + struct.pack("<I", _encoding.masked_crc32c(r))
        for r in records)
    for kind in ("ZLIB", "GZIP"):
        path = str(tmp_path / kind)
        with TFRecordWriter(path, kind) as writer:
            for r in records:
                writer.write(r)
        raw = open(path, "rb").read()
        decoded = gzip.decompress(raw) if kind == "GZIP" else zlib.decompress(raw)
        assert decoded == stream
    # ...and the uncompressed file is that stream.
    with TFRecordWriter(str(tmp_path / "plain")) as writer:
        for r in records:
            writer.write(r)
    assert open(str(tmp_path / "plain"), "rb").read() == stream


def test_concatenated_gzip_files_read_as_one(tmp_path):
    parts = []
    for i in range(2):
        path = str(tmp_path / f"part{i}")
        with TFRecordWriter(path, "GZIP") as writer:
            writer.write(b"record %d" % i)
        parts.append(open(path, "rb").read())
    joined = str(tmp_path / "joined")
    open(joined, "wb").write(b"".join(parts))
    assert list(tf_record_iterator(joined, "GZIP")) == [b"record 0", b"record 1"]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_flush_makes_records_readable_while_writing(tmp_path, compression):
    path = str(tmp_path / "f")
    writer = TFRecordWriter(path, compression)
    writer.write(b"first")
    writer.write("second")  # str is written as its UTF-8 bytes, as TensorFlow does
    writer.flush()
    assert list(tf_record_iterator(path, compression)) == [b"first", b"second"]
    writer.write(b"third")
    writer.close()
    writer.close()  # closing twice is harmless
    assert list(tf_record_iterator(path, compression)) == [b"first", b"second", b"third"]
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"late")


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_a_cut_compressed_file_is_data_loss_not_a_short_file(tmp_path, compression):
    """Cut anywhere but where flush() left it, a compressed file has lost records: an error, as
    for an uncompressed file cut inside a record, not a quiet early end."""
    path = str(tmp_path / "f")
    with TFRecordWriter(path, compression) as writer:
        for i in range(1000):
            writer.write(b"record %d " % i * 10)
    data = open(path, "rb").read()
    for cut in (4, len(data) // 2):
        with open(path, "wb") as f:
            f.write(data[:-cut])
        with pytest.raises(errors.DataLossError, match=rf"{compression} stream ends before its "
                                                        rf"end marker.*in the record at \d+"):
            list(tf_record_iterator(path, compression))
    open(path, "wb").close()
    assert list(tf_record_iterator(path, compression)) == []  # empty file: no records


def test_writing_something_that_is_not_bytes_is_a_type_error(tmp_path):
    with TFRecordWriter(str(tmp_path / "f")) as writer:
        with pytest.raises(TypeError, match="expected bytes or str, got int"):
            writer.write(5)  # bytes(5) would have been five zero bytes
        writer.write(bytearray(b"ok"))
    assert list(tf_record_iterator(str(tmp_path / "f"))) == [b"ok"]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_read_many_gives_the_records_and_offsets_read_gives(tmp_path, compression):
    path = str(tmp_path / "f")
    records = [b"r%d" % i * (i % 7 + 1) for i in range(3000)]   # spans several 1 MiB chunks
    with TFRecordWriter(path, compression) as writer:
        for r in records:
            writer.write(r)
    one = RecordReader(path, compression)
    expected = []
    while True:
        at, data = one.offset, one.read()
        if data is None:
            break
        expected.append((at, data))
    many, got = RecordReader(path, compression), []
    for n in (1, 7, 1000, 5000):
        offsets, batch = many.read_many(n)
        assert len(batch) == min(n, len(records) - len(got))
        got.extend(zip(offsets, batch))
    assert got == expected and many.read_many(10) == ([], [])


def test_read_many_returns_the_good_records_before_a_bad_one(tmp_path):
    path = str(tmp_path / "f")
    with TFRecordWriter(path) as writer:
        for i in range(5):
            writer.write(b"record %d" % i)
    data = bytearray(open(path, "rb").read())
    third = 2 * (16 + len(b"record 0"))
    data[third + 12] ^= 0xFF   # the third record's data
    open(path, "wb").write(bytes(data))
    reader = RecordReader(path)
    offsets, batch = reader.read_many(10)
    assert batch == [b"record 0", b"record 1"] and offsets == [0, third // 2]
    with pytest.raises(errors.DataLossError, match=rf"corrupted record at {third} in .*data's"):
        reader.read_many(10)


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError, match="nope.tfrecord"):
        RecordReader(str(tmp_path / "nope.tfrecord"))
    with pytest.raises(errors.NotFoundError):
        list(tf_record_iterator(str(tmp_path / "nope.tfrecord")))


# -- files written by TensorFlow -------------------------------------------------------------------
@pytest.mark.parametrize("name,compression", GOLDEN_FILES)
def test_reads_tensorflow_files(name, compression):
    path = os.path.join(DATA, name)
    assert list(tf_record_iterator(path, compression)) == GOLDEN_RECORDS
    assert list(tf.python_io.tf_record_iterator(
        path, TFRecordOptions(compression or ""))) == GOLDEN_RECORDS


@pytest.mark.parametrize("name,compression", GOLDEN_FILES)
def test_writes_the_same_bytes_as_tensorflow(tmp_path, name, compression):
    # Compressed too: we deflate with TensorFlow's settings (default level, mem_level 9).
    path = str(tmp_path / name)
    with TFRecordWriter(path, compression) as writer:
        for r in GOLDEN_RECORDS:
            writer.write(r)
    assert open(path, "rb").read() == open(os.path.join(DATA, name), "rb").read()


def test_reading_a_compressed_file_uncompressed_fails_cleanly():
    with pytest.raises(errors.DataLossError, match="golden_gzip.tfrecord"):
        list(tf_record_iterator(os.path.join(DATA, "golden_gzip.tfrecord")))


# -- corrupt files ---------------------------------------------------------------------------------
def _golden_bytes():
    return open(os.path.join(DATA, "golden.tfrecord"), "rb").read()


# Record 2 (b"hello tfrecord", 14 bytes) starts at 16 + 17 = 33: header 33..45, data 45..59,
# data crc 59..63; record 3 starts at 63.
REC2 = 33


@pytest.mark.parametrize("where,what", [
    (REC2 + 0, "length"),          # a flipped length byte: the length's checksum fails
    (REC2 + 9, "length's checksum"),
    (REC2 + 12 + 3, "data"),
    (REC2 + 12 + 14 + 1, "data's checksum"),
])
def test_corrupted_record_names_file_and_offset(tmp_path, where, what):
    raw = bytearray(_golden_bytes())
    raw[where] ^= 0x10
    path = str(tmp_path / "bad.tfrecord")
    open(path, "wb").write(bytes(raw))
    reader = RecordReader(path)
    assert reader.read() == b"" and reader.read() == b"a"  # the records before it are fine
    with pytest.raises(errors.DataLossError) as info:
        reader.read()
    message = str(info.value)
    assert f"corrupted record at {REC2} in {path}" in message
    expected = "length's checksum" if what in ("length", "length's checksum") else \
        "data's checksum"
    assert expected in message
    with pytest.raises(errors.DataLossError, match=f"record at {REC2} "):
        reader.read()  # the reader stays at the bad record
    reader.close()
    with pytest.raises(errors.DataLossError, match=f"at {REC2} in"):
        list(tf_record_iterator(path))


@pytest.mark.parametrize("cut", [
    REC2 + 5,            # in the header
    REC2 + 12,           # right after the header: no data at all
    REC2 + 12 + 6,       # in the data
    REC2 + 12 + 14 + 2,  # in the data's checksum
])
@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_truncated_record_names_file_and_offset(tmp_path, cut, compression):
    # As TensorFlow 1.x's RecordReader: a partial record is DataLoss "truncated record at N"
    # (only a file ending between records ends cleanly).
    path = str(tmp_path / "cut.tfrecord")
    stream = _golden_bytes()[:cut]
    if compression:
        open(path, "wb").write(gzip.compress(stream))
    else:
        open(path, "wb").write(stream)
    records = []
    with pytest.raises(errors.DataLossError) as info:
        for r in tf_record_iterator(path, compression):
            records.append(r)
    assert records == GOLDEN_RECORDS[:2]
    assert f"truncated record at {REC2} in {path}" in str(info.value)


def test_file_ending_between_records_is_a_clean_end(tmp_path):
    path = str(tmp_path / "short.tfrecord")
    open(path, "wb").write(_golden_bytes()[:REC2])
    assert list(tf_record_iterator(path)) == GOLDEN_RECORDS[:2]


def test_corrupt_compressed_stream_is_data_loss(tmp_path):
    raw = bytearray(open(os.path.join(DATA, "golden_zlib.tfrecord"), "rb").read())
    raw[40] ^= 0xFF
    path = str(tmp_path / "bad_zlib.tfrecord")
    open(path, "wb").write(bytes(raw))
    with pytest.raises(errors.DataLossError, match=r"bad_zlib\.tfrecord"):
        list(tf_record_iterator(path, "ZLIB"))


def test_closed_reader_refuses_to_read():
    reader = RecordReader(os.path.join(DATA, "golden.tfrecord"))
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        reader.read()


def test_huge_length_with_a_valid_checksum_is_a_truncated_record(tmp_path):
    # The length's checksum cannot catch a writer that wrote a bogus length; the reader must
    # report the file too short for it, without allocating the length first.
    header = struct.pack("<Q", 1 << 50)
    path = str(tmp_path / "huge.tfrecord")
    open(path, "wb").write(header + struct.pack("<I", _encoding.masked_crc32c(header))
                           + b"some data")
    with pytest.raises(errors.DataLossError, match=f"truncated record at 0 in {path}"):
        RecordReader(path).read()

"""Readers and file ops: exact keys and values of every reader on files the tests write, the
reader's state (counts, reset, files spanning reads), the end of input, errors that name the op
and the file, ReadFile, MatchingFiles and CountUpTo.

Runs that may block get a deadline, and threads are joined with a timeout, so a broken reader
fails these tests instead of hanging them.
"""
import os
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import python_io
from tfjupyter.framework import errors

BOUNDED = tf.RunOptions(timeout_in_ms=5000)


def filename_queue(sess, names, close=True):
    """A FIFO queue holding ``names`` (closed unless told otherwise), for a reader."""
    q = tf.FIFOQueue(100, tf.string, shapes=[[]])
    if names:
        sess.run(q.enqueue_many([[os.fsencode(n) for n in names]]))
    if close:
        sess.run(q.close())
    return q


def read_all(sess, key, value):
    """Every (key, value) until OutOfRangeError; the keys and values of a read_up_to are
    vectors, flattened here."""
    out = []
    while True:
        try:
            k, v = sess.run([key, value], options=BOUNDED)
        except errors.OutOfRangeError:
            return out
        if np.ndim(k):
            out.extend(zip(k.tolist(), v.tolist()))
        else:
            out.append((k, v))


def key(path, suffix):
    return f"{path}:{suffix}".encode()


# -- FixedLengthRecordReader -----------------------------------------------------------------------
@pytest.fixture
def fixed_files(tmp_path):
    """Two files: a 3-byte header, 5 records of 4 bytes (the second file 3), a 2-byte footer."""
    paths, records = [], []
    for i, n in enumerate((5, 3)):
        recs = [bytes([16 * i + r] * 4) for r in range(n)]
        p = tmp_path / f"data{i}.bin"
        p.write_bytes(b"HDR" + b"".join(recs) + b"FT")
        paths.append(str(p))
        records.append(recs)
    return paths, records


def test_fixed_length_reader_keys_values_and_counts(fixed_files):
    paths, records = fixed_files
    with tf.Session() as sess:
        q = filename_queue(sess, paths)
        reader = tf.FixedLengthRecordReader(record_bytes=4, header_bytes=3, footer_bytes=2)
        k, v = reader.read(q)
        got = read_all(sess, k, v)
        want = [(key(p, j), r) for p, recs in zip(paths, records) for j, r in enumerate(recs)]
        assert got == want
        assert sess.run([reader.num_records_produced(),
                         reader.num_work_units_completed()]) == [8, 2]
        assert k.shape == tf.TensorShape([]) and k.dtype == tf.string


def test_fixed_length_reader_hop_bytes_overlapping_records(tmp_path):
    # Header 2, footer 1, records of 4 bytes every 2 bytes: starts 2, 4, 6 fit before 11.
    p = tmp_path / "hop.bin"
    p.write_bytes(b"hh" + bytes(range(9)) + b"f")
    with tf.Session() as sess:
        q = filename_queue(sess, [str(p)])
        reader = tf.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=1, hop_bytes=2)
        got = read_all(sess, *reader.read_up_to(q, 2))
    assert got == [(key(p, 0), bytes([0, 1, 2, 3])), (key(p, 1), bytes([2, 3, 4, 5])),
                   (key(p, 2), bytes([4, 5, 6, 7]))]
    with tf.Session() as sess:   # one record per read: the same records
        q = filename_queue(sess, [str(p)])
        reader = tf.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=1, hop_bytes=2)
        assert read_all(sess, *reader.read(q)) == got


def test_read_up_to_returns_at_most_n_and_never_spans_files(fixed_files):
    paths, records = fixed_files
    with tf.Session() as sess:
        q = filename_queue(sess, paths)
        reader = tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2)
        keys, values = reader.read_up_to(q, 3)
        assert keys.shape.as_list() == [None]
        sizes = []
        while True:
            try:
                kv, vv = sess.run([keys, values], options=BOUNDED)
            except errors.OutOfRangeError:
                break
            sizes.append(len(kv))
            assert len(kv) == len(vv)
    assert sizes == [3, 2, 3]   # 5 records of the first file, then the 3 of the second


def test_reader_reset_starts_over(fixed_files):
    paths, records = fixed_files
    with tf.Session() as sess:
        q = filename_queue(sess, paths * 2)
        reader = tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2)
        k, v = reader.read(q)
        assert sess.run(v) == records[0][0]
        assert sess.run(v) == records[0][1]
        sess.run(reader.reset())
        assert sess.run([reader.num_records_produced(),
                         reader.num_work_units_completed()]) == [0, 0]
        # The rest of the first file was dropped: the next read opens the next file.
        assert sess.run([k, v]) == [key(paths[1], 0), records[1][0]]


def test_two_read_ops_of_one_reader_share_its_position(fixed_files):
    paths, records = fixed_files
    with tf.Session() as sess:
        q = filename_queue(sess, paths[:1])
        reader = tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2)
        _, v1 = reader.read(q)
        _, v2 = reader.read(q)
        assert [sess.run(v1), sess.run(v2), sess.run(v1)] == records[0][:3]


def test_record_bytes_must_be_positive():
    for bad in (0, -4):
        with pytest.raises(ValueError, match="record_bytes must be > 0") as info:
            tf.FixedLengthRecordReader(bad, name="bad_reader")
        assert "bad_reader" in str(info.value)
    with pytest.raises(ValueError, match="header_bytes must be >= 0"):
        tf.FixedLengthRecordReader(4, header_bytes=-1)


def test_file_shorter_than_header_names_the_file_and_the_op(tmp_path, fixed_files):
    paths, records = fixed_files
    short = tmp_path / "short.bin"
    short.write_bytes(b"HD")
    with tf.Session() as sess:
        q = filename_queue(sess, [str(short), paths[1]])
        reader = tf.FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2)
        k, v = reader.read(q, name="read_records")
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(v, options=BOUNDED)
        msg = str(info.value)
        assert str(short) in msg and "read_records" in msg and "header_bytes (3)" in msg
        # The bad file is dropped: the reader goes on with the next one, as TensorFlow's.
        assert sess.run([k, v]) == [key(paths[1], 0), records[1][0]]


def test_missing_file_is_not_found_naming_the_file_and_the_op(tmp_path):
    missing = str(tmp_path / "nope.bin")
    with tf.Session() as sess:
        q = filename_queue(sess, [missing])
        k, v = tf.WholeFileReader().read(q, name="read_whole")
        with pytest.raises(errors.NotFoundError) as info:
            sess.run(v, options=BOUNDED)
        assert missing in str(info.value) and "read_whole" in str(info.value)


# -- TextLineReader, WholeFileReader, IdentityReader -----------------------------------------------
def test_text_line_reader_skips_headers_and_strips_line_endings(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_bytes(b"name,value\nx,1\r\n\ny,2")     # CRLF, an empty line, no final newline
    b.write_bytes(b"name,value\nz,3\n")
    with tf.Session() as sess:
        q = filename_queue(sess, [str(a), str(b)])
        reader = tf.TextLineReader(skip_header_lines=1)
        got = read_all(sess, *reader.read(q))
        # Line numbers count from 1 and include the skipped header.
        assert got == [(key(a, 2), b"x,1"), (key(a, 3), b""), (key(a, 4), b"y,2"),
                       (key(b, 2), b"z,3")]
        assert sess.run(reader.num_work_units_completed()) == 2


def test_text_line_reader_read_up_to(tmp_path):
    p = tmp_path / "lines.txt"
    p.write_bytes(b"".join(b"line %d\n" % i for i in range(10)))
    with tf.Session() as sess:
        q = filename_queue(sess, [str(p)])
        keys, values = tf.TextLineReader().read_up_to(q, 4)
        first = sess.run([keys, values])
        assert first[0].tolist() == [key(p, i) for i in (1, 2, 3, 4)]
        assert first[1].tolist() == [b"line %d" % i for i in range(4)]
        rest = read_all(sess, keys, values)
    assert [v for _, v in rest] == [b"line %d" % i for i in range(4, 10)]


def test_whole_file_and_identity_readers(tmp_path):
    paths = []
    for i, content in enumerate((b"first file", b"", b"\x00\xffbinary")):
        p = tmp_path / f"w{i}"
        p.write_bytes(content)
        paths.append(str(p))
    with tf.Session() as sess:
        q = filename_queue(sess, paths)
        got = read_all(sess, *tf.WholeFileReader().read(q))
        assert got == [(os.fsencode(p), c) for p, c in
                       zip(paths, (b"first file", b"", b"\x00\xffbinary"))]
        q2 = filename_queue(sess, ["work-a", "work-b"])
        assert read_all(sess, *tf.IdentityReader().read(q2)) == [(b"work-a", b"work-a"),
                                                                  (b"work-b", b"work-b")]


# -- TFRecordReader --------------------------------------------------------------------------------
def write_records(path, records, options=None):
    with python_io.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("options", [None, "GZIP", python_io.TFRecordOptions("ZLIB")])
def test_tfrecord_reader_keys_are_byte_offsets(tmp_path, options):
    recs = [[b"a", b"bb" * 10, b""], [b"second file"]]
    paths = [tmp_path / "r0.tfrecord", tmp_path / "r1.tfrecord"]
    for p, r in zip(paths, recs):
        write_records(p, r, options)
    with tf.Session() as sess:
        q = filename_queue(sess, [str(p) for p in paths])
        got = read_all(sess, *tf.TFRecordReader(options=options).read(q))
    # Each record takes 12 header bytes + data + 4 footer bytes (offsets count the
    # uncompressed stream).
    assert got == [(key(paths[0], 0), b"a"), (key(paths[0], 17), b"bb" * 10),
                   (key(paths[0], 53), b""), (key(paths[1], 0), b"second file")]


def test_tfrecord_reader_read_up_to(tmp_path):
    p = tmp_path / "many.tfrecord"
    write_records(p, [b"%d" % i for i in range(25)])
    with tf.Session() as sess:
        q = filename_queue(sess, [str(p)])
        keys, values = tf.TFRecordReader().read_up_to(q, 10)
        batches = []
        while True:
            try:
                batches.append(sess.run(values, options=BOUNDED).tolist())
            except errors.OutOfRangeError:
                break
    assert [len(b) for b in batches] == [10, 10, 5]
    assert sum(batches, []) == [b"%d" % i for i in range(25)]


def test_tfrecord_corruption_is_data_loss_naming_file_and_op(tmp_path):
    p = tmp_path / "bad.tfrecord"
    write_records(p, [b"good", b"will be damaged"])
    data = bytearray(p.read_bytes())
    data[-6] ^= 0xFF   # a byte of the second record's data
    p.write_bytes(bytes(data))
    with tf.Session() as sess:
        q = filename_queue(sess, [str(p)])
        keys, values = tf.TFRecordReader().read_up_to(q, 10, name="read_batch")
        # The good record comes out first; the bad one fails the next read.
        assert sess.run(values).tolist() == [b"good"]
        with pytest.raises(errors.DataLossError) as info:
            sess.run(values, options=BOUNDED)
        assert str(p) in str(info.value) and "read_batch" in str(info.value)
    with tf.Session() as sess:   # one record per read: the same, and the reader stays there
        q = filename_queue(sess, [str(p)])
        keys, values = tf.TFRecordReader().read(q, name="read_one")
        assert sess.run(values) == b"good"
        for _ in range(2):
            with pytest.raises(errors.DataLossError, match="read_one") as info:
                sess.run(values, options=BOUNDED)
            assert f"corrupted record at 20 in {p}" in str(info.value)


# -- the filename queue ----------------------------------------------------------------------------
def test_read_blocks_for_a_filename_and_a_closed_session_ends_it(tmp_path):
    p = tmp_path / "late.txt"
    p.write_bytes(b"hello\n")
    sess = tf.Session()
    q = filename_queue(sess, [], close=False)
    k, v = tf.TextLineReader().read(q)
    box = {}

    def read():
        try:
            box["value"] = sess.run(v)
        except Exception as e:
            box["error"] = e
    t = threading.Thread(target=read, daemon=True)
    t.start()
    time.sleep(0.2)
    assert t.is_alive(), "the read should wait for a filename"
    sess.run(q.enqueue([str(p)]))
    t.join(5)
    assert box == {"value": b"hello"}

    t = threading.Thread(target=read, daemon=True)
    box.clear()
    t.start()
    time.sleep(0.2)
    assert t.is_alive()
    sess.close()
    t.join(5)
    assert not t.is_alive(), "closing the session must end a blocked read"
    assert isinstance(box["error"], errors.CancelledError)


def test_reader_needs_a_queue_of_strings():
    with pytest.raises(TypeError, match="queue"):
        tf.WholeFileReader().read(tf.constant("not a queue"))
    with pytest.raises(TypeError):
        tf.WholeFileReader().read(tf.FIFOQueue(4, tf.int32))


def test_read_up_to_needs_a_positive_count(tmp_path):
    with tf.Session() as sess:
        q = filename_queue(sess, [])
        _, v = tf.WholeFileReader().read_up_to(q, tf.placeholder(tf.int64, []))
        with pytest.raises(errors.InvalidArgumentError, match=r"num_records \(0\)"):
            sess.run(v, {v.op.inputs[2]: 0})


# -- ReadFile, MatchingFiles, CountUpTo ------------------------------------------------------------
def test_read_file_and_matching_files(tmp_path):
    for name in ("b.txt", "a.txt", "c.dat"):
        (tmp_path / name).write_bytes(name.encode())
    with tf.Session() as sess:
        assert sess.run(tf.read_file(str(tmp_path / "a.txt"))) == b"a.txt"
        got = sess.run(tf.matching_files(str(tmp_path / "*.txt")))
        assert got.tolist() == [os.fsencode(tmp_path / n) for n in ("a.txt", "b.txt")]
        both = sess.run(tf.matching_files([str(tmp_path / "*.dat"), str(tmp_path / "a*")]))
        assert both.tolist() == sorted(os.fsencode(tmp_path / n) for n in ("a.txt", "c.dat"))
        none = sess.run(tf.matching_files(str(tmp_path / "missing*")))
        assert none.shape == (0,)
        with pytest.raises(errors.NotFoundError, match="nothere"):
            sess.run(tf.read_file(str(tmp_path / "nothere")))


def test_count_up_to_counts_then_is_out_of_range():
    v = tf.Variable(tf.constant(0, tf.int64), trainable=False)
    c = tf.count_up_to(v, 3)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(c) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 3"):
            sess.run(c)
        assert sess.run(v) == 3

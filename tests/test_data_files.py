"""tf.data file datasets: TFRecordDataset, TextLineDataset and FixedLengthRecordDataset on files
the tests write (plain, GZIP and ZLIB), and the parsing pipeline of TF 1.x input functions."""
import gzip
import zlib

import numpy as np
import pytest

import tfjupyter as tf
from data_util import fresh_graph, values  # noqa: F401 - fresh_graph: the fixture
from tfjupyter import python_io

pytestmark = pytest.mark.timeout(60)


def write_records(path, records, compression=None):
    options = python_io.TFRecordOptions(compression) if compression else None
    with python_io.TFRecordWriter(str(path), options) as writer:
        for r in records:
            writer.write(r)
    return str(path)


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tfrecord_dataset_reads_files_in_order(tmp_path, compression):
    a = write_records(tmp_path / "a.tfrecord", [b"a0", b"a1"], compression)
    b = write_records(tmp_path / "b.tfrecord", [b"", b"b1" * 1000], compression)
    ds = tf.data.TFRecordDataset([a, b], compression_type=compression)
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert values(ds) == [b"a0", b"a1", b"", b"b1" * 1000]


def test_tfrecord_dataset_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="compression_type"):
        tf.data.TFRecordDataset("x", compression_type="BZIP2")
    element = tf.data.TFRecordDataset(str(tmp_path / "missing.tfrecord")) \
        .make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="missing.tfrecord"):
        sess.run(element)
    path = write_records(tmp_path / "c.tfrecord", [b"hello"])
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF                       # inside the record's data: its CRC fails
    open(path, "wb").write(bytes(data))
    element = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.DataLossError, match="c.tfrecord"):
        sess.run(element)


def test_text_line_dataset_drops_line_endings(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"first\r\nsecond\n\nlast without newline")
    packed = tmp_path / "packed.txt.gz"
    packed.write_bytes(gzip.compress(b"g1\ng2\n"))
    assert values(tf.data.TextLineDataset(str(plain))) == \
        [b"first", b"second", b"", b"last without newline"]
    assert values(tf.data.TextLineDataset([str(packed)], compression_type="GZIP")) == \
        [b"g1", b"g2"]


def test_text_line_dataset_to_csv_columns(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("h1,h2\n1,2.5\n3,4.5\n")
    ds = tf.data.TextLineDataset(str(path)).skip(1).map(
        lambda line: tf.py_func(lambda s: np.array([float(v) for v in s.split(b",")],
                                                   dtype=np.float32), [line], tf.float32))
    assert [v.tolist() for v in values(ds)] == [[1.0, 2.5], [3.0, 4.5]]


@pytest.mark.parametrize("compression", [None, "ZLIB"])
def test_fixed_length_record_dataset_skips_header_and_footer(tmp_path, compression):
    body = bytes(range(12))
    data = b"HEAD" + body + b"FT"
    path = tmp_path / "records.bin"
    path.write_bytes(zlib.compress(data) if compression else data)
    ds = tf.data.FixedLengthRecordDataset(str(path), record_bytes=4, header_bytes=4,
                                          footer_bytes=2, compression_type=compression)
    assert values(ds) == [body[0:4], body[4:8], body[8:12]]


def test_parse_single_example_pipeline(tmp_path):
    """A TF 1.x input_fn: TFRecordDataset -> map(parse_single_example) -> shuffle -> batch."""
    path = str(tmp_path / "examples.tfrecord")
    with python_io.TFRecordWriter(path) as writer:
        for i in range(10):
            example = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3]))}))
            writer.write(example.SerializeToString())
    features = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}

    def parse(record):
        parsed = tf.parse_single_example(record, features)
        return parsed["x"], parsed["y"]
    ds = tf.data.TFRecordDataset(path).map(parse).shuffle(10, seed=1).batch(4).prefetch(1)
    assert ds.output_shapes[0].as_list() == [None, 2]
    batches = values(ds)
    assert [len(y) for _, y in batches] == [4, 4, 2]
    xs = np.concatenate([x for x, _ in batches])
    ys = np.concatenate([y for _, y in batches])
    order = xs[:, 0].astype(int)
    assert sorted(order) == list(range(10))
    np.testing.assert_array_equal(xs[:, 1], order + 0.5)
    np.testing.assert_array_equal(ys, order % 3)


def test_batched_parse_example_pipeline(tmp_path):
    """TF's faster form: batch the records, then parse_example the batch."""
    path = str(tmp_path / "examples.tfrecord")
    with python_io.TFRecordWriter(path) as writer:
        for i in range(5):
            example = tf.train.Example(features=tf.train.Features(feature={
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}))
            writer.write(example.SerializeToString())
    ds = tf.data.TFRecordDataset(path).batch(2).map(
        lambda records: tf.parse_example(records, {"y": tf.FixedLenFeature([], tf.int64)})["y"])
    assert [b.tolist() for b in values(ds)] == [[0, 1], [2, 3], [4]]

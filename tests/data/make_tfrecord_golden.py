"""Writes the golden TFRecord files of tests/test_tf_record.py and tests/test_parsing_ops.py
with real TensorFlow. Needs TensorFlow (any 2.x; 2.21 wrote the committed files), best in a
virtual environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_tfrecord_golden.py

Files (in this directory):
- golden.tfrecord, golden_zlib.tfrecord, golden_gzip.tfrecord: the records of GOLDEN_RECORDS
  below, uncompressed, ZLIB and GZIP;
- golden_examples.tfrecord: serialized tf.train.Examples of known values (see
  tests/test_parsing_ops.py for the values the tests expect).
"""
import os

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))

# Raw records: empty, short, one over 255 bytes (a length needing two bytes) and binary.
GOLDEN_RECORDS = [b"", b"a", b"hello tfrecord", bytes(range(256)) * 2, b"\x00\xff" * 10]


def _example(image, label, names):
    return tf.train.Example(features=tf.train.Features(feature={
        "image": tf.train.Feature(float_list=tf.train.FloatList(value=image)),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=label)),
        "names": tf.train.Feature(bytes_list=tf.train.BytesList(value=names)),
    }))


EXAMPLES = [
    _example([0.5, 1.5, -2.25], [7], [b"zero"]),
    _example([3.0, 4.0, 5.0], [-1], [b"one", b"uno"]),
    _example([1e-3, 0.0, 65504.0], [2 ** 40], []),
]


def main():
    for name, compression in (("golden.tfrecord", None), ("golden_zlib.tfrecord", "ZLIB"),
                              ("golden_gzip.tfrecord", "GZIP")):
        options = tf.io.TFRecordOptions(compression_type=compression) if compression else None
        with tf.io.TFRecordWriter(os.path.join(HERE, name), options) as writer:
            for record in GOLDEN_RECORDS:
                writer.write(record)
    with tf.io.TFRecordWriter(os.path.join(HERE, "golden_examples.tfrecord")) as writer:
        for example in EXAMPLES:
            writer.write(example.SerializeToString())
    print("wrote golden TFRecord files to", HERE, "with TensorFlow", tf.__version__)


if __name__ == "__main__":
    main()

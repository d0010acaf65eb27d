"""tf.as_string, string_to_number, string_split, substr, regex_replace, reduce_join and
tf.strings.*: values and errors TensorFlow gave for the same inputs (pasted below)."""
import numpy as np
import pytest

import tfjupyter as tf

S = [" Hello, World ", "a  b,c", ""]

TF_VALUES = {
    "as_b": [b"true", b"false"],
    "as_e": [b"1.234568e+04"],
    "as_f": [b"3.500000", b"-0.100000", b"10000000000.000000", b"nan"],
    "as_f2": [b"00003.14", b"00002.00"],
    "as_g": [b"0.0001", b"1.23457e+08"],
    "as_i": [b"   7", b" -12"],
    "len": [14, 6, 0],
    "lenu": [5],
    "lk": [1, 5, 4, 2],
    "low": [b" hello, world ", b"a  b,c", b""],
    "num": [1.5, -2000.0, float("inf")],
    "numi": [42, -7],
    "rj": [b"a-b", b"c-d"],
    "rj0": [[b"ac", b"bd"]],
    "rja": b"abcd",
    "rr": [b" He<llo>, W<o>r<l>d ", b"a  b,c", b""],
    "rr1": [b" eHllo, World ", b"a  b,c", b""],
    "strip": [b"Hello, World", b"a  b,c", b""],
    "sub": [b"bcd", b"yz"],
    "subn": [b"ef"],
    "subv": [b"ab", b"z"],
    "up": [b" HELLO, WORLD ", b"A  B,C", b""],
}
TF_SPARSE = {   # indices, values, dense_shape
    "ss": ([[0, 0], [0, 1], [1, 0], [1, 1]], [b"Hello,", b"World", b"a", b"b,c"], [3, 2]),
    "ss2": ([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]], [b"Hello", b"World", b"a", b"b", b"c"],
            [3, 3]),
    "ss3": ([[0, 0], [0, 1], [1, 0]], [b"a", b"b", b"c"], [2, 2]),
    "ssk": ([[0, 0], [0, 1], [0, 2]], [b"a", b"", b"b"], [1, 3]),
    "sv2": ([[0, 0], [0, 1], [1, 0], [1, 1]], [b"Hello,", b"World", b"a", b"b,c"], [3, 2]),
    "sv2m": ([[0, 0], [0, 1], [0, 2]], [b"a", b"b", b"c d"], [1, 3]),
    "sv2s": ([[0, 0], [0, 1], [0, 2], [1, 0]], [b"a", b"", b"b", b"c"], [2, 3]),
}


def _graph():
    s = tf.constant(S)
    dense = {
        "as_f": tf.as_string(tf.constant([3.5, -0.1, 1e10, float("nan")])),
        "as_f2": tf.as_string(tf.constant([3.14159, 2.0]), precision=2, width=8, fill="0"),
        "as_e": tf.as_string(tf.constant([12345.678]), scientific=True),
        "as_g": tf.as_string(tf.constant([0.0001, 123456789.0]), shortest=True),
        "as_i": tf.as_string(tf.constant([7, -12], tf.int64), width=4),
        "as_b": tf.as_string(tf.constant([True, False])),
        "num": tf.string_to_number(tf.constant([" 1.5", "-2e3", "inf"])),
        "numi": tf.string_to_number(tf.constant(["42", "-7"]), out_type=tf.int32),
        "len": tf.strings.length(s),
        "lenu": tf.strings.length(tf.constant(["héllo"]), unit="UTF8_CHAR"),
        "low": tf.strings.lower(s), "up": tf.strings.upper(s), "strip": tf.strings.strip(s),
        "rr": tf.regex_replace(s, "[lo]+", "<\\0>"),
        "rr1": tf.strings.regex_replace(s, r"(\w)(\w)", r"\2\1", replace_global=False),
        "sub": tf.substr(tf.constant(["abcdef", "xyz"]), 1, 3),
        "subn": tf.substr(tf.constant(["abcdef"]), -2, 5),
        "subv": tf.substr(tf.constant(["abcdef", "xyz"]), [0, 2], [2, 1]),
        "rj": tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), 1, separator="-"),
        "rj0": tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), 0, keep_dims=True),
        "rja": tf.reduce_join(tf.constant([["a", "b"], ["c", "d"]])),
        # Integer keys out of the vocabulary hash as their decimal text.
        "lk": tf.contrib.lookup.index_table_from_tensor(
            [10, 20], num_oov_buckets=4, dtype=tf.int64).lookup(
                tf.constant([20, 5, 99, 12345], tf.int64)),
    }
    sparse = {
        "ss": tf.string_split(s), "ss2": tf.string_split(s, delimiter=", "),
        "ss3": tf.string_split(tf.constant(["ab", "c"]), delimiter=""),
        "ssk": tf.string_split(tf.constant(["a,,b"]), delimiter=",", skip_empty=False),
        "sv2": tf.strings.split(s), "sv2s": tf.strings.split(tf.constant(["a,,b", "c"]), sep=","),
        "sv2m": tf.strings.split(tf.constant(["a b c d"]), maxsplit=2),
    }
    return dense, sparse


def test_values_match_tensorflow():
    with tf.Graph().as_default():
        dense, sparse = _graph()
        assert dense["rj0"].shape.as_list() == [1, 2] and dense["rja"].shape.ndims == 0
        with tf.Session() as sess:
            sess.run(tf.tables_initializer())
            got, got_sparse = sess.run([dense, sparse])
    for key, want in TF_VALUES.items():
        assert np.asarray(got[key]).tolist() == want, key
    for key, (indices, values, shape) in TF_SPARSE.items():
        value = got_sparse[key]
        assert (value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()) == \
            (indices, values, shape), key


@pytest.mark.parametrize("build, message", [
    (lambda: tf.string_to_number(tf.constant(["1_0"])),
     "StringToNumberOp could not correctly convert string: 1_0"),
    (lambda: tf.string_to_number(tf.constant(["x"]), tf.int64),
     "StringToNumberOp could not correctly convert string: x"),
    (lambda: tf.substr(tf.constant(["ab"]), 3, 1),
     "pos 3 out of range for string b'ab' at index 0"),
])
def test_tensorflows_errors(build, message):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(build())


def test_bad_arguments_fail_while_building():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Cannot select both scientific and shortest"):
            tf.as_string([1.0], scientific=True, shortest=True)
        with pytest.raises(ValueError, match="Fill string must be one or fewer characters"):
            tf.as_string([1.0], width=3, fill="ab")
        with pytest.raises(TypeError, match="DataType string not in list"):
            tf.as_string(["a"])

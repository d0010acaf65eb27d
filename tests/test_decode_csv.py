"""tf.decode_csv against TensorFlow's DecodeCSV: values and error messages TensorFlow gave for
the same records (pasted below)."""
import numpy as np
import pytest

import tfjupyter as tf


def _run(records, defaults, **kwargs):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(tf.decode_csv(tf.constant(records), defaults, **kwargs))


def test_quotes_defaults_and_dtypes():
    ints, strings, floats = _run(['1,"a,b",2.5', ',x,', '7,"q""r",'], [[0], [""], [1.5]])
    assert ints.dtype == np.int32 and ints.tolist() == [1, 0, 7]
    assert strings.tolist() == [b"a,b", b"x", b'q"r']
    assert floats.dtype == np.float32 and floats.tolist() == [2.5, 1.5, 1.5]


def test_delimiter_na_value_and_select_cols():
    a, b, c = _run(['1|NA|3', ' 4 |5|'], [[0], [0.0], [""]], field_delim="|", na_value="NA")
    assert a.tolist() == [1, 4] and b.tolist() == [0.0, 5.0] and c.tolist() == [b"3", b""]
    second, fourth = _run(['1,2,3,4'], [[0], [0]], select_cols=[1, 3])
    assert second.tolist() == [2] and fourth.tolist() == [4]
    # Without quote handling a quote is an ordinary character.
    (text,) = _run(['"a'], [[""]], use_quote_delim=False)
    assert text.tolist() == [b'"a']


def test_output_shapes_follow_the_records():
    with tf.Graph().as_default():
        cols = tf.decode_csv(tf.placeholder(tf.string, [None, 2]), [[0], [0.0]])
        assert [c.shape.as_list() for c in cols] == [[None, 2], [None, 2]]
        assert [c.dtype for c in cols] == [tf.int32, tf.float32]


@pytest.mark.parametrize("records, defaults, kwargs, message", [
    (["1,2"], [[0], [0], [0]], {}, "Expect 3 fields but have 2 in record 0"),
    ([",2"], [[], [0]], {}, "Field 0 is required but missing in record 0!"),
    (["x,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: x"),
    (["1.5,2"], [[0.0], [0]], {"select_cols": [0, 3]}, "Expect 2 fields but have 1 in record 0"),
    (['"ab,2'], [[""], [0]], {}, "Quoted field has to end with quote followed by delim or end"),
    (['"a"b,2'], [[""], [0]], {}, "Quote inside a string has to be escaped by another quote"),
    (["99999999999,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: 99999999999"),
    (["1,2.5x"], [[0], [0.0]], {}, "Field 1 in record 0 is not a valid float: 2.5x"),
    (["1,y"], [[0], np.array([0.0])], {},
     "Field 1 in record 0 is not a valid double: y"),
])
def test_tensorflow_errors(records, defaults, kwargs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(records, defaults, **kwargs)


def test_bad_arguments_fail_while_building():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Length of select_cols and record_defaults"):
            tf.decode_csv(["1"], [[0], [0]], select_cols=[0])
        with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
            tf.decode_csv(["1"], [[0], [0]], select_cols=[1, 0])
        with pytest.raises(ValueError, match="field_delim should be only 1 char"):
            tf.decode_csv(["1"], [[0]], field_delim="||")
        assert tf.io.decode_csv is tf.decode_csv

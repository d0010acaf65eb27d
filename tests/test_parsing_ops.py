"""tf.train.Example protos, parse_example / parse_single_example, decode_raw and SparseTensor."""
import os
import struct

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.summary._encoding import field_bytes, varint
from tfjupyter.train import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,
                             FloatList, Int64List, SequenceExample)

DATA = os.path.join(os.path.dirname(__file__), "data")


def _example(**features) -> bytes:
    """An Example: each keyword a list of floats, ints or bytes (its kind from its first value,
    or the keyword's prefix f_/i_/b_ for empty lists)."""
    feature = {}
    for key, values in features.items():
        kind = key[:2] if not values else ("f_" if isinstance(values[0], float) else
                                           "b_" if isinstance(values[0], bytes) else "i_")
        name = key[2:] if key[:2] in ("f_", "i_", "b_") else key
        if kind == "f_":
            feature[name] = Feature(float_list=FloatList(value=values))
        elif kind == "i_":
            feature[name] = Feature(int64_list=Int64List(value=values))
        else:
            feature[name] = Feature(bytes_list=BytesList(value=values))
    return Example(features=Features(feature=feature)).SerializeToString()


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# -- the protos ------------------------------------------------------------------------------------
def test_example_protos_have_tensorflows_wire_format():
    ex = Example(features=Features(feature={"x": Feature(float_list=FloatList(value=[1.0]))}))
    # Example.features = 1 { Features.feature = 1 { key = 1 "x", value = 2 { Feature.float_list
    # = 2 { FloatList.value = 1, packed: 4 bytes of 1.0f } } } }
    value = field_bytes(2, field_bytes(1, struct.pack("<f", 1.0)))
    entry = field_bytes(1, b"x") + field_bytes(2, value)
    assert ex.SerializeToString() == field_bytes(1, field_bytes(1, entry))
    assert Feature(int64_list=Int64List(value=[-1])).SerializeToString() == \
        field_bytes(3, field_bytes(1, varint(-1)))
    assert Feature(bytes_list=BytesList(value=[b"ab"])).SerializeToString() == \
        field_bytes(1, field_bytes(1, b"ab"))
    seq = SequenceExample(feature_lists=FeatureLists(feature_list={
        "s": FeatureList(feature=[Feature(int64_list=Int64List(value=[5]))])}))
    assert SequenceExample.FromString(seq.SerializeToString()) == seq


def test_golden_examples_written_by_tensorflow():
    records = list(tf.python_io.tf_record_iterator(os.path.join(DATA,
                                                                "golden_examples.tfrecord")))
    first = Example.FromString(records[0]).features.feature
    assert list(first["image"].float_list.value) == [0.5, 1.5, -2.25]
    assert list(first["label"].int64_list.value) == [7]
    assert list(first["names"].bytes_list.value) == [b"zero"]

    parsed = tf.parse_example(records, {
        "image": tf.FixedLenFeature([3], tf.float32),
        "label": tf.FixedLenFeature([], tf.int64),
        "names": tf.VarLenFeature(tf.string)})
    out = _run(parsed)
    np.testing.assert_array_equal(out["image"], np.array(
        [[0.5, 1.5, -2.25], [3.0, 4.0, 5.0], [1e-3, 0.0, 65504.0]], dtype=np.float32))
    assert out["image"].dtype == np.float32
    np.testing.assert_array_equal(out["label"], [7, -1, 2 ** 40])
    assert out["label"].dtype == np.int64
    names = out["names"]
    assert isinstance(names, tf.SparseTensorValue)
    np.testing.assert_array_equal(names.indices, [[0, 0], [1, 0], [1, 1]])
    assert names.values.tolist() == [b"zero", b"one", b"uno"]
    np.testing.assert_array_equal(names.dense_shape, [3, 2])


# -- parse_example ---------------------------------------------------------------------------------
def test_parse_example_dense_sparse_and_defaults():
    serialized = [
        _example(a=[1.0, 2.0], n=[1, 2, 3], s=[b"x"]),
        _example(a=[3.0, 4.0], s=[b"y"], i_n=[]),
        _example(a=[5.0, 6.0], n=[-7]),
    ]
    batch = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(batch, {
        "a": tf.FixedLenFeature([2, 1], tf.float32),
        "n": tf.VarLenFeature(tf.int64),
        "s": tf.FixedLenFeature([], tf.string, default_value="none"),
        "d": tf.FixedLenFeature([2], tf.int64, default_value=[8, 9]),
    })
    assert parsed["a"].shape.as_list() == [None, 2, 1]
    assert parsed["s"].shape.as_list() == [None]
    assert isinstance(parsed["n"], tf.SparseTensor)
    assert parsed["n"].indices.shape.as_list() == [None, 2]
    dense_n = tf.sparse_tensor_to_dense(parsed["n"], default_value=-1)
    out, dn = _run([parsed, dense_n], {batch: serialized})
    np.testing.assert_array_equal(out["a"], [[[1], [2]], [[3], [4]], [[5], [6]]])
    # A missing feature takes the default.
    assert out["s"].tolist() == [b"x", b"y", b"none"]
    np.testing.assert_array_equal(out["d"], [[8, 9]] * 3)
    np.testing.assert_array_equal(out["n"].indices, [[0, 0], [0, 1], [0, 2], [2, 0]])
    np.testing.assert_array_equal(out["n"].values, [1, 2, 3, -7])
    np.testing.assert_array_equal(out["n"].dense_shape, [3, 3])
    np.testing.assert_array_equal(dn, [[1, 2, 3], [-1, -1, -1], [-7, -1, -1]])


def test_parse_example_static_batch_size():
    parsed = tf.parse_example(tf.constant([_example(x=[1.0])] * 4),
                              {"x": tf.FixedLenFeature([1], tf.float32)})
    assert parsed["x"].shape.as_list() == [4, 1]
    np.testing.assert_array_equal(_run(parsed["x"]), np.ones((4, 1), np.float32))


def test_parse_example_of_an_empty_batch():
    batch = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(batch, {"x": tf.FixedLenFeature([2], tf.float32),
                                      "v": tf.VarLenFeature(tf.float32)})
    out = _run(parsed, {batch: np.array([], dtype=object)})
    assert out["x"].shape == (0, 2)
    assert out["v"].indices.shape == (0, 2)
    np.testing.assert_array_equal(out["v"].dense_shape, [0, 0])


def test_parse_example_matches_the_protobuf_runtime_on_random_examples():
    rng = np.random.default_rng(1)
    serialized, want_x, want_v, want_s = [], [], [], []
    for i in range(500):
        feats = {}
        x = rng.standard_normal(5).astype(np.float32) if rng.random() < 0.8 else None
        if x is not None:
            feats["x"] = Feature(float_list=FloatList(value=x))
        v = rng.integers(-2 ** 62, 2 ** 62, int(rng.integers(0, 4)))
        if len(v) or rng.random() < 0.5:
            feats["v"] = Feature(int64_list=Int64List(value=v))
        s = [bytes(rng.integers(0, 256, int(rng.integers(0, 9)), dtype=np.uint8))]
        feats["s"] = Feature(bytes_list=BytesList(value=s))
        feats["other%d" % i] = Feature(float_list=FloatList(value=[1.0]))  # not asked for
        serialized.append(Example(features=Features(feature=feats)).SerializeToString())
        want_x.append(x if x is not None else np.full(5, -1, np.float32))
        want_v.append(v)
        want_s.append(s[0])
    parsed = tf.parse_example(serialized, {
        "x": tf.FixedLenFeature([5], tf.float32, default_value=[-1.0] * 5),
        "v": tf.VarLenFeature(tf.int64),
        "s": tf.FixedLenFeature([1], tf.string)})
    out = _run(parsed)
    np.testing.assert_array_equal(out["x"], np.stack(want_x))
    assert out["s"][:, 0].tolist() == want_s
    lengths = [len(v) for v in want_v]
    np.testing.assert_array_equal(out["v"].values, np.concatenate(want_v))
    np.testing.assert_array_equal(out["v"].indices[:, 0], np.repeat(np.arange(500), lengths))
    np.testing.assert_array_equal(out["v"].dense_shape, [500, max(lengths)])


def test_non_canonical_encodings_follow_protobuf_semantics():
    # What a serializer does not write but a parser must accept: the protobuf runtime's answer.
    def entry(key, feature_bytes):
        return field_bytes(1, field_bytes(1, key) + field_bytes(2, feature_bytes))

    floats = struct.pack("<2f", 1.0, 2.0)
    unpacked = b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.0, 2.0))  # field 1, fixed32
    records = [
        # the FloatList's values unpacked
        field_bytes(1, entry(b"x", field_bytes(2, unpacked))),
        # the key twice: the last entry wins
        field_bytes(1, entry(b"x", field_bytes(2, field_bytes(1, struct.pack("<2f", 9, 9))))
                    + entry(b"x", field_bytes(2, field_bytes(1, floats)))),
        # Example.features twice: the two Features messages merge
        field_bytes(1, entry(b"x", field_bytes(2, field_bytes(1, floats))))
        + field_bytes(1, entry(b"y", field_bytes(3, field_bytes(1, varint(4))))),
        # two packed runs of one FloatList concatenate
        field_bytes(1, entry(b"x", field_bytes(2, field_bytes(1, floats[:4])
                                               + field_bytes(1, floats[4:])))),
        # an unknown field (number 9, varint) in the Example
        b"\x48\x05" + field_bytes(1, entry(b"x", field_bytes(2, field_bytes(1, floats)))),
    ]
    for r in records:  # the fixtures mean what the comments say
        assert list(Example.FromString(r).features.feature["x"].float_list.value) == [1.0, 2.0]
    parsed = tf.parse_example(records, {"x": tf.FixedLenFeature([2], tf.float32),
                                        "y": tf.FixedLenFeature([], tf.int64, default_value=0)})
    out = _run(parsed)
    np.testing.assert_array_equal(out["x"], [[1.0, 2.0]] * 5)
    np.testing.assert_array_equal(out["y"], [0, 0, 4, 0, 0])


def test_a_later_entry_of_a_key_replaces_all_of_an_earlier_one():
    def entry(key, feature_bytes):
        return field_bytes(1, field_bytes(1, key) + field_bytes(2, feature_bytes))

    ints = field_bytes(3, field_bytes(1, varint(1) + varint(2)))
    records = [field_bytes(1, entry(b"v", ints) + entry(b"v", field_bytes(3, b""))),  # empty
               field_bytes(1, entry(b"v", ints) + entry(b"v", b"")),  # no kind: absent
               field_bytes(1, entry(b"v", field_bytes(3, b"")) + entry(b"v", ints))]
    assert [list(Example.FromString(r).features.feature["v"].int64_list.value)
            for r in records] == [[], [], [1, 2]]
    out = _run(tf.parse_example(records, {"v": tf.VarLenFeature(tf.int64)})["v"])
    np.testing.assert_array_equal(out.indices, [[2, 0], [2, 1]])
    np.testing.assert_array_equal(out.values, [1, 2])


# -- parse_single_example --------------------------------------------------------------------------
def test_parse_single_example():
    serialized = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(serialized, {
        "image": tf.FixedLenFeature([2, 2], tf.float32),
        "label": tf.FixedLenFeature([], tf.int64),
        "tags": tf.VarLenFeature(tf.string)})
    assert parsed["image"].shape.as_list() == [2, 2]
    assert parsed["label"].shape.as_list() == []
    assert parsed["tags"].indices.shape.as_list() == [None, 1]
    dense_tags = tf.sparse_tensor_to_dense(parsed["tags"])
    out, tags = _run([parsed, dense_tags], {serialized: _example(
        image=[1.0, 2.0, 3.0, 4.0], label=[3], tags=[b"p", b"q"])})
    np.testing.assert_array_equal(out["image"], [[1, 2], [3, 4]])
    assert out["label"] == 3
    np.testing.assert_array_equal(out["tags"].indices, [[0], [1]])
    np.testing.assert_array_equal(out["tags"].dense_shape, [2])
    assert tags.tolist() == [b"p", b"q"]


def test_parse_single_example_agrees_with_parse_example():
    # Dense numbers only: ParseSingleExample's own fast path (floats and one-byte varints from
    # the bytes, longer varints decoded); anything else goes to the batch path. Both must give
    # what parse_example gives for a batch of one, values, dtypes and shapes.
    def entry(key, feature_bytes):
        return field_bytes(1, field_bytes(1, key) + field_bytes(2, feature_bytes))

    features = {"x": tf.FixedLenFeature([3], tf.float32),
                "i": tf.FixedLenFeature([2], tf.int64, default_value=[-7, 7]),
                "one": tf.FixedLenFeature([], tf.int64, default_value=5)}
    floats = struct.pack("<3f", 1.5, -0.0, 3e38)
    records = [
        _example(x=[1.5, -0.0, 3e38], i=[0, 127], one=[1]),           # one-byte varints
        _example(x=[1.5, -0.0, 3e38], i=[-1, 2 ** 62], one=[128]),    # long ones, negative
        _example(x=[1.5, -0.0, 3e38]),                                 # defaults
        _example(x=[1.5, -0.0, 3e38], i=[3, 4], one=[9], other=[b"z"]),   # one not asked for
        # unpacked floats (not canonical: the protobuf runtime's answer)
        field_bytes(1, entry(b"x", field_bytes(2, b"".join(
            b"\x0d" + floats[k:k + 4] for k in range(0, 12, 4))))),
    ]
    serialized = tf.placeholder(tf.string, [])
    single = tf.parse_single_example(serialized, features)
    batch = tf.parse_example(tf.expand_dims(serialized, 0), features)
    keys = sorted(features)
    with tf.Session() as sess:
        for r in records:
            one, many = sess.run([[single[k] for k in keys], [batch[k] for k in keys]],
                                 {serialized: r})
            for key, got, want in zip(keys, one, many):
                assert got.dtype == want.dtype and got.shape == want.shape[1:], key
                np.testing.assert_array_equal(got, want[0])
                if key == "x":   # bit for bit (the sign of -0.0)
                    assert got.tobytes() == floats
        out = sess.run([single[k] for k in keys], {serialized: records[1]})
    assert out[0].tolist() == [-1, 2 ** 62] and out[1] == 128   # keys: i, one, x


def test_parse_single_example_over_records_sharing_a_layout():
    # One kernel parses record after record (as a reader's runner threads do): records laid out
    # like an earlier one reuse where its values were; any difference in the bytes around the
    # values (key order, lengths) or a varint longer than a byte must still give the proto's
    # values, or its error.
    def entry(key, feature_bytes):
        return field_bytes(1, field_bytes(1, key) + field_bytes(2, feature_bytes))

    def example(*entries):
        return field_bytes(1, b"".join(entries))

    def ints(values):
        return field_bytes(3, field_bytes(1, b"".join(varint(v) for v in values)))

    def text(value):
        return field_bytes(1, field_bytes(1, value))

    features = {"pair": tf.FixedLenFeature([2], tf.int64),
                "raw": tf.FixedLenFeature([], tf.string),
                "x": tf.FixedLenFeature([1, 2], tf.float32)}
    def floats(a, b):
        return field_bytes(2, field_bytes(1, struct.pack("<2f", a, b)))

    cases = [  # (record, pair, raw, x) or (record, error)
        (example(entry(b"pair", ints([1, 2])), entry(b"raw", text(b"ab")),
                 entry(b"x", floats(0.5, 1.5))), [1, 2], b"ab", [[0.5, 1.5]]),
        (example(entry(b"pair", ints([3, 127])), entry(b"raw", text(b"cd")),
                 entry(b"x", floats(-2.0, 3.0))), [3, 127], b"cd", [[-2.0, 3.0]]),
        # the same length and frame, but [200] is one two-byte varint: one value, not two
        (example(entry(b"pair", ints([200])), entry(b"raw", text(b"ef")),
                 entry(b"x", floats(1.0, 2.0))), "Number of int64 values != expected"),
        # other key order, same length
        (example(entry(b"x", floats(4.0, 5.0)), entry(b"raw", text(b"gh")),
                 entry(b"pair", ints([5, 6]))), [5, 6], b"gh", [[4.0, 5.0]]),
        (example(entry(b"pair", ints([7, 8])), entry(b"raw", text(b"")),
                 entry(b"x", floats(6.0, 7.0))), [7, 8], b"", [[6.0, 7.0]]),
        (example(entry(b"pair", ints([9, 2 ** 40])), entry(b"raw", text(b"\0" * 200)),
                 entry(b"x", floats(8.0, 9.0))), [9, 2 ** 40], b"\0" * 200, [[8.0, 9.0]]),
        (example(entry(b"pair", ints([1, 2])), entry(b"raw", field_bytes(
            1, field_bytes(1, b"a") + field_bytes(1, b"b"))), entry(b"x", floats(0.5, 1.5))),
         "Number of string values != expected"),
        (example(entry(b"pair", ints([10, 11])), entry(b"raw", text(b"ij")),
                 entry(b"x", floats(0.25, 0.75))), [10, 11], b"ij", [[0.25, 0.75]]),
    ]
    serialized = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(serialized, features)
    fetch = [parsed["pair"], parsed["raw"], parsed["x"]]
    with tf.Session() as sess:
        for record, *want in cases * 2:
            if len(want) == 1:
                with pytest.raises(errors.InvalidArgumentError, match=want[0]):
                    sess.run(fetch, {serialized: record})
                continue
            pair, raw, x = sess.run(fetch, {serialized: record})
            assert pair.dtype == np.int64 and pair.tolist() == want[0]
            assert type(raw) is bytes and raw == want[1]   # a scalar string: bytes, as in TF
            assert x.dtype == np.float32 and x.tolist() == want[2]


def test_parse_single_example_errors_from_the_batch_path():
    feats = {"x": tf.FixedLenFeature([2], tf.float32)}
    _parse_error(_example(x=[1.0]), feats, "Number of float values != expected", single=True)
    _parse_error(_example(i_x=[1, 2]), feats, "Data types don't match", single=True)
    _parse_error(_example(y=[1.0]), feats, "is required but could not be found", single=True)
    _parse_error(b"\xff\xff", feats, "could not parse example", single=True)


# -- errors ----------------------------------------------------------------------------------------
def _parse_error(serialized, features, match, single=False):
    with tf.Graph().as_default():
        if single:
            parsed = tf.parse_single_example(serialized, features, name="parse_me")
        else:
            parsed = tf.parse_example(serialized, features, name="parse_me")
        with pytest.raises(errors.InvalidArgumentError, match=match) as info:
            _run(parsed)
    assert "parse_me/" in str(info.value)  # the op's name
    return str(info.value)


def test_missing_required_feature():
    message = _parse_error([_example(a=[1.0]), _example(b=[1.0])],
                           {"a": tf.FixedLenFeature([1], tf.float32)},
                           r"Feature: a \(data type: float\) is required but could not be found")
    assert "ParseExample" in message
    _parse_error(_example(b=[1.0]), {"a": tf.FixedLenFeature([], tf.int64)},
                 r"Feature: a \(data type: int64\) is required", single=True)


def test_wrong_number_of_values():
    _parse_error([_example(a=[1.0, 2.0]), _example(a=[1.0, 2.0, 3.0])],
                 {"a": tf.FixedLenFeature([2], tf.float32)},
                 r"Key: a, Index: 1\.  Number of float values != expected\.  Values size: 3 "
                 r"but output shape: \[2\]")
    # An empty list is a present feature with no values, not a missing one: no default.
    _parse_error([_example(b_a=[])], {"a": tf.FixedLenFeature([], tf.string, default_value="")},
                 r"Key: a, Index: 0\.  Number of string values != expected\.  Values size: 0 "
                 r"but output shape: \[\]")


def test_wrong_type():
    _parse_error([_example(a=[1])], {"a": tf.FixedLenFeature([1], tf.float32)},
                 r"Feature: a\.  Data types don't match\. Data type: int64 but expected type: "
                 r"float")
    _parse_error([_example(a=[b"z"])], {"a": tf.VarLenFeature(tf.int64)},
                 r"Feature: a\.  Data types don't match\. Data type: string but expected type: "
                 r"int64")


def test_example_names_label_errors():
    with tf.Graph().as_default():
        parsed = tf.parse_example([_example(a=[1.0]), _example()],
                                  {"a": tf.FixedLenFeature([], tf.float32)},
                                  example_names=["first", "second"])
        with pytest.raises(errors.InvalidArgumentError, match="Name: second, Feature: a"):
            _run(parsed)


def test_undecodable_example():
    _parse_error([_example(a=[1.0]), b"\x0a\x05ab"], {"a": tf.FixedLenFeature([], tf.float32)},
                 r"could not parse example input 1")


def test_bad_feature_specs_fail_at_graph_time():
    s = tf.constant([_example(a=[1.0])])
    with pytest.raises(ValueError, match="feature 'a' has 3 values but its shape \\[2\\] needs 2"):
        tf.parse_example(s, {"a": tf.FixedLenFeature([2], tf.float32,
                                                     default_value=[1.0, 2.0, 3.0])})
    with pytest.raises(ValueError, match="feature 'a' has dtype float64"):
        tf.parse_example(s, {"a": tf.FixedLenFeature([2], tf.float64)})
    with pytest.raises(ValueError, match="FixedLenFeature 'a' needs a fully defined shape"):
        tf.parse_example(s, {"a": tf.FixedLenFeature([None], tf.float32)})
    with pytest.raises(TypeError, match="feature 'a' must be a FixedLenFeature or VarLenFeature"):
        tf.parse_example(s, {"a": tf.float32})
    for default in (0.7, "x"):  # converted as a constant would be: neither is an int64
        with pytest.raises(TypeError, match="default_value of int64 feature 'a' must hold int64"):
            tf.parse_example(s, {"a": tf.FixedLenFeature([1], tf.int64, default_value=default)})
    with pytest.raises(ValueError, match="rank 1"):
        tf.parse_example(tf.constant(b"x"), {"a": tf.VarLenFeature(tf.float32)})
    with pytest.raises(ValueError, match="rank 0"):
        tf.parse_single_example(s, {"a": tf.VarLenFeature(tf.float32)})


# -- decode_raw ------------------------------------------------------------------------------------
def test_decode_raw():
    data = tf.placeholder(tf.string, [None])
    floats = tf.decode_raw(data, tf.float32)
    big = tf.decode_raw(data, tf.int32, little_endian=False)
    as_bytes = tf.decode_raw(data, tf.uint8)
    assert floats.shape.as_list() == [None, None]
    raw = [struct.pack("<2f", 1.5, -2.0), struct.pack("<2f", 0.25, 8.0)]
    f, b, u = _run([floats, big, as_bytes], {data: raw})
    np.testing.assert_array_equal(f, [[1.5, -2.0], [0.25, 8.0]])
    assert f.dtype == np.float32 and b.dtype == np.int32 and u.dtype == np.uint8
    np.testing.assert_array_equal(b[0], struct.unpack(">2i", raw[0]))
    np.testing.assert_array_equal(u[1], list(raw[1]))
    scalar = _run(tf.decode_raw(tf.constant(b"\x01\x00\x02\x00"), tf.int16))
    np.testing.assert_array_equal(scalar, [1, 2])


def test_decode_raw_errors():
    with pytest.raises(errors.InvalidArgumentError,
                       match="all be the same size, but element 1 has size 2 != 4"):
        _run(tf.decode_raw(tf.constant([b"abcd", b"ab"]), tf.uint8))
    with pytest.raises(errors.InvalidArgumentError,
                       match="length 5 that is not a multiple of 4, the size of float32"):
        _run(tf.decode_raw(tf.constant([b"abcde"]), tf.float32))
    with pytest.raises(TypeError, match="out_type bool"):
        tf.decode_raw(tf.constant([b"a"]), tf.bool)


# -- SparseTensor ----------------------------------------------------------------------------------
def test_sparse_tensor_fetch_and_to_dense():
    sp = tf.SparseTensor(indices=[[0, 1], [2, 0]], values=[5.0, 6.0], dense_shape=[3, 2])
    assert sp.dtype == tf.float32 and sp.get_shape().as_list() == [None, None]
    dense = tf.sparse_tensor_to_dense(sp)
    with tf.Session() as sess:
        value = sess.run(sp)
        both = sess.run({"sp": sp, "dense": dense})
        with sess.as_default():
            assert sp.eval().values.tolist() == [5.0, 6.0]
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(value.dense_shape, [3, 2])
    np.testing.assert_array_equal(both["dense"], [[0, 5], [0, 0], [6, 0]])
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        tf.sparse_tensor_to_dense(dense)

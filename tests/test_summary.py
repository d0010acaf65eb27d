"""Summary ops, the 0.x summary functions and FileWriter event files (read back with
TensorBoard's own reader)."""
import glob
import io
import os
import struct

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

import tfjupyter as tf
import tfjupyter.kernels.cpu.summary_kernels as summary_kernels
from tfjupyter.framework import errors
from tfjupyter.summary import _encoding, summary_iterator


def _parse(serialized) -> summary_pb2.Summary:
    assert isinstance(serialized, bytes)
    return summary_pb2.Summary.FromString(serialized)


# -- tags, names, collections ----------------------------------------------------------------------
def test_scalar_tags_follow_name_scopes_and_families():
    with tf.Graph().as_default() as g:
        x = tf.constant(1.5)
        with tf.name_scope("GPU_0"):
            a = tf.summary.scalar("loss", x)
            a2 = tf.summary.scalar("loss", x)
        b = tf.summary.scalar("accuracy", x, family="eval")
        c = tf.summary.scalar("bad name!", x)
        assert a.name == "GPU_0/loss:0" and a.op.type == "ScalarSummary"
        assert a.op.inputs[0].op.name == "GPU_0/loss/tags"
        assert a2.name == "GPU_0/loss_1:0"
        assert b.name == "eval/accuracy:0"
        assert c.name == "bad_name_:0"
        assert a.dtype is tf.string and a.shape.ndims == 0
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == [a, a2, b, c]
        with tf.Session() as sess:
            tags = [v.tag for s in sess.run([a, a2, b, c]) for v in _parse(s).value]
    assert tags == ["GPU_0/loss", "GPU_0/loss_1", "eval/eval/accuracy", "bad_name_"]


def test_collections_argument():
    with tf.Graph().as_default() as g:
        s = tf.summary.scalar("x", 1.0, collections=["mine"])
        assert g.get_collection("mine") == [s]
        assert g.get_collection(tf.GraphKeys.SUMMARIES) == []
        assert tf.summary.merge_all() is None
        assert tf.summary.merge_all("mine").op.type == "MergeSummary"


# -- values ----------------------------------------------------------------------------------------
def test_scalar_value_is_serialized_summary_bytes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [])
        n = tf.constant(3, dtype=tf.int64)
        s = tf.summary.scalar("x", x)
        t = tf.summary.scalar("n", n)
        with tf.Session() as sess:
            out = sess.run(s, {x: 0.1})
            assert isinstance(out, bytes)
            value = _parse(out).value[0]
            assert value.tag == "x" and value.simple_value == np.float32(0.1)
            assert _parse(sess.run(t)).value[0].simple_value == 3.0
            # Beyond float32 range the value saturates, as TensorFlow's cast does.
            assert _parse(sess.run(s, {x: 1e300})).value[0].simple_value == np.inf


def test_scalar_summary_shape_and_dtype_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="tags and values not the same shape"):
            tf.summary.scalar("v", tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
            tf.summary.scalar("b", tf.constant(True))
        v = tf.placeholder(tf.float32)
        s = tf.summary.scalar("w", v)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"tags and values not the same shape: \[\] != \[2\] "
                                     r"\(tag 'w'\)"):
                sess.run(s, {v: [1.0, 2.0]})


def test_legacy_scalar_summary_with_several_tags():
    with tf.Graph().as_default():
        s = tf.scalar_summary(["a", "b"], tf.constant([1.0, 2.0]))
        assert s.op.name == "ScalarSummary"
        with tf.name_scope("scope"):
            u = tf.scalar_summary("unscoped", tf.constant(3.0))
        with tf.Session() as sess:
            values = _parse(sess.run(s)).value
            assert [(v.tag, v.simple_value) for v in values] == [("a", 1.0), ("b", 2.0)]
            assert _parse(sess.run(u)).value[0].tag == "unscoped"   # 0.x: tags not scoped


def _reference_histogram(values):
    """TensorFlow's histogram::Histogram, written out loop by loop."""
    limits = summary_kernels.BUCKET_LIMITS
    counts = np.zeros(len(limits))
    for x in values:
        counts[np.searchsorted(limits, x, side="right")] += 1
    out_limits, out_counts = [], []
    i = 0
    while i < len(counts):
        end, count = limits[i], counts[i]
        i += 1
        if count <= 0:
            while i < len(counts) and counts[i] <= 0:
                end, count = limits[i], counts[i]
                i += 1
        out_limits.append(end)
        out_counts.append(count)
    return out_limits, out_counts


def test_bucket_limits_are_tensorflows():
    limits = summary_kernels.BUCKET_LIMITS
    # 774 limits 1e-12 * 1.1**k below 1e20 on each side, +-DBL_MAX, and 0 in the middle.
    assert len(limits) == 2 * 775 + 1 and limits[775] == 0.0
    assert limits[776] == 1e-12 and limits[-1] == np.finfo(np.float64).max
    np.testing.assert_allclose(limits[777:-1] / limits[776:-2], 1.1)
    assert limits[-2] < 1e20 <= limits[-2] * 1.1
    np.testing.assert_array_equal(limits[:775], -limits[776:][::-1])


def test_histogram_matches_reference():
    data = np.random.RandomState(0).standard_normal((40, 5)) * 3
    data[0, 0] = 0.0
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 5])
        h = tf.summary.histogram("weights", x)
        with tf.Session() as sess:
            histo = _parse(sess.run(h, {x: data})).value[0].histo
            empty = _parse(sess.run(h, {x: np.zeros((0, 5))})).value[0].histo
            ints = tf.summary.histogram("ints", tf.constant([1, 1, 2, 5], tf.int32))
            int_histo = _parse(sess.run(ints)).value[0].histo
    flat = data.astype(np.float32).astype(np.float64).reshape(-1)
    assert histo.num == 200 and histo.min == flat.min() and histo.max == flat.max()
    assert histo.sum == pytest.approx(flat.sum(), rel=1e-12)
    assert histo.sum_squares == pytest.approx((flat ** 2).sum(), rel=1e-12)
    limits, counts = _reference_histogram(flat)
    assert list(histo.bucket_limit) == limits and list(histo.bucket) == counts
    assert sum(histo.bucket) == 200
    assert (empty.num, empty.min, empty.max) == (0, np.finfo(np.float64).max,
                                                 -np.finfo(np.float64).max)
    assert list(empty.bucket_limit) == [np.finfo(np.float64).max] and list(empty.bucket) == [0]
    limits, counts = _reference_histogram([1.0, 1.0, 2.0, 5.0])
    assert list(int_histo.bucket_limit) == limits and list(int_histo.bucket) == counts
    assert int_histo.sum == 9 and int_histo.sum_squares == 31


def test_histogram_rejects_nan_and_infinity():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        with tf.name_scope("layer1"):
            h = tf.summary.histogram("activations", x)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="Nan in summary histogram for: layer1/activations"):
                sess.run(h, {x: [1.0, np.nan, np.inf]})
            with pytest.raises(errors.InvalidArgumentError, match="Infinity in summary histogram"):
                sess.run(h, {x: [1.0, -np.inf, np.nan]})


def test_image_summary_scales_like_tensorflow():
    from PIL import Image
    batch = np.zeros((3, 2, 2, 1), np.float32)
    batch[0, :, :, 0] = [[0.0, 0.5], [1.0, 2.0]]            # non-negative: max -> 255
    batch[1, :, :, 0] = [[-1.0, 0.0], [0.5, np.nan]]        # negatives: centred on 128
    rgb = np.arange(2 * 3 * 4 * 3, dtype=np.uint8).reshape(2, 3, 4, 3)
    with tf.Graph().as_default():
        s = tf.summary.image("input", tf.constant(batch), max_outputs=2)
        one = tf.summary.image("rgb", tf.constant(rgb), max_outputs=1)
        with tf.Session() as sess:
            values = _parse(sess.run(s)).value
            rgb_values = _parse(sess.run(one)).value
    assert [v.tag for v in values] == ["input/image/0", "input/image/1"]
    img0 = np.array(Image.open(io.BytesIO(values[0].image.encoded_image_string)))
    np.testing.assert_array_equal(img0, [[0, 63], [127, 255]])
    img1 = np.array(Image.open(io.BytesIO(values[1].image.encoded_image_string)))
    np.testing.assert_array_equal(img1, [[1, 128], [191, 255]])   # NaN -> bad_color red: 255
    assert (values[0].image.height, values[0].image.width, values[0].image.colorspace) == \
        (2, 2, 1)
    assert [v.tag for v in rgb_values] == ["rgb/image"]
    decoded = np.array(Image.open(io.BytesIO(rgb_values[0].image.encoded_image_string)))
    np.testing.assert_array_equal(decoded, rgb[0])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="4-D with last dim 1, 3, or 4"):
            tf.summary.image("bad", tf.zeros([2, 4, 4, 2]))


# -- merging ---------------------------------------------------------------------------------------
def test_merge_and_merge_all():
    with tf.Graph().as_default():
        a = tf.summary.scalar("a", 1.0)
        b = tf.summary.histogram("b", [1.0, 2.0])
        merged = tf.summary.merge_all()
        assert merged.op.name == "Merge/MergeSummary" and merged.op.type == "MergeSummary"
        pair = tf.summary.merge([a, b], name="pair")
        with tf.Session() as sess:
            out = sess.run(merged)
            assert [v.tag for v in _parse(out).value] == ["a", "b"]
            assert out == sess.run(a) + sess.run(b)
            assert sess.run(pair) == out
            dup = tf.summary.merge([a, a])
            with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag a found"):
                sess.run(dup)
            fed = tf.placeholder(tf.string)
            bad = tf.summary.merge([fed])
            with pytest.raises(errors.InvalidArgumentError,
                               match="Could not parse one of the summary inputs"):
                sess.run(bad, {fed: b"\xff\xff"})
            assert sess.run(bad, {fed: [sess.run(a)]}) == sess.run(a)


def test_legacy_merge_functions():
    with tf.Graph().as_default():
        assert tf.merge_all_summaries() is None
        tf.scalar_summary("a", tf.constant(1.0))
        h = tf.histogram_summary("h", tf.constant([1.0]))
        merged = tf.merge_all_summaries()
        assert merged.op.name == "MergeSummary/MergeSummary"
        with tf.Session() as sess:
            assert [v.tag for v in _parse(sess.run(merged)).value] == ["a", "h"]
            assert sess.run(tf.merge_summary([h])) == sess.run(h)


# -- FileWriter ------------------------------------------------------------------------------------
def _records(path):
    """The TFRecord framing of an event file, CRCs checked, as raw payloads."""
    raw = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(raw):
        header = raw[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", raw[pos + 8:pos + 12])
        assert length_crc == masked_crc32c(header) == _encoding.masked_crc32c(header)
        data = raw[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", raw[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked_crc32c(data)
        out.append(data)
        pos += 16 + length
    assert pos == len(raw)
    return out


def test_file_writer_events_read_back_by_tensorboard(tmp_path):
    logdir = str(tmp_path / "train")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="inputs")
        with tf.name_scope("GPU_0"):
            tf.summary.scalar("loss", tf.reduce_mean(x))
        tf.summary.histogram("x", x)
        merged = tf.summary.merge_all()
        with tf.Session() as sess, tf.summary.FileWriter(logdir, sess.graph) as writer:
            assert writer.get_logdir() == logdir
            writer.add_session_log(event_pb2.SessionLog(status=event_pb2.SessionLog.START), 0)
            for step in range(5):
                writer.add_summary(sess.run(merged, {x: [float(step), float(step)]}), step)
            writer.add_summary(summary_pb2.Summary(value=[
                summary_pb2.Summary.Value(tag="manual", simple_value=7.0)]), global_step=9)
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    assert len(files) == 1
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == {"GPU_0/loss", "manual"}
    assert acc.Tags()["graph"] and acc.Tags()["meta_graph"]
    loss = acc.Scalars("GPU_0/loss")
    assert [e.step for e in loss] == [0, 1, 2, 3, 4]
    assert [e.value for e in loss] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [(e.step, e.value) for e in acc.Scalars("manual")] == [(9, 7.0)]
    histos = acc.Histograms("x")
    assert [h.step for h in histos] == [0, 1, 2, 3, 4]
    assert histos[3].histogram_value.num == 2 and histos[3].histogram_value.sum == 6.0
    assert {n.name for n in acc.Graph().node} >= {"inputs", "GPU_0/loss", "Merge/MergeSummary"}
    events = [event_pb2.Event.FromString(r) for r in _records(files[0])]
    assert events[0].file_version == "brain.Event:2"
    assert any(e.HasField("session_log") for e in events)
    assert list(summary_iterator(files[0])) == events
    raw = open(files[0], "rb").read()
    with open(files[0], "wb") as f:
        f.write(raw[:-3])
    with pytest.raises(errors.DataLossError, match="truncated record"):
        list(summary_iterator(files[0]))
    with open(files[0], "wb") as f:
        f.write(raw[:20] + bytes([raw[20] ^ 1]) + raw[21:])
    with pytest.raises(errors.DataLossError, match="corrupted record"):
        list(summary_iterator(files[0]))


def test_file_writer_lifecycle(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), filename_suffix=".v2")
    writer.add_summary(summary_pb2.Summary(value=[
        summary_pb2.Summary.Value(tag="a", simple_value=1.0)]), 1)
    writer.flush()
    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert path.endswith(".v2")
    assert len(_records(path)) == 2
    writer.close()
    writer.add_summary(summary_pb2.Summary(), 2)   # ignored after close, as TensorFlow
    writer.close()
    assert len(_records(path)) == 2
    writer.reopen()
    writer.add_event(event_pb2.Event(step=3, wall_time=1.0))
    writer.close()
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) == 2
    with pytest.raises(TypeError, match="Summary proto or its serialized bytes"):
        tf.summary.FileWriter(str(tmp_path)).add_summary(3.0)
    with pytest.raises(ValueError, match="not a serialized Summary"):
        tf.summary.FileWriter(str(tmp_path)).add_summary(b"\xff\xff\xff")
    with pytest.raises(TypeError, match="must be an instance of `Graph`"):
        tf.summary.FileWriter(str(tmp_path), graph="not a graph")


def test_run_metadata_and_summary_writer_alias(tmp_path):
    from tfjupyter.summary import SummaryWriter
    assert SummaryWriter is tf.summary.FileWriter
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = tf.identity(x * x, name="y")
        with tf.Session() as sess:
            meta = tf.RunMetadata()
            sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
            with SummaryWriter(str(tmp_path), graph=sess.graph) as writer:
                writer.add_run_metadata(meta, "step1", global_step=1)
                with pytest.raises(ValueError, match="tag was already used"):
                    writer.add_run_metadata(meta, "step1")
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert acc.Tags()["run_metadata"] == ["step1"]
    run_metadata = acc.RunMetadata("step1")
    (device,) = run_metadata.step_stats.dev_stats
    assert device.device.endswith("device:CPU:0")
    assert "mul" in [n.node_name for n in device.node_stats]   # the traced ops

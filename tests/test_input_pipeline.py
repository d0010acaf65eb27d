"""Queue-based input pipelines (tf.train.string_input_producer, batch, shuffle_batch, ...):
epochs counted exactly, shuffling, batching rules, the end of input travelling down the
pipeline, and the classic Coordinator loop ending in bounded time with no thread left.

Every run that may block gets a deadline (RunOptions.timeout_in_ms) and every thread is
joined with a timeout, so a broken pipeline fails these tests instead of hanging them.
"""
import collections
import os
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import python_io
from tfjupyter.framework import errors

BOUNDED = tf.RunOptions(timeout_in_ms=10000)


def write_lines(tmp_path, n_files=3, n_lines=4):
    """Files f0..f{n-1}.txt with lines b"f<i>-<j>"; returns (paths, all lines)."""
    paths, lines = [], []
    for i in range(n_files):
        mine = [b"f%d-%d" % (i, j) for j in range(n_lines)]
        p = tmp_path / f"f{i}.txt"
        p.write_bytes(b"\n".join(mine) + b"\n")
        paths.append(str(p))
        lines.extend(mine)
    return paths, lines


def start(sess):
    sess.run(tf.local_variables_initializer())
    coord = tf.train.Coordinator()
    return coord, tf.train.start_queue_runners(sess=sess, coord=coord)


def drain(sess, fetch, coord, threads):
    """Runs ``fetch`` until OutOfRangeError, the classic loop; returns every result."""
    out = []
    try:
        while not coord.should_stop():
            out.append(sess.run(fetch, options=BOUNDED))
    except errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    assert not any(t.is_alive() for t in threads)
    return out


def runner_threads_alive():
    return [t.name for t in threading.enumerate()
            if t.name.startswith("QueueRunnerThread") and t.is_alive()]


# -- producers -------------------------------------------------------------------------------------
def test_num_epochs_reads_every_record_exactly_n_times_in_order(tmp_path):
    paths, lines = write_lines(tmp_path)
    q = tf.train.string_input_producer(paths, num_epochs=3, shuffle=False)
    _, value = tf.TextLineReader().read(q)
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, value, coord, threads)
    assert got == lines * 3


def test_shuffled_epochs_are_permutations_and_seeded_runs_agree(tmp_path):
    names = [f"file{i:02d}" for i in range(20)]

    def epochs(seed):
        tf.reset_default_graph()
        q = tf.train.string_input_producer(names, num_epochs=3, shuffle=True, seed=seed)
        name = q.dequeue()
        with tf.Session() as sess:
            coord, threads = start(sess)
            got = [n.decode() for n in drain(sess, name, coord, threads)]
        return [got[i:i + 20] for i in range(0, 60, 20)]

    first = epochs(seed=7)
    assert len(first) == 3 and all(sorted(e) == names for e in first)
    assert first[0] != first[1] or first[1] != first[2]   # each epoch is shuffled anew
    assert epochs(seed=7) == first
    assert epochs(seed=8) != first


def test_limit_epochs_needs_local_variables_initialized():
    x = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=2)
    assert len(tf.local_variables()) == 1 and not tf.trainable_variables()
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="epochs"):
            sess.run(x)
        sess.run(tf.local_variables_initializer())
        assert sess.run(x).tolist() == [1, 2] and sess.run(x).tolist() == [1, 2]
        with pytest.raises(errors.OutOfRangeError):
            sess.run(x)
    with pytest.raises(ValueError, match="num_epochs must be > 0"):
        tf.train.limit_epochs(tf.constant(1), 0)


def test_slice_input_producer_keeps_rows_together():
    images = np.arange(12, dtype=np.float32).reshape(6, 2)
    labels = np.arange(6, dtype=np.int32) * 10
    image, label = tf.train.slice_input_producer([images, labels], num_epochs=2, seed=3)
    assert image.shape.as_list() == [2] and label.shape.as_list() == []
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, [image, label], coord, threads)
    assert len(got) == 12
    for img, lab in got:
        np.testing.assert_array_equal(img, images[lab // 10])
    assert collections.Counter(int(lab) for _, lab in got) == {v: 2 for v in labels.tolist()}


def test_string_input_producer_rejects_no_files(tmp_path):
    with pytest.raises(ValueError, match="non-null input tensor"):
        tf.train.string_input_producer([])
    # A pattern that matches nothing: the producer's runner fails, the coordinator stops, the
    # pipeline ends and join reports the error.
    files = tf.train.match_filenames_once(str(tmp_path / "missing-*.tfrecord"))
    q = tf.train.string_input_producer(files)
    _, value = tf.WholeFileReader().read(q)
    batch = tf.train.batch([value], 2)
    with tf.Session() as sess:
        coord, threads = start(sess)
        with pytest.raises(errors.InvalidArgumentError,
                           match="string_input_producer requires a non-null input tensor"):
            drain(sess, batch, coord, threads)


def test_match_filenames_once_is_a_local_variable(tmp_path):
    paths, lines = write_lines(tmp_path, n_files=2)
    files = tf.train.match_filenames_once(str(tmp_path / "f*.txt"))
    assert files in tf.local_variables()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(files).tolist() == [os.fsencode(p) for p in paths]


# -- batching --------------------------------------------------------------------------------------
def counting_input(n, num_epochs=1):
    """The integers 0..n-1 once each, in order, from a runner."""
    return tf.train.range_input_producer(n, num_epochs=num_epochs, shuffle=False).dequeue()


def test_batch_whole_batches_only_then_out_of_range():
    x = counting_input(10)
    b = tf.train.batch([x], batch_size=4)
    assert b.shape.as_list() == [4]
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, b, coord, threads)
    assert [v.tolist() for v in got] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_allow_smaller_final_batch_gives_the_rest_first():
    x = counting_input(10)
    b = tf.train.batch({"x": x, "y": x * 2}, batch_size=4, allow_smaller_final_batch=True)
    assert set(b) == {"x", "y"} and b["x"].shape.as_list() == [None]
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, b, coord, threads)
    assert [v["x"].tolist() for v in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert all((v["y"] == 2 * v["x"]).all() for v in got)


def test_batch_enqueue_many_from_read_up_to(tmp_path):
    p = tmp_path / "r.tfrecord"
    with python_io.TFRecordWriter(str(p)) as w:
        for i in range(23):
            w.write(b"rec%d" % i)
    q = tf.train.string_input_producer([str(p)], num_epochs=2, shuffle=False)
    _, values = tf.TFRecordReader().read_up_to(q, 5)
    b = tf.train.batch([values], batch_size=10, enqueue_many=True,
                       allow_smaller_final_batch=True)
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, b, coord, threads)
    assert [len(v) for v in got] == [10, 10, 10, 10, 6]
    assert [r for v in got for r in v.tolist()] == [b"rec%d" % i for i in range(23)] * 2


def test_dynamic_pad_pads_to_the_longest_in_the_batch():
    n = counting_input(5)
    x = tf.range(n) + 1                 # [1..n]: a different length each time
    b = tf.train.batch([x], batch_size=5, dynamic_pad=True)
    assert b.shape.as_list() == [5, None]
    with pytest.raises(ValueError, match="fully defined"):
        tf.train.batch([x], batch_size=5)
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, b, coord, threads)
    np.testing.assert_array_equal(got[0], [[0, 0, 0, 0], [1, 0, 0, 0], [1, 2, 0, 0],
                                           [1, 2, 3, 0], [1, 2, 3, 4]])


def test_maybe_batch_keeps_only_the_kept_examples():
    x = counting_input(12)
    b = tf.train.maybe_batch([x], keep_input=tf.equal(x % 3, 0), batch_size=2)
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, b, coord, threads)
    assert [v.tolist() for v in got] == [[0, 3], [6, 9]]


def test_batch_join_mixes_two_readers(tmp_path):
    paths, lines = write_lines(tmp_path, n_files=4, n_lines=5)
    q = tf.train.string_input_producer(paths, num_epochs=2, shuffle=False)
    pairs = [list(tf.TextLineReader().read(q)) for _ in range(2)]
    keys, values = tf.train.batch_join(pairs, batch_size=4, allow_smaller_final_batch=True)
    with tf.Session() as sess:
        coord, threads = start(sess)
        got = drain(sess, [keys, values], coord, threads)
    seen = [v for _, vs in got for v in vs.tolist()]
    assert collections.Counter(seen) == {line: 2 for line in lines}
    # Each record's key names its file and line.
    for ks, vs in got:
        for k, v in zip(ks.tolist(), vs.tolist()):
            i, j = map(int, v.decode()[1:].split("-"))
            assert k == f"{paths[i]}:{j + 1}".encode()


def test_shuffle_batch_keeps_min_after_dequeue_until_input_ends():
    src = tf.FIFOQueue(100, tf.int32, shapes=[[]])
    b = tf.train.shuffle_batch([src.dequeue()], batch_size=5, capacity=20,
                               min_after_dequeue=10, seed=1)
    shuffle_queue = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].queue
    waiting = tf.RunOptions(timeout_in_ms=300)
    with tf.Session() as sess:
        coord, threads = start(sess)
        sess.run(src.enqueue_many([list(range(14))]))
        deadline = time.monotonic() + 5
        while sess.run(shuffle_queue.size()) < 14 and time.monotonic() < deadline:
            time.sleep(0.01)
        # 14 < batch 5 + min_after_dequeue 10: the dequeue must wait.
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(b, options=waiting)
        sess.run(src.enqueue([14]))
        first = sess.run(b, options=BOUNDED)
        assert sess.run(shuffle_queue.size()) == 10
        # Once the input ends the queue is closed, and what it kept comes out.
        sess.run(src.close())
        rest = drain(sess, b, coord, threads)
    assert len(rest) == 2
    assert sorted(np.concatenate([first] + rest).tolist()) == list(range(15))


def test_shuffle_batch_with_a_seed_is_deterministic():
    def batches(seed):
        tf.reset_default_graph()
        b = tf.train.shuffle_batch([counting_input(40)], batch_size=8, capacity=50,
                                   min_after_dequeue=30, seed=seed)
        q = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[-1].queue
        with tf.Session() as sess:
            coord, threads = start(sess)
            # Wait for the whole input: then the draws depend on the seed only.
            deadline = time.monotonic() + 5
            while not sess.run(q.is_closed()) and time.monotonic() < deadline:
                time.sleep(0.01)
            return [v.tolist() for v in drain(sess, b, coord, threads)]

    first = batches(5)
    assert len(first) == 5 and sorted(sum(first, [])) == list(range(40))
    assert first != [list(range(i, i + 8)) for i in range(0, 40, 8)]
    assert batches(5) == first and batches(6) != first


def test_shuffle_batch_argument_checks():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="must be bigger than min_after_dequeue"):
        tf.train.shuffle_batch([x], 4, capacity=10, min_after_dequeue=10)
    with pytest.raises(ValueError, match="keep_input"):
        tf.train.maybe_batch([x], tf.constant([True]), 4)


# -- the classic loop ------------------------------------------------------------------------------
def write_example_files(tmp_path, n_files=3, per_file=50):
    """TFRecord files of 8-byte records: bytes of the record's global index (a uint8 pattern)."""
    paths = []
    for i in range(n_files):
        p = tmp_path / f"data-{i}.tfrecord"
        with python_io.TFRecordWriter(str(p)) as w:
            for j in range(per_file):
                w.write(np.full(8, i * per_file + j, dtype=np.uint8).tobytes())
        paths.append(str(p))
    return paths


def test_tutorial_loop_ends_in_bounded_time_with_no_thread_left(tmp_path):
    paths = write_example_files(tmp_path)
    q = tf.train.string_input_producer(paths, num_epochs=2, seed=11)
    key, record = tf.TFRecordReader().read(q)
    images, keys = tf.train.shuffle_batch([record, key], batch_size=16,
                                          capacity=100, min_after_dequeue=20, num_threads=4,
                                          allow_smaller_final_batch=True, seed=2)
    started = time.monotonic()
    seen = collections.Counter()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        assert len(threads) == 2 + 5   # each runner's enqueue threads + one close_on_stop each
        try:
            while not coord.should_stop():
                batch, batch_keys = sess.run([images, keys], options=BOUNDED)
                for r, k in zip(batch.tolist(), batch_keys.tolist()):
                    # Record j of file i is b"i*50+j" * 8, at offset 24 * j (12 + 8 + 4 bytes
                    # a record): the key and the record travelled together.
                    i, j = divmod(r[0], 50)
                    assert r == bytes([r[0]]) * 8 and k == f"{paths[i]}:{24 * j}".encode()
                    seen[r[0]] += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    assert time.monotonic() - started < 30
    assert seen == {k: 2 for k in range(150)}
    assert not runner_threads_alive()


def test_request_stop_mid_epoch_ends_blocked_runners(tmp_path):
    paths = write_example_files(tmp_path, n_files=2)
    q = tf.train.string_input_producer(paths)          # endless
    _, record = tf.TFRecordReader().read(q)
    batch = tf.train.batch([record], batch_size=4, capacity=8, num_threads=2)
    with tf.Session() as sess:
        coord, threads = start(sess)
        for _ in range(3):
            assert sess.run(batch, options=BOUNDED).shape == (4,)
        time.sleep(0.2)                                  # let the runners fill and block
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)   # no exception: a clean stop
    assert not runner_threads_alive()


def test_closing_the_session_ends_blocked_runners(tmp_path):
    paths = write_example_files(tmp_path, n_files=2)
    q = tf.train.string_input_producer(paths)
    _, record = tf.TFRecordReader().read(q)
    tf.train.shuffle_batch([record], batch_size=4, capacity=16, min_after_dequeue=4,
                           num_threads=3)
    sess = tf.Session()
    coord, threads = start(sess)
    time.sleep(0.3)            # every enqueue thread is now blocked on a full queue
    assert all(t.is_alive() for t in threads)
    sess.close()
    # The runners' cancelled enqueues are reported to the coordinator, which stops everything.
    assert coord.wait_for_stop(10)
    with pytest.raises(errors.CancelledError, match="Session was closed"):
        coord.join(threads, stop_grace_period_secs=10)
    for t in threads:
        t.join(5)
    assert not runner_threads_alive()

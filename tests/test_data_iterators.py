"""tf.data iterators (TF 1.15 semantics, graph mode): one-shot, initializable, from_structure,
string handles, OutOfRangeError at the end, TensorFlow's errors, MonitoredTrainingSession, and
prefetching off the training thread (overlap, threads ended when the session closes)."""
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from cluster_util import token_env  # noqa: F401 - the fixture
from data_util import drain, fresh_graph  # noqa: F401 - fresh_graph: the fixture

pytestmark = pytest.mark.timeout(60)


def data_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tfjupyter-data")]


def test_one_shot_iterator_ends_with_out_of_range_every_time():
    element = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(element) for _ in range(3)] == [0, 1, 2]
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
                sess.run(element)


def test_one_shot_iterator_cannot_take_a_placeholder():
    n = tf.placeholder(tf.int64, [])
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        tf.data.Dataset.range(n).make_one_shot_iterator()


def test_get_next_before_the_initializer_is_tensorflows_failed_precondition():
    it = tf.data.Dataset.range(3).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match=r"GetNext\(\) failed because the iterator has not been "
                                 r"initialized. Ensure that you have run the initializer "
                                 r"operation for this iterator before getting the next element."):
            sess.run(element)


def test_initializable_iterator_restarts_with_fed_values():
    data = tf.placeholder(tf.float32, [None, 2])
    it = tf.data.Dataset.from_tensor_slices(data).batch(2).make_initializable_iterator()
    batch = it.get_next()
    assert batch.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(it.initializer, {data: np.ones((3, 2))})
        assert [b.shape for b in drain(sess, batch)] == [(2, 2), (1, 2)]
        sess.run(it.initializer, {data: np.zeros((4, 2))})
        assert [b.sum() for b in drain(sess, batch)] == [0.0, 0.0]


def test_from_structure_switches_between_datasets():
    train = tf.data.Dataset.range(10).map(lambda x: (x, x * 2))
    test = tf.data.Dataset.range(100, 102).map(lambda x: (x, -x))
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    assert it.output_types == (tf.int64, tf.int64)
    element = it.get_next()
    to_train, to_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as sess:
        sess.run(to_train)
        assert sess.run(element) == (0, 0)
        sess.run(to_test)
        assert drain(sess, element) == [(100, -100), (101, -101)]
        sess.run(to_train)
        assert len(drain(sess, element)) == 10


def test_from_structure_rejects_another_structure_or_type():
    it = tf.data.Iterator.from_structure((tf.int64, tf.float32), ([], [2]))
    with pytest.raises(ValueError, match="same nested structure"):
        it.make_initializer(tf.data.Dataset.range(3))
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(tf.data.Dataset.from_tensors((1, [1.0, 2.0])))
    with pytest.raises(TypeError, match="Expected output shapes compatible"):
        it.make_initializer(tf.data.Dataset.from_tensors(
            (tf.constant(1, tf.int64), [1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="does not have an initializer"):
        it.initializer


def test_string_handles_switch_iterators_by_feed():
    train = tf.data.Dataset.range(1000).make_one_shot_iterator()
    val = tf.data.Dataset.range(50, 53).make_initializable_iterator()
    handle = tf.placeholder(tf.string, [])
    it = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    element = it.get_next()
    with tf.Session() as sess:
        train_handle, val_handle = sess.run([train.string_handle(), val.string_handle()])
        assert [sess.run(element, {handle: train_handle}) for _ in range(3)] == [0, 1, 2]
        sess.run(val.initializer)
        assert drain(sess, element, {handle: val_handle}) == [50, 51, 52]
        assert sess.run(element, {handle: train_handle}) == 3
        with pytest.raises(tf.errors.NotFoundError, match="no iterator 'nonsense'"):
            sess.run(element, {handle: b"nonsense"})

    other = tf.data.Iterator.from_string_handle(handle, tf.float32)
    with tf.Session() as sess:
        h = sess.run(train.string_handle())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="data type mismatch at component 0: expected float32 but got "
                                 "int64"):
            sess.run(other.get_next(), {handle: h})


def test_shared_name_iterators_are_one_iterator_per_device():
    ds = tf.data.Dataset.range(5)
    a = ds.make_initializable_iterator(shared_name="shared_it")
    b = tf.data.Iterator.from_structure(tf.int64, [], shared_name="shared_it")
    with tf.Session() as sess:
        sess.run(a.initializer)
        assert [sess.run(a.get_next()), sess.run(b.get_next()), sess.run(a.get_next())] == \
            [0, 1, 2]


def test_monitored_training_session_stops_at_the_end_of_the_data():
    element = tf.data.Dataset.range(7).batch(2).make_one_shot_iterator().get_next()
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    seen = []
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=100)]) as s:
        while not s.should_stop():
            seen.append(s.run([element, train])[0].tolist())
    assert seen == [[0, 1], [2, 3], [4, 5], [6]]


def test_stop_at_step_hook_stops_an_endless_dataset():
    element = tf.data.Dataset.range(3).repeat().make_one_shot_iterator().get_next()
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    count = 0
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=5)]) as s:
        while not s.should_stop():
            s.run([element, train])
            count += 1
    assert count == 5


def test_datasets_survive_a_graph_def_round_trip():
    from tfjupyter.framework import graph_io
    ds = tf.data.Dataset.range(3).flat_map(lambda x: tf.data.Dataset.from_tensors(x).repeat(2))
    it = ds.map(lambda x: x * 2).batch(4).make_initializable_iterator()
    element = it.get_next()
    graph_def = graph_io.export_graph_def(tf.get_default_graph())
    with tf.Graph().as_default() as imported:
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            sess.run(it.initializer.name)
            batches = drain(sess, imported.get_tensor_by_name(element.name))
            assert [b.tolist() for b in batches] == [[0, 0, 2, 2], [4, 4]]


def test_an_iterator_on_a_worker_task(token_env):
    from cluster_util import loopback_cluster
    cluster = loopback_cluster(ps=1, worker=1)
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.device("/job:worker/task:0"):
            it = tf.data.Dataset.range(5).map(lambda x: x * 3).batch(2).prefetch(1) \
                .make_initializable_iterator()
            element = it.get_next()
        with tf.Session(servers[1].target) as sess:
            sess.run(it.initializer)
            assert [b.tolist() for b in drain(sess, element)] == [[0, 3], [6, 9], [12]]
            assert "/job:worker/" in sess.placer.assigned[element.op].name
    finally:
        for server in servers:
            server.stop()


# -- work off the training thread ------------------------------------------------------------------
class Activity:
    """Counts the input and training work running at once, and the most seen together."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active = {"input": 0, "step": 0}
        self.overlaps = 0

    def busy(self, kind: str, seconds: float):
        with self.lock:
            self.active[kind] += 1
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if self.active["input"] and self.active["step"]:
                    self.overlaps += 1
            time.sleep(0.002)
        with self.lock:
            self.active[kind] -= 1


def test_prefetch_runs_a_slow_map_while_a_slow_step_runs():
    activity = Activity()

    def slow_input(x):
        activity.busy("input", 0.02)
        return x

    def slow_step(x):
        activity.busy("step", 0.02)
        return x
    ds = tf.data.Dataset.range(12).map(lambda x: tf.py_func(slow_input, [x], tf.int64))
    element = ds.prefetch(2).make_one_shot_iterator().get_next()
    trained = tf.py_func(slow_step, [element], tf.int64)
    with tf.Session() as sess:
        assert drain(sess, trained) == list(range(12))
    assert activity.overlaps > 0

    # Without prefetch, the map runs inside the step, never beside it.
    activity.overlaps = 0
    element = ds.make_one_shot_iterator().get_next()
    trained = tf.py_func(slow_step, [element], tf.int64)
    with tf.Session() as sess:
        assert drain(sess, trained) == list(range(12))
    assert activity.overlaps == 0


def test_parallel_map_runs_calls_at_once():
    activity = Activity()
    most = [0]

    def slow(x):
        with activity.lock:
            activity.active["input"] += 1
            most[0] = max(most[0], activity.active["input"])
        time.sleep(0.02)
        with activity.lock:
            activity.active["input"] -= 1
        return x
    ds = tf.data.Dataset.range(16).map(lambda x: tf.py_func(slow, [x], tf.int64),
                                       num_parallel_calls=4)
    element = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert drain(sess, element) == list(range(16))
    assert most[0] >= 2


def test_closing_the_session_ends_the_background_threads():
    before = set(data_threads())
    ds = tf.data.Dataset.range(10).repeat().map(lambda x: x + 1, num_parallel_calls=2)
    element = ds.prefetch(3).prefetch(2).make_one_shot_iterator().get_next()
    sess = tf.Session()
    assert sess.run(element) == 1
    assert len(set(data_threads()) - before) >= 2          # two pumps, the map's pool
    sess.close()
    assert set(data_threads()) - before == set()


def test_reinitializing_ends_the_previous_pass_threads():
    before = set(data_threads())
    it = tf.data.Dataset.range(10).repeat().prefetch(2).make_initializable_iterator()
    element = it.get_next()
    with tf.Session() as sess:
        for _ in range(5):
            sess.run(it.initializer)
            assert sess.run(element) == 0
            assert len(set(data_threads()) - before) == 1
    assert set(data_threads()) - before == set()


def test_a_get_next_waiting_on_prefetch_ends_when_the_session_closes():
    release = threading.Event()

    def stuck(x):
        release.wait(20)
        return x
    ds = tf.data.Dataset.range(3).map(lambda x: tf.py_func(stuck, [x], tf.int64)).prefetch(1)
    element = ds.make_one_shot_iterator().get_next()
    sess = tf.Session()
    errors = []

    def run():
        try:
            sess.run(element)
        except tf.errors.OpError as e:
            errors.append(e)
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    closer = threading.Thread(target=sess.close)
    closer.start()
    t.join(5)
    assert not t.is_alive() and isinstance(errors[0], tf.errors.CancelledError)
    release.set()   # the map's call returns; the pump then sees it was stopped
    closer.join(15)
    assert not closer.is_alive()
    deadline = time.monotonic() + 10
    while data_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert data_threads() == []


def test_a_dataset_of_another_graph_is_copied_with_the_input_fn_hint(caplog):
    # TF 1.4-1.12 built a dataset's ops where its iterator was made, so the get_started
    # regression samples (datasets built before the Estimator's graph existed) ran there; TF
    # 1.13-1.15 refuse them (tensorflow/tensorflow#27872). The copy keeps both kinds running.
    dataset = tf.data.Dataset.range(3)
    with tf.Graph().as_default():
        iterator = tf.data.Iterator.from_structure(tf.int64, tf.TensorShape([]))
        init = iterator.make_initializer(dataset)
        with tf.Session() as sess:
            sess.run(init)
            assert [sess.run(iterator.get_next()) for _ in range(3)] == [0, 1, 2]
    assert "input_fn" in caplog.text

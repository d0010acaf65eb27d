"""Queues and conditional accumulators: values, blocking, closing, sharing, cancellation.

Every run that may block gets a deadline (RunOptions.timeout_in_ms) and every thread is
joined with a timeout, so a broken queue fails these tests instead of hanging them.
"""
import re
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.ops.data_flow_ops import (ConditionalAccumulator, FIFOQueue, PaddingFIFOQueue,
                                         QueueBase, RandomShuffleQueue)
from tfjupyter.runtime import cancellation
from tfjupyter.train.coordinator import Coordinator
from tfjupyter.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners

BOUNDED = tf.RunOptions(timeout_in_ms=5000)   # for runs that should not block for long


def run_in_thread(fn):
    """Starts fn in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except Exception as e:  # reported to the test through the box
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def wait_blocked(t, seconds=0.2):
    """Gives a thread time to reach its blocking wait; it must still be running."""
    time.sleep(seconds)
    assert t.is_alive(), "the run should be blocked"


def finish(t, box, timeout=5.0):
    t.join(timeout)
    assert not t.is_alive(), "the blocked run was never released"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- FIFOQueue values ------------------------------------------------------------------------------
def test_fifo_order_and_size():
    q = FIFOQueue(10, tf.float32)
    x = tf.placeholder(tf.float32)
    enq = q.enqueue(x)
    deq = q.dequeue()
    size = q.size()
    with tf.Session() as sess:
        for v in [3.0, 1.0, 4.0, 1.5]:
            sess.run(enq, {x: v})
        assert sess.run(size) == 4
        assert [sess.run(deq) for _ in range(4)] == [3.0, 1.0, 4.0, 1.5]
        assert sess.run(size) == 0


def test_names_and_static_metadata():
    q = FIFOQueue(5, [tf.int32, tf.string], shapes=[[2], []], name="my_q")
    assert isinstance(q, QueueBase)
    assert q.name == "my_q" and q.queue_ref.op.type == "FIFOQueueV2"
    assert q.dtypes == [tf.int32, tf.string]
    assert [s.as_list() for s in q.shapes] == [[2], []]
    assert q.queue_ref.dtype is tf.string and q.queue_ref.shape.ndims == 0
    enq = q.enqueue(([1, 2], "a"))
    assert enq.name == "my_q_enqueue" and enq.type == "QueueEnqueueV2"
    a, b = q.dequeue()
    assert a.op.name == "my_q_Dequeue"
    assert a.shape.as_list() == [2] and b.shape.as_list() == []
    many = q.dequeue_many(3)
    assert many[0].shape.as_list() == [3, 2] and many[1].shape.as_list() == [3]
    up_to = q.dequeue_up_to(3)
    assert up_to[0].shape.as_list() == [None, 2]
    with tf.name_scope("outer"):
        scoped = FIFOQueue(1, tf.float32, name="q2")
        assert scoped.enqueue(1.0).name == "outer/q2_enqueue"
    assert scoped.name == "outer/q2" and scoped.enqueue(1.0).name == "q2_enqueue"


def test_enqueue_many_dequeue_many_multiple_components():
    q = FIFOQueue(10, [tf.float32, tf.int64, tf.string], shapes=[[2], [], []])
    enq = q.enqueue_many(([[1, 2], [3, 4], [5, 6]], [10, 20, 30], ["a", "b", "c"]))
    f, i, s = q.dequeue_many(2)
    one = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        fv, iv, sv = sess.run([f, i, s])
        np.testing.assert_array_equal(fv, [[1, 2], [3, 4]])
        assert fv.dtype == np.float32 and fv.shape == (2, 2)
        np.testing.assert_array_equal(iv, [10, 20])
        assert iv.dtype == np.int64
        assert list(sv) == [b"a", b"b"]
        last = sess.run(one)
        np.testing.assert_array_equal(last[0], [5, 6])
        assert last[1] == 30 and last[2] == b"c"


def test_dequeue_many_zero_and_negative():
    q = FIFOQueue(10, tf.float32, shapes=[[3]])
    n = tf.placeholder(tf.int32, [])
    deq = q.dequeue_many(n)
    with tf.Session() as sess:
        assert sess.run(deq, {n: 0}).shape == (0, 3)
        with pytest.raises(errors.InvalidArgumentError, match="requested -1 < 0 elements"):
            sess.run(deq, {n: -1})
    with pytest.raises(ValueError, match="< 0 elements"):
        q.dequeue_many(-2)


def test_dict_enqueue_with_names():
    q = FIFOQueue(4, [tf.int32, tf.float32], shapes=[[], []], names=["label", "x"])
    enq = q.enqueue({"x": 2.5, "label": 7})
    out = q.dequeue()
    assert set(out) == {"label", "x"}
    with tf.Session() as sess:
        sess.run(enq)
        got = sess.run(out)
        assert got["label"] == 7 and got["x"] == 2.5
    with pytest.raises(ValueError, match="must enqueue a dictionary"):
        q.enqueue([1, 2.0])
    with pytest.raises(ValueError, match="do not match names"):
        q.enqueue({"x": 1.0, "y": 2})


def test_elements_are_copied_on_enqueue():
    q = FIFOQueue(4, tf.float32, shapes=[[3]])
    x = tf.placeholder(tf.float32, [3])
    enq = q.enqueue(x)
    deq = q.dequeue()
    with tf.Session() as sess:
        fed = np.array([1, 2, 3], np.float32)
        sess.run(enq, {x: fed})
        fed[:] = 0  # the caller reuses its buffer
        np.testing.assert_array_equal(sess.run(deq), [1, 2, 3])


# -- errors ----------------------------------------------------------------------------------------
def test_graph_time_checks_name_the_queue():
    q = FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []], name="pairs")
    with pytest.raises(ValueError, match=r"incompatible.*component 0.*'pairs'"):
        q.enqueue(([1.0, 2.0, 3.0], 1))
    with pytest.raises(ValueError, match="2 components, but 1"):
        q.enqueue([[1.0, 2.0]])
    with pytest.raises(ValueError, match="requested dtype int32"):
        q.enqueue((tf.constant([1.0, 2.0]), tf.constant(1.5)))
    with pytest.raises(ValueError, match="rank at least 1"):
        q.enqueue_many(([[1.0, 2.0]], 3))
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        q.enqueue_many(([[1.0, 2.0], [3.0, 4.0]], [1, 2, 3]))
    with pytest.raises(ValueError, match="fully defined"):
        FIFOQueue(4, tf.float32, shapes=[[None, 2]])
    with pytest.raises(ValueError, match="same length"):
        FIFOQueue(4, [tf.float32, tf.int32], names=["a"])
    with pytest.raises(ValueError, match="min_after_dequeue 5 must be < capacity 5"):
        RandomShuffleQueue(5, 5, tf.float32)


def test_run_time_shape_mismatch():
    q = FIFOQueue(4, tf.float32, shapes=[[2]], name="q")
    x = tf.placeholder(tf.float32)
    enq, enq_many = q.enqueue(x), q.enqueue_many(x)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Shape mismatch in tuple component 0\. Expected \[2\], got \[3\]"
                                 r"[\s\S]*q_enqueue"):
            sess.run(enq, {x: [1, 2, 3]})
        with pytest.raises(errors.InvalidArgumentError, match=r"Expected \[2,2\], got \[2,3\]"):
            sess.run(enq_many, {x: np.zeros((2, 3))})
        assert sess.run(q.size()) == 0


def test_dequeue_many_needs_shapes():
    q = FIFOQueue(4, tf.float32)
    enq = q.enqueue(1.0)
    with tf.Session() as sess:
        sess.run(enq)
        with pytest.raises(errors.InvalidArgumentError,
                           match="DequeueMany and DequeueUpTo require the components to have "
                                 "specified shapes"):
            sess.run(q.dequeue_many(1))


# -- blocking --------------------------------------------------------------------------------------
def test_dequeue_blocks_until_another_thread_enqueues():
    q = FIFOQueue(10, tf.float32)
    x = tf.placeholder(tf.float32)
    enq, deq = q.enqueue(x), q.dequeue()
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(deq, options=BOUNDED))
        wait_blocked(t)
        sess.run(enq, {x: 42.0})
        assert finish(t, box) == 42.0


def test_enqueue_blocks_while_full():
    q = FIFOQueue(2, tf.int32, shapes=[[]])
    enq_many = q.enqueue_many([[1, 2, 3, 4, 5]])  # more than the capacity: enqueued as space frees
    deq = q.dequeue()
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(enq_many, options=BOUNDED))
        wait_blocked(t)
        assert sess.run(q.size()) == 2
        got = [sess.run(deq, options=BOUNDED) for _ in range(5)]
        finish(t, box)
        assert got == [1, 2, 3, 4, 5]


def test_dequeue_many_larger_than_capacity():
    q = FIFOQueue(2, tf.int32, shapes=[[]])
    x = tf.placeholder(tf.int32)
    enq = q.enqueue(x)
    deq = q.dequeue_many(6)
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(deq, options=BOUNDED))
        for v in range(6):
            sess.run(enq, {x: v}, options=BOUNDED)
        np.testing.assert_array_equal(finish(t, box), np.arange(6))


def test_dequeuers_are_served_in_order():
    q = FIFOQueue(10, tf.int32, shapes=[[]])
    first, second = q.dequeue_many(3), q.dequeue()
    x = tf.placeholder(tf.int32)
    enq = q.enqueue(x)
    with tf.Session() as sess:
        t1, b1 = run_in_thread(lambda: sess.run(first, options=BOUNDED))
        wait_blocked(t1, 0.1)
        t2, b2 = run_in_thread(lambda: sess.run(second, options=BOUNDED))
        wait_blocked(t2, 0.1)
        for v in range(4):
            sess.run(enq, {x: v})
        np.testing.assert_array_equal(finish(t1, b1), [0, 1, 2])
        assert finish(t2, b2) == 3


# -- closing ---------------------------------------------------------------------------------------
def test_close_then_dequeue_raises_out_of_range():
    q = FIFOQueue(10, tf.float32)
    enq = q.enqueue_many([[1.0, 2.0]])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        sess.run(q.close())
        assert sess.run(q.is_closed())
        assert [sess.run(deq), sess.run(deq)] == [1.0, 2.0]  # what is left can still be read
        with pytest.raises(errors.OutOfRangeError,
                           match=r"^FIFOQueue '_\d+_fifo_queue' is closed and has insufficient "
                                 r"elements \(requested 1, current size 0\)") as info:
            sess.run(deq)
        assert info.value.op is deq.op
        with pytest.raises(errors.CancelledError, match=r"FIFOQueue '_\d+_fifo_queue' is closed\."):
            sess.run(enq)
        with pytest.raises(errors.CancelledError, match="is already closed"):
            sess.run(q.close())
        sess.run(q.close(cancel_pending_enqueues=True))  # closing again this way is fine


def test_close_wakes_a_blocked_dequeue():
    q = FIFOQueue(10, tf.float32, name="q")
    deq = q.dequeue()
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(deq, options=BOUNDED))
        wait_blocked(t)
        sess.run(q.close())
        with pytest.raises(errors.OutOfRangeError, match="is closed and has insufficient"):
            finish(t, box)


def test_failed_dequeue_many_gives_its_elements_back():
    q = FIFOQueue(10, tf.int32, shapes=[[]])
    x = tf.placeholder(tf.int32)
    enq = q.enqueue(x)
    deq = q.dequeue_many(5)
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(deq, options=BOUNDED))
        wait_blocked(t, 0.1)
        for v in (7, 8):
            sess.run(enq, {x: v})
        time.sleep(0.1)
        assert sess.run(q.size()) == 0   # taken by the waiting dequeue_many
        sess.run(q.close())
        with pytest.raises(errors.OutOfRangeError, match=r"requested 5, current size 2"):
            finish(t, box)
        assert sess.run(q.size()) == 2
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(5)), [7, 8])


def test_dequeue_up_to_returns_a_short_batch_once_closed():
    q = FIFOQueue(10, tf.int32, shapes=[[2]])
    enq = q.enqueue_many([np.arange(6).reshape(3, 2)])
    up_to = q.dequeue_up_to(2)
    with tf.Session() as sess:
        sess.run(enq)
        sess.run(q.close())
        np.testing.assert_array_equal(sess.run(up_to), [[0, 1], [2, 3]])
        np.testing.assert_array_equal(sess.run(up_to), [[4, 5]])
        with pytest.raises(errors.OutOfRangeError, match="requested 2, current size 0"):
            sess.run(up_to)


def test_close_with_cancel_pending_enqueues():
    q = FIFOQueue(1, tf.float32)
    enq = q.enqueue(1.0)
    with tf.Session() as sess:
        sess.run(enq)
        t, box = run_in_thread(lambda: sess.run(enq, options=BOUNDED))
        wait_blocked(t)
        sess.run(q.close(cancel_pending_enqueues=True))
        with pytest.raises(errors.CancelledError, match="Enqueue operation was cancelled"):
            finish(t, box)
        assert sess.run(q.size()) == 1


def test_plain_close_waits_for_pending_enqueues():
    q = FIFOQueue(1, tf.float32)
    enq, deq = q.enqueue(1.0), q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        t_enq, b_enq = run_in_thread(lambda: sess.run(enq, options=BOUNDED))
        wait_blocked(t_enq, 0.1)
        t_close, b_close = run_in_thread(lambda: sess.run(q.close(), options=BOUNDED))
        wait_blocked(t_close, 0.1)
        assert not sess.run(q.is_closed())
        assert sess.run(deq) == 1.0     # makes room: the pending enqueue, then the close, finish
        finish(t_enq, b_enq)
        finish(t_close, b_close)
        assert sess.run(q.is_closed()) and sess.run(deq) == 1.0


# -- cancellation and deadlines --------------------------------------------------------------------
def test_closing_the_session_cancels_a_blocked_dequeue():
    q = FIFOQueue(10, tf.float32, name="q")
    deq = q.dequeue()
    sess = tf.Session()
    t, box = run_in_thread(lambda: sess.run(deq, options=BOUNDED))
    wait_blocked(t)
    sess.close()
    with pytest.raises(errors.CancelledError, match=r"dequeue from FIFOQueue '_\d+_q'"):
        finish(t, box)


def test_run_deadline_ends_a_blocked_enqueue():
    q = FIFOQueue(1, tf.float32, name="full")
    enq = q.enqueue(1.0)
    with tf.Session() as sess:
        sess.run(enq)
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError, match=r"enqueue to FIFOQueue '_\d+_full'"):
            sess.run(enq, options=tf.RunOptions(timeout_in_ms=200))
        assert time.monotonic() - start < 2.0
        assert sess.run(q.size()) == 1   # the queue still works
        assert sess.run(q.dequeue()) == 1.0


# -- sharing ---------------------------------------------------------------------------------------
def test_shared_name_shares_one_queue_in_a_session():
    a = FIFOQueue(5, tf.int32, shapes=[[]], shared_name="shared_q", name="a")
    b = FIFOQueue(5, tf.int32, shapes=[[]], shared_name="shared_q", name="b")
    private = FIFOQueue(5, tf.int32, shapes=[[]], name="c")
    with tf.Session() as sess:
        sess.run(a.enqueue(11))
        assert sess.run(b.dequeue()) == 11
        assert sess.run(b.queue_ref) == b"shared_q"
        assert re.fullmatch(rb"_\d+_c", sess.run(private.queue_ref))
        assert sess.run(private.size()) == 0


def test_shared_queue_with_other_attrs_is_an_error():
    a = FIFOQueue(5, tf.int32, shared_name="sq")
    b = FIFOQueue(6, tf.int32, shared_name="sq")
    c = FIFOQueue(5, tf.float32, shared_name="sq")
    with tf.Session() as sess:
        sess.run(a.queue_ref)
        with pytest.raises(errors.InvalidArgumentError,
                           match="Shared queue 'sq' has capacity 5 but requested capacity was 6"):
            sess.run(b.size())
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"has component types \[int32\] but requested component types "
                                 r"were \[float32\]"):
            sess.run(c.size())


def test_shared_resources_span_graphs_on_one_device():
    """Between-graph replication: each worker's graph has its own queue and accumulator ops,
    all running on the ps device, whose ResourceManager holds one queue and accumulator."""
    from tfjupyter.framework.device import DeviceSpec
    from tfjupyter.kernels.cpu import KERNELS
    from tfjupyter.runtime.devices import Device

    ps = Device(DeviceSpec("ps", 0, 0, "CPU", 0))

    def kernel(op):
        return KERNELS.get(op.type)(op, ps)

    def worker_graph():
        with tf.Graph().as_default():
            q = FIFOQueue(-1, tf.int64, shapes=[[]], shared_name="sync_token_q")
            acc = ConditionalAccumulator(tf.float32, shape=[2], shared_name="w/grad_accum")
            g = tf.placeholder(tf.float32, [2])
            step = tf.placeholder(tf.int64, [])
            return (kernel(q.enqueue_many(tf.placeholder(tf.int64, [None]))),
                    kernel(q.dequeue().op), kernel(acc.apply_grad(g, step)),
                    kernel(acc.take_grad(2).op), kernel(acc.num_accumulated().op))
    chief, worker = worker_graph(), worker_graph()
    # Kernels called outside a session: a step token with a deadline bounds any wait.
    with cancellation.step_scope(cancellation.CancellationToken(timeout_s=5)):
        chief[0](np.array([7, 7], np.int64))
        assert worker[1]() == 7 and chief[1]() == 7
        chief[2](np.int64(0), np.array([1.0, 2.0], np.float32))
        worker[2](np.int64(0), np.array([3.0, 6.0], np.float32))
        assert chief[4]() == 2 and worker[4]() == 2
        np.testing.assert_allclose(chief[3](np.int32(2)), [2.0, 4.0])
        assert worker[4]() == 0


def test_sessions_have_their_own_queues():
    q = FIFOQueue(5, tf.int32, shapes=[[]])
    enq, size = q.enqueue(1), q.size()
    with tf.Session() as s1, tf.Session() as s2:
        s1.run(enq)
        s1.run(enq)
        assert s1.run(size) == 2 and s2.run(size) == 0


def test_queue_ops_are_placed_with_their_queue():
    config = tf.ConfigProto(device_count={"CPU": 2})
    with tf.device("/cpu:1"):
        q = FIFOQueue(5, tf.float32)
    enq, deq = q.enqueue(3.0), q.dequeue()
    with tf.Session(config=config) as sess:
        sess.run(enq)
        assert sess.run(deq) == 3.0
        where = {r.op: r.assigned for r in sess.placement}
        assert where[enq.name].endswith("CPU:1") and where[deq.op.name].endswith("CPU:1")


def test_queue_ops_have_no_gradient():
    q = FIFOQueue(5, tf.float32, shapes=[[]])
    x = tf.constant(2.0)
    q.enqueue(x)
    y = q.dequeue() * 3.0
    assert tf.gradients(y, [x]) == [None]


# -- RandomShuffleQueue, PaddingFIFOQueue ----------------------------------------------------------
def test_random_shuffle_queue_keeps_min_after_dequeue():
    q = RandomShuffleQueue(10, 2, tf.int32, shapes=[[]], seed=3)
    enq = q.enqueue_many([[1, 2, 3]])
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq)
        first = sess.run(deq)
        with pytest.raises(errors.DeadlineExceededError, match="RandomShuffleQueue"):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=150))  # only 2 = min_after left
        sess.run(q.close())
        rest = [sess.run(deq), sess.run(deq)]   # closed: the queue drains
        assert sorted([first] + rest) == [1, 2, 3]
        with pytest.raises(errors.OutOfRangeError,
                           match=r"RandomShuffleQueue '_\d+_random_shuffle_queue' is closed"):
            sess.run(deq)


def test_random_shuffle_queue_shuffles_deterministically_with_a_seed():
    q = RandomShuffleQueue(200, 0, tf.int32, shapes=[[]], seed=7)
    enq = q.enqueue_many([np.arange(100)])
    deq = q.dequeue_many(100)

    def draw():
        with tf.Session() as sess:
            sess.run(enq)
            return sess.run(deq)
    a, b = draw(), draw()
    assert sorted(a) == list(range(100))
    assert list(a) != list(range(100))
    np.testing.assert_array_equal(a, b)


def test_random_shuffle_queue_dequeue_many_with_min_after_dequeue():
    q = RandomShuffleQueue(20, 5, [tf.int32, tf.int32], shapes=[[], []], seed=1)
    x = np.arange(10)
    enq = q.enqueue_many([x, x * 10])
    a, b = q.dequeue_many(5)
    with tf.Session() as sess:
        sess.run(enq)
        av, bv = sess.run([a, b])
        np.testing.assert_array_equal(bv, av * 10)   # components of an element stay together
        assert sess.run(q.size()) == 5


def test_padding_fifo_queue_pads_batches():
    q = PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None], [None]])
    x, s = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.string, [None])
    enq = q.enqueue((x, s))
    xs, ss = q.dequeue_many(3)
    assert xs.shape.as_list() == [3, None]
    with tf.Session() as sess:
        for v, w in (([1], ["a"]), ([2, 3, 4], ["b", "c"]), ([5, 6], [])):
            sess.run(enq, {x: v, s: w})
        xv, sv = sess.run([xs, ss])
        np.testing.assert_array_equal(xv, [[1, 0, 0], [2, 3, 4], [5, 6, 0]])
        assert sv.tolist() == [[b"a", b""], [b"b", b"c"], [b"", b""]]
        unknown = tf.placeholder(tf.int32)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"component 0\. Expected \[\?\], got \[2,2\]"):
            sess.run(q.enqueue((unknown, ["x"])), {unknown: np.zeros((2, 2))})
    with pytest.raises(ValueError, match="incompatible"):
        q.enqueue((tf.zeros([2, 2], tf.int32), ["x"]))
    with pytest.raises(ValueError, match="list of shapes must be provided"):
        PaddingFIFOQueue(10, tf.int32, shapes=None)


# -- ConditionalAccumulator ------------------------------------------------------------------------
def test_accumulator_mean_of_fresh_gradients():
    acc = ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    g = tf.placeholder(tf.float32, [2])
    apply_op = acc.apply_grad(g, local_step=0)
    take = acc.take_grad(3)
    assert take.shape.as_list() == [2] and take.dtype is tf.float32
    with tf.Session() as sess:
        for v in ([1, 2], [3, 4], [8, 0]):
            sess.run(apply_op, {g: v})
        assert sess.run(acc.num_accumulated()) == 3
        np.testing.assert_allclose(sess.run(take, options=BOUNDED), [4.0, 2.0])
        assert sess.run(acc.num_accumulated()) == 0


def test_accumulator_sum_reduction_float64():
    acc = ConditionalAccumulator(tf.float64, shape=[], reduction_type="SUM")
    g = tf.placeholder(tf.float64, [])
    apply_op, take = acc.apply_grad(g), acc.take_grad(2)
    with tf.Session() as sess:
        sess.run(apply_op, {g: 0.25})
        sess.run(apply_op, {g: 1.5})
        out = sess.run(take)
        assert out == 1.75 and out.dtype == np.float64


def test_stale_gradients_are_dropped():
    acc = ConditionalAccumulator(tf.float32, shape=[1])
    g, step = tf.placeholder(tf.float32, [1]), tf.placeholder(tf.int64, [])
    apply_op = acc.apply_grad(g, local_step=step)
    set_step = acc.set_global_step(5)
    num = acc.num_accumulated()
    take = acc.take_grad(1)
    with tf.Session() as sess:
        sess.run(set_step)
        sess.run(apply_op, {g: [100.0], step: 4})   # stale: dropped
        assert sess.run(num) == 0
        sess.run(apply_op, {g: [2.0], step: 5})
        sess.run(apply_op, {g: [4.0], step: 9})
        assert sess.run(num) == 2
        np.testing.assert_allclose(sess.run(take), [3.0])
        # take_grad moved the accumulator's global step to 6: step 5 is stale now.
        sess.run(apply_op, {g: [1.0], step: 5})
        assert sess.run(num) == 0


def test_take_grad_blocks_until_enough_gradients():
    acc = ConditionalAccumulator(tf.float32, shape=[2])
    g = tf.placeholder(tf.float32, [2])
    apply_op, take = acc.apply_grad(g), acc.take_grad(3)
    with tf.Session() as sess:
        t, box = run_in_thread(lambda: sess.run(take, options=BOUNDED))
        appliers = [run_in_thread(lambda v=v: sess.run(apply_op, {g: [v, 2 * v]}))
                    for v in (1.0, 2.0)]
        for a in appliers:
            finish(*a)
        wait_blocked(t)   # 2 of 3
        sess.run(apply_op, {g: [6.0, 12.0]})
        np.testing.assert_allclose(finish(t, box), [3.0, 6.0])


def test_accumulator_errors_name_the_accumulator():
    acc = ConditionalAccumulator(tf.float32, shape=[None, 2], name="grads")
    g = tf.placeholder(tf.float32)
    n = tf.placeholder(tf.int32, [])
    apply_op, take = acc.apply_grad(g), acc.take_grad(n)
    with pytest.raises(ValueError, match=r"incompatible.*accumulator 'grads'"):
        acc.apply_grad(tf.zeros([3]))
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        ConditionalAccumulator(tf.int32)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"accumulator '_\d+_grads' expects gradients of shape \[\?,2\], "
                                 r"got \[2,3\]"):
            sess.run(apply_op, {g: np.zeros((2, 3))})
        sess.run(apply_op, {g: np.ones((1, 2))})
        with pytest.raises(errors.InvalidArgumentError, match=r"holds gradients of shape \[1,2\]"):
            sess.run(apply_op, {g: np.ones((3, 2))})
        with pytest.raises(errors.InvalidArgumentError,
                           match="num_required must be positive, but was 0"):
            sess.run(take, {n: 0})


def test_shared_accumulator():
    a = ConditionalAccumulator(tf.float32, shape=[], shared_name="w/grad_accum")
    b = ConditionalAccumulator(tf.float32, shape=[], shared_name="w/grad_accum")
    c = ConditionalAccumulator(tf.float64, shape=[], shared_name="w/grad_accum")
    with tf.Session() as sess:
        sess.run(a.apply_grad(2.0))
        sess.run(b.apply_grad(4.0))
        assert sess.run(b.take_grad(2)) == 3.0
        with pytest.raises(errors.InvalidArgumentError, match="has dtype float32 but requested "
                                                              "dtype was float64"):
            sess.run(c.num_accumulated())


# -- QueueRunner and Coordinator -------------------------------------------------------------------
def test_queue_runner_feeds_a_consumer_until_stopped():
    q = FIFOQueue(8, [tf.float32, tf.int32], shapes=[[3], []])
    batch = tf.random_uniform([4, 3])
    labels = tf.constant([0, 1, 2, 3])
    qr = QueueRunner(q, [q.enqueue_many((batch, labels))] * 2)
    add_queue_runner(qr)
    x, y = q.dequeue_many(6)
    with tf.Session() as sess:
        coord = Coordinator()
        threads = start_queue_runners(sess, coord)
        assert len(threads) == 3   # two enqueue threads and the one that cancels on stop
        for _ in range(10):
            xv, yv = sess.run([x, y], options=BOUNDED)
            assert xv.shape == (6, 3) and ((xv >= 0) & (xv < 1)).all()
            assert set(yv.tolist()) <= {0, 1, 2, 3}
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)   # the blocked enqueues were cancelled
        assert all(not t.is_alive() for t in threads)
        assert sess.run(q.is_closed())


def test_queue_runner_closes_the_queue_when_its_input_ends():
    data = FIFOQueue(10, tf.int32, shapes=[[]], name="data")
    out = FIFOQueue(10, tf.int32, shapes=[[]], name="out")
    with tf.Session() as sess:
        sess.run(data.enqueue_many([[1, 2, 3]]))
        sess.run(data.close())
        qr = QueueRunner(out, [out.enqueue(data.dequeue() * 10)])
        threads = qr.create_threads(sess, start=True)
        for t in threads:
            t.join(5)
        assert all(not t.is_alive() for t in threads) and not qr.exceptions_raised
        assert sess.run(out.is_closed())
        np.testing.assert_array_equal(sess.run(out.dequeue_up_to(10)), [10, 20, 30])


# -- many threads on one queue (each blocked attempt is served by whoever changes the queue) -------
def test_blocked_enqueues_complete_in_arrival_order():
    q = FIFOQueue(1, tf.int32, shapes=[[]])
    x = tf.placeholder(tf.int32)
    enq, deq = q.enqueue(x), q.dequeue()
    with tf.Session() as sess:
        sess.run(enq, {x: 0})   # full
        blocked = []
        for v in (1, 2, 3):
            blocked.append(run_in_thread(lambda v=v: sess.run(enq, {x: v}, options=BOUNDED)))
            wait_blocked(blocked[-1][0], 0.1)
        assert [sess.run(deq, options=BOUNDED) for _ in range(4)] == [0, 1, 2, 3]
        for t, box in blocked:
            finish(t, box)
        assert sess.run(q.size()) == 0


def test_shuffle_queue_with_concurrent_enqueuers_loses_and_repeats_nothing():
    q = RandomShuffleQueue(50, 10, [tf.int64, tf.float32], shapes=[[], [3]])
    x = tf.placeholder(tf.int64, [])
    enq = q.enqueue([x, tf.cast(tf.fill([3], x), tf.float32)])
    deq = q.dequeue_many(7)
    per_thread, n_threads = 60, 4
    with tf.Session() as sess:
        run_one = sess.make_callable(enq, [x])
        producers = [run_in_thread(lambda k=k: [run_one(k * per_thread + i)
                                                for i in range(per_thread)])
                     for k in range(n_threads)]
        got_ids, got_rows = [], []
        for _ in range(per_thread * n_threads // 7 - 2):   # leaves at least min_after_dequeue
            ids, rows = sess.run(deq, options=BOUNDED)
            got_ids.extend(ids.tolist())
            got_rows.append(rows)
        for t, box in producers:
            finish(t, box)
        sess.run(q.close())
        ids, rows = sess.run(q.dequeue_up_to(1000), options=BOUNDED)
        got_ids.extend(ids.tolist())
        got_rows.append(rows)
    assert sorted(got_ids) == list(range(per_thread * n_threads))
    rows = np.concatenate(got_rows)
    np.testing.assert_array_equal(rows, np.repeat(np.array(got_ids, np.float32)[:, None], 3, 1))

"""Small steps between a worker served by the client's own process and a ps in another process
(tfjupyter/distributed/master.py): the ps's reply carries the tensors it pushes to the worker,
and the master awaits it before running the worker's partition, so no thread is handed the
step. Errors, deadlines and big tensors must behave as on any other path."""
import os
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.distributed import local_push

from cluster_util import TOKEN, TaskProcesses, loopback_cluster

pytestmark = pytest.mark.skipif(not local_push.enabled(), reason="needs Linux and shared memory")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A ps in another process, and this process's worker task; the worker's target."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFJUPYTER_CLUSTER_TOKEN", TOKEN)
        mp.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path_factory.mktemp("tokens")))
        spec = loopback_cluster(ps=1, worker=1)
        procs = TaskProcesses()
        worker = None
        try:
            procs.start(spec, "ps", 0)
            worker = tf.train.Server(spec, job_name="worker", task_index=0)
            yield worker.target
        finally:
            if worker is not None:
                worker.stop(0)
            procs.close()


def test_a_worker_op_gets_the_ps_variable_in_the_ps_reply(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0, 3.0, 4.0], name="v")
        with tf.device("/job:worker/task:0"):
            y = v * 2.0 + 1.0
        with tf.Session(cluster) as sess:
            sess.run(v.initializer)
            before = local_push.stats()
            for _ in range(3):
                np.testing.assert_array_equal(sess.run(y), [3.0, 5.0, 7.0, 9.0])
            sess.run(v.assign([0.5, 0.0, -1.0, 10.0]))
            np.testing.assert_array_equal(sess.run(y), [2.0, 1.0, -1.0, 21.0])
            after = local_push.stats()
    # The ps was called by its socket, and pushed nothing to this process by a call of its own.
    assert after["calls"] - before["calls"] >= 5
    assert after["received"] == before["received"]


def test_a_failing_ps_partition_ends_the_step_at_once(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.zeros([4]), name="never_initialized")
        with tf.device("/job:worker/task:0"):
            y = v + 1.0
        with tf.Session(cluster) as sess:
            start = time.monotonic()
            with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
                sess.run(y)
            assert time.monotonic() - start < 5.0   # not after a wait for the worker's _Recv
            sess.run(v.initializer)                 # and the session goes on
            np.testing.assert_array_equal(sess.run(y), [1.0, 1.0, 1.0, 1.0])


def test_a_blocked_ps_partition_keeps_the_step_deadline(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name=f"small-{os.getpid()}")
        with tf.device("/job:worker/task:0"):
            y = q.dequeue() + 1.0
        with tf.Session(cluster) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(y, options=tf.RunOptions(timeout_in_ms=300))
            # The dequeue that timed out took nothing: the next one gets the element.
            sess.run(q.enqueue(5.0))
            assert sess.run(y) == 6.0


def test_a_big_ps_tensor_is_pulled_by_the_worker_op(cluster):
    values = np.arange(1 << 20, dtype=np.float32)   # 4 MiB: pulled, not pushed
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            big = tf.Variable(values, name="big")
        with tf.device("/job:worker/task:0"):
            total = tf.reduce_sum(big[::1024])
            head = big[:3] * 1.0
        with tf.Session(cluster) as sess:
            sess.run(big.initializer)
            got_total, got_head = sess.run([total, head])
    assert got_total == values[::1024].sum()
    np.testing.assert_array_equal(got_head, [0.0, 1.0, 2.0])

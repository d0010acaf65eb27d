"""GPUs of tf.train.Server tasks: partitions run on their GPUs, tensors cross tasks from host memory."""
import os
import sys

import numpy as np
import pytest

import tfjupyter as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from cluster_util import loopback_cluster  # noqa: E402


@pytest.fixture
def two_tasks(monkeypatch, tmp_path):
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", "gpu-cluster-test")
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path))
    cluster = tf.train.ClusterSpec(loopback_cluster(ps=1, worker=1))
    servers = [tf.train.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
    yield servers
    for server in servers:
        server.stop(0)


def test_a_step_across_two_tasks_gpus(two_tasks):
    ps, worker = two_tasks
    with tf.device("/job:ps/task:0/gpu:0"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    with tf.device("/job:worker/task:0/gpu:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.nn.relu(tf.matmul(x, w) - 4.0, name="y")
        loss = tf.reduce_sum(y)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.array([[1.0, 0.5], [0.0, 1.0]], np.float32)}
    with tf.Session(worker.target) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, feed), np.maximum(feed[x] @ np.arange(6).reshape(2, 3) - 4, 0))
        sess.run(step, feed)
        where = {op.name: r.assigned for op, r in sess.placer.records.items()}
        assert where["w"] == "/job:ps/replica:0/task:0/device:GPU:0"
        assert where["y"] == "/job:worker/replica:0/task:0/device:GPU:0"
        grad = feed[x].T @ ((feed[x] @ np.arange(6).reshape(2, 3) - 4) > 0)
        np.testing.assert_allclose(sess.run(w), np.arange(6).reshape(2, 3) - 0.1 * grad, rtol=1e-6)

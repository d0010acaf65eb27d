"""The tutorial's 4-tower trainer (tests/tutorials/multi_gpu_train.py) on four logical GPUs.

It is built from the tutorial's own functions (get_input, get_loss, average_gradients) as its
main() builds it, shrunk for the simulator: tiny batches and a narrower hidden layer.
"""
import os
import sys

import numpy as np
import pytest

import tfjupyter as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tutorials"))
_argv, sys.argv = sys.argv, ["multi_gpu_train.py"]  # the script reads its paths from argv
try:
    import mnist_inference  # noqa: E402
    import multi_gpu_train as trainer  # noqa: E402
finally:
    sys.argv = _argv

N_GPU = 4
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
STEPS = 2


def train(config, initial_values=None):
    """A few steps of the trainer; returns each step's tower losses, the placement, the values."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        tf.set_random_seed(7)
        x, y_ = trainer.get_input()
        regularizer = tf.contrib.layers.l2_regularizer(trainer.REGULARAZTION_RATE)
        global_step = tf.get_variable("global_step", [], initializer=tf.constant_initializer(0),
                                      trainable=False)
        opt = tf.train.GradientDescentOptimizer(trainer.LEARNING_RATE_BASE)
        tower_grads, losses = [], []
        for i in range(N_GPU):
            with tf.device("/gpu:%d" % i):
                with tf.name_scope("GPU_%d" % i) as scope:
                    losses.append(trainer.get_loss(x, y_, regularizer, scope))
                    tf.get_variable_scope().reuse_variables()
                    tower_grads.append(opt.compute_gradients(losses[-1]))
        grads = trainer.average_gradients(tower_grads)
        train_op = opt.apply_gradients(grads, global_step=global_step)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            if initial_values is None:
                rng = np.random.RandomState(0)
                initial_values = {v.op.name: rng.normal(0, 0.1, v.shape.as_list()).astype(np.float32)
                                  for v in tf.trainable_variables()}
            for v in tf.trainable_variables():
                v.load(initial_values[v.op.name], sess)
            history = [sess.run([train_op] + losses)[1:] for _ in range(STEPS)]
            where = {op.name: record.assigned for op, record in sess.placer.records.items()}
            final = {v.op.name: sess.run(v) for v in tf.trainable_variables()}
    return np.array(history), where, final, initial_values


@pytest.fixture
def tiny_trainer(monkeypatch):
    monkeypatch.setenv("TFJUPYTER_LOGICAL_GPUS", str(N_GPU))
    monkeypatch.setattr(trainer, "BATCH_SIZE", 4)
    monkeypatch.setattr(mnist_inference, "LAYER1_NODE", 24)


@pytest.mark.skipif(SIMULATED, reason="under the simulator, tests/test_notebooks.py::"
                    "test_towers_notebook_matches_the_cpu_on_four_logical_gpus checks the same "
                    "(four towers on four logical GPUs against the CPU) in a third of the time")
def test_each_tower_runs_on_its_own_gpu_with_the_cpu_runs_losses(tiny_trainer):
    gpu_losses, where, gpu_final, start = train(tf.ConfigProto(allow_soft_placement=False))
    cpu_losses, cpu_where, cpu_final, _ = train(
        tf.ConfigProto(allow_soft_placement=True, device_count={"GPU": 0}), start)
    for i in range(N_GPU):
        device = f"/job:localhost/replica:0/task:0/device:GPU:{i}"
        tower = {name: d for name, d in where.items() if name.startswith(f"GPU_{i}/")}
        assert tower and set(tower.values()) == {device}, (i, set(tower.values()))
        assert cpu_where[f"GPU_{i}/layer1/MatMul"].endswith("CPU:0")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=2e-5)
    assert gpu_losses[-1].mean() < gpu_losses[0].mean()  # it trains
    for name, value in cpu_final.items():
        np.testing.assert_allclose(gpu_final[name], value, rtol=1e-4, atol=1e-6)

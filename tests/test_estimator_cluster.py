"""tf.estimator.train_and_evaluate on a notebook cluster (1 ps, 2 workers on ipyparallel
engines), as TensorFlow runs it from TF_CONFIG: the engines set TF_CONFIG (worker 0 is TF's
chief), the workers train between-graph with the variables on the ps, the chief checkpoints,
and an evaluator (this process, TF_CONFIG type "evaluator") evaluates the new checkpoints until
the last one."""
import json
import os
import sys

import pytest

pytest.importorskip("ipyparallel")

import tfjupyter as tf  # noqa: E402
from tfjupyter.cluster import Cluster  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))

pytestmark = pytest.mark.timeout(90)

MAX_STEPS = 120

# Defines model_fn, train_fn, eval_fn and StepCounter; runs on the engines and here.
MODEL = '''
import tfjupyter as tf
DIGITS = tf.datasets.load_digits()

def model_fn(features, labels, mode):
    hidden = tf.layers.dense(features["x"], 32, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                      eval_metric_ops={"accuracy": accuracy})

train_fn = tf.estimator.inputs.numpy_input_fn({"x": DIGITS.train.images}, DIGITS.train.labels,
                                              batch_size=64, num_epochs=None, shuffle=True)
eval_fn = tf.estimator.inputs.numpy_input_fn({"x": DIGITS.test.images}, DIGITS.test.labels,
                                             batch_size=200, shuffle=False)

class StepCounter(tf.train.SessionRunHook):
    """This task's own steps, and where its graph put the first weight and the loss."""
    steps = 0
    def begin(self):
        graph = tf.get_default_graph()
        StepCounter.devices = (graph.get_tensor_by_name("hidden/kernel:0").device,
                               graph.get_tensor_by_name("hidden/MatMul:0").device)
    def after_run(self, run_context, run_values):
        StepCounter.steps += 1
'''

WORKER_CELL = '''
config = tf.estimator.RunConfig(model_dir={model_dir!r}, save_checkpoints_steps=40,
                                log_step_count_steps=40, experimental_max_worker_delay_secs=0)
estimator = tf.estimator.Estimator(model_fn, config=config)
tf.estimator.train_and_evaluate(
    estimator, tf.estimator.TrainSpec(train_fn, max_steps={max_steps}, hooks=[StepCounter()]),
    tf.estimator.EvalSpec(eval_fn, steps=None))
(config.task_type, config.task_id, config.is_chief, StepCounter.steps, StepCounter.devices)
'''


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    c = Cluster(ps=1, workers=2, start_timeout=60)
    try:
        yield c.start()
    finally:
        c.stop()


def test_train_and_evaluate_between_graph_from_tf_config(cluster, tmp_path, monkeypatch):
    model_dir = str(tmp_path / "model")
    cell = MODEL + WORKER_CELL.format(model_dir=model_dir, max_steps=MAX_STEPS)
    run = cluster.run(cell, block=False)
    # This process is the cluster's evaluator, as TF_CONFIG says.
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": [cluster.spec.task_address("worker", 0)]},
        "task": {"type": "evaluator", "index": 0}}))
    namespace = {}
    exec(MODEL, namespace)
    evaluator = tf.estimator.Estimator(namespace["model_fn"], model_dir=model_dir)
    assert evaluator.config.task_type == "evaluator"
    metrics, _ = tf.estimator.train_and_evaluate(
        evaluator, tf.estimator.TrainSpec(namespace["train_fn"], max_steps=MAX_STEPS),
        tf.estimator.EvalSpec(namespace["eval_fn"], steps=None, start_delay_secs=0,
                              throttle_secs=0))
    assert metrics["global_step"] >= MAX_STEPS and metrics["accuracy"] > 0.8
    replies = run.result(timeout=60)
    got = {task: eval(reply.execute_result["data"]["text/plain"])
           for task, reply in replies.items()}
    chief, other = got["worker:0"], got["worker:1"]
    assert chief[:3] == ("chief", 0, True) and other[:3] == ("worker", 0, False)
    # Between-graph: each worker ran its own steps; the variables are on the ps task and the
    # model's ops on the task's own job and index (its server's).
    assert chief[3] > 0 and other[3] > 0 and chief[3] + other[3] >= MAX_STEPS
    assert chief[4] == ("/job:ps/task:0", "/job:worker/task:0")
    assert other[4] == ("/job:ps/task:0", "/job:worker/task:1")
    # The chief wrote the checkpoints; the last one is at max_steps or beyond.
    assert tf.train.load_variable(model_dir, "global_step") >= MAX_STEPS

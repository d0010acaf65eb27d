"""tf.estimator.RunConfig: TF_CONFIG parsed with TensorFlow 1.15's semantics and errors (the
examples of RunConfig's docstring), and the TF_CONFIG a notebook cluster gives its tasks."""
import json

import pytest

import tfjupyter as tf
from tfjupyter.estimator.task_server import tf_config_for_task

CLUSTER = {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
           "worker": ["host3:2222", "host4:2222", "host5:2222"]}


def config_for(monkeypatch, tf_config, **kwargs):
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    return tf.estimator.RunConfig(**kwargs)


def test_worker_chief_and_evaluator_as_in_tensorflows_docstring(monkeypatch):
    worker = config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    assert worker.master == "grpc://host4:2222"
    assert (worker.task_type, worker.task_id, worker.is_chief) == ("worker", 1, False)
    assert worker.num_ps_replicas == 2 and worker.num_worker_replicas == 4
    assert worker.cluster_spec == tf.train.ClusterSpec(CLUSTER)
    assert worker.global_id_in_cluster == 2          # chief 0, workers 1-3, ps 4-5
    chief = config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert chief.master == "grpc://host0:2222" and chief.is_chief
    assert chief.global_id_in_cluster == 0
    ps = config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "ps", "index": 1}})
    assert ps.global_id_in_cluster == 5 and not ps.is_chief
    evaluator = config_for(monkeypatch, {"cluster": CLUSTER,
                                         "task": {"type": "evaluator", "index": 0}})
    assert evaluator.master == "" and evaluator.evaluation_master == ""
    assert evaluator.num_ps_replicas == 0 and evaluator.num_worker_replicas == 0
    assert evaluator.cluster_spec == tf.train.ClusterSpec({}) and not evaluator.is_chief


def test_local_and_legacy_master(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    local = tf.estimator.RunConfig()
    assert (local.task_type, local.task_id, local.is_chief, local.master) == \
        ("worker", 0, True, "")
    assert local.num_worker_replicas == 1 and local.num_ps_replicas == 0
    assert (local.save_checkpoints_secs, local.save_checkpoints_steps) == (600, None)
    legacy = {"master": ["m:1"], "worker": ["w:1"], "ps": ["p:1"]}
    master = config_for(monkeypatch, {"cluster": legacy, "task": {"type": "master", "index": 0}})
    assert master.is_chief and master.num_worker_replicas == 2
    single = config_for(monkeypatch, {"cluster": {"chief": ["c:1"]},
                                      "task": {"type": "chief", "index": 0}})
    assert single.master == ""                        # a one-task cluster runs in-process


@pytest.mark.parametrize("tf_config,message", [
    ({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
     'If "cluster" is set in TF_CONFIG, it must have one "chief" node.'),
    ({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}},
     'The "cluster" in TF_CONFIG must have only one "chief" node.'),
    ({"cluster": CLUSTER, "task": {"index": 0}},
     'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker"}},
     'If "cluster" is set in TF_CONFIG, task index must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}},
     "Task index must be non-negative number."),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}},
     "trainer is not a valid task_type in the cluster_spec"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 3}},
     "3 is not a valid task_id for task_type worker in the cluster_spec"),
    ({"task": {"type": "ps", "index": 0}},
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.'),
    ({"task": {"type": "worker", "index": 1}},
     'If "cluster" is not set in TF_CONFIG, task index must be 0.'),
    ({"cluster": {"master": ["m:1"], "chief": ["c:1"]}, "task": {"type": "master", "index": 0}},
     "If `master` node exists in `cluster`, job `chief` is not supported."),
])
def test_tf_config_errors(monkeypatch, tf_config, message):
    with pytest.raises(ValueError) as info:
        config_for(monkeypatch, tf_config)
    assert message in str(info.value)


def test_properties_are_checked_and_replaced(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="`save_checkpoints_steps` and `save_checkpoints_secs` "
                                         "cannot be both set."):
        tf.estimator.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=10)
    with pytest.raises(ValueError, match="log_step_count_steps should be > 0"):
        tf.estimator.RunConfig(log_step_count_steps=0)
    with pytest.raises(ValueError, match="session_config must be instance of ConfigProto"):
        tf.estimator.RunConfig(session_config={})
    with pytest.raises(ValueError, match="tf_random_seed must be integer."):
        tf.estimator.RunConfig(tf_random_seed=1.5)
    config = tf.estimator.RunConfig(save_checkpoints_steps=10)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (10, None)
    replaced = config.replace(save_checkpoints_secs=30, model_dir="/tmp/m")
    assert (replaced.save_checkpoints_steps, replaced.save_checkpoints_secs) == (None, 30)
    assert replaced.model_dir == "/tmp/m" and config.model_dir is None
    with pytest.raises(ValueError, match="master is not supported by RunConfig replace"):
        config.replace(master="grpc://x:1")
    tf_dir = config_for(monkeypatch, {"model_dir": "/tmp/from_tf_config"})
    assert tf_dir.model_dir == "/tmp/from_tf_config"
    with pytest.raises(ValueError, match="must have the same value as the model_dir in "
                                         "TF_CONFIG"):
        config_for(monkeypatch, {"model_dir": "/tmp/a"}, model_dir="/tmp/b")


def test_a_notebook_clusters_tasks_get_tensorflows_roles(monkeypatch):
    """worker 0 (the cluster's chief) is TF's chief; the other workers are TF's workers."""
    cluster = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"],
                                    "worker": ["127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"]})
    roles = {}
    for job, index in [("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2)]:
        config = config_for(monkeypatch, tf_config_for_task(cluster, job, index))
        roles[(job, index)] = (config.task_type, config.task_id, config.is_chief,
                               config.master, config.num_worker_replicas,
                               config.num_ps_replicas)
    assert roles == {
        ("ps", 0): ("ps", 0, False, "grpc://127.0.0.1:1", 3, 1),
        ("worker", 0): ("chief", 0, True, "grpc://127.0.0.1:2", 3, 1),
        ("worker", 1): ("worker", 0, False, "grpc://127.0.0.1:3", 3, 1),
        ("worker", 2): ("worker", 1, False, "grpc://127.0.0.1:4", 3, 1)}

"""The short task and device names every notebook view shows (tables, legends, dashboards,
experiment records): one rule, in tfjupyter.framework.device."""
import pytest

from tfjupyter.framework.device import local_device, short_device, short_task

WORKER_GPU = "/job:worker/replica:0/task:1/device:GPU:0"
LOCAL_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.mark.parametrize("name, short", [
    ("/job:worker/replica:0/task:1", "worker:1"),
    (WORKER_GPU, "worker:1"),                       # a device names its task
    ("/job:ps/task:3", "ps:3"),                     # no replica
    ("/job:ps", "ps:0"),                            # no task: task 0, as TensorFlow defaults
    ("/job:localhost/replica:0/task:0", "localhost:0"),
    ("worker:1", "worker:1"), ("local", "local"), ("", "")])   # not a full name: as it is
def test_short_task(name, short):
    assert short_task(name) == short


@pytest.mark.parametrize("name, short", [
    (WORKER_GPU, "worker:1/GPU:0"),
    ("/job:ps/replica:0/task:0/device:CPU:0", "ps:0/CPU:0"),
    (LOCAL_CPU, "CPU:0"),                                    # this process's own task
    ("/job:localhost/replica:0/task:1/device:CPU:0", "localhost:1/CPU:0"),   # another one
    ("/job:worker/replica:0/task:2", "worker:2"),            # a task without a device
    ("/job:localhost/replica:0/task:0", "localhost:0"),
    ("/device:GPU:1", "/device:GPU:1"), ("GPU:0", "GPU:0"), ("", "")])
def test_short_device(name, short):
    assert short_device(name) == short


@pytest.mark.parametrize("name, short", [
    (WORKER_GPU, "GPU:0"), (LOCAL_CPU, "CPU:0"), ("/device:GPU:1", "GPU:1"),
    ("/job:worker/replica:0/task:2", "/job:worker/replica:0/task:2"), ("", "")])
def test_local_device(name, short):
    assert local_device(name) == short


def test_the_views_use_the_rule():
    from tfjupyter.cluster.status import describe_devices
    from tfjupyter.widgets.feed import Feed, TaskRow
    assert describe_devices([{"name": WORKER_GPU, "type": "GPU",
                              "description": "device: 0, name: H100, pci bus id: 0",
                              "memory_bytes": 80 * 2**30},
                             {"name": LOCAL_CPU, "type": "CPU"}]) == "GPU:0 (H100, 80 GiB), CPU:0"
    feed = Feed()
    feed.on_placement("local", "a", "Const", "", LOCAL_CPU, "")
    feed.on_placement("local", "b", "Const", "", "/job:localhost/replica:0/task:0/device:GPU:1", "")
    feed.on_health(TaskRow(task="local"))
    health = feed.drain(force_sample=True).health
    assert [(row.task, row.devices) for row in health] == [("local", "CPU:0, GPU:1")]

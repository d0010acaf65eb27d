"""GPU devices, logical GPUs, placement and the copies between host and device memory."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.runtime.devices import local_devices

from gpu_compare import placements

TUTORIALS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "tutorials")
GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def gpu_names(devices):
    return [d.name for d in devices if d.device_type == "GPU"]


def test_gpus_are_listed_with_tensorflows_device_mapping_text():
    gpus = [d for d in local_devices() if d.device_type == "GPU"]
    assert gpus and gpus[0].name == GPU.format(0)
    assert re.fullmatch(r"device: 0, name: .+, pci bus id: [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0, "
                        r"compute capability: \d+\.\d+", gpus[0].description)


def test_logical_gpus_from_the_environment_share_one_physical_gpu(monkeypatch):
    monkeypatch.setenv("TFJUPYTER_LOGICAL_GPUS", "3")
    devices = local_devices()
    gpus = [d for d in devices if d.device_type == "GPU"]
    physical = len({d.state.physical.index for d in gpus})
    assert gpu_names(devices) == [GPU.format(i) for i in range(3 * physical)]
    assert gpus[0].description.startswith("device: 0,") and gpus[1].description.startswith("device: 0,")
    assert gpus[0].state is gpus[1].state  # one stream and one memory pool per physical GPU
    monkeypatch.setenv("TFJUPYTER_LOGICAL_GPUS", "zero")
    with pytest.raises(ValueError, match="TFJUPYTER_LOGICAL_GPUS must be a positive integer, got 'zero'"):
        local_devices()


def test_logical_gpus_from_virtual_devices_and_gpu_options_errors():
    physical = len(gpu_names(local_devices()))
    experimental = tf.GPUOptions.Experimental(virtual_devices=[
        tf.GPUOptions.Experimental.VirtualDevices(memory_limit_mb=[512, 512])] * physical)
    devices = local_devices(gpu_options=tf.GPUOptions(experimental=experimental))
    assert len(gpu_names(devices)) == 2 * physical
    too_many = tf.GPUOptions.Experimental(virtual_devices=[
        tf.GPUOptions.Experimental.VirtualDevices(memory_limit_mb=[1])] * (physical + 1))
    with pytest.raises(ValueError, match="virtual_devices has .* entries, but .* GPUs are visible"):
        local_devices(gpu_options=tf.GPUOptions(experimental=too_many))
    with pytest.raises(ValueError, match="visible_device_list names GPU 99"):
        local_devices(gpu_options=tf.GPUOptions(visible_device_list="99"))
    assert gpu_names(local_devices(device_count={"GPU": 0})) == []


def run_tutorial(name, *args, env=None):
    return subprocess.run([sys.executable, os.path.join(TUTORIALS, name), *args], cwd=TUTORIALS,
                          env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
                          capture_output=True, text=True, timeout=240)


def test_the_gpu1_tutorial_runs_on_logical_gpu_1_without_soft_placement():
    result = run_tutorial("gpu1.py", env={"TFJUPYTER_LOGICAL_GPUS": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "Device mapping:"
    assert re.match(r"/job:localhost/replica:0/task:0/device:GPU:1 -> device: 0, name: ", lines[2])
    assert "add: (Add): " + GPU.format(1) in lines
    assert "a: (Const): " + CPU0 in lines
    assert lines[-1] == "[2. 4. 6.]"


def plan_source(sess):
    return "\n".join(entry[1].source for entry in sess._plans.values())


def test_an_edge_is_copied_once_however_many_gpu_ops_read_it():
    with tf.device("/cpu:0"):
        a = tf.constant(np.arange(6.0).reshape(2, 3), name="a")
        x = tf.placeholder(tf.float64, [2, 3], name="x")
    with tf.device("/gpu:0"):
        b = a * 2.0 + a
        c = tf.exp(a) - x * x
        d = b + c
    with tf.Session() as sess:
        value = sess.run(d, {x: np.ones((2, 3))})
        source = plan_source(sess)
    expected = np.arange(6.0).reshape(2, 3) * 3 + np.exp(np.arange(6.0).reshape(2, 3)) - 1
    np.testing.assert_allclose(value, expected)
    assert isinstance(value, np.ndarray)
    to_device = re.findall(r"= (_x_host_\w+)\(", source)
    to_host = re.findall(r"(_x_\w+_host)\(", source)
    assert len(to_device) == 2, source  # a and the feed x, once each
    assert len(to_host) == 1, source  # the fetch of d


def test_variables_live_on_the_gpu_and_fetches_are_host_copies():
    with tf.device("/gpu:0"):
        v = tf.Variable(np.ones(4, np.float32), name="v")
        step = tf.assign_add(v, tf.constant(np.arange(4, dtype=np.float32)))
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        sess.run(step)
        sess.run(step)
        stored = sess.devices[[d.name for d in sess.devices].index(GPU.format(0))] \
            .resources.variables["v"]
        assert not isinstance(stored, np.ndarray)  # a device array
        np.testing.assert_array_equal(sess.run(v), [1, 3, 5, 7])
        np.testing.assert_array_equal(first, [1, 1, 1, 1])  # the fetch was a copy


def test_an_op_without_a_gpu_kernel_falls_back_with_its_reason_or_fails_naming_it():
    with tf.device("/gpu:0"):
        m = tf.constant(np.eye(3) * 2.0, name="m")
        q, r = tf.qr(m, name="qr")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_allclose(np.abs(sess.run(r)), np.eye(3) * 2.0, atol=1e-12)
        record = next(r for op, r in sess.placer.records.items() if op.name == "qr")
        assert record.assigned == CPU0
        assert record.reason == "soft placement: no GPU kernel for Qr"
        assert placements(sess)["m"] == GPU.format(0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Cannot assign a device for operation qr: .*no supported kernel "
                                 r"for GPU devices is available \(no GPU kernel for Qr\)"):
            sess.run(r)


def test_ops_without_a_device_request_go_to_the_gpu_first():
    a = tf.constant([1.0, 2.0], name="a")
    b = tf.square(a, name="b")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(b), [1.0, 4.0])
        assert placements(sess)["b"] == GPU.format(0)


def test_the_demo_puts_one_tower_on_each_logical_gpu():
    result = subprocess.run(
        [sys.executable, "-m", "tfjupyter.cli", "demo", "--towers", "2", "--steps", "1",
         "--batch-size", "4", "--hidden", "8"],
        env=dict(os.environ, TFJUPYTER_LOGICAL_GPUS="2", PYTHONUNBUFFERED="1"),
        capture_output=True, text=True, timeout=240)
    assert "test accuracy = " in result.stdout, result.stderr[-3000:]
    summary = result.stdout.split("Placement summary:")[1].split("step ")[0]
    assert re.search(r"device:GPU:0: \d+ ops", summary) and re.search(r"device:GPU:1: \d+ ops", summary)
    assert "soft placement" not in summary  # every tower op has its GPU kernel


def test_string_tensors_stay_on_the_cpu_even_for_ops_with_gpu_kernels():
    with tf.device("/gpu:0"):
        name = tf.constant("model.ckpt", name="name")
        same = tf.identity(name, name="same")
        number = tf.constant(3.0, name="number")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(same) == b"model.ckpt"
        where = placements(sess)
        assert where["name"] == CPU0 and where["same"] == CPU0
        reason = next(r.reason for op, r in sess.placer.records.items() if op.name == "name")
        assert reason == "soft placement: no GPU kernel for Const on string tensors"
        sess.run(number)
        assert placements(sess)["number"] == GPU.format(0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="no GPU kernel for Const on string tensors"):
            sess.run(name)


def test_traced_steps_time_gpu_ops_on_their_device(monkeypatch):
    from tfjupyter.kernels.cuda._runtime import GPUState
    waits = []
    real_synchronize = GPUState.synchronize
    monkeypatch.setattr(GPUState, "synchronize", lambda self: waits.append(1) or real_synchronize(self))
    with tf.device("/gpu:0"):
        a = tf.constant(np.ones((8, 8), np.float32), name="a")
        b = tf.matmul(a, a, name="b")
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(b)
        assert waits == []  # plain steps never wait for the GPU between ops
        value = sess.run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                         run_metadata=meta)
    np.testing.assert_array_equal(value, np.full((8, 8), 8.0, np.float32))
    assert len(waits) == 2  # after each GPU op of the traced step, so its time is the kernel's
    stats = meta.step_stats.dev_stats[GPU.format(0)]
    assert [s["node_name"] for s in stats] == ["a", "b"]
    assert all(s["op_end_rel_micros"] >= 0 for s in stats)

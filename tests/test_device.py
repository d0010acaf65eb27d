import pytest

import tfjupyter as tf
from tfjupyter.framework.device import DeviceSpec, canonical_name, merge_device


@pytest.mark.parametrize("text, expected", [
    ("/cpu:0", "/device:CPU:0"),
    ("/gpu:1", "/device:GPU:1"),
    ("/GPU:2", "/device:GPU:2"),
    ("/device:GPU:3", "/device:GPU:3"),
    ("/device:CPU:*", "/device:CPU:*"),
    ("/job:ps/task:0", "/job:ps/task:0"),
    ("/job:localhost/replica:0/task:0/cpu:0", "/job:localhost/replica:0/task:0/device:CPU:0"),
    ("/job:worker/replica:1/task:2/device:GPU:0", "/job:worker/replica:1/task:2/device:GPU:0"),
    ("", ""),
])
def test_parse_and_print(text, expected):
    assert canonical_name(text) == expected


@pytest.mark.parametrize("bad", ["/gpu:1:2", "/cpu:0/gpu:2", "task:bar", "/job:ps/task:x",
                                 "/replica:-1", "/job:1ps", "/gpu:one"])
def test_malformed_strings_raise_clear_value_error(bad):
    with pytest.raises(ValueError, match="Malformed device specification"):
        DeviceSpec.from_string(bad)


def test_merge_inner_fields_win():
    assert merge_device("/job:ps/task:0", "/gpu:1") == "/job:ps/task:0/device:GPU:1"
    assert merge_device("/job:ps/task:0/gpu:0", "/task:3") == "/job:ps/task:3/device:GPU:0"
    assert merge_device("/gpu:0", "/cpu:0") == "/device:CPU:0"


def test_merged_spec_places_on_full_task_device():
    spec = DeviceSpec.from_string("/job:ps/task:0").make_merged_spec(DeviceSpec.from_string("/gpu:1"))
    full = spec.replace(replica=0)
    assert full.to_string() == "/job:ps/replica:0/task:0/device:GPU:1"
    assert spec.matches(DeviceSpec("ps", 0, 0, "GPU", 1))
    assert not spec.matches(DeviceSpec("ps", 0, 1, "GPU", 1))


def test_device_scopes_merge_innermost_wins_field_by_field():
    with tf.device("/job:ps/task:0"):
        with tf.device("/gpu:1"):
            a = tf.constant(1.0)
        with tf.device("/task:2"):
            b = tf.constant(1.0)
    assert a.op.device == "/job:ps/task:0/device:GPU:1"
    assert b.op.device == "/job:ps/task:2"


def test_device_none_clears_and_functions_work():
    with tf.device("/gpu:0"):
        with tf.device(None):
            a = tf.constant(1.0)
    assert a.op.device == ""

    def by_type(op):
        return "/cpu:0" if op.type == "Const" else "/gpu:0"
    with tf.device(by_type):
        c = tf.constant(1.0)
        d = tf.add(c, c)
    assert c.op.device == "/device:CPU:0"
    assert d.op.device == "/device:GPU:0"


def test_device_spec_object_accepted():
    with tf.device(tf.DeviceSpec(job="worker", task=1)):
        a = tf.constant(1.0)
    assert a.op.device == "/job:worker/task:1"


def test_bad_device_string_fails_at_scope_entry():
    with pytest.raises(ValueError, match="/gpu:1:2"):
        with tf.device("/gpu:1:2"):
            pass


def test_colocate_with_overrides_device_scope():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/gpu:3"):
        with tf.colocate_with(a):
            b = tf.identity(a, name="b")
    assert b.op.device == "/device:CPU:0"
    assert b.op.colocation_groups() == [b"loc:@a"]


@pytest.mark.parametrize("value, configured, expected", [
    ("true", False, True), ("TRUE", False, True), ("false", True, False), ("", True, True),
    ("", False, False), ("yes", False, False)])
def test_tf_force_gpu_allow_growth_overrides_gpu_options(monkeypatch, value, configured, expected):
    from tfjupyter.runtime import devices
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", value)
    assert devices._forced_allow_growth(configured) is expected

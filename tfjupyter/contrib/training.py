"""``tf.contrib.training``: the ps strategies of replica_device_setter."""
from ..train.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn  # noqa: F401

__all__ = ["GreedyLoadBalancingStrategy", "byte_size_load_fn"]

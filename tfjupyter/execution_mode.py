"""Eager execution versus graph mode, as TF 1.x programs ask about it. tfjupyter runs graphs
only (TF 1.x's default): switching eager execution (or TF 2's behaviour) off is accepted and
changes nothing; switching it on is refused with a ValueError that says so, before the program
runs on with semantics it did not ask for."""
from __future__ import annotations

__all__ = ["executing_eagerly", "enable_eager_execution", "disable_eager_execution",
           "enable_v2_behavior", "disable_v2_behavior", "enable_resource_variables",
           "disable_resource_variables", "resource_variables_enabled", "enable_v2_tensorshape",
           "disable_v2_tensorshape", "enable_control_flow_v2", "disable_control_flow_v2"]

_GRAPH_ONLY = ("tfjupyter runs TensorFlow 1.x graphs only (tf.Session); {what} is not "
               "supported. Remove the call: graph mode is the default, as in TF 1.x.")


def executing_eagerly() -> bool:
    """False: ops build graph nodes, values come from ``Session.run``."""
    return False


def enable_eager_execution(config=None, device_policy=None, execution_mode=None) -> None:
    raise ValueError(_GRAPH_ONLY.format(what="tf.enable_eager_execution()"))


def disable_eager_execution() -> None:
    """Accepted: graph mode is the only mode."""


def enable_v2_behavior() -> None:
    raise ValueError(_GRAPH_ONLY.format(what="tf.enable_v2_behavior() (eager execution, "
                                             "TF 2 semantics)"))


def disable_v2_behavior() -> None:
    """Accepted: TF 1.x's behaviour is the only behaviour."""


def enable_resource_variables() -> None:
    raise ValueError("tfjupyter's variables are TF 1.x reference variables (VariableV2); "
                     "tf.enable_resource_variables() is not supported.")


def disable_resource_variables() -> None:
    """Accepted: variables are reference variables (VariableV2), TF 1.x's default."""


def resource_variables_enabled() -> bool:
    return False


def enable_v2_tensorshape() -> None:
    """Accepted: a no-op (the program keeps TF 1.x's TensorShape)."""


disable_v2_tensorshape = enable_v2_tensorshape


def enable_control_flow_v2() -> None:
    """Accepted: control flow here is functional already (If/While, as control flow v2)."""


disable_control_flow_v2 = enable_control_flow_v2

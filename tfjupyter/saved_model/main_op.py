"""``tf.saved_model.main_op``: the usual op for a SavedModel's loader to run after it restored
the variables (TF 1.15's ``main_op_impl``)."""
from __future__ import annotations

from ..framework.ops import control_dependencies
from ..ops.control_flow_ops import group
from ..ops.lookup_ops import tables_initializer
from ..variables import global_variables_initializer, local_variables_initializer

__all__ = ["main_op", "main_op_with_restore"]


def main_op():
    """Initializes the global and local variables and the lookup tables."""
    return group(global_variables_initializer(), local_variables_initializer(),
                 tables_initializer())


def main_op_with_restore(restore_op_name):
    """``main_op()``, then the restore op named ``restore_op_name`` (a Saver's restore_all):
    variables are initialized first, then overwritten from the checkpoint."""
    with control_dependencies([main_op()]):
        return group(restore_op_name)

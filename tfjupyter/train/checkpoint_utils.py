"""``tf.train.init_from_checkpoint`` (TF 1.15): start variables from a checkpoint's tensors.

Each chosen variable's initializer becomes a RestoreV2 of its tensor (on the CPU) assigned to
it, so ``global_variables_initializer()`` — or a Scaffold, a MonitoredSession — loads the
checkpoint's values instead of the initial ones; nothing is read when this is called but the
checkpoint's names and shapes, to check them. Call it after the variables exist and before
their initializer op is fetched.

``assignment_map`` maps checkpoint names to variables (TensorFlow's forms):

- ``{"old/w": "new/w"}`` or ``{"old/w": variable}``: one tensor into one variable; a
  partitioned variable (its name, the PartitionedVariable or the list of its parts) gets the
  slice each part holds;
- ``{"old_scope/": "new_scope/"}``: every variable get_variable made under ``new_scope`` from
  the tensor of the same name under ``old_scope`` (``"/"`` is the root on either side).
"""
from __future__ import annotations

import logging
import os
from typing import Dict, List, Union

from ..framework.ops import get_default_graph
from ..variable_scopes import stored_variables
from ..variables import PartitionedVariable, Variable
from . import checkpoint_management
from .saver import ReferenceVariableSaveable, restore_v2

__all__ = ["init_from_checkpoint"]

_log = logging.getLogger("tfjupyter")


def checkpoint_name(variable: Variable) -> str:
    """The name ``variable`` is saved under: its own, or for a part of a partitioned variable
    the full variable's (the part is a slice of that tensor)."""
    info = variable._get_save_slice_info()
    return info.full_name if info is not None else variable.op.name


def _parts_of(name: str, store: Dict[str, Variable]):
    """The parts ``name/part_0``, ``name/part_1``... of a partitioned variable, or None."""
    parts: List[Variable] = []
    while f"{name}/part_{len(parts)}" in store:
        parts.append(store[f"{name}/part_{len(parts)}"])
    return parts or None


def _set_checkpoint_initializer(variable: Variable, ckpt_file: str, tensor_name: str,
                                slice_spec: str) -> None:
    """The variable's initializer becomes: assign it the checkpoint's tensor (or slice)."""
    graph = variable.graph
    # RestoreV2 runs on the CPU; it is not colocated with the variable, so that the variable
    # (and what is colocated with it) can stay on its device.
    with graph.as_default(), graph.device(variable.device), graph.device("/cpu:0"):
        restored = restore_v2(ckpt_file, [tensor_name], [slice_spec],
                              [variable.dtype.base_dtype], name="checkpoint_initializer")[0]
    restored.set_shape(variable.shape)
    saveable = ReferenceVariableSaveable(variable._ref(), slice_spec, tensor_name)
    with graph.as_default():
        variable._initializer_op = saveable.restore([restored], None).op
    variable._initial_value = restored


def _set_initializers(target: Union[Variable, List[Variable]], ckpt_file: str,
                      tensor_name: str) -> None:
    if isinstance(target, Variable):
        _set_checkpoint_initializer(target, ckpt_file, tensor_name, "")
        return
    full_name = None
    for part in target:
        info = part._get_save_slice_info()
        if info is None:
            raise ValueError(f"Slices must all be slices: {part}")
        if full_name is None:
            full_name = info.full_name
        elif full_name != info.full_name:
            raise ValueError(f"Slices must all be from the same tensor: {full_name} != "
                             f"{info.full_name}")
        _set_checkpoint_initializer(part, ckpt_file, tensor_name, info.spec)


def _as_target(value, store: Dict[str, Variable]):
    """A Variable, or the list of a partitioned variable's parts, or None (a scope name)."""
    if isinstance(value, Variable):
        return value
    if isinstance(value, PartitionedVariable):
        return list(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Variable)
                                                          for v in value):
        return list(value)
    if not isinstance(value, str):
        raise TypeError(f"init_from_checkpoint: assignment_map values must be variables or "
                        f"their names, got {value!r}")
    variable = store.get(value)
    return variable if variable is not None else _parts_of(value, store)


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map) -> None:
    """Makes the variables ``assignment_map`` names start from the checkpoint's tensors (see
    the module's docstring). Errors name the tensor or variable that does not match."""
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    ckpt_file = checkpoint_management.checkpoint_filename(ckpt_dir_or_file)
    shapes = checkpoint_management.load_checkpoint(ckpt_file).get_variable_to_shape_map()
    store = stored_variables(get_default_graph())
    for tensor_name, current in sorted(assignment_map.items(), key=lambda kv: kv[0]):
        target = _as_target(current, store)
        if target is not None:
            if tensor_name not in shapes:
                raise ValueError(f"Tensor {tensor_name} is not found in {ckpt_dir_or_file} "
                                 f"checkpoint {shapes}")
            if isinstance(target, Variable) and \
                    not target.get_shape().is_compatible_with(shapes[tensor_name]):
                raise ValueError(f"Shape of variable {target.name} ({target.get_shape()}) "
                                 f"doesn't match with shape of tensor {tensor_name} "
                                 f"({shapes[tensor_name]}) from checkpoint reader.")
            _set_initializers(target, ckpt_file, tensor_name)
            continue
        _init_scope(ckpt_dir_or_file, ckpt_file, tensor_name, current, shapes, store)


def _init_scope(ckpt_dir_or_file: str, ckpt_file: str, tensor_scope: str, var_scope: str,
                shapes, store: Dict[str, Variable]) -> None:
    """``{"old_scope/": "new_scope/"}``: each variable under new_scope from its tensor under
    old_scope (TensorFlow's rules, "/" standing for the root)."""
    scopes = var_scope[:var_scope.rindex("/")] if "/" in var_scope else ""
    if not tensor_scope.endswith("/"):
        raise ValueError(f"Assignment map with scope only name {scopes} should map to scope "
                         f"only {tensor_scope}. Should be 'scope/': 'other_scope/'.")
    names = set()
    for name in store:
        if not scopes or name.startswith(scopes + "/"):
            names.add(name[:name.index("/part_")] if "/part_" in name else name)
    for name in sorted(names):
        full_tensor_name = name[len(scopes):]
        if var_scope != "/":
            full_tensor_name = full_tensor_name[1:]
        if tensor_scope != "/":
            full_tensor_name = tensor_scope + full_tensor_name
        full_tensor_name = full_tensor_name.rstrip("/")
        if full_tensor_name not in shapes:
            raise ValueError(f"Tensor {full_tensor_name} ({name[len(scopes) + 1:]} in "
                             f"{tensor_scope}) is not found in {ckpt_dir_or_file} checkpoint")
        variable = store.get(name)
        _set_initializers(variable if variable is not None else _parts_of(name, store),
                          ckpt_file, full_tensor_name)
        _log.debug("Initialize variable %s from checkpoint %s with %s", name,
                   ckpt_dir_or_file, full_tensor_name)

"""``tf.train.Saver``: checkpoints through graph ops, as TensorFlow 1.x builds them.

A Saver adds to the graph (under a ``save`` name scope)::

    save/Const                 the checkpoint prefix (a string fed at save/restore time)
    save/SaveV2                writes the variables (its inputs) to <prefix>.index/.data-*
    save/control_dependency    the prefix again, after SaveV2 ran   (saver_def.save_tensor_name)
    save/RestoreV2             reads the tensors back
    save/Assign, _1, ...       one per variable, colocated with it
    save/restore_all           groups the assigns                   (saver_def.restore_op_name)

With ``sharded=True`` each device holding variables (each ps task, in a cluster) gets its own
SaveV2/RestoreV2 placed beside its variables, and ``MergeV2Checkpoints`` joins the shards.
The parts of a partitioned variable ``w`` (``w/part_<i>``, each with its SaveSliceInfo) are
saved as slices of one tensor ``w``, as TensorFlow saves them (see ``tensor_slices``), and
restored from any checkpoint that holds ``w``, whole or cut otherwise.
The files are TensorFlow's V2 format (see ``tensor_bundle``), written atomically, also over
an existing checkpoint of the same prefix: a save killed at any instant leaves the old
checkpoint or the new one. The meta graph and the "checkpoint" state file are replaced
atomically as well (``tensor_bundle.atomic_write``). The meta graph (``<prefix>.meta``) is a
MetaGraphDef (``framework/meta_graph.py``): ``tf.train.import_meta_graph`` rebuilds the graph,
its collections and this Saver from it, without the model's Python code.
"""
from __future__ import annotations

import collections
import logging
import numbers
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

from tensorboard.compat.proto import saver_pb2

from ..framework import dtypes, errors, meta_graph
from ..framework.device import DeviceSpec, canonical_name
from ..framework.ops import (GraphKeys, Operation, Tensor, convert_to_tensor, get_default_graph,
                             prepend_name_scope, register_proto_function, strip_name_scope)
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from ..ops import array_ops, control_flow_ops
from .. import variables
from . import checkpoint_management as _cm
from . import tensor_bundle
from .checkpoint_management import *  # noqa: F401,F403  (tf.train.latest_checkpoint, ...)

__all__ = ["Saver", "SaverDef", "export_meta_graph", "import_meta_graph"] + _cm.__all__

SaverDef = saver_pb2.SaverDef
_log = logging.getLogger("tfjupyter")
_VARIABLE_OP_TYPES = frozenset({"Variable", "VariableV2", "AutoReloadVariable"})
SAVEABLE_OBJECTS = getattr(GraphKeys, "SAVEABLE_OBJECTS", "saveable_objects")


# -- io ops ----------------------------------------------------------------------------------------
def _check_string(op, t: Tensor, what: str, rank: Optional[int]) -> None:
    if t.dtype is not dtypes.string:
        raise TypeError(f"Input '{what}' of '{op.type}' Op '{op.name}' has type {t.dtype.name} "
                        "that does not match expected type of string.")
    if rank is not None and t.shape.ndims is not None and t.shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                         f"'{op.name}' (op: '{op.type}') input '{what}'")


@register_op("SaveV2", stateful=True)
def _save_v2_shape(op):
    prefix, names, slices = op.inputs[:3]
    _check_string(op, prefix, "prefix", 0)
    _check_string(op, names, "tensor_names", 1)
    _check_string(op, slices, "shape_and_slices", 1)
    n = len(op.inputs) - 3
    for t in (names, slices):
        dim = t.shape.as_list()[0] if t.shape.ndims == 1 else None
        if dim is not None and dim != n:
            raise ValueError(f"Dimension 0 of '{t.name}' is {dim} but SaveV2 '{op.name}' is "
                             f"given {n} tensors")
    return []


@register_op("RestoreV2", stateful=True)
def _restore_v2_shape(op):
    prefix, names, slices = op.inputs
    _check_string(op, prefix, "prefix", 0)
    _check_string(op, names, "tensor_names", 1)
    _check_string(op, slices, "shape_and_slices", 1)
    specs = slices.op.get_attr("value").reshape(-1) if slices.op.type == "Const" else None
    out = []
    for i, dtype in enumerate(op.get_attr("dtypes")):
        shape = TensorShape(None)
        if specs is not None and i < len(specs) and specs[i]:
            full, dims = parse_shape_and_slice(specs[i].decode())
            shape = TensorShape([d if s is None else (s[1] if s[1] >= 0 else d - s[0])
                                 for d, s in zip(full, dims)])
        out.append((dtype, shape))
    return out


@register_op("MergeV2Checkpoints", stateful=True)
def _merge_v2_shape(op):
    _check_string(op, op.inputs[0], "checkpoint_prefixes", 1)
    _check_string(op, op.inputs[1], "destination_prefix", 0)
    return []


@register_op("ShardedFilename")
def _sharded_filename_shape(op):
    _check_string(op, op.inputs[0], "basename", 0)
    return [(dtypes.string, TensorShape(()))]


for _t in ("SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename"):
    NotDifferentiable(_t)


def parse_shape_and_slice(spec: str) -> Tuple[List[int], List[Optional[Tuple[int, int]]]]:
    """'3 4 -:0,2' -> ([3, 4], [None, (0, 2)]): a full shape and a slice (None: whole dim)."""
    parts = spec.split(" ")
    if len(parts) < 2:
        raise ValueError(f"Need least two elements in shape_and_slice specification: {spec}")
    try:
        shape = [int(p) for p in parts[:-1]]
        dims: List[Optional[Tuple[int, int]]] = []
        for item in filter(None, parts[-1].split(":")):
            if item == "-":
                dims.append(None)
            else:
                start, length = item.split(",")
                dims.append((int(start), int(length)))
    except ValueError:
        raise ValueError(f"Invalid shape_and_slice specification: {spec!r}") from None
    if len(dims) != len(shape):
        raise ValueError(f"Expected {len(shape)} slice dimensions in shape_and_slice "
                         f"specification {spec!r}, got {len(dims)}")
    return shape, dims


def _string_const(values, name: str) -> Tensor:
    return array_ops.constant(values, dtype=dtypes.string, name=name)


def save_v2(prefix: Tensor, tensor_names: Sequence[str], shape_and_slices: Sequence[str],
            tensors: Sequence[Tensor], name: Optional[str] = None) -> Operation:
    graph = prefix.graph
    with graph.as_default(), graph.name_scope(name or "SaveV2") as scope:
        names_t = _string_const(list(tensor_names), "tensor_names")
        slices_t = _string_const(list(shape_and_slices), "shape_and_slices")
        return graph.create_op("SaveV2", [prefix, names_t, slices_t] + list(tensors),
                               {"dtypes": [t.dtype for t in tensors]}, name=scope)


def restore_v2(prefix, tensor_names: Sequence[str], shape_and_slices: Sequence[str],
               dtypes_: Sequence[dtypes.DType], name: Optional[str] = None) -> List[Tensor]:
    """RestoreV2 of the checkpoint ``prefix`` (a string Tensor, or a str made a Const)."""
    graph = prefix.graph if isinstance(prefix, Tensor) else get_default_graph()
    with graph.as_default(), graph.name_scope(name or "RestoreV2") as scope:
        if not isinstance(prefix, Tensor):
            prefix = _string_const(prefix, "prefix")
        names_t = _string_const(list(tensor_names), "tensor_names")
        slices_t = _string_const(list(shape_and_slices), "shape_and_slices")
        return graph.create_op("RestoreV2", [prefix, names_t, slices_t],
                               {"dtypes": list(dtypes_)}, name=scope).outputs


# -- saveables ------------------------------------------------------------------------------------
class SaveSpec:
    """One tensor a SaveableObject saves: ``name`` is its key in the checkpoint."""

    def __init__(self, tensor, slice_spec: str, name: str, dtype=None, device=None):
        self._tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        self.dtype = dtype if dtype is not None else tensor.dtype
        self.device = device if device is not None else tensor.device

    @property
    def tensor(self) -> Tensor:
        return self._tensor() if callable(self._tensor) else self._tensor


class SaveableObject:
    """Something a Saver saves and restores: ``specs`` to save, ``restore`` to assign back."""

    def __init__(self, op, specs: List[SaveSpec], name: str):
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def device(self) -> str:
        return self.specs[0].device

    def restore(self, restored_tensors, restored_shapes):
        raise NotImplementedError(f"{type(self).__name__} must implement restore()")


class ReferenceVariableSaveable(SaveableObject):
    """A VariableV2: saved from its ref tensor, restored with an Assign."""

    def __init__(self, var: Tensor, slice_spec: str, name: str):
        super().__init__(var, [SaveSpec(var, slice_spec, name, dtype=var.dtype)], name)

    def restore(self, restored_tensors, restored_shapes):
        restored = restored_tensors[0]
        if restored_shapes is not None:
            restored = array_ops.reshape(restored, restored_shapes[0])
        return variables.assign(self.op, restored,
                                validate_shape=restored_shapes is None
                                and self.op.shape.is_fully_defined())


def _variable_ref(value) -> Tensor:
    ref = convert_to_tensor(value, as_ref=True)
    if not (isinstance(ref, Tensor) and ref.op.type in _VARIABLE_OP_TYPES):
        raise TypeError(f"Variable to save is not a Variable: {value}")
    return ref


def op_list_to_dict(op_list) -> Dict[str, object]:
    """A list of variables (and saveables) as {checkpoint name: variable}, names from ops; the
    parts of a partitioned variable become {full name: [parts]}."""
    if not isinstance(op_list, (list, tuple, set)):
        raise TypeError(f"Variables to save should be passed in a dict or a list: {op_list}")
    out: Dict[str, object] = {}
    for var in sorted(op_list, key=lambda x: x.name):
        if isinstance(var, SaveableObject):
            name, value = var.name, var
        elif isinstance(var, variables.PartitionedVariable):
            name, value = var.name, var
        elif isinstance(var, variables.Variable) and var._get_save_slice_info() is not None:
            name = var._get_save_slice_info().full_name
            if name in out and not isinstance(out[name], list):
                raise ValueError(f"Mixing slices and non-slices with the same name: {name}")
            out.setdefault(name, []).append(var)
            continue
        else:
            value = _variable_ref(var)
            name = value.op.name
        if name in out:
            raise ValueError(f"At least two variables have the same name: {name}")
        out[name] = value
    return out


def validate_and_slice_inputs(names_to_saveables) -> List[SaveableObject]:
    if not isinstance(names_to_saveables, dict):
        names_to_saveables = op_list_to_dict(names_to_saveables)
    saveables: List[SaveableObject] = []
    seen = set()
    for name, value in sorted(names_to_saveables.items(), key=lambda x: x[0]):
        if not isinstance(name, str):
            raise TypeError("names_to_saveables must be a dict mapping string names to "
                            f"trackable operations. Name is not a string: {name}")
        if isinstance(value, (list, tuple, variables.PartitionedVariable)):
            saveables.extend(_slice_saveables(name, value, seen))
            continue
        if isinstance(value, SaveableObject):
            saveable = value
        else:
            try:
                ref = _variable_ref(value)
            except TypeError:
                raise TypeError("names_to_saveables must be a dict mapping string names to "
                                f"Tensors/Variables. Not a variable: {value}") from None
            saveable = ReferenceVariableSaveable(ref, "", name)
        key = id(saveable.op) if saveable.op is not None else None
        if key is not None and key in seen:
            raise ValueError(f"The same saveable will be restored with two names: {name}")
        seen.add(key)
        saveables.append(saveable)
    return saveables


def _slice_saveables(name: str, parts, seen: set) -> List[SaveableObject]:
    """One saveable per part of a partitioned variable: its slice of the tensor ``name``."""
    saveables = []
    for part in parts:
        if not isinstance(part, variables.Variable):
            raise ValueError(f"Slices must all be Variables: {part}")
        info = part._get_save_slice_info()
        if info is None:
            raise ValueError(f"Slices must all be slices: {part}")
        ref = _variable_ref(part)
        if id(ref.op) in seen:
            raise ValueError(f"The same saveable will be restored with two names: {name}")
        seen.add(id(ref.op))
        saveables.append(ReferenceVariableSaveable(ref, info.spec, name))
    return saveables


# -- the builder -----------------------------------------------------------------------------------
def _set_cpu0(device: str) -> str:
    spec = DeviceSpec.from_string(device or "")
    spec.device_type, spec.device_index = "CPU", 0
    return spec.to_string()


def _restore_spec(spec: SaveSpec, reshape: bool) -> str:
    """The shape_and_slice RestoreV2 gets: the full shape of a fully-defined variable, so a
    checkpoint tensor of another shape fails there with both names and shapes in the error."""
    if spec.slice_spec or reshape:
        return spec.slice_spec
    shape = spec.tensor.shape
    if shape.ndims and shape.is_fully_defined():
        return " ".join(str(d) for d in shape.as_list()) + " " + ":".join("-" * shape.ndims)
    return ""


class BaseSaverBuilder:
    """Adds the save/restore ops of a list of saveables to the default graph: one SaveV2 and
    one RestoreV2 (per device when sharded) for all of them."""

    SaveSpec = SaveSpec
    SaveableObject = SaveableObject

    def __init__(self, write_version: int = saver_pb2.SaverDef.V2):
        self._write_version = write_version

    def save_op(self, filename_tensor: Tensor, saveables: List[SaveableObject]) -> Operation:
        names, tensors, slices = [], [], []
        for saveable in saveables:
            for spec in saveable.specs:
                names.append(spec.name)
                tensors.append(spec.tensor)
                slices.append(spec.slice_spec)
        return save_v2(filename_tensor, names, slices, tensors)

    def bulk_restore(self, filename_tensor: Tensor, saveables: List[SaveableObject],
                     preferred_shard: int, restore_sequentially: bool,
                     reshape: bool = False) -> List[Tensor]:
        specs = [spec for s in saveables for spec in s.specs]
        with filename_tensor.graph.device("cpu:0"):
            return restore_v2(filename_tensor, [s.name for s in specs],
                              [_restore_spec(s, reshape) for s in specs], [s.dtype for s in specs])

    def _add_save_ops(self, filename_tensor: Tensor, saveables) -> Tensor:
        save = self.save_op(filename_tensor, saveables)
        return control_flow_ops.with_dependencies([save], filename_tensor,
                                                  name="control_dependency")

    def _add_restore_ops(self, filename_tensor: Tensor, saveables, restore_sequentially: bool,
                         reshape: bool, preferred_shard: int = -1,
                         name: str = "restore_all") -> Operation:
        restored = self.bulk_restore(filename_tensor, saveables, preferred_shard,
                                     restore_sequentially, reshape)
        assign_ops, index = [], 0
        for saveable in saveables:
            shapes = None
            if reshape:
                shapes = []
                for spec in saveable.specs:
                    shape = spec.tensor.shape
                    shapes.append(shape.as_list() if shape.is_fully_defined()
                                  else array_ops.shape(spec.tensor))
            n = len(saveable.specs)
            assign_ops.append(saveable.restore(restored[index:index + n], shapes))
            index += n
        return control_flow_ops.group(*assign_ops, name=name)

    @staticmethod
    def _group_by_devices(saveables) -> List[Tuple[str, List[SaveableObject]]]:
        per_device: Dict[str, List[SaveableObject]] = collections.defaultdict(list)
        for saveable in saveables:
            devices = {canonical_name(spec.device) for spec in saveable.specs}
            if len(devices) != 1:
                raise ValueError("All tensors of a saveable object must be on the same "
                                 f"device: {saveable.name}")
            per_device[devices.pop()].append(saveable)
        return sorted(per_device.items(), key=lambda t: t[0])

    def _add_sharded_save_ops(self, checkpoint_prefix: Tensor, per_device) -> Tensor:
        # Each device's variables are written next to them, to "<prefix>-SSSSS-of-NNNNN", then
        # merged into <prefix>.index + <prefix>.data-SSSSS-of-NNNNN.
        graph = checkpoint_prefix.graph
        num_shards = array_ops.constant(len(per_device), name="num_shards")
        prefixes, saves = [], []
        last_device = ""
        for shard, (device, saveables) in enumerate(per_device):
            last_device = device
            with graph.device(_set_cpu0(device)):
                shard_t = array_ops.constant(shard, name="shard")
                filename = graph.create_op("ShardedFilename", [checkpoint_prefix, shard_t,
                                                               num_shards],
                                           name="ShardedFilename").outputs[0]
                prefixes.append(filename)
                saves.append(self._add_save_ops(filename, saveables))
        with graph.control_dependencies([s.op for s in saves]), \
                graph.device(_set_cpu0(last_device)):
            all_prefixes = array_ops.stack(prefixes) if len(prefixes) > 1 else \
                array_ops.reshape(prefixes[0], [1])
            merge = graph.create_op("MergeV2Checkpoints", [all_prefixes, checkpoint_prefix],
                                    {"delete_old_dirs": True}, name="MergeV2Checkpoints")
            with graph.control_dependencies([merge]):
                return array_ops.identity(checkpoint_prefix)

    def _add_sharded_restore_ops(self, filename_tensor: Tensor, per_device,
                                 restore_sequentially: bool, reshape: bool) -> Operation:
        graph = filename_tensor.graph
        restores = []
        for shard, (device, saveables) in enumerate(per_device):
            with graph.device(device):
                restores.append(self._add_restore_ops(filename_tensor, saveables,
                                                      restore_sequentially, reshape,
                                                      preferred_shard=shard,
                                                      name="restore_shard"))
        return control_flow_ops.group(*restores, name="restore_all")

    def build(self, names_to_saveables, reshape: bool = False, sharded: bool = False,
              max_to_keep: int = 5, keep_checkpoint_every_n_hours: float = 10000.0,
              name: Optional[str] = None, restore_sequentially: bool = False,
              filename: str = "model") -> saver_pb2.SaverDef:
        return self._build_internal(names_to_saveables, reshape, sharded, max_to_keep,
                                    keep_checkpoint_every_n_hours, name, restore_sequentially,
                                    filename)

    def _build_internal(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
                        keep_checkpoint_every_n_hours=10000.0, name=None,
                        restore_sequentially=False, filename="model", build_save=True,
                        build_restore=True) -> saver_pb2.SaverDef:
        saveables = validate_and_slice_inputs(names_to_saveables)
        if max_to_keep is None:
            max_to_keep = 0
        graph = get_default_graph()
        with graph.name_scope(name or "save"):
            filename_tensor = array_ops.constant(filename or "model", dtype=dtypes.string,
                                                 name="Const")
            save_tensor = restore_op = None
            if sharded:
                per_device = self._group_by_devices(saveables)
                if build_save:
                    save_tensor = self._add_sharded_save_ops(filename_tensor, per_device)
                if build_restore:
                    restore_op = self._add_sharded_restore_ops(filename_tensor, per_device,
                                                               restore_sequentially, reshape)
            else:
                if build_save:
                    save_tensor = self._add_save_ops(filename_tensor, saveables)
                if build_restore:
                    restore_op = self._add_restore_ops(filename_tensor, saveables,
                                                       restore_sequentially, reshape)
        return saver_pb2.SaverDef(
            filename_tensor_name=filename_tensor.name,
            save_tensor_name=save_tensor.name if save_tensor is not None else "",
            restore_op_name=restore_op.name if restore_op is not None else "",
            max_to_keep=max_to_keep, sharded=sharded,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            version=self._write_version)


class BulkSaverBuilder(BaseSaverBuilder):
    """TensorFlow's name for the default builder (one RestoreV2 for all tensors)."""


def _all_saveable_objects(graph) -> list:
    return (graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            + graph.get_collection(SAVEABLE_OBJECTS))


def _wrap_restore_error(err: errors.OpError, verbiage: str) -> errors.OpError:
    message = (f"Restoring from checkpoint failed. This is most likely due to {verbiage} from "
               "the checkpoint. Please ensure that you have not altered the graph expected "
               f"based on the checkpoint. Original error:\n\n{err.message}")
    return type(err)(err.node_def, err.op, message)


# -- Saver -----------------------------------------------------------------------------------------
class Saver:
    """Saves and restores variables: ``saver.save(sess, path, global_step=step)``,
    ``saver.restore(sess, tf.train.latest_checkpoint(dir))``."""

    def __init__(self, var_list=None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: Optional[str] = None, restore_sequentially: bool = False,
                 saver_def: Optional[saver_pb2.SaverDef] = None, builder=None,
                 defer_build: bool = False, allow_empty: bool = False,
                 write_version: int = saver_pb2.SaverDef.V2, pad_step_number: bool = False,
                 save_relative_paths: bool = False, filename: Optional[str] = None):
        if var_list is not None and not isinstance(var_list, (list, tuple, set, dict)):
            raise TypeError(f"Variables to save should be passed in a dict or a list: {var_list}")
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either "
                             "set defer_build=False or var_list=None.")
        if write_version != saver_pb2.SaverDef.V2:
            _log.warning("Checkpoint format V%s is not supported; writing the V2 format "
                         "(<prefix>.index + <prefix>.data-*) instead.", write_version)
            write_version = saver_pb2.SaverDef.V2
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._builder = builder
        self._is_built = False
        self._allow_empty = allow_empty
        self._is_empty: Optional[bool] = None
        self._write_version = write_version
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._save_relative_paths = save_relative_paths
        self._last_checkpoints: List[Tuple[str, float]] = []
        self._checkpoints_to_be_deleted: List[Tuple[str, float]] = []
        self._meta_graph_cache: Optional[Tuple[tuple, bytes]] = None
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()
        if self.saver_def:
            self._check_saver_def()
            self._write_version = self.saver_def.version

    def build(self) -> None:
        if self._is_built:
            return
        self._is_built = True
        if not self.saver_def:
            if self._builder is None:
                self._builder = BulkSaverBuilder(self._write_version)
            if self._var_list is None:
                self._var_list = _all_saveable_objects(get_default_graph())
            if not self._var_list:
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            self.saver_def = self._builder._build_internal(
                self._var_list, reshape=self._reshape, sharded=self._sharded,
                max_to_keep=self._max_to_keep,
                keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
                name=self._name, restore_sequentially=self._restore_sequentially,
                filename=self._filename)
        elif self._name:
            raise ValueError("A Saver built from a SaverDef cannot be renamed (name="
                             f"{self._name!r}); its ops already have names.")
        else:
            self._is_empty = False
        self._check_saver_def()
        self._next_checkpoint_time = (time.time()
                                      + self.saver_def.keep_checkpoint_every_n_hours * 3600)

    def _check_saver_def(self) -> None:
        if not isinstance(self.saver_def, saver_pb2.SaverDef):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {self.saver_def}")
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self) -> saver_pb2.SaverDef:
        return self.saver_def

    def to_proto(self, export_scope: Optional[str] = None) -> Optional[saver_pb2.SaverDef]:
        """A copy of the SaverDef, its names without ``export_scope/``; None when this Saver's
        ops are outside ``export_scope``."""
        return _rescope_saver_def(self.saver_def,
                                  lambda name: strip_name_scope(name, export_scope), export_scope)

    @staticmethod
    def from_proto(saver_def: saver_pb2.SaverDef, import_scope: Optional[str] = None) -> "Saver":
        """The Saver of a SaverDef whose ops are in the default graph under ``import_scope``."""
        return Saver(saver_def=_rescope_saver_def(
            saver_def, lambda name: prepend_name_scope(name, import_scope)))

    # -- bookkeeping of kept checkpoints -----------------------------------------------------------
    @property
    def last_checkpoints(self) -> List[str]:
        """The kept checkpoints' prefixes, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: List[str]) -> None:
        if not isinstance(last_checkpoints, list):
            raise TypeError(f"last_checkpoints must be a list, got {type(last_checkpoints)}")
        self._last_checkpoints = [(s, float("inf")) for s in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list of (path, timestamp)")
        self._last_checkpoints = [(p, t) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: Sequence[str]) -> None:
        """Takes over checkpoints written earlier (e.g. by a previous run), with their mtimes."""
        found = []
        for path in checkpoint_paths:
            mtimes = _cm.get_checkpoint_mtimes([path])
            if mtimes:
                found.append((path, mtimes[0]))
        self.set_last_checkpoints_with_time(found)

    def _record_last_checkpoint(self, path: str) -> None:
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        while self._checkpoints_to_be_deleted:
            path, stamp = self._checkpoints_to_be_deleted.pop(0)
            # keep_checkpoint_every_n_hours: keep one checkpoint per period of training.
            if stamp > self._next_checkpoint_time:
                self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
                continue
            try:
                _cm.remove_checkpoint(path, self.saver_def.version, meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: %s", e)

    # -- save / restore ----------------------------------------------------------------------------
    def save(self, sess, save_path: str, global_step=None, latest_filename: Optional[str] = None,
             meta_graph_suffix: str = "meta", write_meta_graph: bool = True,
             write_state: bool = True, strip_default_attrs: bool = False,
             save_debug_info: bool = False) -> Optional[str]:
        """Writes a checkpoint and returns its prefix (``save_path-<global_step>``)."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = int(sess.run(global_step))
            global_step = int(global_step)
            checkpoint_file = (f"{save_path}-{global_step:08d}" if self._pad_step_number
                               else f"{save_path}-{global_step}")
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': "
                                 f"'{latest_filename}' and '{save_path}'")
        if not hasattr(sess, "run") or not hasattr(sess, "graph"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_dir = os.path.dirname(save_path)
        model_checkpoint_path = None
        if not self._is_empty:
            try:
                result = sess.run(self.saver_def.save_tensor_name,
                                  {self.saver_def.filename_tensor_name: checkpoint_file})
            except (errors.FailedPreconditionError, errors.NotFoundError) as exc:
                if not os.path.isdir(save_dir or "."):
                    raise ValueError(f"Parent directory of {save_path} doesn't exist, can't "
                                     "save.") from exc
                raise
            model_checkpoint_path = _as_str(result)
            if write_state:
                self._record_last_checkpoint(model_checkpoint_path)
                _cm.update_checkpoint_state(save_dir, model_checkpoint_path,
                                            self.last_checkpoints, latest_filename,
                                            save_relative_paths=self._save_relative_paths)
                self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            self._write_meta_graph(_cm.meta_graph_filename(checkpoint_file, meta_graph_suffix),
                                   sess.graph)
        return model_checkpoint_path

    def _write_meta_graph(self, filename: str, graph) -> None:
        """Writes the .meta file; the serialized MetaGraphDef is reused while the graph and its
        collections are unchanged (a training loop saving every N steps pays for it once)."""
        key = (graph, graph.version, tuple(
            (k, tuple(id(x) for x in graph.get_collection(k)))
            for k in sorted(graph.get_all_collection_keys())))
        if self._meta_graph_cache is None or self._meta_graph_cache[0] != key:
            meta = export_meta_graph(saver_def=self.saver_def, graph=graph)
            self._meta_graph_cache = (key, meta.SerializeToString())
        try:
            tensor_bundle.remove_stale_temp_files(filename)   # left by killed saves
            tensor_bundle.atomic_write(filename, self._meta_graph_cache[1])
        except OSError as e:
            raise tensor_bundle.as_os_error(e, f"Failed to write meta graph {filename}") from None

    def restore(self, sess, save_path: str) -> None:
        """Loads the variables of the checkpoint ``save_path`` (a prefix) into ``sess``."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not _cm.checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        _log.info("Restoring parameters from %s", save_path)
        try:
            sess.run(self.saver_def.restore_op_name,
                     {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as err:
            raise _wrap_restore_error(
                err, "a Variable name or other graph key that is missing") from None
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error(
                err, "a mismatch between the current graph and the graph") from None

    def export_meta_graph(self, filename: Optional[str] = None, collection_list=None,
                          as_text: bool = False, export_scope: Optional[str] = None,
                          clear_devices: bool = False, clear_extraneous_savers: bool = False,
                          strip_default_attrs: bool = False, save_debug_info: bool = False,
                          graph=None):
        """The default graph (or ``graph``) with this Saver's SaverDef as a MetaGraphDef,
        written to ``filename`` if given (see ``tf.train.export_meta_graph``)."""
        return export_meta_graph(filename=filename, saver_def=self.saver_def,
                                 collection_list=collection_list, as_text=as_text,
                                 graph=graph, export_scope=export_scope,
                                 clear_devices=clear_devices)


def _rescope_saver_def(saver_def: saver_pb2.SaverDef, rename,
                       export_scope: Optional[str] = None) -> Optional[saver_pb2.SaverDef]:
    """A copy of a SaverDef with its three names renamed; None when ``export_scope`` is given
    and a name is outside it."""
    if export_scope and not all(getattr(saver_def, f).startswith(export_scope.rstrip("/") + "/")
                                for f in meta_graph.SAVER_DEF_NAME_FIELDS):
        return None
    proto = saver_pb2.SaverDef()
    proto.CopyFrom(saver_def)
    for field in meta_graph.SAVER_DEF_NAME_FIELDS:
        setattr(proto, field, rename(getattr(saver_def, field)))
    return proto


# The "savers" collection holds SaverDefs in a MetaGraphDef, as in TensorFlow.
register_proto_function(
    GraphKeys.SAVERS, proto_type=saver_pb2.SaverDef,
    to_proto=lambda saver, export_scope: saver.to_proto(export_scope),
    from_proto=Saver.from_proto,
    name_fields=meta_graph.SAVER_DEF_NAME_FIELDS)


def export_meta_graph(filename: Optional[str] = None, meta_info_def=None, graph_def=None,
                      saver_def=None, collection_list=None, as_text: bool = False, graph=None,
                      export_scope: Optional[str] = None, clear_devices: bool = False,
                      clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                      save_debug_info: bool = False, **kwargs):
    """``tf.train.export_meta_graph``: the graph (the default graph), its collections (all, or
    ``collection_list``) and ``saver_def`` as a MetaGraphDef, written to ``filename`` (binary,
    or text with ``as_text``) if given. ``clear_devices`` leaves the ops' devices out;
    ``export_scope`` keeps the ops under it, without the prefix (see ``framework.meta_graph``).
    ``clear_extraneous_savers``, ``strip_default_attrs`` and ``save_debug_info`` are accepted
    for compatibility and change nothing."""
    del clear_extraneous_savers, strip_default_attrs, save_debug_info, kwargs
    meta, _ = meta_graph.export_scoped_meta_graph(
        filename=filename, graph_def=graph_def, graph=graph, export_scope=export_scope,
        as_text=as_text, clear_devices=clear_devices, saver_def=saver_def,
        collection_list=collection_list, meta_info_def=meta_info_def)
    return meta


def import_meta_graph(meta_graph_or_file, clear_devices: bool = False,
                      import_scope: Optional[str] = None, **kwargs) -> Optional["Saver"]:
    """``tf.train.import_meta_graph``: adds the graph and collections of a MetaGraphDef (or of
    the ``.meta`` file holding one) to the default graph, under ``import_scope/`` if given,
    without devices if ``clear_devices``. Returns the Saver of its SaverDef, ready for
    ``saver.restore(sess, prefix)``; without a SaverDef, a new Saver of the imported variables,
    or None when there are none. ``kwargs``: ``input_map``, ``unbound_inputs_col_name``,
    ``restore_collections_predicate`` (see ``framework.meta_graph``)."""
    imported = meta_graph.import_meta_graph_def(meta_graph_or_file, clear_devices=clear_devices,
                                                import_scope=import_scope, **kwargs)
    meta = imported.meta_graph_def
    if meta.HasField("saver_def"):
        return Saver(saver_def=imported.rename_fields(meta.saver_def,
                                                      meta_graph.SAVER_DEF_NAME_FIELDS))
    if imported.var_list:
        return Saver(list(imported.var_list.values()))
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None


def _as_str(value) -> str:
    if hasattr(value, "reshape") and getattr(value, "size", 0) == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)

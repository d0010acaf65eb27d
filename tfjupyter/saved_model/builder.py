"""``tf.saved_model.builder.SavedModelBuilder`` (TF 1.15): writes a SavedModel, TensorFlow's
format for a model to serve or reload without its code::

    export_dir/saved_model.pb        a SavedModel proto: one MetaGraphDef per tag-set
    export_dir/variables/            the variables' checkpoint (variables.index + .data-*)
    export_dir/assets/               the asset files (vocabularies) the graph reads

The first MetaGraph comes with the variables (``add_meta_graph_and_variables``), later ones
share them (``add_meta_graph``); ``save`` writes the proto. Each MetaGraph is the default
graph exported by a sharded Saver (``train/saver.py``, ``framework/meta_graph.py``) with its
tags and signatures. An asset is a string Const holding a file's path: the builder copies the
file into ``assets/`` and records it (an AssetFileDef in the ``saved_model_assets``
collection), and the loader feeds the Const the copied file's path when it runs the main op.
"""
from __future__ import annotations

import filecmp
import logging
import os
import shutil
from typing import Dict

import numpy as np
from google.protobuf import text_format
from tensorboard.compat.proto import meta_graph_pb2, saver_pb2, types_pb2

from ..framework import dtypes
from ..framework.ops import Operation, Tensor, add_to_collection, get_collection
from ..train import tensor_bundle
from ..train.saver import Saver
from . import constants, utils
from .proto import SavedModel, pack_asset_file_def

__all__ = ["SavedModelBuilder"]

_log = logging.getLogger("tfjupyter")


class SavedModelBuilder:
    """Builds a SavedModel in ``export_dir``, which must not exist or be empty."""

    def __init__(self, export_dir):
        self._export_dir = os.fsdecode(export_dir)
        self._saved_model = SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        if os.path.exists(self._export_dir):
            if os.listdir(self._export_dir):
                raise AssertionError(
                    "Export directory already exists, and isn't empty. Please choose a "
                    "different export directory, or delete all the contents of the specified "
                    f"directory: {self._export_dir}")
        else:
            os.makedirs(self._export_dir)
        # The first MetaGraph must save the variables; later ones share them.
        self._has_saved_variables = False

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices: bool = False, main_op=None,
                                     strip_default_attrs: bool = False, saver=None) -> None:
        """Saves the session's variables to ``variables/`` and adds the default graph as the
        MetaGraph of ``tags``. ``main_op`` (or ``legacy_init_op``) is run by the loader after
        the variables are restored; ``assets_collection`` lists the asset path Consts."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been "
                                 "saved. Please invoke `add_meta_graph()` instead.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        self._add_collections(assets_collection, _either(main_op, legacy_init_op))
        os.makedirs(utils.get_variables_dir(self._export_dir), exist_ok=True)
        saver = saver or _new_saver()
        # No "checkpoint" state file: a SavedModel may be moved, and the state names paths.
        saver.save(sess, utils.get_variables_path(self._export_dir), write_meta_graph=False,
                   write_state=False)
        self._add_meta_graph(saver, tags, signature_def_map, clear_devices, strip_default_attrs)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices: bool = False, main_op=None,
                       strip_default_attrs: bool = False, saver=None) -> None:
        """Adds the default graph as the MetaGraph of ``tags``, restoring the variables saved
        by ``add_meta_graph_and_variables``."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        signature_def_map = signature_def_map or {}
        _validate_signature_def_map(signature_def_map)
        self._add_collections(assets_collection, _either(main_op, legacy_init_op))
        self._add_meta_graph(saver or _new_saver(), tags, signature_def_map, clear_devices,
                             strip_default_attrs)

    def save(self, as_text: bool = False) -> bytes:
        """Writes ``saved_model.pb`` (``saved_model.pbtxt`` with ``as_text``) and returns its
        path, as bytes like TensorFlow's."""
        os.makedirs(self._export_dir, exist_ok=True)
        if as_text:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
            payload = text_format.MessageToString(self._saved_model).encode()
        else:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PB)
            payload = self._saved_model.SerializeToString(deterministic=True)
        try:
            tensor_bundle.atomic_write(path, payload)
        except OSError as e:
            raise tensor_bundle.as_os_error(e, f"Failed to write SavedModel {path}") from None
        _log.info("SavedModel written to: %s", path)
        return os.fsencode(path)

    # -- parts -------------------------------------------------------------------------------------
    def _add_collections(self, assets_collection, main_op) -> None:
        copies = _add_assets_to_collection(assets_collection)
        if copies:
            _copy_assets(copies, utils.get_assets_dir(self._export_dir))
        if main_op is not None:
            if not isinstance(main_op, Operation):
                raise TypeError(f"main_op needs to be an Operation: {main_op!r}")
            for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
                if get_collection(key):
                    raise ValueError("Graph already contains one or more main ops under the "
                                     f"collection {key}.")
            add_to_collection(constants.MAIN_OP_KEY, main_op)

    def _add_meta_graph(self, saver: Saver, tags, signature_def_map, clear_devices: bool,
                        strip_default_attrs: bool) -> None:
        meta_graph_def = saver.export_meta_graph(clear_devices=clear_devices,
                                                 strip_default_attrs=strip_default_attrs)
        meta_graph_def.meta_info_def.tags.extend(tags)
        for key, signature_def in signature_def_map.items():
            meta_graph_def.signature_def[key].CopyFrom(signature_def)
        self._saved_model.meta_graphs.add().CopyFrom(meta_graph_def)


def _either(main_op, legacy_init_op):
    """main_op, else legacy_init_op (its deprecated name); not ``or``, which a Tensor refuses."""
    return main_op if main_op is not None else legacy_init_op


def _new_saver() -> Saver:
    """The Saver of every saveable in the default graph, sharded as TensorFlow's builder makes
    it (so a cluster's variables save on their ps tasks), and allowed to be empty."""
    return Saver(sharded=True, write_version=saver_pb2.SaverDef.V2, allow_empty=True)


def _validate_signature_def_map(signature_def_map) -> None:
    for signature_def in signature_def_map.values():
        for info in list(signature_def.inputs.values()) + list(signature_def.outputs.values()):
            _validate_tensor_info(info)
    for reserved in (constants.INIT_OP_SIGNATURE_KEY, constants.TRAIN_OP_SIGNATURE_KEY):
        if reserved in signature_def_map:
            raise KeyError(f'SignatureDef map key "{reserved}" is reserved for initialization. '
                           "Please use a different key.")


def _validate_tensor_info(info: meta_graph_pb2.TensorInfo) -> None:
    if info.WhichOneof("encoding") is None:
        raise AssertionError("All TensorInfo protos used in the SignatureDefs must have one of "
                             "the 'encoding' fields (e.g., name or coo_sparse) set: "
                             f"{info}")
    if info.dtype == types_pb2.DT_INVALID:
        raise AssertionError("All TensorInfo protos used in the SignatureDefs must have the "
                             f"dtype field set: {info}")


# -- assets --------------------------------------------------------------------------------------
def _add_assets_to_collection(asset_tensors) -> Dict[str, str]:
    """Records each asset path Const in the default graph's ``saved_model_assets`` collection
    under its file name in ``assets/``; returns {file name in assets/: source path}. Files of
    one base name but different contents get ``name_1``, ``name_2``..., as in TensorFlow."""
    copies: Dict[str, str] = {}
    for tensor in asset_tensors or ():
        source = _asset_path(tensor)
        if not source:
            raise ValueError(f"Invalid asset filepath tensor {tensor}")
        filename = base = os.path.basename(source)
        if base in copies and copies[base] != source and not _same_file(source, copies[base]):
            i = 1
            while filename in copies:
                filename, i = f"{base}_{i}", i + 1
        asset = meta_graph_pb2.AssetFileDef(filename=filename)
        asset.tensor_info.name = tensor.name
        add_to_collection(constants.ASSETS_KEY, pack_asset_file_def(asset))
        copies[filename] = source
    return copies


def _asset_path(tensor) -> str:
    """The path a scalar string Const holds."""
    if not isinstance(tensor, Tensor):
        raise TypeError("Asset path tensor must be a Tensor.")
    if tensor.op.type != "Const":
        raise TypeError("Asset path tensor must be of type constant.")
    if tensor.dtype is not dtypes.string:
        raise TypeError("Asset path tensor must be of dtype string.")
    values = np.asarray(tensor.op.get_attr("value"), dtype=object).reshape(-1)
    if values.size != 1:
        raise TypeError("Asset path tensor must be a scalar.")
    return os.fsdecode(values[0])


def _same_file(a: str, b: str) -> bool:
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _copy_assets(copies: Dict[str, str], assets_dir: str) -> None:
    os.makedirs(assets_dir, exist_ok=True)
    for filename, source in copies.items():
        destination = os.path.join(assets_dir, filename)
        if not os.path.exists(source):
            # TensorFlow skips it silently; the loader will then feed a path that is missing.
            _log.warning("Asset file %s does not exist; it is not copied into the SavedModel",
                         source)
        elif source != destination and not os.path.exists(destination):
            shutil.copyfile(source, destination)
    _log.info("Assets written to: %s", assets_dir)

"""``tf.saved_model.loader`` (TF 1.15): loads a SavedModel's MetaGraph into a session.

``load(sess, tags, export_dir)`` picks the MetaGraph whose tags are exactly ``tags``, imports
it into ``sess.graph`` (``tf.train.import_meta_graph``: graph, collections, Saver), restores
the variables from ``variables/variables``, then runs the init op (the ``__saved_model_init_op``
signature, else the ``saved_model_main_op`` or ``legacy_init_op`` collection) with every asset
path Const fed the path of its file in ``assets/``. It reads SavedModels that TensorFlow wrote
as well as ours (TensorFlow's sharded Saver brings StringJoin/StaticRegexFullMatch ops:
``ops/string_ops.py``).
"""
from __future__ import annotations

import logging
import os
from typing import Dict, Optional

from google.protobuf import message as _message
from google.protobuf import text_format
from tensorboard.compat.proto import meta_graph_pb2

from ..framework.ops import GraphKeys, get_default_graph, prepend_name_scope
from ..ops import string_ops  # noqa: F401  (registers the ops TensorFlow's Savers build)
from ..train.saver import Saver, import_meta_graph
from . import constants, signature_def_utils, utils
from .proto import SavedModel, unpack_asset_file_def

__all__ = ["load", "maybe_saved_model_directory", "SavedModelLoader"]

_log = logging.getLogger("tfjupyter")


def parse_saved_model(export_dir) -> SavedModel:
    """The SavedModel proto of ``export_dir`` (saved_model.pb, else saved_model.pbtxt);
    OSError if there is none or it does not parse."""
    export_dir = os.fsdecode(export_dir)
    path_to_pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    path_to_pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    saved_model = SavedModel()
    if os.path.isfile(path_to_pb):
        try:
            with open(path_to_pb, "rb") as f:
                saved_model.ParseFromString(f.read())
        except _message.DecodeError as e:
            raise OSError(f"Cannot parse file {path_to_pb}: {e}.") from None
    elif os.path.isfile(path_to_pbtxt):
        try:
            with open(path_to_pbtxt, "rb") as f:
                text_format.Merge(f.read().decode("utf-8"), saved_model)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise OSError(f"Cannot parse file {path_to_pbtxt}: {e}.") from None
    else:
        raise OSError(f"SavedModel file does not exist at: {export_dir}/"
                      f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|"
                      f"{constants.SAVED_MODEL_FILENAME_PB}}}")
    return saved_model


def maybe_saved_model_directory(export_dir) -> bool:
    """Whether ``export_dir`` holds a saved_model.pb or saved_model.pbtxt."""
    export_dir = os.fsdecode(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, name))
               for name in (constants.SAVED_MODEL_FILENAME_PBTXT,
                            constants.SAVED_MODEL_FILENAME_PB))


def load(sess, tags, export_dir, import_scope: Optional[str] = None, **saver_kwargs):
    """Loads the MetaGraph of ``tags`` into ``sess`` with its variables restored and its init
    op run; returns its MetaGraphDef (whose ``signature_def`` names the tensors to feed and
    fetch). ``saver_kwargs`` go to ``tf.train.import_meta_graph`` (e.g. ``clear_devices``)."""
    return SavedModelLoader(export_dir).load(sess, tags, import_scope, **saver_kwargs)


class SavedModelLoader:
    """Loads the MetaGraphs of one SavedModel, step by step if need be (TF's class)."""

    def __init__(self, export_dir):
        self._export_dir = os.fsdecode(export_dir)
        self._variables_path = utils.get_variables_path(self._export_dir)
        self._saved_model = parse_saved_model(self._export_dir)

    export_dir = property(lambda self: self._export_dir)
    variables_path = property(lambda self: self._variables_path)
    saved_model = property(lambda self: self._saved_model)

    def get_meta_graph_def_from_tags(self, tags) -> meta_graph_pb2.MetaGraphDef:
        """The MetaGraphDef whose tag-set is ``set(tags)``; RuntimeError listing the
        tag-sets there are."""
        available_tags = []
        for meta_graph_def in self._saved_model.meta_graphs:
            tag_set = set(meta_graph_def.meta_info_def.tags)
            if tag_set == set(tags):
                return meta_graph_def
            available_tags.append(tag_set)
        raise RuntimeError(
            "MetaGraphDef associated with tags " + str(tags).strip("[]") + " could not be "
            "found in SavedModel. To inspect available tag-sets in the SavedModel, please use "
            "the SavedModel CLI: `saved_model_cli`\navailable_tags: " + str(available_tags))

    def load_graph(self, graph, tags, import_scope: Optional[str] = None, **saver_kwargs):
        """Imports the MetaGraph of ``tags`` into ``graph``; returns (its Saver or None, the
        MetaGraphDef)."""
        meta_graph_def = self.get_meta_graph_def_from_tags(tags)
        with graph.as_default():
            saver = import_meta_graph(meta_graph_def, import_scope=import_scope, **saver_kwargs)
        return saver, meta_graph_def

    def restore_variables(self, sess, saver: Optional[Saver],
                          import_scope: Optional[str] = None) -> None:
        with sess.graph.as_default():
            if saver is None and not _saveable_objects(sess.graph, import_scope):
                _log.info("The specified SavedModel has no variables; no checkpoints were "
                          "restored.")
            elif isinstance(saver, Saver):
                saver.restore(sess, self._variables_path)
            else:
                raise ValueError("No tf.train.Saver object was passed to the function "
                                 "SavedModelLoader.restore_variables. Since there are "
                                 "variables in the graph, a saver is required.")

    def run_init_ops(self, sess, tags, import_scope: Optional[str] = None) -> None:
        """Runs the init op of the MetaGraph of ``tags``, feeding each asset path Const the
        path of its file in ``assets/``."""
        meta_graph_def = self.get_meta_graph_def_from_tags(tags)
        with sess.graph.as_default():
            init_op = get_init_op(meta_graph_def, import_scope)
            if init_op is not None:
                sess.run([init_op], feed_dict=get_asset_tensors(
                    self._export_dir, meta_graph_def, import_scope))

    def load(self, sess, tags, import_scope: Optional[str] = None, **saver_kwargs):
        with sess.graph.as_default():
            saver, meta_graph_def = self.load_graph(sess.graph, tags, import_scope,
                                                    **saver_kwargs)
            self.restore_variables(sess, saver, import_scope)
            self.run_init_ops(sess, tags, import_scope)
        return meta_graph_def


def _saveable_objects(graph, scope: Optional[str]) -> list:
    return (graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)
            + graph.get_collection(GraphKeys.SAVEABLE_OBJECTS, scope))


def get_asset_tensors(export_dir, meta_graph_def: meta_graph_pb2.MetaGraphDef,
                      import_scope: Optional[str] = None) -> Dict[str, bytes]:
    """{asset path Const's tensor name: its file's path in ``assets/``}: the init op's feed."""
    if meta_graph_def.asset_file_def:
        assets = list(meta_graph_def.asset_file_def)
    else:
        assets = [unpack_asset_file_def(packed) for packed in
                  meta_graph_def.collection_def[constants.ASSETS_KEY].any_list.value] \
            if constants.ASSETS_KEY in meta_graph_def.collection_def else []
    assets_dir = utils.get_assets_dir(export_dir)
    return {prepend_name_scope(asset.tensor_info.name, import_scope):
            os.fsencode(os.path.join(assets_dir, asset.filename)) for asset in assets}


def get_init_op(meta_graph_def: meta_graph_pb2.MetaGraphDef,
                import_scope: Optional[str] = None):
    """The op to run after a load: the ``__saved_model_init_op`` signature's, else the one in
    the ``saved_model_main_op`` collection, else the ``legacy_init_op`` one; None if none."""
    key = constants.INIT_OP_SIGNATURE_KEY
    if key in meta_graph_def.signature_def:
        return signature_def_utils.load_op_from_signature_def(
            meta_graph_def.signature_def[key], key, import_scope)
    for collection_key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        op = _op_from_collection(meta_graph_def, collection_key, import_scope)
        if op is not None:
            return op
    return None


def get_train_op(meta_graph_def: meta_graph_pb2.MetaGraphDef,
                 import_scope: Optional[str] = None):
    """The train op an Estimator export recorded (signature, else collection), or None."""
    key = constants.TRAIN_OP_SIGNATURE_KEY
    if key in meta_graph_def.signature_def:
        return signature_def_utils.load_op_from_signature_def(
            meta_graph_def.signature_def[key], key, import_scope)
    return _op_from_collection(meta_graph_def, constants.TRAIN_OP_KEY, import_scope)


def _op_from_collection(meta_graph_def, key: str, import_scope: Optional[str]):
    """The one op a collection of the MetaGraphDef names, in the default graph. (TensorFlow
    takes the graph's collection's first item, which is another model's op when several
    are loaded into one graph; the name under ``import_scope`` is this model's.)"""
    if key not in meta_graph_def.collection_def:
        return None
    names = meta_graph_def.collection_def[key].node_list.value
    if len(names) != 1:
        raise RuntimeError(f"Expected exactly one SavedModel init op. Found: {list(names)}")
    return get_default_graph().as_graph_element(prepend_name_scope(names[0], import_scope))

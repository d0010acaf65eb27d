"""``tf.saved_model.simple_save`` (TF 1.15): the common case of SavedModelBuilder in one call."""
from __future__ import annotations

from ..framework.ops import GraphKeys, get_collection
from . import signature_constants, signature_def_utils, tag_constants
from .builder import SavedModelBuilder

__all__ = ["simple_save"]


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None) -> None:
    """Writes a SavedModel of the session's default graph for serving: tags ["serve"], one
    predict signature "serving_default" of ``inputs``/``outputs`` (dicts of tensors by key),
    the ASSET_FILEPATHS collection as assets, and no devices."""
    signature_def_map = {
        signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            signature_def_utils.predict_signature_def(inputs, outputs)}
    builder = SavedModelBuilder(export_dir)
    builder.add_meta_graph_and_variables(
        session, tags=[tag_constants.SERVING], signature_def_map=signature_def_map,
        assets_collection=get_collection(GraphKeys.ASSET_FILEPATHS),
        main_op=legacy_init_op, clear_devices=True)
    builder.save()

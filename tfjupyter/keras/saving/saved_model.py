"""``tf.keras.experimental.export_saved_model`` / ``load_from_saved_model`` (TF 1.15; also
``tf.contrib.saved_model.save_keras_model`` / ``load_keras_model``): a Keras model as a
SavedModel (``tfjupyter/saved_model``) for serving.

The model is cloned into a graph of its own with the learning phase fixed to 0 (inference),
its weights copied in, and written with the 'serve' tag and one predict signature,
'serving_default', whose inputs and outputs are keyed by the model's input and output names,
as TF 1.15 exports it. ``assets/saved_model.json`` holds the model's JSON config, from which
``load_from_saved_model`` makes the model again and restores its weights from the
SavedModel's variables checkpoint.

TF 1.15 also writes a 'train' and an 'eval' MetaGraph for a model compiled with a Keras
optimizer; tfjupyter writes the serving one only.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from ...client.session import Session
from ...framework.ops import Graph
from ...saved_model import constants, signature_constants, tag_constants
from ...saved_model.builder import SavedModelBuilder
from ...saved_model.signature_def_utils import predict_signature_def
from .. import backend
from .config import model_config, model_from_config

__all__ = ["export_saved_model", "load_from_saved_model", "model_to_json"]

SAVED_MODEL_FILENAME_JSON = "saved_model.json"


def model_to_json(model, **kwargs) -> str:
    """``model.to_json()``: the model's config with the Keras version and backend."""
    from .hdf5 import KERAS_VERSION
    entry = dict(model_config(model), keras_version=KERAS_VERSION, backend="tensorflow")
    return json.dumps(entry, **kwargs)


def export_saved_model(model, saved_model_path, custom_objects=None, as_text: bool = False,
                       input_signature=None, serving_only: bool = False) -> None:
    """Writes ``model`` as a SavedModel in ``saved_model_path`` (which must not exist or be
    empty): the serving graph and its weights, and the model's JSON in assets/."""
    from ..models import clone_model
    if input_signature is not None:
        raise NotImplementedError("export_saved_model(input_signature=...) is for subclassed "
                                  "models, which tfjupyter does not export.")
    saved_model_path = os.fspath(saved_model_path)
    model_json = model_to_json(model)
    values = model.get_weights()
    graph = Graph()
    # A session of its own, made the default: Keras's session stays the model's.
    with graph.as_default(), Session(graph=graph) as session, session.as_default():
        backend.set_learning_phase(0)
        clone = clone_model(model)
        clone.set_weights(values)
        signature = predict_signature_def(dict(zip(clone.input_names, clone.inputs)),
                                          dict(zip(clone.output_names, clone.outputs)))
        builder = SavedModelBuilder(saved_model_path)
        builder.add_meta_graph_and_variables(
            session, [tag_constants.SERVING],
            signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                               signature}, clear_devices=True)
        builder.save(as_text)
    assets = os.path.join(saved_model_path, constants.ASSETS_DIRECTORY)
    os.makedirs(assets, exist_ok=True)
    with open(os.path.join(assets, SAVED_MODEL_FILENAME_JSON), "w", encoding="utf-8") as f:
        f.write(model_json)


def load_from_saved_model(saved_model_path, custom_objects: Optional[Dict[str, Any]] = None):
    """The model ``export_saved_model`` wrote, made again in the default graph from its JSON
    config, with the SavedModel's weights (uncompiled, as in TF 1.15)."""
    saved_model_path = os.fspath(saved_model_path)
    json_path = os.path.join(saved_model_path, constants.ASSETS_DIRECTORY,
                             SAVED_MODEL_FILENAME_JSON)
    if not os.path.isfile(json_path):
        raise OSError(f"{saved_model_path} has no {constants.ASSETS_DIRECTORY}/"
                      f"{SAVED_MODEL_FILENAME_JSON}: it was not written by "
                      "export_saved_model.")
    with open(json_path, encoding="utf-8") as f:
        model = model_from_config(json.load(f), custom_objects)
    model.load_weights(os.path.join(saved_model_path, constants.VARIABLES_DIRECTORY,
                                    constants.VARIABLES_FILENAME))
    return model

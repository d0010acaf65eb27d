"""``tf.contrib.saved_model`` (TF 1.12-1.15): ``save_keras_model`` / ``load_keras_model``,
the names ``tf.keras.experimental.export_saved_model`` / ``load_from_saved_model`` had before.
``save_keras_model`` returns the export directory, as TF's does."""
import os

from ..keras.saving.saved_model import export_saved_model, load_from_saved_model

__all__ = ["save_keras_model", "load_keras_model"]


def save_keras_model(model, saved_model_path, custom_objects=None, as_text=None,
                     input_signature=None, serving_only=False):
    export_saved_model(model, saved_model_path, custom_objects=custom_objects,
                       as_text=bool(as_text), input_signature=input_signature,
                       serving_only=serving_only)
    return os.fsencode(os.fspath(saved_model_path))


def load_keras_model(saved_model_path, custom_objects=None):
    return load_from_saved_model(saved_model_path, custom_objects=custom_objects)

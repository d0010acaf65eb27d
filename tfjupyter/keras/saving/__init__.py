"""Saving Keras models: Keras's HDF5 files (``hdf5.py``: ``model.save('m.h5')``,
``load_model``, HDF5 weights; h5py is optional), the configs they hold (``config.py``: layers
and models as Keras's ``get_config`` dicts, and models made from them;
``training_config.py``: the compile arguments), and TensorFlow's SavedModel
(``saved_model.py``: ``tf.keras.experimental.export_saved_model``)."""
from .config import model_config, model_from_config  # noqa: F401
from .hdf5 import load_model, save_model  # noqa: F401
from .saved_model import export_saved_model, load_from_saved_model  # noqa: F401

__all__ = ["model_config", "model_from_config", "load_model", "save_model",
           "export_saved_model", "load_from_saved_model"]

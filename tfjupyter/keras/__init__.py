"""``tf.keras`` in graph mode, as TensorFlow 1.15 has it.

layers.py (the layers; those tf.layers has are reused from ``tfjupyter/layers``),
engine/ (the layer base, networks, Sequential, training: compile/fit/evaluate/predict),
backend.py (the Keras session, learning phase, names), optimizers.py, losses.py, metrics.py,
callbacks.py, initializers.py, activations.py, utils.py (to_categorical, Progbar),
models.py (clone_model; save_model/load_model: saving/ holds Keras's HDF5 files, the
configs, and the SavedModel export of experimental.py), estimator.py (model_to_estimator, in
tfjupyter/estimator/keras.py),
datasets/ (local files only: nothing is downloaded), preprocessing/ (pad_sequences).
"""
from . import (activations, backend, callbacks, datasets, initializers, layers,  # noqa: F401
               losses, metrics, models, optimizers, preprocessing, utils)
from . import estimator  # noqa: F401,E402  (after models: it builds on clone_model)
from . import experimental  # noqa: F401,E402  (export_saved_model)
from .engine.sequential import Sequential  # noqa: F401
from .engine.training import Model  # noqa: F401
from .layers import Input  # noqa: F401

__all__ = ["activations", "backend", "callbacks", "datasets", "initializers", "layers", "losses",
           "metrics", "models", "optimizers", "preprocessing", "utils", "estimator", "experimental", "Sequential",
           "Model", "Input"]

"""``tf.saved_model`` as TF 1.15 has it (``tf.compat.v1.saved_model``): SavedModels in
TensorFlow's format, which TensorFlow loads and which we load from TensorFlow.

- ``builder.SavedModelBuilder`` (``Builder``): writes ``saved_model.pb`` + ``variables/`` +
  ``assets/``; ``simple_save`` is its common case.
- ``loader.load`` (``load``): imports a MetaGraph into a session, restores its variables, runs
  its main op.
- ``signature_def_utils``, ``utils``: SignatureDefs and TensorInfos; ``tag_constants``,
  ``signature_constants``, ``constants``: TensorFlow's names; ``main_op``: the usual init op.

The SavedModel proto is ``proto.SavedModel``; the MetaGraphs in it are
``framework/meta_graph.py``'s, the variables ``train/saver.py``'s checkpoints.
"""
from . import (builder, constants, loader, main_op, signature_constants,  # noqa: F401
               signature_def_utils, tag_constants, utils)
from .builder import SavedModelBuilder as Builder
from .constants import *  # noqa: F401,F403
from .loader import load, maybe_saved_model_directory
from .main_op import main_op_with_restore
from .signature_constants import *  # noqa: F401,F403
from .signature_def_utils import (build_signature_def, classification_signature_def,
                                  is_valid_signature, predict_signature_def,
                                  regression_signature_def)
from .simple_save import simple_save
from .tag_constants import *  # noqa: F401,F403
from .utils import build_tensor_info, get_tensor_from_tensor_info

contains_saved_model = maybe_saved_model_directory   # TF 1.15's later name

__all__ = (["builder", "constants", "loader", "main_op", "signature_constants",
            "signature_def_utils", "tag_constants", "utils", "Builder", "load",
            "maybe_saved_model_directory", "contains_saved_model", "main_op_with_restore",
            "build_signature_def", "classification_signature_def", "is_valid_signature",
            "predict_signature_def", "regression_signature_def", "simple_save",
            "build_tensor_info", "get_tensor_from_tensor_info"]
           + constants.__all__ + signature_constants.__all__ + tag_constants.__all__)

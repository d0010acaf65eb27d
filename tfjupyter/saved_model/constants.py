"""A SavedModel's file names and collection keys (TensorFlow's ``saved_model/constants.py``)."""

__all__ = ["ASSETS_DIRECTORY", "EXTRA_ASSETS_DIRECTORY", "ASSETS_KEY", "DEBUG_DIRECTORY",
           "DEBUG_INFO_FILENAME_PB", "INIT_OP_SIGNATURE_KEY", "LEGACY_INIT_OP_KEY",
           "MAIN_OP_KEY", "TRAIN_OP_KEY", "TRAIN_OP_SIGNATURE_KEY", "SAVED_MODEL_SCHEMA_VERSION",
           "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "VARIABLES_DIRECTORY",
           "VARIABLES_FILENAME"]

ASSETS_DIRECTORY = "assets"
EXTRA_ASSETS_DIRECTORY = "assets.extra"
ASSETS_KEY = "saved_model_assets"           # collection of Any(AssetFileDef)
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
MAIN_OP_KEY = "saved_model_main_op"
TRAIN_OP_KEY = "saved_model_train_op"
TRAIN_OP_SIGNATURE_KEY = "__saved_model_train_op"
SAVED_MODEL_SCHEMA_VERSION = 1
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"

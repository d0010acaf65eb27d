"""SignatureDefs: the named inputs and outputs of a MetaGraph, and the method (predict,
classify, regress) that serves them (``tf.saved_model.signature_def_utils``, TF 1.15)."""
from __future__ import annotations

from typing import Dict, Optional

from tensorboard.compat.proto import meta_graph_pb2, types_pb2

from ..framework import errors
from ..framework.ops import Tensor
from . import signature_constants as sc
from . import utils

__all__ = ["build_signature_def", "predict_signature_def", "classification_signature_def",
           "regression_signature_def", "is_valid_signature"]

SignatureDef = meta_graph_pb2.SignatureDef


def build_signature_def(inputs: Optional[Dict[str, meta_graph_pb2.TensorInfo]] = None,
                        outputs: Optional[Dict[str, meta_graph_pb2.TensorInfo]] = None,
                        method_name: Optional[str] = None) -> SignatureDef:
    """A SignatureDef of TensorInfos by key and a method name."""
    signature_def = SignatureDef()
    for key, info in (inputs or {}).items():
        signature_def.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        signature_def.outputs[key].CopyFrom(info)
    if method_name is not None:
        signature_def.method_name = method_name
    return signature_def


def regression_signature_def(examples, predictions) -> SignatureDef:
    """TensorFlow Serving's Regress API: serialized tf.Examples (a string Tensor) in, float
    predictions out."""
    if examples is None:
        raise ValueError("Regression examples cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError("Regression examples must be a string Tensor.")
    if predictions is None:
        raise ValueError("Regression predictions cannot be None.")
    examples_info = utils.build_tensor_info(examples)
    if examples_info.dtype != types_pb2.DT_STRING:
        raise ValueError("Regression examples must be a string Tensor.")
    predictions_info = utils.build_tensor_info(predictions)
    if predictions_info.dtype != types_pb2.DT_FLOAT:
        raise ValueError("Regression output must be a float Tensor.")
    return build_signature_def({sc.REGRESS_INPUTS: examples_info},
                               {sc.REGRESS_OUTPUTS: predictions_info}, sc.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores) -> SignatureDef:
    """TensorFlow Serving's Classify API: serialized tf.Examples in; string classes and/or
    float scores out."""
    if examples is None:
        raise ValueError("Classification examples cannot be None.")
    if not isinstance(examples, Tensor):
        raise ValueError("Classification examples must be a string Tensor.")
    if classes is None and scores is None:
        raise ValueError("Classification classes and scores cannot both be None.")
    examples_info = utils.build_tensor_info(examples)
    if examples_info.dtype != types_pb2.DT_STRING:
        raise ValueError("Classification examples must be a string Tensor.")
    outputs = {}
    if classes is not None:
        classes_info = utils.build_tensor_info(classes)
        if classes_info.dtype != types_pb2.DT_STRING:
            raise ValueError("Classification classes must be a string Tensor.")
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = classes_info
    if scores is not None:
        scores_info = utils.build_tensor_info(scores)
        if scores_info.dtype != types_pb2.DT_FLOAT:
            raise ValueError("Classification scores must be a float Tensor.")
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = scores_info
    return build_signature_def({sc.CLASSIFY_INPUTS: examples_info}, outputs,
                               sc.CLASSIFY_METHOD_NAME)


def predict_signature_def(inputs: Dict[str, Tensor], outputs: Dict[str, Tensor]) -> SignatureDef:
    """TensorFlow Serving's Predict API: any named tensors in and out."""
    if not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def({k: utils.build_tensor_info(t) for k, t in inputs.items()},
                               {k: utils.build_tensor_info(t) for k, t in outputs.items()},
                               sc.PREDICT_METHOD_NAME)


def is_valid_signature(signature_def: Optional[SignatureDef]) -> bool:
    """Whether a SignatureDef is one TensorFlow Serving accepts: a predict signature with
    inputs and outputs, or a classify/regress one with the keys and dtypes its API needs."""
    if signature_def is None:
        return False
    return (_is_valid_classification_signature(signature_def)
            or _is_valid_regression_signature(signature_def)
            or _is_valid_predict_signature(signature_def))


def _is_valid_predict_signature(signature_def: SignatureDef) -> bool:
    return (signature_def.method_name == sc.PREDICT_METHOD_NAME
            and bool(signature_def.inputs) and bool(signature_def.outputs))


def _is_valid_regression_signature(signature_def: SignatureDef) -> bool:
    return (signature_def.method_name == sc.REGRESS_METHOD_NAME
            and set(signature_def.inputs) == {sc.REGRESS_INPUTS}
            and signature_def.inputs[sc.REGRESS_INPUTS].dtype == types_pb2.DT_STRING
            and set(signature_def.outputs) == {sc.REGRESS_OUTPUTS}
            and signature_def.outputs[sc.REGRESS_OUTPUTS].dtype == types_pb2.DT_FLOAT)


def _is_valid_classification_signature(signature_def: SignatureDef) -> bool:
    if (signature_def.method_name != sc.CLASSIFY_METHOD_NAME
            or set(signature_def.inputs) != {sc.CLASSIFY_INPUTS}
            or signature_def.inputs[sc.CLASSIFY_INPUTS].dtype != types_pb2.DT_STRING):
        return False
    outputs = signature_def.outputs
    expected_dtypes = {sc.CLASSIFY_OUTPUT_CLASSES: types_pb2.DT_STRING,
                       sc.CLASSIFY_OUTPUT_SCORES: types_pb2.DT_FLOAT}
    return (bool(outputs) and set(outputs) <= set(expected_dtypes)
            and all(outputs[key].dtype == dtype for key, dtype in expected_dtypes.items()
                    if key in outputs))


def op_signature_def(op, key: str) -> SignatureDef:
    """A SignatureDef holding one op (an init or train op) as its output ``key``."""
    return build_signature_def(outputs={key: utils.build_tensor_info_from_op(op)})


def load_op_from_signature_def(signature_def: SignatureDef, key: str,
                               import_scope: Optional[str] = None):
    """The op that ``op_signature_def`` stored under ``key``, in the default graph."""
    tensor_info = signature_def.outputs[key]
    try:
        return utils.get_element_from_tensor_info(tensor_info, import_scope=import_scope)
    except KeyError:
        raise errors.NotFoundError(
            None, None, f"The {key} could not be found in the graph. Please make sure the "
            "SavedModel was created by the internal _SavedModelBuilder. If you are using the "
            f"public API, please make sure the SignatureDef in the SavedModel does not contain "
            f"the key \"{key}\".") from None

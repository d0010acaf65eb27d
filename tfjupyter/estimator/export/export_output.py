"""``tf.estimator.export.ExportOutput``s: what a model serves, one SignatureDef each
(``PredictOutput``, ``ClassificationOutput``, ``RegressionOutput``), as TF 1.15's
``export_output.py``, with its checks and messages."""
from __future__ import annotations

from ...framework import dtypes
from ...framework.ops import Tensor
from ...saved_model import signature_def_utils
from ...saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY

__all__ = ["ExportOutput", "PredictOutput", "ClassificationOutput", "RegressionOutput"]

_SINGLE_INPUT_ERROR = (
    "{} signatures can only accept a single tensor input of type tf.string. Please check to "
    "make sure that you have structured the serving_input_receiver_fn so that it creates a "
    "single string placeholder. If your model function expects multiple inputs, then use "
    "`tf.io.parse_example()` to parse the string into multiple tensors.\n Received: {}")


class ExportOutput:
    """One output signature of a served model."""
    _SEPARATOR_CHAR = "/"

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError

    def _wrap_and_check_outputs(self, outputs, single_output_default_name, error_label=None):
        if not isinstance(outputs, dict):
            outputs = {single_output_default_name: outputs}
        error_name = error_label or single_output_default_name
        checked = {}
        for key, value in outputs.items():
            if isinstance(key, tuple):
                key = self._SEPARATOR_CHAR.join(key)
            if not isinstance(key, str):
                raise ValueError(f"{error_name} output key must be a string; got {key}.")
            if not isinstance(value, Tensor):
                raise ValueError(f"{error_name} output value must be a Tensor; got {value}.")
            checked[key] = value
        return checked


def _single_string_input(receiver_tensors, kind: str) -> Tensor:
    if len(receiver_tensors) != 1:
        raise ValueError(_SINGLE_INPUT_ERROR.format(kind, receiver_tensors))
    (examples,) = receiver_tensors.values()
    if examples.dtype != dtypes.string:
        raise ValueError(_SINGLE_INPUT_ERROR.format(kind, receiver_tensors))
    return examples


class ClassificationOutput(ExportOutput):
    """Classes (a string Tensor) and/or scores (a float Tensor) of a classifier."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, Tensor) and scores.dtype.is_floating):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (isinstance(classes, Tensor)
                                        and classes.dtype == dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("Cannot create a ClassificationOutput with empty arguments. At "
                             "least one of `scores` and `classes` must be defined.")
        self._scores, self._classes = scores, classes

    scores = property(lambda self: self._scores)
    classes = property(lambda self: self._classes)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Classification")
        return signature_def_utils.classification_signature_def(examples, self._classes,
                                                                self._scores)


class RegressionOutput(ExportOutput):
    """The float value a regressor predicts."""

    def __init__(self, value):
        if not (isinstance(value, Tensor) and value.dtype.is_floating):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self._value = value

    value = property(lambda self: self._value)

    def as_signature_def(self, receiver_tensors):
        examples = _single_string_input(receiver_tensors, "Regression")
        return signature_def_utils.regression_signature_def(examples, self._value)


class PredictOutput(ExportOutput):
    """Any tensors, by name (a single tensor is named ``output``)."""

    def __init__(self, outputs):
        self._outputs = self._wrap_and_check_outputs(outputs, "output", error_label="Prediction")

    outputs = property(lambda self: self._outputs)

    def as_signature_def(self, receiver_tensors):
        return signature_def_utils.predict_signature_def(receiver_tensors, self._outputs)


def default_export_outputs(export_outputs, predictions) -> dict:
    """``export_outputs`` checked, defaulting to a PredictOutput of ``predictions``; a single
    output is also the default serving signature, as in TF."""
    if export_outputs is None:
        export_outputs = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"`export_outputs` must be dict, received: {export_outputs}.")
    for value in export_outputs.values():
        if not isinstance(value, ExportOutput):
            raise TypeError("Values in `export_outputs` must be ExportOutput objects, "
                            f"received: {export_outputs}.")
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        (value,) = export_outputs.values()
        export_outputs.setdefault(DEFAULT_SERVING_SIGNATURE_DEF_KEY, value)
    elif DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs:
        raise ValueError("Multiple `export_outputs` were provided, but none of them are "
                         "specified as the default. Use"
                         "`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to specify a "
                         "default.")
    return export_outputs

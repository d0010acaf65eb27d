"""How ``compile`` and ``fit`` spread their arguments over a model's outputs (TF 1.15's
``training_utils``): one loss / loss weight / metric list per output from a single value, a
list or a dict keyed by output name; the data of several inputs or outputs from an array, a
list or a dict; and each output's sample weights from ``sample_weight`` and ``class_weight``.
The error messages are TF 1.15's.
"""
from __future__ import annotations

import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

__all__ = ["per_output_losses", "per_output_loss_weights", "per_output_metrics",
           "per_name_arrays", "per_output_weights", "weights_of_samples", "metric_name"]


def _check_keys(argument: str, given: Dict, expected: Sequence[str]) -> None:
    unknown = set(given).difference(expected)
    if unknown:
        raise ValueError(f"Unknown entries in {argument} dictionary: {list(unknown)}. Only "
                         f"expected following keys: {list(expected)}")


def per_output_losses(loss, output_names: List[str]) -> List:
    """One loss identifier per output (None: the output is not trained, and fit takes no
    targets for it)."""
    if isinstance(loss, dict):
        _check_keys("loss", loss, output_names)
        for name in output_names:
            if name not in loss:
                warnings.warn(f"Output {name} missing from loss dictionary. We assume this was "
                              "done on purpose. The fit and evaluate APIs will not be expecting "
                              f"any data to be passed to {name}.")
        return [loss.get(name) for name in output_names]
    if isinstance(loss, (list, tuple)):
        if len(loss) != len(output_names):
            raise ValueError("When passing a list as loss, it should have one entry per model "
                             f"outputs. The model has {len(output_names)} outputs, but you "
                             f"passed loss={list(loss)}")
        return list(loss)
    return [loss for _ in output_names]


def per_output_loss_weights(loss_weights, output_names: List[str]) -> List[float]:
    if loss_weights is None:
        return [1.0 for _ in output_names]
    if isinstance(loss_weights, dict):
        _check_keys("loss_weights", loss_weights, output_names)
        return [loss_weights.get(name, 1.0) for name in output_names]
    if isinstance(loss_weights, list):
        if len(loss_weights) != len(output_names):
            raise ValueError("When passing a list as loss_weights, it should have one entry per "
                             f"model output. The model has {len(output_names)} outputs, but you "
                             f"passed loss_weights={loss_weights}")
        return list(loss_weights)
    raise TypeError(f"Could not interpret loss_weights argument: {loss_weights} - expected a "
                    "list of dicts.")


def per_output_metrics(metrics, output_names: List[str]) -> List[List]:
    """Each output's metric identifiers: a flat list applies to every output, a list of
    lists or a dict by output name gives each its own."""
    if not metrics:
        return [[] for _ in output_names]
    if isinstance(metrics, dict):
        _check_keys("metrics", metrics, output_names)
        return [_as_list(metrics.get(name, [])) for name in output_names]
    if isinstance(metrics, (list, tuple)):
        if any(isinstance(m, (list, tuple)) for m in metrics):
            if len(metrics) != len(output_names):
                raise ValueError("When passing a list of lists as `metrics`, it should have one "
                                 f"entry per model output. The model has {len(output_names)} "
                                 f"outputs, but you passed metrics={list(metrics)}")
            return [_as_list(m) for m in metrics]
        return [list(metrics) for _ in output_names]
    raise TypeError("Type of `metrics` argument not understood. Expected a list or dictionary, "
                    f"found: {metrics}")


def _as_list(value) -> List:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def metric_name(short_name: str, output_name: str, several_outputs: bool,
                taken: List[str]) -> str:
    """TF 1.15's display name: '<output>_<metric>' when the model has several outputs, with
    '_1', '_2', ... added until it is not ``taken``."""
    name = f"{output_name}_{short_name}" if several_outputs else short_name
    base, j = name, 1
    while name in taken:
        name, j = f"{base}_{j}", j + 1
    return name


def per_name_arrays(data, names: List[str], kind: str) -> List[np.ndarray]:
    """The arrays of ``data`` (an array, a list, or a dict keyed by ``names``) in the order of
    ``names``; ``kind`` ('input' or 'target') names them in errors."""
    if isinstance(data, dict):
        try:
            arrays = [data[name] for name in names]
        except KeyError as e:
            raise ValueError(f'No data provided for "{e.args[0]}". Need data for each key in: '
                             f"{names}") from None
    elif isinstance(data, (list, tuple)):
        if len(names) == 1 and data and not hasattr(data[0], "shape") and \
                not isinstance(data[0], (list, tuple)):
            arrays = [data]        # a list of numbers is one array
        else:
            arrays = list(data)
    else:
        arrays = [data]
    arrays = [np.asarray(a) for a in arrays]
    if len(arrays) != len(names):
        raise ValueError(f"Error when checking model {kind}: the list of Numpy arrays that you "
                         "are passing to your model is not the size the model expected. "
                         f"Expected to see {len(names)} array(s), for inputs {names} but "
                         f"instead got the following list of {len(arrays)} arrays: "
                         f"{str(arrays)[:200]}...")
    return arrays


def per_output_weights(weights, output_names: List[str], argument: str) -> List:
    """``sample_weight`` or ``class_weight`` for each output (None where not given)."""
    if weights is None or (isinstance(weights, (list, tuple)) and not weights):
        return [None for _ in output_names]
    if len(output_names) == 1:
        if isinstance(weights, (list, tuple)) and len(weights) == 1:
            return list(weights)
        if isinstance(weights, dict) and output_names[0] in weights:
            return [weights[output_names[0]]]
        return [weights]
    if isinstance(weights, (list, tuple)):
        if len(weights) != len(output_names):
            raise ValueError(f"Provided `{argument}` was a list of {len(weights)} elements, but "
                             f"the model has {len(output_names)} outputs. You should provide "
                             f"one `{argument}`array per model output.")
        return list(weights)
    if isinstance(weights, dict):
        _check_keys(argument, weights, output_names)
        return [weights.get(name) for name in output_names]
    raise TypeError(f"The model has multiple outputs, so `{argument}` should be either a list "
                    f"or a dict. Provided `{argument}` type not understood: {weights}")


def weights_of_samples(y: np.ndarray, sample_weight, class_weight) -> Optional[np.ndarray]:
    """One weight per sample of targets ``y``: ``sample_weight`` times the weight of each
    sample's class (its one-hot argmax, or its index) in ``class_weight``."""
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        if sample_weight.ndim != 1:
            raise ValueError(f"Found a sample_weight array with shape {sample_weight.shape}. In "
                             "order to use timestep-wise sample weights, you should specify "
                             'sample_weight_mode="temporal" in compile(); found "None" instead. '
                             "If you just mean to use sample-wise weights, make sure your "
                             "sample_weight array is 1D.")
        if y.shape[:1] != sample_weight.shape:
            raise ValueError(f"Found a sample_weight array with shape {sample_weight.shape} for "
                             f"an input with shape {y.shape}. sample_weight cannot be "
                             "broadcast.")
    if not isinstance(class_weight, dict):
        return sample_weight
    if y.ndim > 2:
        raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
    classes = y
    if y.ndim == 2:
        classes = np.argmax(y, axis=1) if y.shape[1] > 1 else y.reshape(y.shape[0])
    class_weights = np.asarray([class_weight[c] for c in classes.tolist() if c in class_weight])
    if len(class_weights) != len(classes):
        missing = set(classes.tolist()) - set(class_weight)
        raise ValueError("`class_weight` must contain all classes in the data. The classes "
                         f"{missing} exist in the data but not in `class_weight`.")
    return class_weights if sample_weight is None else class_weights * sample_weight

"""``tf.contrib.metrics``: the helpers that gather ``tf.metrics`` pairs
(``aggregate_metric_map``, ``aggregate_metrics``) and the common ``streaming_*`` names, which
are ``tf.metrics``' with ``predictions`` first (the contrib argument order)."""
from __future__ import annotations

from typing import Dict, List, Tuple

from .. import metrics as _metrics

__all__ = ["aggregate_metric_map", "aggregate_metrics", "streaming_accuracy", "streaming_auc",
           "streaming_mean", "streaming_mean_absolute_error", "streaming_mean_iou",
           "streaming_mean_squared_error", "streaming_precision", "streaming_recall",
           "streaming_root_mean_squared_error"]


def aggregate_metric_map(names_to_tuples: Dict[str, tuple]) -> Tuple[Dict, Dict]:
    """``{name: (value, update_op)}`` -> ``({name: value}, {name: update_op})``."""
    if not isinstance(names_to_tuples, dict):
        raise TypeError("names_to_tuples must be a dict of metric name -> (value, update_op), "
                        f"got {type(names_to_tuples).__name__}")
    values = {name: pair[0] for name, pair in names_to_tuples.items()}
    updates = {name: pair[1] for name, pair in names_to_tuples.items()}
    return values, updates


def aggregate_metrics(*value_update_tuples) -> Tuple[List, List]:
    """``(value, update_op)`` pairs -> ``([values], [update_ops])``."""
    if not value_update_tuples:
        raise ValueError("Expected at least one value_tensor/update_op pair")
    values, updates = zip(*value_update_tuples)
    return list(values), list(updates)


def _predictions_first(metric):
    def streaming(predictions, labels, *args, **kwargs):
        return metric(labels, predictions, *args, **kwargs)
    streaming.__name__ = f"streaming_{metric.__name__}"
    streaming.__doc__ = f"``tf.metrics.{metric.__name__}(labels, predictions, ...)``."
    return streaming


streaming_accuracy = _predictions_first(_metrics.accuracy)
streaming_auc = _predictions_first(_metrics.auc)
streaming_mean_absolute_error = _predictions_first(_metrics.mean_absolute_error)
streaming_mean_iou = _predictions_first(_metrics.mean_iou)
streaming_mean_squared_error = _predictions_first(_metrics.mean_squared_error)
streaming_precision = _predictions_first(_metrics.precision)
streaming_recall = _predictions_first(_metrics.recall)
streaming_root_mean_squared_error = _predictions_first(_metrics.root_mean_squared_error)
streaming_mean = _metrics.mean

"""``tf.estimator.Exporter``s: what ``train_and_evaluate`` exports after an evaluation, into
``model_dir/export/<name>/<timestamp>`` (TF 1.15's ``exporter.py``). ``LatestExporter``
exports after every evaluation and keeps the newest ``exports_to_keep``; ``FinalExporter``
exports once, after the evaluation of the last checkpoint."""
from __future__ import annotations

import logging
import os
import shutil

__all__ = ["Exporter", "LatestExporter", "FinalExporter"]

_log = logging.getLogger("tfjupyter")


class Exporter:
    """Exports a model after an evaluation; ``name`` names its folder under ``export/``."""

    @property
    def name(self):
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self):
        return self._name

    def _export(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            assets_extra=self._assets_extra,
                                            as_text=self._as_text,
                                            checkpoint_path=checkpoint_path)


class FinalExporter(_SavedModelExporter):
    """Exports the model of the last checkpoint only."""

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        _log.info("Performing the final export in the end of training.")
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation, keeping the newest ``exports_to_keep`` (all if None)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        path = self._export(estimator, export_path, checkpoint_path)
        self._garbage_collect_exports(export_path)
        return path

    def _garbage_collect_exports(self, export_dir_base) -> None:
        if self._exports_to_keep is None:
            return
        versions = sorted(int(name) for name in os.listdir(export_dir_base) if name.isdigit())
        for version in versions[:-self._exports_to_keep]:
            path = os.path.join(export_dir_base, str(version))
            _log.info("Removing old export %s", path)
            shutil.rmtree(path, ignore_errors=True)


def validate_exporters(exporters) -> tuple:
    """The exporters as a tuple, checked as TF checks them."""
    if exporters is None:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    try:
        exporters = tuple(exporters)
    except TypeError:
        exporters = (exporters,)
    if not all(isinstance(e, Exporter) for e in exporters):
        raise TypeError("`exporters` must be an Exporter, an iterable of Exporter, or `None`, "
                        f"found {exporters}.")
    names = [e.name for e in exporters]
    for name in names:
        if not name:
            raise ValueError("An Exporter cannot have a name that is `None` or empty. All "
                             f"exporter names: {names}")
        if not isinstance(name, str):
            raise ValueError(f"An Exporter must have a string name. Given: {type(name)}")
    if len(set(names)) != len(names):
        raise ValueError("`exporters` must have unique names. Such a name cannot be `None`. "
                         f"All exporter names: {names}")
    return exporters

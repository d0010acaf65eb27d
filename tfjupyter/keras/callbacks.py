"""``tf.keras.callbacks``: what ``fit`` calls at the start and end of training, epochs and
batches (TF 1.15's API): History (always), ProgbarLogger (verbose), EarlyStopping,
ModelCheckpoint, TensorBoard, LambdaCallback, and LearningRateScheduler and ReduceLROnPlateau,
which change the optimizer's learning-rate variable (``optimizer.lr``) between epochs and
add it to the epoch's logs as 'lr' (History, called after them, records it).

``fit`` gives every callback ``params`` ({'batch_size', 'epochs', 'steps', 'samples',
'verbose', 'do_validation', 'metrics'}) and ``model``; logs are dicts of floats: a batch's
('batch', 'size', 'loss', 'acc', ...) and an epoch's averages ('loss', 'acc', 'val_loss',
'val_acc').
"""
from __future__ import annotations

import os
import warnings
from typing import Dict, List

import numpy as np

from . import backend
from .utils import Progbar

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "TensorBoard", "LambdaCallback", "LearningRateScheduler",
           "ReduceLROnPlateau"]


class Callback:
    def __init__(self):
        self.model = None
        self.params: Dict = {}
        self.validation_data = None

    def set_params(self, params: Dict) -> None:
        self.params = params

    def set_model(self, model) -> None:
        self.model = model

    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass
    def on_batch_end(self, batch, logs=None): pass
    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


class CallbackList:
    """Calls a hook on every callback, in order."""

    def __init__(self, callbacks: List[Callback], model, params: Dict):
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            callback.set_model(model)
            callback.set_params(params)

    def __getattr__(self, hook: str):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call_all(*args, **kwargs):
            for callback in self.callbacks:
                getattr(callback, hook)(*args, **kwargs)
        return call_all


class History(Callback):
    """``history.history``: each epoch's logs, by name; ``history.epoch``: the epochs run."""

    def on_train_begin(self, logs=None):
        self.epoch: List[int] = []
        self.history: Dict[str, List[float]] = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)


class ProgbarLogger(Callback):
    """Prints 'Epoch 1/5' and a progress bar per epoch (counted in samples, or in steps when
    the input is a dataset)."""

    def __init__(self, count_mode: str = "samples", stateful_metrics=None):
        super().__init__()
        self.count_mode = count_mode
        self.stateful_metrics = set(stateful_metrics or ())

    def on_epoch_begin(self, epoch, logs=None):
        self.verbose = self.params["verbose"]
        self.epochs = self.params["epochs"]
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.epochs}")
        counted_in_steps = self.count_mode == "steps" or self.params.get("samples") is None
        self.target = self.params["steps"] if counted_in_steps else self.params["samples"]
        self.progbar = Progbar(self.target, verbose=self.verbose,
                               stateful_metrics=self.stateful_metrics,
                               unit_name="step" if counted_in_steps else "sample")
        self.seen = 0
        self.step_units = counted_in_steps

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        self.seen += 1 if self.step_units else logs.get("size", 0)
        values = [(k, logs[k]) for k in self.params["metrics"] if k in logs]
        if self.target is None or self.seen < self.target:
            self.progbar.update(self.seen, values)
        else:
            self._last_values = values

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        values = [(k, logs[k]) for k in self.params["metrics"] if k in logs]
        if self.target is None:
            self.progbar.target = self.target = self.seen
        # The last batch's values are averaged in here, with the validation logs.
        last = dict(getattr(self, "_last_values", ()))
        self._last_values = ()
        self.progbar.update(self.seen, [(k, last.get(k, v)) if not k.startswith("val_") else
                                        (k, v) for k, v in values])


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs; ``restore_best_weights`` puts back the best epoch's weights."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"EarlyStopping mode {mode} is unknown, fallback to auto mode.")
            mode = "auto"
        if mode == "max" or (mode == "auto" and "acc" in monitor):
            self.monitor_op, self.min_delta = np.greater, abs(min_delta)
        else:
            self.monitor_op, self.min_delta = np.less, -abs(min_delta)
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs or {})}")
            return
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the model after every ``period`` epochs to ``filepath`` formatted with the epoch
    (from 1) and the logs ('weights.{epoch:02d}-{val_loss:.2f}'), or only when ``monitor``
    improves (``save_best_only``). As TF 1.15: the whole model (``model.save``: Keras's HDF5
    file, whatever the extension; needs h5py), or with ``save_weights_only`` its weights
    (``model.save_weights``: HDF5 for an .h5 / .hdf5 / .keras path, else TensorFlow
    checkpoint files)."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", period=1):
        super().__init__()
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        if save_freq != "epoch":
            raise NotImplementedError("ModelCheckpoint(save_freq=<batches>) is not supported "
                                      "by tfjupyter; checkpoints are written per epoch.")
        self.period = period
        self.epochs_since_last_save = 0
        if mode == "max" or (mode == "auto" and ("acc" in monitor or
                                                  monitor.startswith("fmeasure"))):
            self.monitor_op, self.best = np.greater, -np.inf
        else:
            self.monitor_op, self.best = np.less, np.inf

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.epochs_since_last_save += 1
        if self.epochs_since_last_save < self.period:
            return
        self.epochs_since_last_save = 0
        filepath = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, "
                              "skipping.")
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:.5f} "
                      f"to {current:.5f}, saving model to {filepath}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: saving model to {filepath}")
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)


class TensorBoard(Callback):
    """Writes the graph (``write_graph``) and each epoch's logs as scalar summaries to
    ``log_dir`` (TensorBoard's event files), with the epoch as the step; with
    ``update_freq='batch'`` (or every N samples) also the batches' logs, as 'batch_<name>'.

    Every ``histogram_freq`` epochs (epoch 0, N, 2N, ...) it writes a histogram of each
    layer's weights ('dense/kernel_0'), as images too with ``write_images``
    (``tensorboard_summaries.py``). When ``validation_data`` is set on the callback (TF 1.15's
    [inputs..., targets..., sample weights...]), it also writes, per validation batch, the
    histograms of the layers' outputs ('dense_out') and, with ``write_grads``, of the loss's
    gradients ('dense/kernel_0_grad'), as TF 1.15 does."""

    def __init__(self, log_dir="./logs", histogram_freq=0, batch_size=32, write_graph=True,
                 write_grads=False, write_images=False, update_freq="epoch", **kwargs):
        super().__init__()
        if kwargs.pop("embeddings_freq", None):
            raise NotImplementedError("TensorBoard(embeddings_freq=...) is not supported by "
                                      "tfjupyter.")
        kwargs.pop("profile_batch", None)   # TF 1.15 profiles in eager mode only
        kwargs.pop("embeddings_layer_names", None)
        kwargs.pop("embeddings_metadata", None)
        kwargs.pop("embeddings_data", None)
        if kwargs:
            raise TypeError(f"Unexpected keyword argument passed to TensorBoard: "
                            f"{sorted(kwargs)[0]}")
        self.log_dir, self.write_graph = os.fspath(log_dir), write_graph
        self.histogram_freq, self.batch_size = int(histogram_freq or 0), batch_size
        self.write_grads, self.write_images = write_grads, write_images
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.writer = None
        self._weight_summary = self._data_summary = None
        self._samples_seen = self._samples_at_last_write = 0
        self._total_batches = 0

    def on_train_begin(self, logs=None):
        from ..summary import FileWriter
        from .backend import get_session
        session_graph = get_session().graph
        if self.histogram_freq and self._weight_summary is None:
            from . import tensorboard_summaries
            with session_graph.as_default():
                self._weight_summary = tensorboard_summaries.weight_summaries(
                    self.model, self.write_images)
                self._data_summary = tensorboard_summaries.data_summaries(
                    self.model, self.write_grads)
        self.writer = FileWriter(self.log_dir,
                                 graph=session_graph if self.write_graph else None)

    def _write_histograms(self, epoch: int) -> None:
        from .backend import get_session
        from .tensorboard_summaries import split_validation_data
        session = get_session()
        if self._weight_summary is not None:
            self.writer.add_summary(session.run(self._weight_summary), epoch)
        if self._data_summary is None or self.validation_data is None:
            return
        xs, ys, ws = split_validation_data(self.model, self.validation_data)
        if not self.write_grads:
            ys = ws = None
        elif not ws:
            ws = [np.ones(len(y), np.float32) for y in ys]
        size = len(xs[0])
        for start in range(0, size, self.batch_size):
            part = slice(start, start + self.batch_size)
            feed = self.model._feed([x[part] for x in xs],
                                    None if ys is None else [y[part] for y in ys],
                                    None if ws is None else [w[part] for w in ws])
            self.writer.add_summary(session.run(self._data_summary, feed), epoch)

    def _write(self, logs, step: int, prefix: str = "") -> None:
        from ..summary import Summary
        summary = Summary()
        for name, value in logs.items():
            if name in ("batch", "size", "num_steps"):
                continue
            entry = summary.value.add()
            entry.tag = prefix + name
            entry.simple_value = float(value)
        self.writer.add_summary(summary, step)
        self.writer.flush()

    def on_batch_end(self, batch, logs=None):
        if self.update_freq == "epoch":
            return
        logs = logs or {}
        self._samples_seen += logs.get("size", 1)
        self._total_batches += 1
        if self._samples_seen - self._samples_at_last_write >= self.update_freq:
            self._write(logs, self._total_batches, "batch_")
            self._samples_at_last_write = self._samples_seen

    def on_epoch_end(self, epoch, logs=None):
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self._write(logs or {}, epoch, "epoch_" if self.update_freq != "epoch" else "")

    def on_train_end(self, logs=None):
        self.writer.close()


class LambdaCallback(Callback):
    """A callback from functions: ``on_epoch_end=lambda epoch, logs: ...``, etc."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_batch_begin=on_batch_begin, on_batch_end=on_batch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end, **kwargs)
        for hook, function in hooks.items():
            if function is not None:
                setattr(self, hook, function)


def _learning_rate_variable(model):
    if not hasattr(model.optimizer, "lr"):
        raise ValueError('Optimizer must have a "lr" attribute.')
    return model.optimizer.lr


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to ``schedule(epoch, lr)`` (or
    ``schedule(epoch)``, Keras's older form), epochs counted from 0."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        variable = _learning_rate_variable(self.model)
        try:   # the schedule of the current rate
            lr = self.schedule(epoch, float(backend.get_value(variable)))
        except TypeError:   # the older schedule of the epoch alone
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError('The output of the "schedule" function should be float.')
        backend.set_value(variable, lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler reducing learning rate to "
                  f"{lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = backend.get_value(self.model.optimizer.lr)


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` (not below ``min_lr``) when ``monitor`` has
    not improved by more than ``min_delta`` for ``patience`` epochs, then waits ``cooldown``
    epochs before counting again."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            warnings.warn("`epsilon` argument is deprecated and will be removed, use "
                          "`min_delta` instead.")
        if kwargs:
            raise TypeError(f"Unexpected keyword argument(s) for ReduceLROnPlateau: "
                            f"{sorted(kwargs)}")
        self.monitor, self.factor, self.min_lr = monitor, factor, min_lr
        self.min_delta, self.patience, self.verbose = min_delta, patience, verbose
        self.cooldown, self.mode = cooldown, mode
        self._reset()

    def _reset(self) -> None:
        if self.mode not in ("auto", "min", "max"):
            warnings.warn(f"Learning Rate Plateau Reducing mode {self.mode} is unknown, "
                          "fallback to auto mode.")
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        variable = _learning_rate_variable(self.model)
        logs["lr"] = backend.get_value(variable)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Reduce LR on plateau conditioned on metric `{self.monitor}` which "
                          f"is not available. Available metrics are: {','.join(logs)}")
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(backend.get_value(variable))
                if old_lr > self.min_lr:
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    backend.set_value(variable, new_lr)
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning "
                              f"rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0

"""``tf.keras.Model``: a network with ``compile`` / ``fit`` / ``evaluate`` / ``predict``, in
graph mode (TF 1.15).

``compile`` records the optimizer, losses and metrics; the graph for them is built when first
needed (a Sequential model without an input shape has no outputs until data shows its
shape): for each output with a loss, a target placeholder '<output layer>_target' and a
sample-weight placeholder '<output layer>_sample_weights', its loss (the weighted mean of the
per-example losses), the total loss (the outputs' losses times their ``loss_weights``, plus
the layers' regularization losses), the metrics, and the training op (gradients of the loss
applied by the optimizer, with the layers' updates) under the 'training' name scope. Every
step is one ``Session.run`` in ``backend.get_session()``, feeding a batch and, in training,
True to the learning phase.

``fit`` loops over epochs and batches in Python, as Keras does, and reports what TF 1.15
reports: the loss averaged over the epoch's samples, each output's loss ('dense_1_loss', with
several outputs) averaged over its batches, and each metric ('acc', 'dense_1_acc') over the
epoch's samples (weighted by the sample weights for ``weighted_metrics``). It calls the
callbacks, then History (which so records what they add to the logs, such as 'lr'), then
ProgbarLogger when verbose, and gives them the validation arrays as ``validation_data``. Inputs are numpy arrays (lists or dicts by name for several inputs
or outputs) or a ``tf.data`` dataset of (inputs, targets[, sample weights]) batches, read
through an initializable iterator; ``class_weight`` and ``sample_weight`` multiply into each
output's sample weights (``training_utils``).
"""
from __future__ import annotations

from contextlib import nullcontext
from functools import partial
from typing import Dict, List, Optional

import numpy as np

from ...data import Dataset
from ...framework import dtypes
from ...framework.ops import GraphKeys, name_scope
from ...ops import array_ops, control_flow_ops, math_ops
from .. import backend, callbacks as callbacks_module, losses, metrics as metrics_module
from .. import optimizers
from . import training_utils
from .data_input import ArrayInput, DatasetInput
from .input_layer import Input
from .network import Network

__all__ = ["Model"]


class Model(Network):
    """``tf.keras.Model(inputs, outputs)``: a functional model that trains."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.optimizer = None
        self.loss = None
        self.stop_training = False
        self.history = None
        self._compiled = None      # the compile arguments, until the graph is built
        self._graph_parts = None   # the placeholders and tensors of compile, once built

    # -- compile -------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                sample_weight_mode=None, weighted_metrics=None, target_tensors=None,
                **kwargs) -> None:
        """``loss``, ``loss_weights``, ``metrics`` and ``weighted_metrics`` are one value for
        every output, a list with one entry per output, or a dict keyed by output name."""
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile`: {sorted(kwargs)}")
        for name, value in (("sample_weight_mode", sample_weight_mode),
                            ("target_tensors", target_tensors)):
            if value is not None:
                raise NotImplementedError(f"compile({name}=...) is not supported by tfjupyter.")
        if loss is None:
            raise ValueError("compile needs a `loss`.")
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self._compiled = dict(loss=loss, loss_weights=loss_weights, metrics=metrics,
                              weighted_metrics=weighted_metrics)
        self._graph_parts = None
        if self.built and self._outputs:
            # A model with outputs gets its losses and metrics now, so that arguments that do
            # not fit its outputs fail here, as in TF 1.15.
            try:
                self._training_graph()
            except Exception:
                self._compiled = None
                raise

    @property
    def compiled_loss_and_metrics(self):
        """(the loss function, the metrics as given) of ``compile`` for a model trained with
        one loss and a flat list of metrics; None before ``compile``."""
        if self._compiled is None:
            return None
        loss, metrics = self._compiled["loss"], self._compiled["metrics"]
        if isinstance(loss, dict) and len(loss) == 1:
            loss = next(iter(loss.values()))
        if isinstance(loss, (list, tuple)) and len(loss) == 1:
            loss = loss[0]
        if isinstance(loss, (list, tuple, dict)) or isinstance(metrics, dict) or \
                any(isinstance(m, (list, tuple)) for m in metrics or []):
            raise NotImplementedError("Only a model compiled with one loss and a list of "
                                      "metrics can be turned into an Estimator by tfjupyter.")
        return losses.get(loss), list(metrics or [])

    @property
    def metrics_names(self) -> List[str]:
        """'loss', each output's loss ('dense_1_loss') when there are several, then the
        metrics ('acc', or 'dense_1_acc' with several outputs), as TF 1.15 names them."""
        parts = self._training_graph() if self.built and self._outputs else None
        if parts is None:
            return ["loss"]
        return ["loss"] + [stat.name for stat in parts["stats"]]

    def _training_graph(self) -> Dict:
        """The placeholders and tensors of the compiled losses and metrics (built once)."""
        if self._compiled is None:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")
        if self._graph_parts is not None:
            return self._graph_parts
        with self._outputs[0].graph.as_default():
            self._graph_parts = self._build_training_graph()
        return self._graph_parts

    def _build_training_graph(self) -> Dict:
        names = self.output_names
        compiled = self._compiled
        loss_ids = training_utils.per_output_losses(compiled["loss"], names)
        loss_weights = training_utils.per_output_loss_weights(compiled["loss_weights"], names)
        metric_ids = training_utils.per_output_metrics(compiled["metrics"], names)
        weighted_ids = training_utils.per_output_metrics(compiled["weighted_metrics"], names)
        several = len(names) > 1
        trained = [i for i, loss_id in enumerate(loss_ids) if loss_id is not None]
        endpoints = [_Endpoint(names[i], self._outputs[i], losses.get(loss_ids[i]),
                               loss_weights[i]) for i in trained]
        if not endpoints:
            raise ValueError("The model cannot be compiled because it has no loss to optimize.")
        loss_stats, metric_stats = [], []
        with name_scope("loss"):
            total_loss = None
            for endpoint in endpoints:
                with name_scope(f"{endpoint.name}_loss") if several else nullcontext():
                    output_loss = endpoint.loss()
                if several:
                    loss_stats.append(_Stat(f"{endpoint.name}_loss", output_loss))
                weighted = output_loss * math_ops.cast(endpoint.loss_weight, output_loss.dtype)
                total_loss = weighted if total_loss is None else total_loss + weighted
            if self.losses:
                total_loss = total_loss + math_ops.add_n(
                    [math_ops.cast(l, total_loss.dtype) for l in self.losses])
        taken = ["loss"] + [stat.name for stat in loss_stats]
        with name_scope("metrics"):
            for index, endpoint in zip(trained, endpoints):
                for identifiers, weighted in ((metric_ids[index], False),
                                              (weighted_ids[index], True)):
                    for identifier in identifiers:
                        short, function = metrics_module.resolve(
                            identifier, endpoint.loss_fn, endpoint.output.get_shape())
                        name = training_utils.metric_name(
                            ("weighted_" if weighted else "") + short, endpoint.name, several,
                            taken)
                        taken.append(name)
                        metric_stats.append(_Stat(name, *endpoint.metric_sum_and_count(
                            function, weighted)))
        return dict(endpoints=endpoints, total_loss=total_loss, stats=loss_stats + metric_stats,
                    train_op=None)

    def _train_op(self):
        parts = self._training_graph()
        if parts["train_op"] is None:
            graph = parts["total_loss"].graph
            before = {id(v) for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
            with graph.as_default(), name_scope("training"):
                grads_and_vars = self.optimizer.compute_gradients(
                    parts["total_loss"], var_list=self.trainable_weights)
                apply = self.optimizer.apply_gradients(
                    [(g, v) for g, v in grads_and_vars if g is not None])
                parts["train_op"] = control_flow_ops.group(apply, *self.updates)
            # The optimizer's slots are Keras's to initialize, like the layers' weights.
            for variable in graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
                if id(variable) not in before:
                    backend.track_variable(variable)
        return parts["train_op"]

    # -- data ----------------------------------------------------------------------------------
    def _ensure_built(self, x) -> None:
        """A model without inputs yet (a Sequential without an input shape) is built from the
        first data it sees."""
        if not self.built or not self._outputs:
            if isinstance(x, dict):
                x = list(x.values())
            first = np.asarray(x[0] if isinstance(x, (list, tuple)) else x)
            self._build_from_data((None,) + first.shape[1:], first.dtype)

    def _build_from_data(self, batch_input_shape, dtype) -> None:
        if not self._is_subclassed():
            raise ValueError(f'Model "{self.name}" has no inputs; it cannot be trained or run.')
        x = Input(batch_shape=batch_input_shape)
        self._set_subclassed_io(x, self(x))

    def _standardize(self, x, y=None, sample_weight=None, class_weight=None,
                     check_targets: bool = True):
        """Lists of the inputs' arrays, and of each trained output's targets and sample
        weights, checked against the model's placeholders with Keras's messages."""
        xs = training_utils.per_name_arrays(x, self.input_names, "input")
        xs = [_expand_1d(array, tensor.get_shape().as_list())
              for array, tensor in zip(xs, self._inputs)]
        for array, tensor, name in zip(xs, self._inputs, self.input_names):
            _check_array("input", name, array, tensor.get_shape().as_list())
        if len({len(a) for a in xs}) > 1:
            raise ValueError(f"All input arrays (x) should have the same number of samples. Got "
                             f"array shapes: {[a.shape for a in xs]}")
        if y is None or not check_targets:
            return xs, None, None
        endpoints = self._training_graph()["endpoints"]
        names = [e.name for e in endpoints]
        ys = training_utils.per_name_arrays(y, names, "target")
        sample_weights = training_utils.per_output_weights(sample_weight, names, "sample_weight")
        class_weights = training_utils.per_output_weights(class_weight, names, "class_weight")
        targets, weights = [], []
        for endpoint, target, sample_w, class_w in zip(endpoints, ys, sample_weights,
                                                       class_weights):
            want = endpoint.output.get_shape().as_list()
            if endpoint.sparse:
                if target.ndim == len(want) - 1:
                    target = target.reshape(target.shape + (1,))
                want = want[:-1] + [1]
            target = _expand_1d(target, want)
            _check_array("target", endpoint.name, target, want)
            if len(target) != len(xs[0]):
                raise ValueError(f"Input arrays should have the same number of samples as "
                                 f"target arrays. Found {len(xs[0])} input samples and "
                                 f"{len(target)} target samples.")
            w = training_utils.weights_of_samples(target, sample_w, class_w)
            weights.append(np.ones(len(target), np.float32) if w is None else
                           np.asarray(w, np.float32))
            if endpoint.sparse:
                target = target.reshape(target.shape[:-1])
            targets.append(target.astype(endpoint.target.dtype.as_numpy_dtype, copy=False))
        return xs, targets, weights

    def _prepare(self, x, y=None, sample_weight=None, class_weight=None):
        """A batch's arrays, checked and converted (building the model if it has no inputs)."""
        self._ensure_built(x)
        return self._standardize(x, y, sample_weight, class_weight, check_targets=y is not None)

    def _input(self, x, y, sample_weight, batch_size, shuffle, steps, with_targets=True,
               class_weight=None):
        """Where the batches come from: numpy arrays, or a tf.data dataset."""
        if isinstance(x, Dataset):
            if y is not None:
                raise ValueError("`y` argument is not supported when using dataset as input.")
            return DatasetInput(x, steps, with_targets,
                                partial(self._prepare, class_weight=class_weight),
                                self._inputs[0].graph if self._inputs else None)
        if x is None:
            raise ValueError("fit/evaluate/predict need input data `x`.")
        return ArrayInput(*self._prepare(x, y, sample_weight, class_weight), batch_size or 32,
                          shuffle, steps)

    def _feed(self, xs, ys=None, weights=None, training: bool = False) -> Dict:
        feed = dict(zip(self._inputs, xs))
        if ys is not None:
            for endpoint, target, w in zip(self._training_graph()["endpoints"], ys, weights):
                feed[endpoint.target] = target
                feed[endpoint.sample_weights] = w
        phase = backend.learning_phase_placeholder(self._inputs[0].graph)
        if phase is not None:
            feed[phase] = training
        return feed

    # -- training ------------------------------------------------------------------------------
    def _fetches(self) -> List:
        """The loss, then each stat's fetches (flattened); ``_epoch_totals`` reads them."""
        parts = self._training_graph()
        return [parts["total_loss"]] + [t for stat in parts["stats"] for t in stat.fetches]

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_freq=1, **kwargs):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        source = self._input(x, y, sample_weight, batch_size, shuffle, steps_per_epoch,
                             class_weight=class_weight)
        validation = None
        if validation_data is not None:
            validation = self._input(*_split_validation(validation_data), batch_size, False,
                                     validation_steps)
        elif validation_split:
            if not isinstance(source, ArrayInput):
                raise ValueError("`validation_split` is only supported for numpy array inputs.")
            source, validation = source.split(validation_split)
        train_op = self._train_op()
        session = backend.get_session()
        fetches = [train_op] + self._fetches()
        names = self.metrics_names
        out_labels = names + (["val_" + n for n in names] if validation else [])
        if verbose:
            if source.samples is not None:
                text = f"Train on {source.samples} samples"
                if validation is not None and validation.samples is not None:
                    text += f", validate on {validation.samples} samples"
                print(text)
        # As in TF 1.15, History comes after the user's callbacks, so that it records what
        # they add to the epoch's logs (the learning rate 'lr' of LearningRateScheduler).
        history = callbacks_module.History()
        callback_list = list(callbacks or []) + [history]
        if verbose:
            callback_list.append(callbacks_module.ProgbarLogger(
                "samples" if source.samples is not None else "steps"))
        self.history = history
        params = {"batch_size": source.batch_size if source.samples is not None else None,
                  "epochs": epochs, "steps": source.steps, "samples": source.samples,
                  "verbose": verbose, "do_validation": validation is not None,
                  "metrics": out_labels}
        calls = callbacks_module.CallbackList(callback_list, self, params)
        self._give_callbacks_validation_data(callback_list, validation)
        self.stop_training = False
        calls.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            calls.on_epoch_begin(epoch)
            totals = _Totals(self, per_step=source.samples is None)
            for index, (xs, ys, ws) in enumerate(source.batches(session)):
                size = len(xs[0])
                batch_logs = {"batch": index, "size": size}
                calls.on_train_batch_begin(index, batch_logs)
                values = session.run(fetches, feed_dict=self._feed(xs, ys, ws, training=True))
                batch_logs.update(zip(names, totals.add(values[1:], size)))
                calls.on_train_batch_end(index, batch_logs)
                if self.stop_training:
                    break
            epoch_logs = dict(zip(names, totals.means()))
            if validation is not None and (epoch + 1) % validation_freq == 0:
                values = self._run_test_loop(session, validation)
                epoch_logs.update(("val_" + n, v) for n, v in zip(names, values))
            calls.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        calls.on_train_end()
        return history

    def _give_callbacks_validation_data(self, callback_list, validation) -> None:
        """Sets ``callback.validation_data`` to fit's validation arrays, as Keras 2.2's fit
        does: [inputs..., targets..., sample weights...] and, when the model reads the
        learning phase, its test value 0. TensorBoard computes its output and gradient
        histograms on them. (TF 1.11+ leaves the attribute None and runs those histograms in
        its validation loop instead.) Set before ``on_train_begin``; without validation
        arrays (none, or a dataset) a value the user set is kept."""
        if not isinstance(validation, ArrayInput) or validation.ys is None:
            return
        arrays = list(validation.xs) + list(validation.ys) + list(validation.weights)
        if backend.learning_phase_placeholder(self._inputs[0].graph) is not None:
            arrays.append(0.0)
        for callback in callback_list:
            callback.validation_data = arrays

    def _run_test_loop(self, session, source, verbose: int = 0) -> List[float]:
        fetches = self._fetches()
        names = self.metrics_names
        progbar = None
        if verbose:
            from ..utils import Progbar
            progbar = Progbar(source.samples if source.samples is not None else source.steps,
                              verbose=verbose,
                              unit_name="sample" if source.samples is not None else "step")
        totals = _Totals(self, per_step=source.samples is None)
        seen = steps = 0
        for xs, ys, ws in source.batches(session):
            values = session.run(fetches, feed_dict=self._feed(xs, ys, ws))
            batch_values = totals.add(values, len(xs[0]))
            seen += len(xs[0])
            steps += 1
            if progbar is not None:
                progbar.update(seen if source.samples is not None else steps,
                               list(zip(names, batch_values)))
        return totals.means()

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None):
        """The loss (and per-output losses and metrics: [loss, ...]) averaged over ``x``."""
        source = self._input(x, y, sample_weight, batch_size, False, steps)
        values = self._run_test_loop(backend.get_session(), source, verbose)
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """The model's outputs for ``x``, computed in batches and concatenated."""
        source = self._input(x, None, None, batch_size, False, steps, with_targets=False)
        session = backend.get_session()
        outputs = [session.run(self._outputs, feed_dict=self._feed(xs))
                   for xs, _, _ in source.batches(session)]
        if not outputs:
            raise ValueError("predict: the input has no samples.")
        results = [np.concatenate([batch[i] for batch in outputs]) for i in
                   range(len(self._outputs))]
        return results if isinstance(self._nested_outputs, (list, tuple)) else results[0]

    def _run_on_batch(self, x, y, sample_weight, class_weight, training: bool):
        xs, ys, ws = self._prepare(x, y, sample_weight, class_weight)
        fetches = ([self._train_op()] if training else []) + self._fetches()
        values = backend.get_session().run(
            fetches, feed_dict=self._feed(xs, ys, ws, training=training))
        totals = _Totals(self, per_step=True)
        values = totals.add(values[1:] if training else values, len(xs[0]))
        return values[0] if len(values) == 1 else values

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, reset_metrics=True):
        return self._run_on_batch(x, y, sample_weight, class_weight, training=True)

    def test_on_batch(self, x, y, sample_weight=None, reset_metrics=True):
        return self._run_on_batch(x, y, sample_weight, None, training=False)

    def predict_on_batch(self, x):
        self._ensure_built(x)
        xs, _, _ = self._standardize(x)
        results = backend.get_session().run(self._outputs, feed_dict=self._feed(xs))
        return results if isinstance(self._nested_outputs, (list, tuple)) else results[0]


class _Totals:
    """An epoch's (or evaluation's) running values, as TF 1.15 reports them: the loss
    averaged over samples weighted by batch size (over steps when the input counts steps),
    each output's loss averaged over batches, each metric summed and divided by its count."""

    def __init__(self, model: Model, per_step: bool):
        self.stats = model._training_graph()["stats"]
        self.per_step = per_step
        self.loss_sum = self.loss_count = 0.0
        self.sums = np.zeros(len(self.stats))
        self.counts = np.zeros(len(self.stats))

    def add(self, fetched, size: int) -> List[float]:
        """Adds a batch's fetched values; returns that batch's values."""
        weight = 1.0 if self.per_step else float(size)
        self.loss_sum += float(fetched[0]) * weight
        self.loss_count += weight
        batch_values, at = [float(fetched[0])], 1
        for i, stat in enumerate(self.stats):
            total, count = stat.sum_and_count(fetched[at:at + len(stat.fetches)])
            at += len(stat.fetches)
            self.sums[i] += total
            self.counts[i] += count
            batch_values.append(float(total) / float(count) if count else 0.0)
        return batch_values

    def means(self) -> List[float]:
        loss = self.loss_sum / self.loss_count if self.loss_count else 0.0
        return [loss] + [float(s / c) if c else 0.0 for s, c in zip(self.sums, self.counts)]


class _Endpoint:
    """A trained output: its target and sample-weight placeholders ('<output>_target',
    '<output>_sample_weights'), loss function and loss weight."""

    def __init__(self, name: str, output, loss_fn, loss_weight):
        self.name, self.output, self.loss_fn = name, output, loss_fn
        self.loss_weight = loss_weight
        self.sparse = loss_fn is losses.sparse_categorical_crossentropy
        rank = output.get_shape().ndims
        # Sparse targets are class indices: one dimension fewer than the output.
        self.target = array_ops.placeholder(output.dtype.base_dtype,
                                            [None] * (rank - 1 if self.sparse else rank),
                                            name=f"{name}_target")
        self.sample_weights = array_ops.placeholder(dtypes.float32, [None],
                                                    name=f"{name}_sample_weights")

    def _weights_like(self, values):
        """The sample weights, shaped to multiply ``values`` (one row per sample)."""
        weights = math_ops.cast(self.sample_weights, values.dtype)
        rank = values.get_shape().ndims
        if rank is not None and rank > 1:
            weights = array_ops.reshape(weights, [-1] + [1] * (rank - 1))
        return weights

    def loss(self):
        """The batch's loss: the sum of the weighted per-example losses over their number
        (Keras's SUM_OVER_BATCH_SIZE)."""
        per_example = self.loss_fn(self.target, self.output)
        weighted = per_example * self._weights_like(per_example)
        count = math_ops.cast(array_ops.size(weighted), weighted.dtype)
        return math_ops.reduce_sum(weighted) / count

    def metric_sum_and_count(self, function, weighted: bool):
        """(sum, count) of a metric over the batch, summed over an epoch as Keras's Mean
        metric does: a weighted metric counts each value with its sample's weight."""
        values = math_ops.cast(function(self.target, self.output), dtypes.float32)
        if not weighted:
            return (math_ops.reduce_sum(values),
                    math_ops.cast(array_ops.size(values), dtypes.float32))
        weights = self._weights_like(values) * array_ops.ones_like(values)
        return math_ops.reduce_sum(values * weights), math_ops.reduce_sum(weights)


class _Stat:
    """A value fit reports besides the loss: an output's loss (the mean of its batch values,
    as Keras's Mean metric of it) or a metric (summed, then divided by its count)."""

    def __init__(self, name: str, value, count=None):
        self.name, self.fetches = name, [value] if count is None else [value, count]

    def sum_and_count(self, fetched):
        return (fetched[0], 1.0) if len(fetched) == 1 else (fetched[0], fetched[1])


def _split_validation(validation_data):
    if isinstance(validation_data, (list, tuple)):
        if len(validation_data) == 2:
            return validation_data[0], validation_data[1], None
        if len(validation_data) == 3:
            return tuple(validation_data)
        raise ValueError("When passing validation_data, it must contain 2 (x_val, y_val) or 3 "
                         "(x_val, y_val, val_sample_weights) items, however it contains "
                         f"{len(validation_data)} items")
    return validation_data, None, None


def _expand_1d(array: np.ndarray, want: List[Optional[int]]) -> np.ndarray:
    """TF 1.15's ``standardize_single_array``: a 1-D array (one value per sample) fed where
    the model expects more dimensions is a column, (N,) -> (N, 1), so that targets of shape
    (N,) fit a Dense(1) output."""
    if array.ndim == 1 and len(want) != 1:
        return array.reshape(array.shape + (1,))
    return array


def _check_array(kind: str, name: str, array: np.ndarray, want: List[Optional[int]]) -> None:
    """Keras's 'Error when checking input: expected dense_input to have shape (3,) but got
    array with shape (5,)'."""
    if array.ndim != len(want):
        raise ValueError(f"Error when checking {kind}: expected {name} to have {len(want)} "
                         f"dimensions, but got array with shape {array.shape}")
    for got, expected in zip(array.shape[1:], want[1:]):
        if expected is not None and got != expected:
            raise ValueError(f"Error when checking {kind}: expected {name} to have shape "
                             f"{tuple(want[1:])} but got array with shape {array.shape[1:]}")


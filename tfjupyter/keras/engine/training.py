"""``tf.keras.Model``: a network with ``compile`` / ``fit`` / ``evaluate`` / ``predict``, in
graph mode (TF 1.15).

``compile`` records the optimizer, loss and metrics; the graph for them is built when first
needed (a Sequential model without an input shape has no outputs until data shows its
shape): a target placeholder '<output layer>_target', a sample-weight placeholder
'<output layer>_sample_weights', the loss (the weighted mean of the per-example losses plus
the layers' regularization losses), the metrics' batch means, and the training op
(gradients of the loss applied by the optimizer, with the layers' updates) under the
'training' name scope. Every step is one ``Session.run`` in ``backend.get_session()``,
feeding a batch and, in training, True to the learning phase.

``fit`` loops over epochs and batches in Python, as Keras does, averaging each epoch's batch
values weighted by batch size, and calls the callbacks (History always, ProgbarLogger when
verbose). Inputs are numpy arrays (lists for several inputs) or a ``tf.data`` dataset of
(inputs, targets[, sample weights]) batches, read through an initializable iterator.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from ...data import Dataset
from ...framework import dtypes
from ...framework.ops import GraphKeys, name_scope
from ...ops import array_ops, control_flow_ops, math_ops
from .. import backend, callbacks as callbacks_module, losses, metrics as metrics_module
from .. import optimizers
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
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile`: {sorted(kwargs)}")
        for name, value in (("loss_weights", loss_weights),
                            ("sample_weight_mode", sample_weight_mode),
                            ("weighted_metrics", weighted_metrics),
                            ("target_tensors", target_tensors)):
            if value is not None:
                raise NotImplementedError(f"compile({name}=...) is not supported by tfjupyter.")
        if loss is None:
            raise ValueError("compile needs a `loss`.")
        if isinstance(loss, dict):
            loss = list(loss.values())
        if isinstance(loss, (list, tuple)):
            if len(loss) != 1:
                raise NotImplementedError("tfjupyter's Keras trains models with one output "
                                          "and one loss.")
            loss = loss[0]
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self._compiled = (losses.get(loss), list(metrics or []))
        self._graph_parts = None

    @property
    def compiled_loss_and_metrics(self):
        """(the loss function, the metrics as given) of ``compile``; None before it."""
        return self._compiled

    @property
    def metrics_names(self) -> List[str]:
        parts = self._training_graph() if self.built else None
        if parts is None:
            return ["loss"]
        return ["loss"] + list(parts["metric_names"])

    def _training_graph(self) -> Dict:
        """The placeholders and tensors of the compiled loss and metrics (built once)."""
        if self._compiled is None:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")
        if self._graph_parts is not None:
            return self._graph_parts
        if len(self._outputs) != 1:
            raise NotImplementedError("tfjupyter's Keras trains models with one output.")
        loss_fn, metric_ids = self._compiled
        output = self._outputs[0]
        output_name = self.output_names[0]
        sparse = loss_fn is losses.sparse_categorical_crossentropy
        rank = output.get_shape().ndims
        # Sparse targets are class indices: one dimension fewer than the output.
        target = array_ops.placeholder(output.dtype.base_dtype,
                                       [None] * (rank - 1 if sparse else rank),
                                       name=f"{output_name}_target")
        sample_weights = array_ops.placeholder(dtypes.float32, [None],
                                               name=f"{output_name}_sample_weights")
        with name_scope("loss"):
            per_example = loss_fn(target, output)
            weights = math_ops.cast(sample_weights, per_example.dtype)
            example_rank = per_example.get_shape().ndims
            if example_rank is not None and example_rank > 1:
                weights = array_ops.reshape(weights, [-1] + [1] * (example_rank - 1))
            weighted = per_example * weights
            count = math_ops.cast(array_ops.size(weighted), weighted.dtype)
            total_loss = math_ops.reduce_sum(weighted) / count
            if self.losses:
                total_loss = total_loss + math_ops.add_n(
                    [math_ops.cast(l, total_loss.dtype) for l in self.losses])
        metric_names, metric_tensors = [], []
        with name_scope("metrics"):
            for identifier in metric_ids:
                name, function = metrics_module.resolve(identifier, loss_fn, output.get_shape())
                metric_names.append(name)
                metric_tensors.append(math_ops.reduce_mean(
                    math_ops.cast(function(target, output), dtypes.float32)))
        self._graph_parts = dict(target=target, sample_weights=sample_weights,
                                 total_loss=total_loss, metric_names=metric_names,
                                 metric_tensors=metric_tensors, train_op=None)
        return self._graph_parts

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
            first = x[0] if isinstance(x, (list, tuple)) else x
            first = np.asarray(first)
            self._build_from_data((None,) + first.shape[1:], first.dtype)

    def _build_from_data(self, batch_input_shape, dtype) -> None:
        if not self._is_subclassed():
            raise ValueError(f'Model "{self.name}" has no inputs; it cannot be trained or run.')
        x = Input(batch_shape=batch_input_shape)
        self._set_subclassed_io(x, self(x))

    def _standardize(self, x, y=None, sample_weight=None, check_targets: bool = True):
        """Lists of arrays for the inputs, the targets' array and sample weights, checked
        against the model's placeholders with Keras's messages."""
        xs = [np.asarray(a) for a in (x if isinstance(x, (list, tuple)) else [x])]
        if len(xs) != len(self._inputs):
            raise ValueError(f"Error when checking model input: the list of Numpy arrays that "
                             f"you are passing to your model is not the size the model "
                             f"expected. Expected to see {len(self._inputs)} array(s), but "
                             f"instead got {len(xs)} arrays.")
        for array, tensor, name in zip(xs, self._inputs, self.input_names):
            _check_array("input", name, array, tensor.get_shape().as_list())
        if y is None:
            return xs, None, None
        y = np.asarray(y)
        if check_targets:
            parts = self._training_graph()
            want = self._outputs[0].get_shape().as_list()
            if self._compiled[0] is losses.sparse_categorical_crossentropy:
                if y.ndim == len(want) - 1:
                    y = y.reshape(y.shape + (1,))
                want = want[:-1] + [1]
            _check_array("target", self.output_names[0], y, want)
            if self._compiled[0] is losses.sparse_categorical_crossentropy:
                y = y.reshape(y.shape[:-1])
            y = y.astype(parts["target"].dtype.as_numpy_dtype, copy=False)
        counts = {len(a) for a in xs}
        if len(counts) > 1:
            raise ValueError(f"All input arrays (x) should have the same number of samples. Got "
                             f"array shapes: {[a.shape for a in xs]}")
        if len(y) != len(xs[0]):
            raise ValueError(f"Input arrays should have the same number of samples as target "
                             f"arrays. Found {len(xs[0])} input samples and {len(y)} target "
                             "samples.")
        if sample_weight is None:
            sample_weight = np.ones(len(y), np.float32)
        sample_weight = np.asarray(sample_weight, np.float32)
        if sample_weight.shape != (len(y),):
            raise ValueError(f"Found a sample_weight array with shape {sample_weight.shape} for "
                             f"an input with shape {y.shape}. sample_weight cannot be "
                             "broadcast.")
        return xs, y, sample_weight

    def _prepare(self, x, y=None, sample_weight=None):
        """A batch's arrays, checked and converted (building the model if it has no inputs)."""
        self._ensure_built(x)
        return self._standardize(x, y, sample_weight, check_targets=y is not None)

    def _input(self, x, y, sample_weight, batch_size, shuffle, steps, with_targets=True):
        """Where the batches come from: numpy arrays, or a tf.data dataset."""
        if isinstance(x, Dataset):
            if y is not None:
                raise ValueError("`y` argument is not supported when using dataset as input.")
            return DatasetInput(x, steps, with_targets, self._prepare,
                                self._inputs[0].graph if self._inputs else None)
        if x is None:
            raise ValueError("fit/evaluate/predict need input data `x`.")
        return ArrayInput(*self._prepare(x, y, sample_weight), batch_size or 32, shuffle)

    def _feed(self, xs, y=None, sample_weight=None, training: bool = False) -> Dict:
        feed = dict(zip(self._inputs, xs))
        if y is not None:
            parts = self._training_graph()
            feed[parts["target"]] = y
            feed[parts["sample_weights"]] = sample_weight
        phase = backend.learning_phase_placeholder(self._inputs[0].graph)
        if phase is not None:
            feed[phase] = training
        return feed

    # -- training ------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_freq=1, **kwargs):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
        if class_weight is not None:
            raise NotImplementedError("fit(class_weight=...) is not supported by tfjupyter; "
                                      "pass sample_weight.")
        source = self._input(x, y, sample_weight, batch_size, shuffle, steps_per_epoch)
        validation = None
        if validation_data is not None:
            validation = self._input(*_split_validation(validation_data), batch_size, False,
                                     validation_steps)
        elif validation_split:
            if not isinstance(source, ArrayInput):
                raise ValueError("`validation_split` is only supported for numpy array inputs.")
            source, validation = source.split(validation_split)
        train_op = self._train_op()
        parts = self._training_graph()
        session = backend.get_session()
        fetches = [train_op, parts["total_loss"]] + parts["metric_tensors"]
        names = self.metrics_names
        out_labels = names + (["val_" + n for n in names] if validation else [])
        if verbose:
            if isinstance(source, ArrayInput):
                text = f"Train on {source.samples} samples"
                if validation is not None:
                    text += f", validate on {validation.samples} samples"
                print(text)
        history = callbacks_module.History()
        callback_list = [history] + list(callbacks or [])
        if verbose:
            callback_list.append(callbacks_module.ProgbarLogger(
                "samples" if isinstance(source, ArrayInput) else "steps"))
        self.history = history
        params = {"batch_size": source.batch_size, "epochs": epochs, "steps": source.steps,
                  "samples": source.samples, "verbose": verbose,
                  "do_validation": validation is not None, "metrics": out_labels}
        calls = callbacks_module.CallbackList(callback_list, self, params)
        self.stop_training = False
        calls.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            calls.on_epoch_begin(epoch)
            totals = np.zeros(len(names))
            seen = 0
            for index, (xs, yb, wb) in enumerate(source.batches(session)):
                size = len(yb)
                batch_logs = {"batch": index, "size": size}
                calls.on_train_batch_begin(index, batch_logs)
                values = session.run(fetches, feed_dict=self._feed(xs, yb, wb, training=True))[1:]
                batch_logs.update(zip(names, (float(v) for v in values)))
                calls.on_train_batch_end(index, batch_logs)
                totals += np.asarray(values, dtype=np.float64) * size
                seen += size
                if self.stop_training:
                    break
            epoch_logs = dict(zip(names, (float(v) for v in totals / max(seen, 1))))
            if validation is not None and (epoch + 1) % validation_freq == 0:
                values = self._run_test_loop(session, validation)
                epoch_logs.update(("val_" + n, v) for n, v in zip(names, values))
            calls.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        calls.on_train_end()
        return history

    def _run_test_loop(self, session, source, verbose: int = 0) -> List[float]:
        parts = self._training_graph()
        fetches = [parts["total_loss"]] + parts["metric_tensors"]
        names = self.metrics_names
        progbar = None
        if verbose:
            from ..utils import Progbar
            progbar = Progbar(source.samples if source.samples is not None else source.steps,
                              verbose=verbose,
                              unit_name="sample" if source.samples is not None else "step")
        totals, seen, steps = np.zeros(len(fetches)), 0, 0
        for xs, yb, wb in source.batches(session):
            values = session.run(fetches, feed_dict=self._feed(xs, yb, wb))
            totals += np.asarray(values, dtype=np.float64) * len(yb)
            seen += len(yb)
            steps += 1
            if progbar is not None:
                progbar.update(seen if source.samples is not None else steps,
                               list(zip(names, values)))
        return [float(v) for v in totals / max(seen, 1)]

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, sample_weight=None,
                 steps=None, callbacks=None):
        """The loss (and metrics: [loss, metric, ...]) averaged over ``x``, in batches."""
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

    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, reset_metrics=True):
        self._ensure_built(x)
        xs, y, w = self._standardize(x, y, sample_weight)
        parts = self._training_graph()
        fetches = [self._train_op(), parts["total_loss"]] + parts["metric_tensors"]
        values = [float(v) for v in backend.get_session().run(
            fetches, feed_dict=self._feed(xs, y, w, training=True))[1:]]
        return values[0] if len(values) == 1 else values

    def test_on_batch(self, x, y, sample_weight=None, reset_metrics=True):
        self._ensure_built(x)
        xs, y, w = self._standardize(x, y, sample_weight)
        parts = self._training_graph()
        values = [float(v) for v in backend.get_session().run(
            [parts["total_loss"]] + parts["metric_tensors"], feed_dict=self._feed(xs, y, w))]
        return values[0] if len(values) == 1 else values

    def predict_on_batch(self, x):
        self._ensure_built(x)
        xs, _, _ = self._standardize(x)
        results = backend.get_session().run(self._outputs, feed_dict=self._feed(xs))
        return results if isinstance(self._nested_outputs, (list, tuple)) else results[0]


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


"""Follow-ups of tf.keras's whole-model saving: fit gives the callbacks its validation arrays
(so TensorBoard's output and gradient histograms are written), ModelCheckpoint saves whole
models, model_to_estimator reads an HDF5 model, and the optimizer's time-based ``decay`` is
saved and loaded."""
import glob
import json
import os

import numpy as np
import pytest

import tfjupyter as tf

keras = tf.keras


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def _regression_model():
    model = keras.Sequential([keras.layers.Dense(3, activation="tanh", input_shape=(2,),
                                                 name="hidden"),
                              keras.layers.Dense(1, name="out")])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def _data(samples=8):
    rng = np.random.RandomState(0)
    x = rng.rand(samples, 2).astype(np.float32)
    return x, (x[:, :1] - 2.0 * x[:, 1:]).astype(np.float32)


class _SeesValidationData(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.at_train_begin = self.validation_data


# -- 1. callback.validation_data ----------------------------------------------------------------
def test_fit_gives_callbacks_the_validation_arrays_and_the_test_learning_phase():
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(2,)),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = _data()
    seen = _SeesValidationData()
    model.fit(x, y, validation_split=0.25, epochs=1, verbose=0, callbacks=[seen])
    # [inputs, targets, sample weights (ones), learning phase 0]: the last quarter validates.
    val_x, val_y, val_w, phase = seen.at_train_begin
    np.testing.assert_array_equal(val_x, x[6:])
    np.testing.assert_array_equal(val_y, y[6:])
    np.testing.assert_array_equal(val_w, np.ones(2))
    assert phase == 0
    weights = np.array([1.0, 3.0])
    model.fit(x, y, validation_data=(x[:2], y[:2], weights), verbose=0, callbacks=[seen])
    assert len(seen.at_train_begin) == 4
    np.testing.assert_array_equal(seen.at_train_begin[2], weights)
    # Without validation arrays, what the user set stays.
    seen.validation_data = mine = [x, y]
    model.fit(x, y, verbose=0, callbacks=[seen])
    assert seen.at_train_begin is mine


def test_fit_without_a_learning_phase_gives_inputs_targets_and_weights_only():
    model = _regression_model()
    x, y = _data()
    seen = _SeesValidationData()
    model.fit(x, y, validation_data=(x[:3], y[:3]), verbose=0, callbacks=[seen])
    assert len(seen.at_train_begin) == 3


def test_tensorboard_writes_output_and_gradient_histograms_of_fits_validation_data(tmp_path):
    model = _regression_model()
    x, y = _data()
    board = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1, write_grads=True,
                                        batch_size=32)
    model.fit(x, y, validation_data=(x[:5], y[:5]), epochs=2, verbose=0, callbacks=[board])
    (events,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    last = {}
    for event in tf.train.summary_iterator(events):
        for value in event.summary.value:
            last[value.tag] = value
    assert {"hidden_out", "out_out", "hidden/kernel_0_grad", "out/bias_0_grad"} <= set(last)
    # The last epoch's output histogram is of the model's outputs on the validation inputs.
    predicted = model.predict(x[:5])
    histogram = last["out_out"].histo
    assert histogram.num == 5
    assert np.isclose(histogram.sum, predicted.sum(), atol=1e-5)
    assert np.isclose(histogram.min, predicted.min()) and \
        np.isclose(histogram.max, predicted.max())


# -- 2. ModelCheckpoint -------------------------------------------------------------------------
class _Snapshots(keras.callbacks.Callback):
    """Each epoch's predictions, taken before ModelCheckpoint saves (it comes after)."""

    def __init__(self, x):
        super().__init__()
        self.x, self.predictions = x, []

    def on_epoch_end(self, epoch, logs=None):
        self.predictions.append(self.model.predict(self.x))


def test_model_checkpoint_saves_whole_models_or_weights(tmp_path):
    h5py = pytest.importorskip("h5py")
    model = _regression_model()
    x, y = _data()
    snapshots = _Snapshots(x)
    every_other = keras.callbacks.ModelCheckpoint(str(tmp_path / "model.{epoch:02d}.h5"),
                                                  period=2)
    # TF 1.x saves HDF5 whatever the path's extension.
    best = keras.callbacks.ModelCheckpoint(str(tmp_path / "best"), monitor="loss",
                                           save_best_only=True, mode="min")
    weights_only = keras.callbacks.ModelCheckpoint(str(tmp_path / "weights.h5"),
                                                   save_weights_only=True)
    history = model.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0,
                        callbacks=[snapshots, every_other, best, weights_only])
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "model.*"))) == \
        ["model.02.h5", "model.04.h5"]
    with h5py.File(str(tmp_path / "model.02.h5"), "r") as f:
        assert "model_config" in f.attrs and "training_config" in f.attrs
        assert "optimizer_weights" in f
    with h5py.File(str(tmp_path / "weights.h5"), "r") as f:
        assert "model_config" not in f.attrs
        assert [n.decode() for n in f.attrs["layer_names"]] == ["hidden", "out"]
    losses = history.history["loss"]
    best_epoch = int(np.argmin(losses))
    for path, epoch in ((tmp_path / "model.02.h5", 1), (tmp_path / "best", best_epoch)):
        with tf.Graph().as_default():
            loaded = keras.models.load_model(str(path))
            assert isinstance(loaded.optimizer, keras.optimizers.SGD)
            np.testing.assert_allclose(loaded.predict(x), snapshots.predictions[epoch],
                                       atol=1e-6)
    with tf.Graph().as_default():
        again = _regression_model()
        again.load_weights(str(tmp_path / "weights.h5"))
        np.testing.assert_allclose(again.predict(x), snapshots.predictions[-1], atol=1e-6)


def test_model_checkpoint_keeps_save_best_only_mode_and_period():
    model = _regression_model()
    x, y = _data()
    saved = []
    model.save = lambda path, overwrite=True: saved.append(("model", path))
    model.save_weights = lambda path, overwrite=True: saved.append(("weights", path))
    # 'max' on the loss: an epoch is saved when its loss is the highest yet.
    best = keras.callbacks.ModelCheckpoint("best-{epoch}", monitor="loss", save_best_only=True,
                                           mode="max")
    every_third = keras.callbacks.ModelCheckpoint("w-{epoch}-{loss:.0f}", period=3,
                                                  save_weights_only=True)
    history = model.fit(x, y, epochs=4, batch_size=4, verbose=0,
                        callbacks=[best, every_third])
    losses = history.history["loss"]
    highest = [f"best-{e + 1}" for e in range(4) if e == 0 or losses[e] > max(losses[:e])]
    assert [path for kind, path in saved if kind == "model"] == highest
    assert [path for kind, path in saved if kind == "weights"] == [f"w-3-{losses[2]:.0f}"]


# -- 3. model_to_estimator(keras_model_path=...) ------------------------------------------------
def test_model_to_estimator_loads_an_hdf5_model(tmp_path):
    pytest.importorskip("h5py")
    model = _regression_model()
    x, y = _data()
    model.fit(x, y, epochs=2, verbose=0)
    # Saved with a rate of 0, so that a training step keeps the weights.
    model.compile(keras.optimizers.SGD(0.0), "mse")
    path = str(tmp_path / "m.h5")
    model.save(path)
    predicted = model.predict(x)
    with tf.Graph().as_default():
        estimator = keras.estimator.model_to_estimator(keras_model_path=path,
                                                       model_dir=str(tmp_path / "est"))
        estimator.train(tf.estimator.inputs.numpy_input_fn(
            {"hidden_input": x}, y, batch_size=4, shuffle=False), steps=1)
        input_fn = tf.estimator.inputs.numpy_input_fn({"hidden_input": x}, shuffle=False)
        got = np.stack([p["out"] for p in estimator.predict(input_fn)])
    # Training started from the saved weights, with the saved optimizer.
    np.testing.assert_allclose(got, predicted, atol=1e-6)


# -- 4. the optimizer's decay -------------------------------------------------------------------
def test_hdf5_keeps_the_optimizers_decay(tmp_path):
    h5py = pytest.importorskip("h5py")
    model = _regression_model()
    model.compile(keras.optimizers.SGD(0.1, decay=0.3), "mse")
    x, y = _data()
    model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["training_config"])["optimizer_config"]
    # TF 1.15's layout; decay is a float32 hyperparameter, saved as its variable's value.
    assert config == {"class_name": "SGD", "config": {
        "name": "SGD", "learning_rate": float(np.float32(0.1)),
        "decay": float(np.float32(0.3)), "momentum": 0.0, "nesterov": False}}
    model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    trained = model.get_weights()
    with tf.Graph().as_default():
        loaded = keras.models.load_model(path)
        assert loaded.optimizer._learning_rate_decay == pytest.approx(0.3)
        # Steps 3 and 4 at the rates 0.1 / (1 + 0.3 * 2) and 0.1 / (1 + 0.3 * 3).
        loaded.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
        for got, want in zip(loaded.get_weights(), trained):
            np.testing.assert_allclose(got, want, atol=1e-6)

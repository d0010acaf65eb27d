"""tf.keras's training loop in graph mode: fit/evaluate/predict on arrays and datasets, the
callbacks' effects, Keras's logs, weights on disk, and its errors."""
import glob
import os

import sys

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import keras

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def fresh_graph():
    keras.backend.clear_session()
    np.random.seed(0)
    tf.set_random_seed(0)
    yield
    keras.backend.clear_session()


@pytest.fixture(scope="module")
def digits():
    return tf.datasets.load_digits(seed=0)


def digits_mlp():
    model = keras.Sequential([keras.layers.Dense(32, activation="relu", input_shape=(64,)),
                              keras.layers.Dropout(0.1),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def test_an_mlp_learns_the_digits_with_fit(digits):
    model = digits_mlp()
    history = model.fit(digits.train.images, digits.train.labels, epochs=12, batch_size=32,
                        validation_split=0.1, verbose=0)
    assert set(history.history) == {"loss", "acc", "val_loss", "val_acc"}
    assert history.epoch == list(range(12))
    assert history.history["loss"][-1] < history.history["loss"][0] / 3
    loss, accuracy = model.evaluate(digits.test.images, digits.test.labels, verbose=0)
    assert accuracy >= 0.9, accuracy
    predicted = model.predict(digits.test.images).argmax(-1)
    assert np.mean(predicted == digits.test.labels) == pytest.approx(accuracy, abs=1e-6)


def test_a_cnn_learns_the_digits_with_one_hot_targets(digits):
    images = digits.train.images.reshape(-1, 8, 8, 1)
    model = keras.Sequential([
        keras.layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        keras.layers.MaxPooling2D(), keras.layers.BatchNormalization(), keras.layers.Flatten(),
        keras.layers.Dense(10, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    # 10 epochs: BatchNormalization's moving statistics (momentum 0.99) need ~200 steps.
    model.fit(images, keras.utils.to_categorical(digits.train.labels, 10), epochs=10,
              batch_size=64, verbose=0)
    _, accuracy = model.evaluate(digits.test.images.reshape(-1, 8, 8, 1),
                                 keras.utils.to_categorical(digits.test.labels, 10), verbose=0)
    assert accuracy >= 0.9, accuracy


def test_fit_evaluate_and_predict_on_tf_data_datasets(digits):
    model = digits_mlp()
    train = tf.data.Dataset.from_tensor_slices(
        (digits.train.images, digits.train.labels)).shuffle(2000, seed=1).batch(32)
    history = model.fit(train, epochs=8, verbose=0)
    assert len(history.history["loss"]) == 8
    test = tf.data.Dataset.from_tensor_slices((digits.test.images, digits.test.labels)).batch(50)
    loss, accuracy = model.evaluate(test, verbose=0)
    assert accuracy >= 0.9
    # Validation runs after the epoch's last step: evaluate then gives the same values.
    history = model.fit(train, epochs=1, validation_data=test, verbose=0)
    assert [history.history["val_loss"][0], history.history["val_acc"][0]] == pytest.approx(
        model.evaluate(test, verbose=0), rel=1e-6)
    # With steps_per_epoch, an epoch is that many batches of a repeating dataset.
    steps = []
    model.fit(train.repeat(), epochs=2, steps_per_epoch=5, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(
                  on_batch_end=lambda batch, logs: steps.append(batch))])
    assert steps == [0, 1, 2, 3, 4] * 2
    predictions = model.predict(tf.data.Dataset.from_tensor_slices(digits.test.images).batch(7))
    np.testing.assert_allclose(predictions, model.predict(digits.test.images), rtol=1e-5,
                               atol=1e-6)


def test_verbose_logs_have_keras_format(capsys, monkeypatch):
    # Outside a terminal and a Jupyter kernel the bar prints only its finished line (another
    # test of this process may have imported ipykernel, which makes it redraw in place).
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    model = keras.Sequential([keras.layers.Dense(2, activation="softmax", input_shape=(3,))])
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    x, y = np.random.rand(10, 3), keras.utils.to_categorical(np.arange(10) % 2, 2)
    model.fit(x, y, epochs=2, batch_size=4, validation_split=0.2, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Train on 8 samples, validate on 2 samples"
    assert lines[1] == "Epoch 1/2"
    assert lines[2].startswith("8/8 [==============================] - 0s ")
    assert "/sample - loss: " in lines[2] and " - acc: " in lines[2]
    assert " - val_loss: " in lines[2] and lines[2].split(" - ")[-1].startswith("val_acc: ")
    assert lines[3] == "Epoch 2/2"
    model.fit(x, y, epochs=1, batch_size=4, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["Train on 10 samples", "Epoch 1/1"]
    assert lines[2].startswith("10/10 - 0s - loss: ") and " - acc: " in lines[2]
    model.evaluate(x, y, verbose=1)
    assert capsys.readouterr().out.startswith("10/10 [====")


def test_history_values_are_the_epochs_weighted_means():
    # SGD with learning rate 0 changes nothing: every batch's loss is the loss of the model,
    # so the epoch's loss must equal evaluate's (batch sizes 4, 4, 2 weigh the mean).
    model = keras.Sequential([keras.layers.Dense(2, activation="softmax", input_shape=(3,))])
    model.compile(keras.optimizers.SGD(0.0), "categorical_crossentropy", metrics=["accuracy"])
    x, y = np.random.rand(10, 3), keras.utils.to_categorical(np.arange(10) % 2, 2)
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert history.history["loss"][0] == pytest.approx(loss, rel=1e-6)
    assert history.history["acc"][0] == pytest.approx(accuracy)
    assert history.params["samples"] == 10 and history.params["batch_size"] == 4


def test_early_stopping_stops_and_restores_the_best_weights():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x = np.linspace(-1, 1, 32).reshape(-1, 1)
    # Validation targets that training moves away from: val_loss grows after epoch 1.
    stopper = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2,
                                            restore_best_weights=True)
    seen = []
    history = model.fit(x, 2 * x, validation_data=(x, -2 * x), epochs=50, verbose=0,
                        callbacks=[stopper, keras.callbacks.LambdaCallback(
                            on_epoch_end=lambda epoch, logs: seen.append(
                                (logs["val_loss"], model.get_weights())))])
    assert len(history.epoch) == 3 and stopper.stopped_epoch == 2
    best = min(range(3), key=lambda i: seen[i][0])
    for got, want in zip(model.get_weights(), seen[best][1]):
        np.testing.assert_array_equal(got, want)


def test_model_checkpoint_writes_loadable_tf_checkpoints(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.random.rand(16, 2), np.random.rand(16, 1)
    path = str(tmp_path / "weights.{epoch:02d}")
    best = keras.callbacks.ModelCheckpoint(str(tmp_path / "best"), monitor="loss",
                                           save_best_only=True, save_weights_only=True)
    model.fit(x, y, epochs=3, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path, save_weights_only=True), best])
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "weights.*.index"))) \
        == ["weights.01.index", "weights.02.index", "weights.03.index"]
    trained = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in trained])
    model.load_weights(str(tmp_path / "weights.03"))
    for got, want in zip(model.get_weights(), trained):
        np.testing.assert_array_equal(got, want)
    assert os.path.exists(str(tmp_path / "best.index"))


def test_tensorboard_writes_the_graph_and_epoch_scalars(tmp_path):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    model.compile("sgd", "mse")
    x = np.random.rand(8, 1)
    model.fit(x, x, epochs=2, verbose=0, validation_data=(x, x),
              callbacks=[keras.callbacks.TensorBoard(log_dir=str(tmp_path))])
    (events,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    scalars, graphs = {}, 0
    for event in tf.train.summary_iterator(events):
        graphs += bool(event.graph_def)
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append(event.step)
    assert graphs == 1
    assert scalars == {"loss": [0, 1], "val_loss": [0, 1]}


def test_shape_errors_name_the_input_and_the_shapes():
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"Error when checking input: expected dense_input to "
                                         r"have shape \(3,\) but got array with shape \(5,\)"):
        model.fit(np.ones((4, 5)), np.ones((4, 2)), verbose=0)
    with pytest.raises(ValueError, match=r"Error when checking target: expected dense_1 to have "
                                         r"shape \(2,\) but got array with shape \(3,\)"):
        model.fit(np.ones((4, 3)), np.ones((4, 3)), verbose=0)
    with pytest.raises(ValueError, match="Found 4 input samples and 3 target samples"):
        model.fit(np.ones((4, 3)), np.ones((3, 2)), verbose=0)
    layer = keras.layers.Dense(3)
    layer(tf.placeholder(tf.float32, [None, 4]))
    with pytest.raises(ValueError, match=r'layer "dense_2" is incompatible with the layer: '
                                         r"expected axis -1 of input shape to have value 4, but "
                                         r"received input with shape \(None, 5\)"):
        layer(tf.placeholder(tf.float32, [None, 5]))
    with pytest.raises(RuntimeError, match="compile"):
        keras.Sequential([keras.layers.Dense(1, input_shape=(1,))]).fit(
            np.ones((2, 1)), np.ones((2, 1)), verbose=0)


def test_sample_weights_weigh_the_mean_over_the_batch():
    # Keras's SUM_OVER_BATCH_SIZE: sum(weight * loss) / number of examples.
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), kernel_initializer="ones")])
    model.compile("sgd", "mse")
    x = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]])
    y = np.zeros((4, 1))
    assert model.evaluate(x, y, verbose=0) == pytest.approx((1 + 4 + 9 + 16) / 4)
    weighted = model.evaluate(x, y, sample_weight=np.array([1.0, 1.0, 0.0, 2.0]), verbose=0)
    assert weighted == pytest.approx((1 + 4 + 0 + 2 * 16) / 4)


def test_functional_summary_lists_inbound_layers():
    a, b = keras.Input(shape=(2,), name="a"), keras.Input(shape=(2,), name="b")
    model = keras.Model([a, b], keras.layers.Dense(1)(keras.layers.concatenate([a, b])))
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[2] == ("Layer (type)                    Output Shape         Param #     "
                        "Connected to                     ")
    row = next(line for line in lines if line.startswith("concatenate"))
    assert row.rstrip().endswith("a[0][0]")
    assert any(line.strip() == "b[0][0]" for line in lines)

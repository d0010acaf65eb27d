"""Saving tf.keras models: Keras's HDF5 files (both directions against files Keras wrote,
tests/data/keras/make_keras_saving_golden.py), the SavedModel export, and the TensorBoard
callback's histograms."""
import glob
import json
import os
import sys

import numpy as np
import pytest

import tfjupyter as tf

h5py = pytest.importorskip("h5py")
keras = tf.keras
DATA = os.path.join(os.path.dirname(__file__), "data", "keras")
with open(os.path.join(DATA, "predictions.json")) as _f:
    GOLDEN = json.load(_f)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _attr_json(path, name):
    with h5py.File(path, "r") as f:
        value = f.attrs[name]
    return json.loads(value.decode() if isinstance(value, bytes) else value)


# -- files Keras wrote -------------------------------------------------------------------------
def test_loads_a_keras_sequential_model_and_keeps_training_from_its_optimizer_state():
    golden = GOLDEN["sequential"]
    x, y = np.array(golden["x"]), np.array(golden["y"])
    model = keras.models.load_model(os.path.join(DATA, "sequential.h5"))
    assert [layer.name for layer in model.layers] == ["hidden", "probs"]
    np.testing.assert_allclose(model.predict(x), golden["predict"], atol=1e-6)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), golden["evaluate"], atol=1e-6)
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    # Keras trained one more epoch from the saved state: Adam's moments and step count.
    model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    np.testing.assert_allclose(model.predict(x), golden["predict_after_one_more_epoch"],
                               atol=1e-6)


def test_loads_a_keras_functional_model_with_two_inputs_and_sgd_momentum():
    golden = GOLDEN["functional"]
    xs = [np.array(golden["a"]), np.array(golden["b"])]
    model = keras.models.load_model(os.path.join(DATA, "functional.h5"))
    assert model.input_names == ["a", "b"] and model.output_names == ["out"]
    np.testing.assert_allclose(model.predict(xs), golden["predict"], atol=1e-6)
    model.fit(xs, np.array(golden["target"]), epochs=1, batch_size=4, shuffle=False, verbose=0)
    np.testing.assert_allclose(model.predict(xs), golden["predict_after_one_more_epoch"],
                               atol=1e-6)


def test_loads_an_uncompiled_keras_convnet(caplog):
    golden = GOLDEN["conv"]
    model = keras.models.load_model(os.path.join(DATA, "conv.h5"))
    assert "not* compiled" in caplog.text and model.optimizer is None
    assert model.get_layer("conv").padding == "same"
    np.testing.assert_allclose(model.predict(np.array(golden["x"])), golden["predict"],
                               atol=1e-6)


def _functional(names=("hidden", "merged", "norm", "out")):
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    hidden = keras.layers.Dense(3, activation="tanh", name=names[0])(a)
    merged = keras.layers.Concatenate(name=names[1])([hidden, b])
    normed = keras.layers.BatchNormalization(name=names[2])(merged)
    return keras.Model([a, b], keras.layers.Dense(1, name=names[3])(normed))


def test_load_weights_in_layer_order_and_by_name():
    golden = GOLDEN["functional"]
    xs = [np.array(golden["a"]), np.array(golden["b"])]
    weights = os.path.join(DATA, "weights.h5")
    renamed = _functional(("h", "m", "n", "o"))
    renamed.load_weights(weights)      # in order: the names do not matter
    np.testing.assert_allclose(renamed.predict(xs), golden["predict"], atol=1e-6)
    with tf.Graph().as_default(), pytest.raises(
            ValueError, match=r'Layer "o": weight o/kernel:0 has shape \(6, 2\), but the '
                              r"saved weight has shape \(6, 1\)"):
        a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
        merged = keras.layers.Concatenate()([keras.layers.Dense(3, name="h")(a), b])
        normed = keras.layers.BatchNormalization()(merged)
        keras.Model([a, b], keras.layers.Dense(2, name="o")(normed)).load_weights(weights)
    # By name: the layers of the file's names get its weights, the others keep theirs.
    a = keras.Input((4,))
    partial = keras.Model(a, keras.layers.Dense(1, name="extra")(
        keras.layers.Dense(3, activation="tanh", name="hidden")(a)))
    extra = partial.get_layer("extra").get_weights()
    partial.load_weights(weights, by_name=True)
    with h5py.File(weights, "r") as f:
        np.testing.assert_array_equal(partial.get_layer("hidden").get_weights()[0],
                                      f["hidden/hidden/kernel:0"][()])
    np.testing.assert_array_equal(partial.get_layer("extra").get_weights()[0], extra[0])
    with pytest.raises(ValueError, match="containing 3 layers into a model with 2 layers"):
        partial.load_weights(weights)


# -- files written here ------------------------------------------------------------------------
def test_saved_file_has_keras_layout_and_configs(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,),
                                                 name="hidden"),
                              keras.layers.Dense(2, activation="softmax", name="probs")],
                             name="seq")
    model.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", ["accuracy"])
    model.fit(np.ones((4, 4)), np.eye(2)[[0, 1, 0, 1]], batch_size=2, verbose=0)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert _text(f.attrs["keras_version"]) == "2.2.4-tf"    # TF 1.15's
        assert _text(f.attrs["backend"]) == "tensorflow"
        assert [_text(n) for n in f["model_weights"].attrs["layer_names"]] == ["hidden", "probs"]
        assert [_text(n) for n in f["model_weights/probs"].attrs["weight_names"]] == [
            "probs/kernel:0", "probs/bias:0"]
        ours = [_text(n) for n in f["optimizer_weights"].attrs["weight_names"]]
        assert f["optimizer_weights/Adam/iter:0"][()] == 2
    golden = os.path.join(DATA, "sequential.h5")
    with h5py.File(golden, "r") as f:
        keras_names = [_text(n) for n in f["optimizer_weights"].attrs["weight_names"]]
    assert ours == keras_names     # Keras's order: the iterations, then slot by slot
    # The layers' configs are Keras's (less the keys Keras 2.13+ adds to initializers).
    keras_layers = _attr_json(golden, "model_config")["config"]["layers"][1:]
    for entry in keras_layers:
        for key in ("kernel_initializer", "bias_initializer"):
            entry["config"][key] = {k: entry["config"][key][k] for k in ("class_name", "config")}
    config = _attr_json(path, "model_config")
    assert config == {"class_name": "Sequential", "config": {"name": "seq",
                                                             "layers": keras_layers}}
    training = _attr_json(path, "training_config")
    assert training["loss"] == "categorical_crossentropy" and training["metrics"] == ["accuracy"]
    assert training["optimizer_config"] == \
        _attr_json(golden, "training_config")["optimizer_config"]


def test_round_trip_keeps_predictions_and_training_state(tmp_path):
    rng = np.random.RandomState(0)
    xs, target = [rng.rand(8, 4), rng.rand(8, 3)], rng.rand(8, 1)
    model = _functional()
    model.compile(keras.optimizers.RMSprop(0.01, momentum=0.5), "mse", metrics=["mae"])
    model.fit(xs, target, epochs=2, batch_size=4, verbose=0)
    path = str(tmp_path / "functional.h5")
    keras.models.save_model(model, path)
    predicted = model.predict(xs)
    model.fit(xs, target, epochs=1, batch_size=4, shuffle=False, verbose=0)
    trained = model.get_weights()
    with tf.Graph().as_default():
        loaded = keras.models.load_model(path)
        assert loaded.metrics_names == model.metrics_names
        np.testing.assert_allclose(loaded.predict(xs), predicted, atol=1e-6)
        loaded.fit(xs, target, epochs=1, batch_size=4, shuffle=False, verbose=0)
        for got, want in zip(loaded.get_weights(), trained):
            np.testing.assert_allclose(got, want, atol=1e-6)
    # A weights file, and the model from its JSON.
    model.save_weights(str(tmp_path / "w.h5"))
    predicted = model.predict(xs)
    with tf.Graph().as_default():
        again = keras.models.model_from_json(model.to_json())
        again.load_weights(str(tmp_path / "w.h5"))
        np.testing.assert_allclose(again.predict(xs), predicted, atol=1e-6)


def test_custom_objects_and_what_cannot_be_saved(tmp_path):
    def scaled_tanh(x):
        return 2.0 * tf.tanh(x)

    model = keras.Sequential([keras.layers.Dense(2, activation=scaled_tanh, input_shape=(3,))])
    path = str(tmp_path / "custom.h5")
    model.save(path)
    want = model.predict(np.ones((1, 3)))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Unknown activation function: 'scaled_tanh'"):
            keras.models.load_model(path)
    with tf.Graph().as_default():
        loaded = keras.models.load_model(path, custom_objects={"scaled_tanh": scaled_tanh})
        np.testing.assert_allclose(loaded.predict(np.ones((1, 3))), want, atol=1e-6)
    lambda_model = keras.Sequential([keras.layers.Lambda(lambda x: x, input_shape=(3,))])
    with pytest.raises(NotImplementedError, match='Layer "lambda" \\(Lambda\\) has no get_config'):
        lambda_model.save(str(tmp_path / "lambda.h5"))


def test_without_h5py_hdf5_names_h5py_and_checkpoints_still_work(tmp_path, monkeypatch):
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    monkeypatch.setitem(sys.modules, "h5py", None)
    for save in (lambda: model.save(str(tmp_path / "m.h5")),
                 lambda: model.save_weights(str(tmp_path / "w.h5")),
                 lambda: keras.models.load_model(str(tmp_path / "m.h5"))):
        with pytest.raises(ImportError, match=r"needs h5py.*TensorFlow checkpoint files"):
            save()
    weights = model.get_weights()
    model.save_weights(str(tmp_path / "ckpt"))
    model.set_weights([np.zeros_like(w) for w in weights])
    model.load_weights(str(tmp_path / "ckpt"))
    for got, want in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(got, want)


# -- SavedModel --------------------------------------------------------------------------------
def test_export_saved_model_serves_the_model_and_loads_back(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,)),
                              keras.layers.Dropout(0.5),
                              keras.layers.Dense(2, activation="softmax")])
    x = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    want = model.predict(x)
    path = str(tmp_path / "export")
    keras.experimental.export_saved_model(model, path)
    # (Before any other graph: Keras's session, like TF 1.15's, is the last graph's.)
    assert tf.contrib.saved_model.save_keras_model(model, str(tmp_path / "contrib")) == \
        os.fsencode(str(tmp_path / "contrib"))
    assert os.path.isfile(os.path.join(path, "assets", "saved_model.json"))
    with tf.Graph().as_default(), tf.Session() as session:
        meta_graph = tf.saved_model.loader.load(session, ["serve"], path)
        signature = meta_graph.signature_def["serving_default"]
        assert signature.method_name == "tensorflow/serving/predict"
        assert list(signature.inputs) == ["dense_input"]
        assert list(signature.outputs) == ["dense_1"]
        got = session.run(signature.outputs["dense_1"].name,
                          {signature.inputs["dense_input"].name: x})
        np.testing.assert_allclose(got, want, atol=1e-6)    # Dropout off: inference
    with tf.Graph().as_default():
        loaded = keras.experimental.load_from_saved_model(path)
        np.testing.assert_allclose(loaded.predict(x), want, atol=1e-6)
    with tf.Graph().as_default():
        loaded = tf.contrib.saved_model.load_keras_model(str(tmp_path / "contrib"))
        np.testing.assert_allclose(loaded.predict(x), want, atol=1e-6)


# -- TensorBoard histograms --------------------------------------------------------------------
def test_tensorboard_writes_weight_histograms_images_and_gradients(tmp_path):
    model = keras.Sequential([keras.layers.Conv2D(2, 3, input_shape=(5, 5, 1)),
                              keras.layers.Flatten(),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy")
    rng = np.random.RandomState(0)
    x, y = rng.rand(6, 5, 5, 1), np.eye(2)[[0, 1, 0, 1, 0, 1]]
    board = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=2, write_images=True,
                                        write_grads=True)
    board.validation_data = [x[:3], y[:3], np.ones(3)]
    model.fit(x, y, epochs=5, verbose=0, callbacks=[board])
    (events,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    steps, last = {}, {}
    for event in tf.train.summary_iterator(events):
        for value in event.summary.value:
            steps.setdefault(value.tag, []).append(event.step)
            last[value.tag] = value
    histograms = {"conv2d/kernel_0", "conv2d/bias_0", "dense/kernel_0", "dense/bias_0",
                  "conv2d/kernel_0_grad", "conv2d/bias_0_grad", "dense/kernel_0_grad",
                  "dense/bias_0_grad", "conv2d_out", "flatten_out", "dense_out"}
    # TF 1.15's image tags: the name scope of a second summary of the same name is uniquified.
    images = {"conv2d/kernel_0_1/image/0", "conv2d/kernel_0_1/image/1",
              "conv2d/bias_0_1/image/0", "dense/kernel_0_1/image/0", "dense/bias_0_1/image/0"}
    assert set(steps) == histograms | images | {"loss"}
    assert all(steps[tag] == [0, 2, 4] for tag in histograms | images)
    kernel = model.get_layer("dense").get_weights()[0]     # the last histogram: epoch 4's end
    histogram = last["dense/kernel_0"].histo
    assert histogram.num == kernel.size and np.isclose(histogram.max, kernel.max())
    assert np.isclose(histogram.sum, kernel.sum(), atol=1e-5)
    assert last["dense/kernel_0_1/image/0"].image.height == 2     # [1, 2, 18, 1]: transposed
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == []


def test_nested_model_refers_to_its_calls_as_keras_does(tmp_path):
    inner = keras.Sequential([keras.layers.Dense(2, input_shape=(3,), name="inner_dense")],
                             name="inner")
    x = keras.Input((3,), name="x")
    model = keras.Model(x, keras.layers.Dense(1, name="top")(inner(x)))
    path = str(tmp_path / "nested.h5")
    model.save(path)
    want = model.predict(np.ones((2, 3)))
    layers = _attr_json(path, "model_config")["config"]["layers"]
    # Node 0 of a model with inputs of its own is the one that made its outputs: its first
    # call is node 1 (TF 1.15's _should_skip_first_node).
    assert [entry["inbound_nodes"] for entry in layers] == [
        [], [[["x", 0, 0, {}]]], [[["inner", 1, 0, {}]]]]
    with tf.Graph().as_default():
        loaded = keras.models.load_model(path)
        assert [layer.name for layer in loaded.layers] == ["x", "inner", "top"]
        np.testing.assert_allclose(loaded.predict(np.ones((2, 3))), want, atol=1e-6)

"""tf.keras (TF 1.15 graph mode) as TensorFlow's basic_text_classification and
basic_regression tutorials use it: 1-D target arrays for a Dense(1) output (TF 1.15's
standardize_single_array makes (N,) a column (N, 1)), and the input/output shapes of a
Sequential model whose first layer has an input shape, known before any call.

Expected values were produced by TensorFlow 2.21's tf_keras in graph mode
(tf.compat.v1.disable_v2_behavior(), legacy SGD) on the same weights and data."""
import numpy as np
import pytest

import tfjupyter as tf

keras = tf.keras
layers = tf.keras.layers

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75], [0.0, 0.5, 1.0],
              [1.0, -0.75, 0.25], [-0.5, -1.5, 1.25]], np.float32)
Y_BINARY = np.array([1, 0, 0, 1, 1, 0], np.float32)
Y_REGRESSION = np.array([0.5, -1.0, 2.0, 1.5, 0.0, -0.25], np.float32)
Y_CLASSES = np.array([0, 2, 1, 2, 0, 1], np.int64)
SAMPLE_WEIGHTS = np.array([1.0, 2.0, 0.5, 1.0, 0.0, 3.0], np.float32)
KERNEL = np.array([[0.3], [-0.2], [0.1]], np.float32)
BIAS = np.array([0.05], np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    keras.backend.clear_session()
    yield


def _dense_model(units=1, activation=None, loss="mse", metrics=None):
    model = keras.Sequential([layers.Dense(units, activation=activation, input_shape=(3,))])
    model.compile(keras.optimizers.SGD(0.1), loss, metrics=metrics)
    return model


def test_binary_crossentropy_with_1d_targets_evaluates_and_trains():
    model = _dense_model(activation="sigmoid", loss="binary_crossentropy", metrics=["acc"])
    model.set_weights([KERNEL, BIAS])
    assert Y_BINARY.shape == (6,)
    np.testing.assert_allclose(model.evaluate(X, Y_BINARY, batch_size=6, verbose=0),
                               [0.6273363, 0.6666667], rtol=1e-5)
    np.testing.assert_allclose(
        model.evaluate(X, Y_BINARY, sample_weight=SAMPLE_WEIGHTS, batch_size=6, verbose=0),
        [0.95735526, 0.6666667], rtol=1e-5)
    # train_on_batch reports the loss before its update.
    np.testing.assert_allclose(model.train_on_batch(X, Y_BINARY), [0.6273363, 0.6666667],
                               rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(X, Y_BINARY, batch_size=6, verbose=0),
                               [0.62501127, 0.6666667], rtol=1e-5)


def test_mse_fit_with_1d_targets_and_weighted_1d_validation_data():
    model = _dense_model()
    model.set_weights([KERNEL, BIAS])
    history = model.fit(X, Y_REGRESSION, batch_size=3, epochs=2, shuffle=False, verbose=0,
                        validation_data=(X[:4], Y_REGRESSION[:4], SAMPLE_WEIGHTS[:4]))
    np.testing.assert_allclose(history.history["loss"], [1.8575606644153595, 0.6105799674987793],
                               rtol=1e-5)
    np.testing.assert_allclose(history.history["val_loss"],
                               [0.7569418549537659, 0.3524613678455353], rtol=1e-5)


def test_sparse_categorical_crossentropy_keeps_1d_integer_labels():
    model = _dense_model(units=3, activation="softmax", loss="sparse_categorical_crossentropy",
                         metrics=["acc"])
    model.set_weights([np.array([[0.3, -0.1, 0.2], [-0.2, 0.4, 0.0], [0.1, 0.1, -0.3]],
                                np.float32), np.array([0.0, 0.1, -0.1], np.float32)])
    np.testing.assert_allclose(model.evaluate(X, Y_CLASSES, batch_size=6, verbose=0),
                               [0.92303306, 0.5], rtol=1e-5)


def test_1d_targets_for_a_wider_output_still_fail_with_the_targets_shape():
    # The column (6, 1) is checked against the output, as in TF 1.15.
    model = _dense_model(units=2)
    with pytest.raises(ValueError, match=r"Error when checking target: expected dense to have "
                                         r"shape \(2,\) but got array with shape \(1,\)"):
        model.evaluate(X, Y_REGRESSION, verbose=0)


def test_1d_inputs_feed_a_one_feature_input():
    inputs = keras.Input((1,))
    model = keras.Model(inputs, layers.Dense(1, kernel_initializer="ones")(inputs))
    prediction = model.predict(np.array([1.0, 2.0, 3.0], np.float32))
    assert prediction.shape == (3, 1)
    np.testing.assert_allclose(prediction[:, 0], [1.0, 2.0, 3.0])


def test_sequential_with_an_input_shape_knows_its_shapes_before_any_call():
    model = keras.Sequential([layers.Dense(64, activation="relu", input_shape=(9,)),
                              layers.Dense(1)])
    assert model.input_shape == (None, 9)
    assert model.output_shape == (None, 1)
    assert model.input.name == "dense_input:0"
    assert model.output.name == "dense_1/BiasAdd:0"
    lines = []
    model.summary(print_fn=lines.append)
    assert any(line.startswith("dense (Dense)") and "(None, 64)" in line and "640" in line
               for line in lines)
    assert "Total params: 705" in lines


def test_deferred_sequential_has_no_shapes_until_built():
    model = keras.Sequential([layers.Dense(4), layers.Dense(1)])
    with pytest.raises(AttributeError, match="never been called"):
        model.output_shape
    with pytest.raises(AttributeError, match="never been called"):
        model.input_shape
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    model.predict(np.ones((2, 5), np.float32))   # the first data builds it
    assert model.input_shape == (None, 5)
    assert model.output_shape == (None, 1)


def test_functional_model_shapes_unwrap_one_tensor_lists():
    inputs = keras.Input((3,))
    single = keras.Model([inputs], [layers.Dense(2)(inputs)])
    assert single.input_shape == (None, 3)
    assert single.output_shape == (None, 2)
    two = keras.Model(inputs, [layers.Dense(2)(inputs), layers.Dense(4)(inputs)])
    assert two.output_shape == [(None, 2), (None, 4)]
    assert isinstance(two.output, list) and len(two.output) == 2


def test_a_nested_model_keeps_its_shapes_and_tensorboard_histograms_still_run(tmp_path):
    inner = keras.Sequential([layers.Dense(4, input_shape=(3,))])
    outer = keras.Sequential([inner, layers.Dense(1)])
    outer.compile(keras.optimizers.SGD(0.1), "mse")
    assert (inner.input_shape, inner.output_shape) == ((None, 3), (None, 4))
    assert (outer.input_shape, outer.output_shape) == ((None, 3), (None, 1))
    # The histograms of each layer's output are computed on the validation batch fed to
    # the outer model.
    history = outer.fit(X, Y_REGRESSION, epochs=1, verbose=0, validation_data=(X, Y_REGRESSION),
                        callbacks=[keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)])
    assert len(history.history["val_loss"]) == 1
    assert any(tmp_path.rglob("events.out.tfevents.*"))

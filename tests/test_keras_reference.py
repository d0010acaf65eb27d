"""tf.keras in graph mode against TensorFlow: outputs, losses and optimizer steps of models
with fixed weights, and variable names, equal to what TF 2.21 + tf_keras (Keras's v1 graph
training loop, TF 1.15's semantics) computed for the same models
(tests/data/make_keras_reference.py made tests/data/keras_reference.json)."""
import json
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import keras

pytestmark = pytest.mark.timeout(120)

with open(os.path.join(os.path.dirname(__file__), "data", "keras_reference.json")) as f:
    REF = json.load(f)


def fixed(shape, k):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + k) * 0.5).reshape(shape).astype(np.float32)


X = fixed((6, 3), 1.0) * 2
Y = keras.utils.to_categorical([0, 1, 2, 1, 0, 2], 3)


@pytest.fixture(autouse=True)
def fresh_graph():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def with_fixed_weights(model):
    model.set_weights([fixed(w.shape, i) for i, w in enumerate(model.get_weights())])
    return model


def mlp(activation="softmax", units=3):
    return with_fixed_weights(keras.Sequential([
        keras.layers.Dense(4, activation="relu", input_shape=(3,)),
        keras.layers.Dense(units, activation=activation)]))


def close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected),
                               rtol=rtol, atol=atol)


def test_predict_of_a_fixed_weight_mlp():
    close(mlp().predict(X), REF["predict"])


@pytest.mark.parametrize("name, optimizer", [
    ("sgd", lambda: keras.optimizers.SGD(0.1)),
    ("momentum", lambda: keras.optimizers.SGD(0.1, momentum=0.9)),
    ("adam", lambda: keras.optimizers.Adam(0.01)),
    ("rmsprop", lambda: keras.optimizers.RMSprop(0.01)),
])
def test_two_training_steps_match_tensorflow(name, optimizer):
    model = mlp()
    model.compile(optimizer(), "categorical_crossentropy", metrics=["accuracy"])
    close(model.evaluate(X, Y, verbose=0), REF[name]["before"])
    model.train_on_batch(X, Y)
    model.train_on_batch(X, Y)
    for got, want in zip(model.get_weights(), REF[name]["weights"]):
        close(got, want, rtol=1e-4, atol=1e-6)
    close(model.evaluate(X, Y, verbose=0), REF[name]["after"], rtol=1e-4)


def test_sparse_binary_mse_and_clipped_probability_losses():
    model = mlp()
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    close(model.evaluate(X, np.array([0, 1, 2, 1, 0, 2]), verbose=0), REF["sparse"])
    keras.backend.clear_session()
    model = mlp("sigmoid", 1)
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    close(model.evaluate(X, np.array([[0], [1], [1], [0], [1], [0]]), verbose=0), REF["binary"])
    keras.backend.clear_session()
    model = mlp(None, 2)
    model.compile("sgd", "mse")
    close(model.evaluate(X, fixed((6, 2), 3.0), verbose=0), REF["mse"])


def test_categorical_crossentropy_of_probabilities_not_from_a_softmax():
    # TF 1.15 takes the logits only from a Softmax op; other probabilities are normalized
    # and clipped to [1e-7, 1 - 1e-7]. (TF 2.x's tf_keras also takes a sigmoid's logits,
    # so this value is computed here from TF 1.15's formula.)
    model = mlp("sigmoid", 3)
    model.compile("sgd", "categorical_crossentropy")
    p = model.predict(X).astype(np.float64)
    p = np.clip(p / p.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
    close(model.evaluate(X, Y, verbose=0), np.mean(-(Y * np.log(p)).sum(-1)))


def test_convolution_and_pooling_model():
    model = with_fixed_weights(keras.Sequential([
        keras.layers.Conv2D(2, 3, padding="same", activation="relu", input_shape=(6, 6, 1)),
        keras.layers.MaxPooling2D(), keras.layers.AveragePooling2D(pool_size=(1, 2)),
        keras.layers.Flatten(), keras.layers.Dense(2)]))
    assert [v.name for v in model.weights] == REF["cnn_names"]
    close(model.predict(fixed((2, 6, 6, 1), 0.3)), REF["cnn"])


def test_batch_normalization_and_dropout():
    model = with_fixed_weights(keras.Sequential([
        keras.layers.Dense(3, input_shape=(3,)), keras.layers.BatchNormalization(),
        keras.layers.Dropout(0.5), keras.layers.Dense(2, activation="softmax")]))
    assert [v.name for v in model.weights] == REF["bn_names"]
    # Inference: moving statistics, no dropout.
    close(model.predict(X), REF["bn_predict"])
    # A training step (learning rate 0: only the moving statistics change) updates them.
    model.compile(keras.optimizers.SGD(0.0), "categorical_crossentropy")
    model.train_on_batch(X, Y[:, :2])
    for got, want in zip(model.get_weights()[4:6], REF["bn_moving"]):
        close(got, want, rtol=1e-5)


def test_embedding_model():
    model = with_fixed_weights(keras.Sequential([
        keras.layers.Embedding(5, 2, input_length=3), keras.layers.Flatten(),
        keras.layers.Dense(1)]))
    assert [v.name for v in model.weights] == REF["emb_names"]
    close(model.predict(np.array([[0, 1, 4], [3, 3, 2]])), REF["emb"])


def test_functional_model_with_merge_layers():
    a = keras.Input(shape=(3,))
    h1, h2 = keras.layers.Dense(2)(a), keras.layers.Dense(2)(a)
    merged = keras.layers.concatenate([keras.layers.concatenate([h1, h2]),
                                       keras.layers.add([h1, h2])])
    model = with_fixed_weights(keras.Model(a, keras.layers.Dense(1)(merged)))
    close(model.predict(X), REF["func"])


@pytest.mark.parametrize("name, layer", [("lstm", keras.layers.LSTM), ("gru", keras.layers.GRU)])
def test_recurrent_layers_forward_and_one_step_through_time(name, layer):
    model = with_fixed_weights(keras.Sequential([
        layer(4, return_sequences=True, input_shape=(5, 3)), layer(3, go_backwards=True),
        keras.layers.Dense(1)]))
    # TF 1.15 names the cell's weights under the layer (TF 2 adds '/lstm_cell').
    assert [v.name for v in model.weights][:3] == [
        f"{name}/kernel:0", f"{name}/recurrent_kernel:0", f"{name}/bias:0"]
    xs = fixed((2, 5, 3), 0.5) * 2
    close(model.predict(xs), REF[name])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.train_on_batch(xs, np.array([[0.5], [-0.5]]))
    for got, want in zip(model.get_weights(), REF[name + "_trained"]):
        close(got, want, rtol=1e-4, atol=1e-6)


def test_lstm_starts_its_forget_bias_at_one_and_returns_states():
    lstm = keras.layers.LSTM(2, return_state=True)
    output, h, c = lstm(tf.placeholder(tf.float32, [None, 4, 3]))
    assert output is h and c.get_shape().as_list() == [None, 2]
    np.testing.assert_array_equal(keras.backend.get_value(lstm.bias), [0, 0, 1, 1, 0, 0, 0, 0])

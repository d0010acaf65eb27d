"""tf.keras training features of TF 1.15 programs, against what TF 2.21 + tf_keras computed in
graph mode with v2 behaviour off (Keras's v1 training loop, TF 1.15's names;
tests/data/make_keras_fit_features_reference.py made
tests/data/keras_fit_features_reference.json): the learning rate as a variable and the
callbacks that change it, models with several inputs and outputs, class and sample weights,
validation, initial_epoch and steps_per_epoch."""
import json
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import keras

from test_keras_reference import X, Y, fixed, fresh_graph, with_fixed_weights  # noqa: F401

pytestmark = pytest.mark.timeout(120)
K = keras.backend

with open(os.path.join(os.path.dirname(__file__), "data",
                       "keras_fit_features_reference.json")) as f:
    REF = json.load(f)


W = np.array([1.0, 0.5, 2.0, 0.0, 1.5, 1.0], np.float32)
XB, YR = fixed((6, 2), 2.0), fixed((6, 1), 3.0)


def mlp(lr=0.1):
    model = with_fixed_weights(keras.Sequential([
        keras.layers.Dense(4, activation="relu", input_shape=(3,)),
        keras.layers.Dense(3, activation="softmax")]))
    model.compile(keras.optimizers.SGD(lr), "categorical_crossentropy", metrics=["accuracy"])
    return model


def two_io(names=True):
    a, b = keras.Input(shape=(3,), name="a"), keras.Input(shape=(2,), name="b")
    h = keras.layers.Dense(4, activation="relu")(keras.layers.concatenate([a, b]))
    c = keras.layers.Dense(3, activation="softmax", **({"name": "cls"} if names else {}))(h)
    r = keras.layers.Dense(1, **({"name": "reg"} if names else {}))(h)
    return with_fixed_weights(keras.Model([a, b], [c, r]))


def assert_history(got, want, rtol=1e-5):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=1e-6, err_msg=name)


def assert_weights(model, want):
    for got, expected in zip(model.get_weights(), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# -- 1. the learning rate as a variable ------------------------------------------------------
def test_the_learning_rate_is_a_variable_get_value_and_set_value_use():
    model = mlp()
    assert K.get_value(model.optimizer.lr) == pytest.approx(REF["lr_initial"])
    K.set_value(model.optimizer.lr, 0.5)
    assert K.get_value(model.optimizer.learning_rate) == pytest.approx(REF["lr_after_set"])
    model.train_on_batch(X, Y)
    assert_weights(model, REF["lr_set_weights"])
    # A new rate reaches the next step through the same graph: no op is added.
    ops = len(tf.get_default_graph().get_operations())
    model.optimizer.lr = 0.25
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.25)
    model.train_on_batch(X, Y)
    assert len(tf.get_default_graph().get_operations()) == ops


@pytest.mark.parametrize("name, make", [
    ("sgd", lambda: keras.optimizers.SGD(0.1, momentum=0.5, decay=0.5)),
    ("nesterov", lambda: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True)),
    ("adam", lambda: keras.optimizers.Adam(lr=0.05, decay=0.25))])
def test_decay_divides_the_rate_by_one_plus_decay_times_iterations(name, make):
    model = mlp()
    model.compile(make(), "categorical_crossentropy")
    for _ in range(3):
        model.train_on_batch(X, Y)
    want = REF["decay_" + name]
    assert K.get_value(model.optimizer.lr) == pytest.approx(want["lr"])
    assert K.get_value(model.optimizer.iterations) == want["iterations"]
    assert_weights(model, want["trained"])


def test_learning_rate_scheduler_sets_the_rate_each_epoch_and_history_records_it():
    model = mlp()
    history = model.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.LearningRateScheduler(
                            lambda epoch, lr: lr * 0.5 if epoch else lr)])
    assert_history(history.history, REF["scheduler_history"])
    assert_weights(model, REF["scheduler_weights"])
    K.clear_session()
    model = mlp()
    history = model.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.LearningRateScheduler(
                            lambda epoch: 0.2 / (epoch + 1))])
    assert_history(history.history, REF["scheduler_old_api_history"])
    with pytest.raises(ValueError, match='"schedule" function should be float'):
        model.fit(X, Y, verbose=0, callbacks=[
            keras.callbacks.LearningRateScheduler(lambda epoch: "fast")])


def test_reduce_lr_on_plateau_halves_the_rate_down_to_min_lr():
    model = mlp(1.0)
    history = model.fit(X, Y, batch_size=6, epochs=6, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.ReduceLROnPlateau(
                            monitor="acc", factor=0.5, patience=1, min_lr=0.2)])
    assert_history(history.history, REF["plateau_history"])
    with pytest.raises(ValueError, match="factor >= 1.0"):
        keras.callbacks.ReduceLROnPlateau(factor=1.5)


# -- 2. several inputs and outputs -------------------------------------------------------------
def test_dicts_of_losses_weights_metrics_and_data_train_a_two_output_model():
    model = two_io()
    model.compile(keras.optimizers.SGD(0.1),
                  loss={"cls": "categorical_crossentropy", "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5},
                  metrics={"cls": ["accuracy"], "reg": ["mae"]})
    assert model.metrics_names == REF["multi_names"]
    history = model.fit({"a": X, "b": XB}, {"cls": Y, "reg": YR}, batch_size=4, epochs=2,
                        shuffle=False, verbose=0)
    assert_history(history.history, REF["multi_history"])
    np.testing.assert_allclose(model.evaluate([X, XB], [Y, YR], batch_size=4, verbose=0),
                               REF["multi_evaluate"], rtol=1e-5)
    np.testing.assert_allclose(
        model.evaluate([X, XB], [Y, YR], batch_size=4, verbose=0,
                       sample_weight=[W, W[::-1].copy()]),
        REF["multi_evaluate_weighted"], rtol=1e-5)
    with pytest.raises(ValueError, match='No data provided for "reg"'):
        model.evaluate([X, XB], {"cls": Y}, verbose=0)


def test_list_and_nested_metrics_are_named_per_output():
    model = two_io(names=False)
    model.compile("sgd", loss=["categorical_crossentropy", "mse"], metrics=["accuracy", "mse"])
    assert model.metrics_names == REF["multi_list_names"]
    np.testing.assert_allclose(model.evaluate([X, XB], [Y, YR], verbose=0),
                               REF["multi_list_evaluate"], rtol=1e-5)
    K.clear_session()
    model = two_io()
    model.compile("sgd", loss="mse", loss_weights=[0.3, 2.0], metrics=[["accuracy"], []])
    assert model.metrics_names == REF["multi_nested_names"]
    np.testing.assert_allclose(model.evaluate([X, XB], [Y, YR], verbose=0),
                               REF["multi_nested_evaluate"], rtol=1e-5)


def test_compile_arguments_that_do_not_fit_the_outputs_are_refused():
    model = two_io()
    with pytest.raises(ValueError, match="one entry per model outputs. The model has 2"):
        model.compile("sgd", loss=["mse"])
    with pytest.raises(ValueError, match=r"Unknown entries in loss dictionary: \['out'\]"):
        model.compile("sgd", loss={"out": "mse"})
    with pytest.raises(ValueError, match="list as loss_weights"):
        model.compile("sgd", loss="mse", loss_weights=[1.0])
    model.compile("sgd", loss="mse")
    with pytest.raises(ValueError, match="Expected to see 2 array"):
        model.fit([X, XB], [Y], verbose=0)


# -- 3. weights, validation, epochs and steps --------------------------------------------------
def test_class_and_sample_weights_weigh_the_training_loss():
    for arguments, key in (({"class_weight": {0: 1.0, 1: 2.0, 2: 0.5}}, "class_weight"),
                           ({"sample_weight": W}, "sample_weight")):
        K.clear_session()
        model = mlp()
        history = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0,
                            **arguments)
        assert_history(history.history, REF[key + "_history"])
    K.clear_session()
    model = mlp()
    history = model.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0,
                        sample_weight=W, class_weight={0: 1.0, 1: 2.0, 2: 0.5})
    assert_history(history.history, REF["both_weights_history"])
    with pytest.raises(ValueError, match=r"The classes \{2\} exist in the data but not"):
        model.fit(X, Y, verbose=0, class_weight={0: 1.0, 1: 2.0})


def test_evaluate_weighs_the_loss_with_sample_weights():
    model = mlp()
    np.testing.assert_allclose(model.evaluate(X, Y, batch_size=4, sample_weight=W, verbose=0),
                               REF["evaluate_weighted"], rtol=1e-5)
    with pytest.raises(ValueError, match="sample_weight cannot be broadcast"):
        model.evaluate(X, Y, sample_weight=W[:4], verbose=0)


def test_validation_split_and_validation_data_carry_sample_weights():
    model = mlp()
    history = model.fit(X, Y, batch_size=2, epochs=2, shuffle=False, verbose=0,
                        sample_weight=W, validation_split=0.5)
    assert_history(history.history, REF["validation_split_history"])
    K.clear_session()
    model = mlp()
    history = model.fit(X[:4], Y[:4], batch_size=2, epochs=2, shuffle=False, verbose=0,
                        validation_data=(X[4:], Y[4:], W[4:]))
    assert_history(history.history, REF["validation_data_weighted_history"])


def test_initial_epoch_and_steps_per_epoch_on_arrays():
    model = mlp()
    history = model.fit(X, Y, batch_size=4, epochs=3, initial_epoch=1, shuffle=False,
                        verbose=0)
    assert history.epoch == REF["initial_epoch"]
    assert_history(history.history, REF["initial_epoch_history"])
    K.clear_session()
    model = mlp()
    # Each step of steps_per_epoch feeds all the arrays.
    history = model.fit(X, Y, steps_per_epoch=2, epochs=2, verbose=0)
    assert_history(history.history, REF["steps_per_epoch_history"])
    assert_weights(model, REF["steps_per_epoch_weights"])


def test_shuffle_batch_moves_whole_batches_and_keeps_the_partial_one_last():
    from tfjupyter.keras.engine.data_input import ArrayInput
    samples = np.arange(10)
    source = ArrayInput([samples], [samples], [np.ones(10)], 3, "batch")
    orders = set()
    for _ in range(20):
        batches = [xs[0].tolist() for xs, _, _ in source.batches()]
        assert sorted(batches[:3]) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
        assert batches[3] == [9]
        orders.add(str(batches))
    assert len(orders) > 1


def test_weighted_metrics_weigh_with_sample_and_class_weights():
    model = with_fixed_weights(keras.Sequential([
        keras.layers.Dense(4, activation="relu", input_shape=(3,)),
        keras.layers.Dense(3, activation="softmax")]))
    model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy",
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    assert model.metrics_names == REF["weighted_metrics_names"]
    labels = np.array([0, 1, 2, 1, 0, 2])
    history = model.fit(X, labels, batch_size=4, epochs=2, shuffle=False, verbose=0,
                        sample_weight=W, class_weight={0: 3.0, 1: 1.0, 2: 0.5})
    assert_history(history.history, REF["weighted_metrics_history"])
    np.testing.assert_allclose(
        model.evaluate(X, labels, sample_weight=W, batch_size=4, verbose=0),
        REF["weighted_metrics_evaluate"], rtol=1e-5)


def test_class_and_sample_weights_by_output_name():
    model = two_io()
    model.compile(keras.optimizers.SGD(0.1), loss=["categorical_crossentropy", "mse"],
                  metrics={"cls": "accuracy"})
    history = model.fit([X, XB], [Y, YR], batch_size=4, epochs=1, shuffle=False, verbose=0,
                        class_weight={"cls": {0: 1.0, 1: 2.0, 2: 0.5}},
                        sample_weight={"reg": W})
    assert_history(history.history, REF["multi_class_weight_history"])
    with pytest.raises(TypeError, match="should be either a list or a dict"):
        model.fit([X, XB], [Y, YR], verbose=0, sample_weight=W)


def test_a_dataset_epoch_averages_the_loss_over_its_steps():
    model = mlp()
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4).repeat()
    history = model.fit(dataset, steps_per_epoch=2, epochs=2, verbose=0)
    assert_history(history.history, REF["dataset_history"])

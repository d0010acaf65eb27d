"""tf.keras.estimator.model_to_estimator (TF 1.15) and tf.keras.models.clone_model: the
Estimator trains the compiled model from its current weights, with BatchNormalization's
updates, evaluates the compiled loss and metrics, predicts and exports by the model's input
and output names; checked against values computed here from the predictions."""
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import keras

from test_keras_training import digits, fresh_graph  # noqa: F401 (fixtures)

pytestmark = pytest.mark.timeout(120)


def _input_fn(key, images, labels, **kwargs):
    return tf.estimator.inputs.numpy_input_fn({key: images}, labels, **kwargs)


def _cross_entropy(probabilities, labels):
    return float(np.mean(-np.log(probabilities[np.arange(len(labels)), labels])))


def test_a_sequential_model_trains_evaluates_predicts_and_exports(digits, tmp_path):
    model = keras.Sequential([keras.layers.Dense(32, activation="relu", input_shape=(64,)),
                              keras.layers.BatchNormalization(),
                              keras.layers.Dropout(0.1),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    assert model.input_names == ["dense_input"] and model.output_names == ["dense_1"]
    estimator = keras.estimator.model_to_estimator(keras_model=model,
                                                   model_dir=str(tmp_path / "model"))
    estimator.train(_input_fn("dense_input", digits.train.images, digits.train.labels,
                              batch_size=64, num_epochs=None, shuffle=True), steps=300)
    assert estimator.get_variable_value("global_step") == 300
    names = set(estimator.get_variable_names())
    assert {"dense/kernel", "dense_1/bias", "batch_normalization/gamma",
            "batch_normalization/moving_mean"} <= names
    # Every training step ran BatchNormalization's moving-average updates.
    assert np.abs(estimator.get_variable_value("batch_normalization/moving_mean")).max() > 0.1
    test_fn = _input_fn("dense_input", digits.test.images, digits.test.labels,
                        batch_size=len(digits.test.labels), shuffle=False)
    metrics = estimator.evaluate(test_fn)
    assert set(metrics) == {"acc", "loss", "global_step"}
    predictions = list(estimator.predict(_input_fn("dense_input", digits.test.images, None,
                                                   shuffle=False)))
    assert set(predictions[0]) == {"dense_1"}
    probabilities = np.stack([p["dense_1"] for p in predictions])
    # Evaluation: no dropout, the moving statistics; so the same outputs as predict's.
    accuracy = np.mean(probabilities.argmax(1) == digits.test.labels)
    assert metrics["acc"] == pytest.approx(accuracy, abs=1e-6) and accuracy > 0.9
    assert metrics["loss"] == pytest.approx(_cross_entropy(probabilities, digits.test.labels),
                                            rel=1e-4)
    # The serving signature takes the model's input name and gives its output name.
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"dense_input": tf.placeholder(tf.float32, [None, 64])})
    export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver)
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        signature = meta.signature_def["serving_default"]
        served = sess.run(signature.outputs["dense_1"].name,
                          {signature.inputs["dense_input"].name: digits.test.images[:5]})
    np.testing.assert_allclose(served, probabilities[:5], rtol=1e-5, atol=1e-6)


def test_training_starts_from_the_keras_models_weights(digits, tmp_path):
    """A functional model whose weights were set (or trained) before: the Estimator's first
    step starts from them (a zero learning rate keeps them), and evaluates as Keras does."""
    pixels = keras.Input(shape=(64,), name="pixels")
    out = keras.layers.Dense(10, activation="softmax", name="out")(pixels)
    model = keras.Model(pixels, out)
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.RandomState(1)
    kernel, bias = rng.normal(0, 0.1, (64, 10)).astype(np.float32), np.arange(10, dtype=np.float32)
    model.set_weights([kernel, bias])
    keras_loss, keras_accuracy = model.evaluate(digits.test.images, digits.test.labels,
                                                verbose=0)
    model_dir = tmp_path / "model"
    estimator = keras.estimator.model_to_estimator(
        keras_model=model, config=tf.estimator.RunConfig(model_dir=str(model_dir)))
    assert os.path.exists(str(model_dir / "keras" / "keras_model.ckpt.index"))
    estimator.train(_input_fn("pixels", digits.train.images, digits.train.labels,
                              batch_size=32, shuffle=True), steps=2)
    np.testing.assert_array_equal(estimator.get_variable_value("out/kernel"), kernel)
    np.testing.assert_array_equal(estimator.get_variable_value("out/bias"), bias)
    metrics = estimator.evaluate(_input_fn("pixels", digits.test.images, digits.test.labels,
                                           batch_size=len(digits.test.labels), shuffle=False))
    assert metrics["acc"] == pytest.approx(keras_accuracy, abs=1e-6)
    assert metrics["loss"] == pytest.approx(keras_loss, rel=1e-5)
    assert metrics["global_step"] == 2


def test_model_to_estimator_errors(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match="has not been compiled yet"):
        keras.estimator.model_to_estimator(keras_model=model)
    with pytest.raises(ValueError, match="Either `keras_model` or `keras_model_path`"):
        keras.estimator.model_to_estimator()
    with pytest.raises(ValueError, match="not both"):
        keras.estimator.model_to_estimator(keras_model=model, keras_model_path="m.h5")
    model.compile("sgd", "mse")
    estimator = keras.estimator.model_to_estimator(keras_model=model,
                                                   model_dir=str(tmp_path / "m"))
    wrong = tf.estimator.inputs.numpy_input_fn({"x": np.ones((4, 3))}, np.ones((4, 2)),
                                               shuffle=False)
    with pytest.raises(KeyError, match="does not have the expected input keys"):
        estimator.train(wrong, steps=1)
    # One tensor for a one-input model needs no key.
    estimator.train(tf.estimator.inputs.numpy_input_fn(np.ones((4, 3)), np.ones((4, 2)),
                                                       shuffle=False), steps=1)
    assert estimator.get_variable_value("global_step") == 1


def test_clone_model_has_the_architecture_and_names_with_new_weights():
    a = keras.Input(shape=(4,), name="a")
    shared = keras.layers.Dense(3, name="shared")
    merged = keras.layers.add([shared(a), shared(a)])
    model = keras.Model(a, keras.layers.Dense(2, activation="relu", name="top")(merged))
    with tf.Graph().as_default():
        features = tf.placeholder(tf.float32, [None, 4], name="features")
        clone = keras.models.clone_model(model, input_tensors=features)
        assert clone.inputs[0] is features and clone.input_names == ["a"]
        assert [w.op.name for w in clone.weights] == ["shared/kernel", "shared/bias",
                                                      "top/kernel", "top/bias"]
        assert clone.get_layer("top").activation is model.get_layer("top").activation
        values = [np.full(w.get_shape().as_list(), i + 1.0, np.float32)
                  for i, w in enumerate(clone.weights)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for w, v in zip(clone.weights, values):
                w.load(v, sess)
            got = sess.run(clone.outputs[0], {features: np.ones((1, 4), np.float32)})
    # shared: 4*1 + 2 = 6 per unit, twice -> 12; top: 3*12*3 + 4 = 112.
    np.testing.assert_array_equal(got, [[112.0, 112.0]])
    with pytest.raises(ValueError, match="subclass model"):
        class Sub(keras.Model):
            def __init__(self):
                super().__init__()
                self.dense = keras.layers.Dense(1)

            def call(self, inputs):
                return self.dense(inputs)
        keras.models.clone_model(Sub())

"""Writes the golden Keras HDF5 files tests/test_keras_saving.py reads, with Keras 2
(tf_keras, the Keras of TF 1.x's layout) in a TensorFlow venv:

    TF_USE_LEGACY_KERAS=1 /tmp/tfvenv/bin/python tests/data/keras/make_keras_saving_golden.py

sequential.h5   a compiled, trained Sequential model (Dense relu, Dense softmax; Adam)
functional.h5   a two-input functional model (Dense, Concatenate, BatchNormalization, Dense)
conv.h5         a small Sequential convnet (Conv2D, MaxPooling2D, Flatten, Dropout, Dense)
weights.h5      functional.h5's model's weights alone (save_weights)
predictions.json  each model's predictions on fixed inputs
"""
import json
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.RandomState(0)
keras.utils.set_random_seed(0)
predictions = {}

x = rng.rand(8, 4).astype("float32")
y = np.eye(2, dtype="float32")[rng.randint(0, 2, 8)]
sequential = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,),
                                                  name="hidden"),
                               keras.layers.Dense(2, activation="softmax", name="probs")],
                              name="seq")
sequential.compile(optimizer=keras.optimizers.legacy.Adam(0.01),
                   loss="categorical_crossentropy", metrics=["accuracy"])
sequential.fit(x, y, epochs=2, batch_size=4, verbose=0)
sequential.save(os.path.join(HERE, "sequential.h5"))
predictions["sequential"] = {"x": x.tolist(), "y": y.tolist(),
                             "predict": sequential.predict(x, verbose=0).tolist(),
                             "evaluate": sequential.evaluate(x, y, verbose=0)}
# One more epoch from the saved state (the optimizer's too): what a loaded model must reach.
sequential.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
predictions["sequential"]["predict_after_one_more_epoch"] = sequential.predict(x).tolist()

a = keras.Input((4,), name="a")
b = keras.Input((3,), name="b")
hidden = keras.layers.Dense(3, activation="tanh", name="hidden")(a)
merged = keras.layers.Concatenate(name="merged")([hidden, b])
normed = keras.layers.BatchNormalization(name="norm")(merged)
out = keras.layers.Dense(1, name="out")(normed)
functional = keras.Model([a, b], out, name="two_inputs")
functional.compile(optimizer=keras.optimizers.legacy.SGD(0.1, momentum=0.9), loss="mse")
xa, xb = rng.rand(8, 4).astype("float32"), rng.rand(8, 3).astype("float32")
target = rng.rand(8, 1).astype("float32")
functional.fit([xa, xb], target, epochs=2, batch_size=4, verbose=0)
functional.save(os.path.join(HERE, "functional.h5"))
functional.save_weights(os.path.join(HERE, "weights.h5"))
predictions["functional"] = {"a": xa.tolist(), "b": xb.tolist(), "target": target.tolist(),
                             "predict": functional.predict([xa, xb], verbose=0).tolist()}
functional.fit([xa, xb], target, epochs=1, batch_size=4, shuffle=False, verbose=0)
predictions["functional"]["predict_after_one_more_epoch"] = functional.predict(
    [xa, xb], verbose=0).tolist()

images = rng.rand(2, 6, 6, 1).astype("float32")
conv = keras.Sequential([keras.layers.Conv2D(2, 3, padding="same", activation="relu",
                                             input_shape=(6, 6, 1), name="conv"),
                         keras.layers.MaxPooling2D(name="pool"),
                         keras.layers.Flatten(name="flat"),
                         keras.layers.Dropout(0.5, name="drop"),
                         keras.layers.Dense(2, name="logits")], name="convnet")
conv.save(os.path.join(HERE, "conv.h5"))
predictions["conv"] = {"x": images.tolist(), "predict": conv.predict(images, verbose=0).tolist()}

with open(os.path.join(HERE, "predictions.json"), "w") as f:
    json.dump(predictions, f)

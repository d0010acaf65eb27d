"""tf.keras layers and models as parts of hand-written TF 1.x graphs: Keras's names, the
Keras session (get_session / set_session / clear_session), the learning phase, shared
weights, summary(), and the namespace's small utilities."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import keras

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def fresh_graph():
    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


def test_layers_in_a_hand_written_graph_use_keras_names_and_train_with_tf_train():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    hidden = keras.layers.Dense(4, activation="relu")(x)
    with tf.variable_scope("head"):
        output = keras.layers.Dense(1)(hidden)
    assert [v.name for v in tf.global_variables()] == [
        "dense/kernel:0", "dense/bias:0", "head/dense_1/kernel:0", "head/dense_1/bias:0"]
    assert [v.name for v in tf.trainable_variables()] == [
        v.name for v in tf.global_variables()]
    assert hidden.op.name == "dense/Relu" and output.op.name == "head/dense_1/BiasAdd"
    loss = tf.reduce_mean(tf.square(output - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    data = np.random.RandomState(0).rand(16, 3).astype(np.float32)
    target = data.sum(1, keepdims=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data, y: target})
        for _ in range(50):
            sess.run(train, {x: data, y: target})
        assert sess.run(loss, {x: data, y: target}) < first / 4


def test_get_session_initializes_keras_variables_once_and_set_session_is_used():
    layer = keras.layers.Dense(2, kernel_initializer="ones")
    out = layer(tf.constant([[1.0, 2.0]]))
    session = keras.backend.get_session()
    np.testing.assert_array_equal(session.run(out), [[3.0, 3.0]])
    # A value set by the user is not reset by a later get_session().
    keras.backend.set_value(layer.kernel, np.full((2, 2), 2.0))
    assert keras.backend.get_session() is session
    np.testing.assert_array_equal(keras.backend.get_value(out), [[6.0, 6.0]])
    mine = tf.Session()
    keras.backend.set_session(mine)
    assert keras.backend.get_session() is mine
    np.testing.assert_array_equal(mine.run(out), [[3.0, 3.0]])   # initialized in it too
    with tf.Session() as default:
        assert keras.backend.get_session() is default
    mine.close()


def test_clear_session_gives_a_new_graph_and_restarts_names():
    keras.layers.Dense(1)(tf.placeholder(tf.float32, [None, 2]))
    graph = tf.get_default_graph()
    keras.backend.clear_session()
    assert tf.get_default_graph() is not graph
    layer = keras.layers.Dense(1)
    assert layer.name == "dense"
    assert keras.layers.Dense(1).name == "dense_1"


def test_learning_phase_switches_dropout():
    x = tf.ones([200, 10])
    dropped = keras.layers.Dropout(0.5)(x)
    phase = keras.backend.learning_phase()
    assert phase.op.name == "keras_learning_phase"
    session = keras.backend.get_session()
    np.testing.assert_array_equal(session.run(dropped), np.ones((200, 10)))
    training = session.run(dropped, {phase: True})
    assert set(np.unique(training)) == {0.0, 2.0}
    assert 0.4 < np.mean(training == 0) < 0.6
    # An explicit training argument wins over the phase.
    always = keras.layers.Dropout(0.5)(x, training=True)
    assert np.mean(session.run(always) == 0) > 0.4


def test_a_functional_model_called_on_new_tensors_shares_its_weights():
    inputs = keras.Input(shape=(3,), name="features")
    outputs = keras.layers.Dense(2, name="scores")(keras.layers.Dense(4)(inputs))
    model = keras.Model(inputs=inputs, outputs=outputs, name="scorer")
    assert inputs.name == "features:0" and model.input_names == ["features"]
    assert model.output_names == ["scores"]
    assert [l.name for l in model.layers] == ["features", "dense", "scores"]
    other = tf.placeholder(tf.float32, [None, 3])
    again = model(other)
    assert again.op.name.startswith("scorer/scores/")
    assert len(tf.global_variables()) == 4
    data = np.random.rand(5, 3)
    session = keras.backend.get_session()
    np.testing.assert_allclose(session.run(again, {other: data}), model.predict(data),
                               rtol=1e-6)
    # A nested model is a layer.
    stacked = keras.Sequential([model, keras.layers.Dense(1)])
    assert stacked.predict(data).shape == (5, 1)


def test_disconnected_graphs_and_non_layer_outputs_are_refused():
    a, b = keras.Input(shape=(2,)), keras.Input(shape=(2,))
    out = keras.layers.add([a, keras.layers.Dense(2)(b)])
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(a, out)
    with pytest.raises(ValueError, match="outputs of Keras layers"):
        keras.Model(a, tf.identity(a) * 2)


def test_weights_round_trip_and_trainable_flags():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)),
                              keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    assert model.count_params() == 9 + 12 + 4
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2
    values = [np.full(w.shape, i, np.float32) for i, w in enumerate(model.get_weights())]
    model.set_weights(values)
    for got, want in zip(model.get_weights(), values):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="expecting 8 weights"):
        model.set_weights(values[:2])
    model.layers[0].trainable = False
    assert len(model.trainable_weights) == 4


def test_frozen_layers_do_not_train_and_tf_train_optimizers_compile():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)), keras.layers.Dense(1)])
    model.layers[0].trainable = False
    model.compile(tf.train.GradientDescentOptimizer(0.1), "mse")
    before = model.get_weights()
    model.fit(np.random.rand(8, 2), np.random.rand(8, 1), epochs=2, verbose=0)
    after = model.get_weights()
    np.testing.assert_array_equal(after[0], before[0])
    assert not np.array_equal(after[2], before[2])


def test_summary_prints_keras_table():
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    assert lines == [
        'Model: "sequential"',
        "_" * 65,
        "Layer (type)                 Output Shape              Param #   ",
        "=" * 65,
        "dense (Dense)                (None, 4)                 16        ",
        "_" * 65,
        "dense_1 (Dense)              (None, 2)                 10        ",
        "=" * 65,
        "Total params: 26",
        "Trainable params: 26",
        "Non-trainable params: 0",
        "_" * 65]


def test_deferred_sequential_is_built_by_its_first_data():
    model = keras.Sequential()
    model.add(keras.layers.Dense(2))
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 5)), np.ones((4, 2)), verbose=0)
    assert [v.name for v in model.weights] == ["sequential/dense/kernel:0",
                                               "sequential/dense/bias:0"]
    assert model.inputs[0].get_shape().as_list() == [None, 5]


def test_to_categorical_and_local_only_datasets(tmp_path, monkeypatch):
    np.testing.assert_array_equal(keras.utils.to_categorical([[1], [0], [2]]),
                                  [[0, 1, 0], [1, 0, 0], [0, 0, 1]])
    assert keras.utils.to_categorical([3, 1], 5).shape == (2, 5)
    with pytest.raises(ValueError, match="class indices"):
        keras.utils.to_categorical([3], 2)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="never downloads"):
        keras.datasets.mnist.load_data()
    (tmp_path / "datasets").mkdir()
    np.savez(tmp_path / "datasets" / "mnist.npz", x_train=np.zeros((2, 28, 28), np.uint8),
             y_train=np.array([1, 2]), x_test=np.zeros((1, 28, 28), np.uint8),
             y_test=np.array([3]))
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    assert x_train.shape == (2, 28, 28) and list(y_test) == [3]


def test_get_file_reads_keras_cache_and_never_downloads(tmp_path, monkeypatch):
    # TF 1.15's get_file: <cache_dir or $KERAS_HOME or ~/.keras>/<cache_subdir>/<fname>, the
    # hash checked (md5 for 32 hex digits, sha256 for 64), tar archives extracted on untar.
    import gzip
    import hashlib
    import tarfile
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    origin = "http://download.tensorflow.org/data/iris_training.csv"
    with pytest.raises(FileNotFoundError, match="never downloads.*iris_training.csv"):
        keras.utils.get_file("iris_training.csv", origin)
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "iris_training.csv").write_text("120,4,setosa\n")
    path = keras.utils.get_file("iris_training.csv", origin)
    assert path == str(tmp_path / "datasets" / "iris_training.csv")
    assert tf.contrib.keras.utils.get_file("iris_training.csv", origin) == path
    data = b"120,4,setosa\n"
    assert keras.utils.get_file("iris_training.csv", origin,
                                file_hash=hashlib.sha256(data).hexdigest()) == path
    assert keras.utils.get_file("iris_training.csv", origin,
                                md5_hash=hashlib.md5(data).hexdigest()) == path
    with pytest.raises(ValueError, match="md5 hash"):
        keras.utils.get_file("iris_training.csv", origin, file_hash="0" * 32)
    other = tmp_path / "elsewhere"
    (other / "models").mkdir(parents=True)
    (tmp_path / "payload.txt").write_text("inside")
    with tarfile.open(other / "models" / "bundle.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "payload.txt", arcname="bundle/payload.txt")
    untarred = keras.utils.get_file("bundle", "http://x/bundle.tar.gz", untar=True,
                                    cache_subdir="models", cache_dir=str(other))
    assert untarred == str(other / "models" / "bundle")
    assert (other / "models" / "bundle" / "payload.txt").read_text() == "inside"
    # fashion_mnist: Keras's four gzipped IDX files under datasets/fashion-mnist
    folder = tmp_path / "datasets" / "fashion-mnist"
    folder.mkdir()
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    for prefix, count in (("train", 2), ("t10k", 1)):
        with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(b"\0" * 8 + bytes([7, 3][:count]))
        with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(b"\0" * 16 + images[:count].tobytes())
    (x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, images)
    assert list(y_train) == [7, 3] and list(y_test) == [7] and x_test.shape == (1, 28, 28)

def test_keras_is_in_the_tf_namespace():
    assert tf.keras is keras
    assert tf.keras.layers.Dense is keras.layers.Dense
    assert tf.keras.models.Sequential is tf.keras.Sequential


def test_a_subclassed_model_trains_with_its_attribute_layers():
    class Regressor(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(8, activation="tanh")
            self.norm = keras.layers.BatchNormalization()
            self.out = keras.layers.Dense(1)

        def call(self, inputs, training=None):
            return self.out(self.norm(self.hidden(inputs), training=training))

    model = Regressor()
    model.compile(keras.optimizers.Adam(0.05), "mse")
    x = np.random.RandomState(1).rand(64, 2)
    y = x.sum(1, keepdims=True)
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 5
    assert [v.name for v in model.trainable_weights][:2] == ["regressor/dense/kernel:0",
                                                             "regressor/dense/bias:0"]
    moving_mean = model.norm.moving_mean
    assert np.any(keras.backend.get_value(moving_mean) != 0)   # fit ran the updates
    assert [l.name for l in model.layers] == ["dense", "batch_normalization", "dense_1"]
    with pytest.raises(NotImplementedError, match="subclassed model"):
        model.save("model.h5")   # HDF5 needs a config: Sequential and functional models only

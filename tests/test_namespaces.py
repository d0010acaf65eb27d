"""TF 1.13+ namespaces and TF 1.x's compat paths: the same objects as the top-level API."""
import pytest

import tfjupyter as tf


def test_compat_v1_is_the_whole_api():
    import tfjupyter.compat.v1 as v1
    assert v1.Session is tf.Session and v1.placeholder is tf.placeholder
    assert v1.data is tf.data and v1.metrics is tf.metrics and v1.train is tf.train
    assert tf.compat.v1 is v1 and tf.compat.as_bytes("x") == b"x"
    assert "Session" in dir(v1)
    star = {}
    exec("from tfjupyter.compat.v1 import *", star)
    assert star["placeholder"] is tf.placeholder and star["metrics"] is tf.metrics
    with pytest.raises(AttributeError, match="compat.v1' has no attribute 'no_such_api'"):
        v1.no_such_api  # noqa: B018


def test_eager_switches():
    import tfjupyter.compat.v1 as v1
    assert v1.disable_eager_execution() is None and v1.disable_v2_behavior() is None
    assert tf.executing_eagerly() is False
    with pytest.raises(ValueError, match="graphs only.*tf.enable_eager_execution"):
        tf.enable_eager_execution()
    with pytest.raises(ValueError, match="graphs only"):
        v1.enable_v2_behavior()


def test_namespaces_hold_the_same_objects():
    assert tf.math.reduce_sum is tf.reduce_sum and tf.math.log is tf.log
    assert tf.math.div_no_nan is tf.div_no_nan and tf.math.softplus is tf.nn.softplus
    assert tf.math.confusion_matrix is tf.confusion_matrix
    assert tf.random.uniform is tf.random_uniform and tf.random.normal is tf.random_normal
    assert tf.random.set_random_seed is tf.set_random_seed
    assert tf.linalg.matmul is tf.matmul
    assert tf.dtypes.float32 is tf.float32 and tf.dtypes.as_dtype is tf.as_dtype
    assert tf.dtypes.cast is tf.cast and tf.dtypes.saturate_cast is tf.saturate_cast
    assert tf.contrib.deprecated.scalar_summary is tf.scalar_summary
    assert tf.contrib.lookup.HashTable is not None


def test_namespaced_ops_run():
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.random.set_random_seed(1)
        draws = tf.random.categorical(tf.constant([[0.0, 50.0]]), 4)
        assert draws.dtype == tf.int64
        assert sess.run(draws).tolist() == [[1, 1, 1, 1]]
        assert sess.run(tf.strings.join(["a", "b"], separator="-")) == b"a-b"
        assert sess.run(tf.math.reduce_variance([1.0, 3.0])) == pytest.approx(1.0)
        assert sess.run(tf.math.reduce_std([1.0, 3.0])) == pytest.approx(1.0)
        # Clipped to the target's range first (a plain cast of 300.0 to uint8 would wrap).
        assert sess.run(tf.saturate_cast([-5.0, 300.0, 7.9], tf.uint8)).tolist() == [0, 255, 7]


def test_aggregate_metric_map():
    with tf.Graph().as_default():
        labels = tf.constant([1, 0])
        values, updates = tf.contrib.metrics.aggregate_metric_map({
            "accuracy": tf.metrics.accuracy(labels, tf.constant([1, 1])),
            "mean": tf.metrics.mean(tf.constant([2.0, 4.0]))})
        assert sorted(values) == ["accuracy", "mean"] == sorted(updates)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run(updates)
            assert sess.run(values) == {"accuracy": 0.5, "mean": 3.0}
        with pytest.raises(TypeError, match="must be a dict"):
            tf.contrib.metrics.aggregate_metric_map([1, 2])


def test_contrib_streaming_metrics_take_predictions_first():
    with tf.Graph().as_default():
        value, update = tf.contrib.metrics.streaming_precision(
            predictions=tf.constant([True, True, False]), labels=tf.constant([True, False, True]))
        acc, acc_update = tf.contrib.metrics.streaming_accuracy(tf.constant([1, 2]),
                                                                tf.constant([1, 3]))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run([update, acc_update]) == [0.5, 0.5]


def test_tensorflow_python_import_paths_give_the_same_objects():
    from tfjupyter.python.framework import dtypes, ops
    from tfjupyter.python.ops import lookup_ops, math_ops, metrics, parsing_ops, variable_scope
    from tfjupyter.python.platform import tf_logging
    from tfjupyter.python.training import ftrl
    assert lookup_ops.index_to_string_table_from_tensor is \
        tf.contrib.lookup.index_to_string_table_from_tensor
    assert lookup_ops.tables_initializer is tf.tables_initializer
    assert metrics.auc is tf.metrics.auc and parsing_ops.decode_csv is tf.decode_csv
    assert parsing_ops.parse_example is tf.parse_example
    assert math_ops.reduce_sum is tf.reduce_sum
    assert variable_scope.variable_scope is tf.variable_scope
    assert ops.GraphKeys is tf.GraphKeys and dtypes.float32 is tf.float32
    assert tf_logging.info is tf.logging.info and ftrl.FtrlOptimizer is tf.train.FtrlOptimizer


def test_tensorflow_python_estimator_and_keras_paths_give_the_same_objects():
    """The module paths of TF 1.15 (tensorflow/python/keras, tensorflow_estimator's
    tensorflow.python.estimator) that public programs import estimator and Keras names from."""
    from tfjupyter.python import keras
    from tfjupyter.python.estimator import estimator, estimator_lib, keras as estimator_keras
    from tfjupyter.python.estimator import exporter, mode_keys, model_fn, run_config, training
    from tfjupyter.python.estimator.canned import dnn, dnn_linear_combined, linear
    from tfjupyter.python.estimator.export import export, export_lib, export_output
    from tfjupyter.python.estimator.inputs import inputs, numpy_io
    from tfjupyter.python.keras import backend as K
    from tfjupyter.python.keras.engine import training as keras_training
    from tfjupyter.python.keras.layers import convolutional, core, merge, normalization, recurrent
    from tfjupyter.python.keras.models import Sequential, clone_model
    from tfjupyter.python.keras.utils import np_utils
    est = tf.estimator
    assert estimator.Estimator is est.Estimator and estimator_lib.DNNClassifier is \
        est.DNNClassifier
    assert model_fn.EstimatorSpec is est.EstimatorSpec and model_fn.ModeKeys is est.ModeKeys
    assert mode_keys.ModeKeys is est.ModeKeys and run_config.RunConfig is est.RunConfig
    assert training.train_and_evaluate is est.train_and_evaluate
    assert training.TrainSpec is est.TrainSpec and exporter.FinalExporter is est.FinalExporter
    assert dnn.DNNRegressor is est.DNNRegressor and linear.LinearClassifier is \
        est.LinearClassifier
    assert dnn_linear_combined.DNNLinearCombinedClassifier is est.DNNLinearCombinedClassifier
    assert export.build_raw_serving_input_receiver_fn is \
        est.export.build_raw_serving_input_receiver_fn
    assert export_lib.ServingInputReceiver is est.export.ServingInputReceiver
    assert export_output.PredictOutput is est.export.PredictOutput
    assert numpy_io.numpy_input_fn is inputs.numpy_input_fn is est.inputs.numpy_input_fn
    assert estimator_keras.model_to_estimator is tf.keras.estimator.model_to_estimator
    assert keras.estimator.model_to_estimator is tf.keras.estimator.model_to_estimator
    assert keras.Sequential is Sequential is tf.keras.Sequential and keras.Model is \
        tf.keras.Model
    assert keras_training.Model is tf.keras.Model and clone_model is tf.keras.models.clone_model
    assert K.get_session is tf.keras.backend.get_session and keras.layers.Dense is \
        tf.keras.layers.Dense
    assert core.Dense is tf.keras.layers.Dense and core.Dropout is tf.keras.layers.Dropout
    assert convolutional.Conv2D is tf.keras.layers.Conv2D
    assert normalization.BatchNormalization is tf.keras.layers.BatchNormalization
    assert recurrent.LSTM is tf.keras.layers.LSTM and merge.concatenate is \
        tf.keras.layers.concatenate
    assert np_utils.to_categorical is tf.keras.utils.to_categorical
    assert keras.optimizers.Adam is tf.keras.optimizers.Adam


def test_nn_additions_match_tensorflow():
    import numpy as np
    x = np.linspace(-2, 2, 5).astype(np.float32)
    t = np.array([0., 0.5, 1., 2., 5.], np.float32)
    img = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run([tf.nn.swish(x), tf.nn.log_poisson_loss(t, x),
                        tf.nn.log_poisson_loss(t, x, compute_full_loss=True),
                        tf.nn.max_pool2d(img, 2, 2, "VALID"),
                        tf.nn.avg_pool2d(img, [2, 1], [1, 2], "SAME")])
    # TensorFlow 2.21's tf.compat.v1.nn on the same inputs.
    want = [[-0.23840583860874176, -0.2689414322376251, 0.0, 0.7310585975646973,
             1.7615941762924194],
            [0.1353352814912796, 0.8678794503211975, 1.0, 0.7182817459106445,
             -2.6109437942504883],
            [0.1353352814912796, 0.8678794503211975, 1.0, 1.3700882196426392,
             2.1599035263061523],
            [10.0, 11.0, 14.0, 15.0, 26.0, 27.0, 30.0, 31.0],
            [4.0, 5.0, 8.0, 9.0, 12.0, 13.0, 16.0, 17.0, 20.0, 21.0, 24.0, 25.0, 24.0, 25.0,
             28.0, 29.0]]
    for have, expected in zip(got, want):
        np.testing.assert_allclose(have.reshape(-1), expected, rtol=1e-6)

"""TF 1.15's canned estimators (v1) on tf.feature_column: TF's variable names, the heads' loss
(Reduction.SUM: the Estimator's `loss` metric is the mean of the batches' sums, `average_loss`
the per-example mean, both checked against the predicted probabilities), TF's metric and
prediction keys, the classification signature of their exports, and TF's partitioning of
their variables (``part_0`` in the graph, whole tensors in the checkpoint)."""
import json

import numpy as np
import pytest

import tfjupyter as tf

pytestmark = pytest.mark.timeout(120)

DIGITS = tf.datasets.load_digits()
COLUMNS = [tf.feature_column.numeric_column("x", shape=[64])]


def train_fn(labels):
    return tf.estimator.inputs.numpy_input_fn({"x": DIGITS.train.images}, labels, batch_size=64,
                                              num_epochs=None, shuffle=True)


def eval_fn(labels, batch_size=100):
    return tf.estimator.inputs.numpy_input_fn({"x": DIGITS.test.images}, labels,
                                              batch_size=batch_size, shuffle=False)


@pytest.fixture(scope="module")
def dnn(tmp_path_factory):
    estimator = tf.estimator.DNNClassifier(
        hidden_units=[32], feature_columns=COLUMNS, n_classes=10,
        model_dir=str(tmp_path_factory.mktemp("dnn")),
        optimizer=tf.train.AdagradOptimizer(0.1))
    estimator.train(train_fn(DIGITS.train.labels), steps=300)
    return estimator


def test_dnn_classifier_names_accuracy_and_summed_loss(dnn):
    assert sorted(n for n in dnn.get_variable_names() if "Adagrad" not in n) == [
        "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
        "dnn/logits/kernel", "global_step"]
    assert dnn.get_variable_value("dnn/hiddenlayer_0/kernel").shape == (64, 32)
    results = dnn.evaluate(eval_fn(DIGITS.test.labels))
    assert results["accuracy"] >= 0.9 and results["global_step"] == 300
    predictions = list(dnn.predict(eval_fn(None)))
    labels = DIGITS.test.labels
    probabilities = np.array([p["probabilities"] for p in predictions])
    per_example = -np.log(probabilities[np.arange(len(labels)), labels])
    batch_sums = [per_example[i:i + 100].sum() for i in range(0, len(labels), 100)]
    assert results["average_loss"] == pytest.approx(per_example.mean(), rel=1e-3)
    assert results["loss"] == pytest.approx(np.mean(batch_sums), rel=1e-3)
    assert results["accuracy"] == pytest.approx(
        np.mean([p["class_ids"][0] for p in predictions] == labels), abs=1e-6)
    first = predictions[0]
    assert set(first) == {"logits", "probabilities", "class_ids", "classes", "all_class_ids",
                          "all_classes"}
    assert first["classes"][0] == str(first["class_ids"][0]).encode()
    assert list(first["all_classes"]) == [str(i).encode() for i in range(10)]


def test_dnn_classifier_exports_tensorflows_classification_signature(dnn, tmp_path):
    spec = tf.feature_column.make_parse_example_spec(COLUMNS)
    path = dnn.export_savedmodel(
        str(tmp_path), tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
    image = DIGITS.test.images[0]
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=image))}))
    expected = next(dnn.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": image[None]}, shuffle=False)))
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path.decode())
        assert set(meta.signature_def) == {"serving_default", "classification", "predict"}
        classify = meta.signature_def["serving_default"]
        assert classify.method_name == "tensorflow/serving/classify"
        classes, scores = sess.run(
            [classify.outputs["classes"].name, classify.outputs["scores"].name],
            {classify.inputs["inputs"].name: [example.SerializeToString()]})
    assert list(classes[0]) == [str(i).encode() for i in range(10)]
    np.testing.assert_allclose(scores[0], expected["probabilities"], rtol=1e-5)


def test_linear_classifier_binary_head(tmp_path):
    train_labels = (DIGITS.train.labels >= 5).astype(np.int64)
    test_labels = (DIGITS.test.labels >= 5).astype(np.int64)
    estimator = tf.estimator.LinearClassifier(COLUMNS, model_dir=str(tmp_path))
    estimator.train(train_fn(train_labels), steps=200)
    names = set(estimator.get_variable_names())
    assert {"linear/linear_model/x/weights", "linear/linear_model/bias_weights",
            "linear/linear_model/x/weights/Ftrl", "linear/linear_model/x/weights/Ftrl_1"} <= names
    results = estimator.evaluate(eval_fn(test_labels))
    assert set(results) == {
        "accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss",
        "label/mean", "loss", "precision", "prediction/mean", "recall", "global_step",
        "accuracy/positive_threshold_0.5000", "precision/positive_threshold_0.5000",
        "recall/positive_threshold_0.5000"}
    assert results["accuracy"] >= 0.85
    assert results["label/mean"] == pytest.approx(test_labels.mean(), abs=1e-6)
    assert results["accuracy_baseline"] == pytest.approx(
        max(test_labels.mean(), 1 - test_labels.mean()), abs=1e-6)
    logistic = np.array([p["logistic"][0] for p in estimator.predict(eval_fn(None))])
    assert results["prediction/mean"] == pytest.approx(logistic.mean(), rel=1e-4)
    predicted = (logistic > 0.5).astype(np.int64)
    true_positives = np.sum((predicted == 1) & (test_labels == 1))
    assert results["precision"] == pytest.approx(true_positives / predicted.sum(), abs=1e-5)
    assert results["recall"] == pytest.approx(true_positives / test_labels.sum(), abs=1e-5)


def test_wide_and_deep_and_regressors_train(tmp_path):
    combined = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "wd"), linear_feature_columns=COLUMNS,
        dnn_feature_columns=COLUMNS, dnn_hidden_units=[16], n_classes=10)
    combined.train(train_fn(DIGITS.train.labels), steps=20)
    names = set(combined.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/logits/kernel", "linear/linear_model/x/weights",
            "linear/linear_model/bias_weights"} <= names
    assert combined.get_variable_value("global_step") == 20   # once per step, not per part
    regressor = tf.estimator.DNNRegressor([8], COLUMNS, model_dir=str(tmp_path / "r"))
    values = DIGITS.train.labels.astype(np.float32)
    regressor.train(train_fn(values), steps=20)
    results = regressor.evaluate(eval_fn(DIGITS.test.labels.astype(np.float32)))
    assert set(results) == {"average_loss", "label/mean", "loss", "prediction/mean",
                            "global_step"}
    assert results["label/mean"] == pytest.approx(DIGITS.test.labels.mean(), rel=1e-5)


def test_canned_arguments_are_checked():
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        tf.estimator.DNNClassifier([4], COLUMNS, n_classes=1)
    with pytest.raises(ValueError, match="Either linear_feature_columns or dnn_feature_columns"):
        tf.estimator.DNNLinearCombinedClassifier()
    with pytest.raises(ValueError, match="sparse_combiner must be one of"):
        tf.estimator.LinearClassifier(COLUMNS, sparse_combiner="max")


def _model_variables(estimator, features, config):
    """The variables the estimator's model_fn makes in a graph of its own (TRAIN mode)."""
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        estimator.model_fn(features={k: tf.constant(v) for k, v in features.items()},
                           labels=tf.constant([[1]], tf.int64), mode="train", config=config)
        return {v.op.name: v.shape.as_list() for v in tf.global_variables()
                if not v.op.name.startswith("global_step")}


def test_canned_variables_are_partitioned_as_tensorflows(monkeypatch):
    # TF 1.15 opens its scopes with min_max_variable_partitioner(max_partitions=num_ps_replicas):
    # without ps tasks every variable is one part ("part_0"), saved whole under its own name.
    x = {"x": np.zeros((1, 64), np.float32)}
    names = _model_variables(tf.estimator.DNNClassifier([32], COLUMNS, n_classes=10), x,
                             tf.estimator.RunConfig())
    assert {n for n in names if "Adagrad" not in n} == {
        "dnn/hiddenlayer_0/kernel/part_0", "dnn/hiddenlayer_0/bias/part_0",
        "dnn/logits/kernel/part_0", "dnn/logits/bias/part_0"}
    assert "dnn/hiddenlayer_0/kernel/part_0/Adagrad" in names
    linear = _model_variables(tf.estimator.LinearClassifier(COLUMNS), x,
                              tf.estimator.RunConfig())
    assert set(linear) == {
        "linear/linear_model/x/weights/part_0", "linear/linear_model/bias_weights/part_0",
        "linear/linear_model/x/weights/part_0/Ftrl", "linear/linear_model/x/weights/part_0/Ftrl_1",
        "linear/linear_model/bias_weights/part_0/Ftrl",
        "linear/linear_model/bias_weights/part_0/Ftrl_1"}
    # With 2 ps tasks, a hidden kernel of 1000 x 128 floats (512 KiB) is cut in two parts of
    # at least 256 KiB; the 128-float bias stays whole.
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2", "localhost:3"]},
        "task": {"type": "chief", "index": 0}}))
    config = tf.estimator.RunConfig()
    assert config.num_ps_replicas == 2
    wide = {"x": np.zeros((1, 1000), np.float32)}
    names = _model_variables(tf.estimator.DNNClassifier(
        [128], [tf.feature_column.numeric_column("x", shape=[1000])]), wide, config)
    assert names["dnn/hiddenlayer_0/kernel/part_0"] == [500, 128]
    assert names["dnn/hiddenlayer_0/kernel/part_1"] == [500, 128]
    assert names["dnn/hiddenlayer_0/bias/part_0"] == [128]
    assert "dnn/hiddenlayer_0/bias/part_1" not in names


def test_warm_start_finds_the_parts_by_their_checkpoint_names(dnn, tmp_path):
    # The graph's dnn/hiddenlayer_0/kernel/part_0 is the checkpoint's dnn/hiddenlayer_0/kernel.
    warm = tf.estimator.DNNClassifier(
        hidden_units=[32], feature_columns=COLUMNS, n_classes=10, model_dir=str(tmp_path),
        optimizer=tf.train.GradientDescentOptimizer(0.0), warm_start_from=dnn.model_dir)
    warm.train(train_fn(DIGITS.train.labels), steps=1)
    for name in ("dnn/hiddenlayer_0/kernel", "dnn/logits/bias"):
        np.testing.assert_array_equal(warm.get_variable_value(name),
                                      dnn.get_variable_value(name))

"""tf.estimator (TF 1.15): Estimator train/evaluate/predict/export on the digits, EstimatorSpec's
checks, the numpy and pandas input_fns, and local train_and_evaluate. Expected values are
computed here by hand (numpy) or are TensorFlow's documented behaviour and messages."""
import glob
import logging
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.summary import summary_iterator

pytestmark = pytest.mark.timeout(120)

DIGITS = tf.datasets.load_digits()


def digits_model_fn(features, labels, mode, params):
    x = features["x"]
    hidden = tf.layers.dense(x, 32, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 10, name="logits")
    classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={
            "classes": classes, "probabilities": tf.nn.softmax(logits)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, classes)})
    train_op = tf.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_input(batch_size=64):
    return tf.estimator.inputs.numpy_input_fn({"x": DIGITS.train.images}, DIGITS.train.labels,
                                              batch_size=batch_size, num_epochs=None,
                                              shuffle=True)


def eval_input(**kw):
    return tf.estimator.inputs.numpy_input_fn({"x": DIGITS.test.images}, DIGITS.test.labels,
                                              batch_size=100, num_epochs=1, shuffle=False, **kw)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A digits classifier trained 300 steps, then 100 more (resumed from its checkpoint)."""
    model_dir = str(tmp_path_factory.mktemp("digits"))
    config = tf.estimator.RunConfig(save_checkpoints_steps=100, log_step_count_steps=50,
                                    tf_random_seed=1)
    estimator = tf.estimator.Estimator(digits_model_fn, model_dir=model_dir, config=config,
                                       params={"learning_rate": 0.5})
    records = []

    class Capture(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    handler = Capture(level=logging.INFO)
    logger = logging.getLogger("tfjupyter")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        estimator.train(train_input(), steps=300)
        first_steps = estimator.get_variable_value("global_step")
        estimator.train(train_input(), steps=100)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    return estimator, records, first_steps


def test_train_reaches_accuracy_and_resumes_from_its_checkpoint(trained):
    estimator, records, first_steps = trained
    assert first_steps == 300
    assert estimator.get_variable_value("global_step") == 400   # resumed: 300 + 100
    names = estimator.get_variable_names()
    assert {"hidden/kernel", "hidden/bias", "logits/kernel", "global_step"} <= set(names)
    results = estimator.evaluate(eval_input())
    assert results["accuracy"] >= 0.9
    assert results["global_step"] == 400
    # max_steps already reached: nothing is trained (TF logs this and returns).
    estimator.train(train_input(), max_steps=400)
    assert estimator.get_variable_value("global_step") == 400
    # Checkpoints every 100 steps, the newest 5 kept (RunConfig's keep_checkpoint_max).
    steps = sorted(int(p.rsplit("-", 1)[1].split(".")[0])
                   for p in glob.glob(os.path.join(estimator.model_dir, "model.ckpt-*.index")))
    assert steps == [0, 100, 200, 300, 400]
    # TF's training log lines.
    assert any(m.startswith("loss = ") and ", step = " in m for m in records)
    assert any(m.startswith("global_step/sec: ") for m in records)
    assert any(m.startswith("Loss for final step: ") for m in records)


def test_train_arguments_are_checked(trained):
    estimator = trained[0]
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        estimator.train(train_input(), steps=1, max_steps=2)
    with pytest.raises(ValueError, match=r"Must specify steps > 0, given: 0"):
        estimator.train(train_input(), steps=0)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        estimator.train(train_input(), steps=1, hooks=["not a hook"])


def test_evaluate_metrics_match_a_hand_computation(tmp_path):
    """A fixed linear model (no checkpoint: evaluate initializes it, as TF does): accuracy over
    all examples, and the loss metric is the mean of the per-batch mean losses (tf.metrics.mean
    of the loss tensor, one value per batch)."""
    rng = np.random.RandomState(0)
    w0 = rng.normal(size=(64, 10)).astype(np.float32) * 0.3

    def model_fn(features, labels, mode):
        w = tf.get_variable("w", initializer=tf.constant(w0))
        logits = tf.matmul(features, w)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, 1))})

    x, y = DIGITS.test.images, DIGITS.test.labels
    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    results = estimator.evaluate(tf.estimator.inputs.numpy_input_fn(
        x, y, batch_size=100, shuffle=False))
    logits = x @ w0
    log_probs = logits - logits.max(1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(1, keepdims=True))
    per_example = -log_probs[np.arange(len(y)), y]
    batch_means = [per_example[i:i + 100].mean() for i in range(0, len(y), 100)]
    assert len(y) % 100 != 0          # the last batch is smaller: the two means differ
    assert results["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == y), abs=1e-6)
    assert results["loss"] == pytest.approx(np.mean(batch_means), rel=1e-5)
    assert results["global_step"] == 0
    # steps=2 evaluates two batches only.
    two = estimator.evaluate(tf.estimator.inputs.numpy_input_fn(
        x, y, batch_size=100, shuffle=False), steps=2, name="two")
    assert two["accuracy"] == pytest.approx(np.mean(logits[:200].argmax(1) == y[:200]), abs=1e-6)
    # The results are summaries in model_dir/eval and model_dir/eval_two.
    values = {}
    for path in glob.glob(os.path.join(str(tmp_path), "eval", "events.out.tfevents.*")):
        for event in summary_iterator(path):
            for v in event.summary.value:
                values[v.tag] = v.simple_value
    assert values["accuracy"] == pytest.approx(results["accuracy"], abs=1e-6)
    assert values["loss"] == pytest.approx(results["loss"], rel=1e-5)
    assert glob.glob(os.path.join(str(tmp_path), "eval_two", "events.out.tfevents.*"))


def test_predict_yields_examples_batches_and_checks_keys(trained):
    estimator = trained[0]
    x = DIGITS.test.images[:7]
    input_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, batch_size=3, shuffle=False)
    singles = list(estimator.predict(input_fn))
    assert len(singles) == 7 and set(singles[0]) == {"classes", "probabilities"}
    assert singles[0]["probabilities"].shape == (10,)
    assert abs(singles[0]["probabilities"].sum() - 1) < 1e-5
    batches = list(estimator.predict(input_fn, yield_single_examples=False))
    assert [len(b["classes"]) for b in batches] == [3, 3, 1]
    np.testing.assert_array_equal(np.concatenate([b["classes"] for b in batches]),
                                  [s["classes"] for s in singles])
    only = next(estimator.predict(input_fn, predict_keys=["classes"]))
    assert set(only) == {"classes"}
    with pytest.raises(ValueError, match="Expected to run at least one output from"):
        next(estimator.predict(input_fn, predict_keys=["nope"]))
    accuracy = np.mean([s["classes"] for s in estimator.predict(eval_input())]
                       == DIGITS.test.labels)
    assert accuracy == pytest.approx(estimator.evaluate(eval_input())["accuracy"], abs=1e-6)


def test_export_loads_through_the_saved_model_loader(trained, tmp_path):
    estimator = trained[0]
    features = {"x": tf.placeholder(tf.float32, [None, 64], name="x")}
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(features)
    path = estimator.export_savedmodel(str(tmp_path / "export"), receiver_fn)
    assert isinstance(path, bytes) and os.path.basename(path).isdigit()
    assert os.path.exists(os.path.join(path, b"saved_model.pb"))
    assert not glob.glob(str(tmp_path / "export" / "temp-*"))
    x = DIGITS.test.images[:9]
    expected = [p["classes"] for p in estimator.predict(
        tf.estimator.inputs.numpy_input_fn({"x": x}, batch_size=9, shuffle=False))]
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          path.decode())
        signature = meta.signature_def["serving_default"]
        assert signature.method_name == "tensorflow/serving/predict"
        assert set(signature.outputs) == {"classes", "probabilities"}
        got = sess.run(signature.outputs["classes"].name, {signature.inputs["x"].name: x})
    np.testing.assert_array_equal(got, expected)


def test_export_with_parsing_receiver_and_classification_output(tmp_path):
    """A classifier exporting a ClassificationOutput fed serialized tf.Examples: the
    'serving_default' signature is TF's classify signature."""
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", initializer=tf.constant([[1.0, -1.0]]))
        scores = tf.nn.softmax(tf.matmul(features["x"], w))
        train_op = tf.assign_add(tf.train.get_global_step(), 1)
        return tf.estimator.EstimatorSpec(
            mode, predictions={"scores": scores}, loss=tf.reduce_sum(scores * 0.0),
            train_op=train_op, export_outputs={"classify": tf.estimator.export.ClassificationOutput(
                scores=scores, classes=tf.constant([["neg", "pos"]]))})

    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "m"))
    estimator.train(lambda: ({"x": tf.constant([[1.0]])}, tf.constant([0])), steps=1)
    spec = {"x": tf.FixedLenFeature([1], tf.float32)}
    path = estimator.export_saved_model(
        str(tmp_path / "e"), tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[2.0]))}))
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], path.decode())
        assert set(meta.signature_def) == {"classify", "serving_default"}
        signature = meta.signature_def["serving_default"]
        assert signature.method_name == "tensorflow/serving/classify"
        scores = sess.run(signature.outputs["scores"].name,
                          {signature.inputs["inputs"].name: [example.SerializeToString()]})
    np.testing.assert_allclose(scores, [[np.exp(2) / (np.exp(2) + np.exp(-2)),
                                         np.exp(-2) / (np.exp(2) + np.exp(-2))]], rtol=1e-5)


def test_export_needs_a_checkpoint_and_a_receiver_fn(tmp_path):
    estimator = tf.estimator.Estimator(digits_model_fn, model_dir=str(tmp_path),
                                       params={"learning_rate": 0.1})
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined."):
        estimator.export_savedmodel(str(tmp_path / "e"), None)
    with pytest.raises(ValueError, match="Couldn't find trained model at"):
        estimator.export_savedmodel(str(tmp_path / "e"), lambda: None)


def test_estimator_spec_checks_as_tensorflow():
    M = tf.estimator.ModeKeys
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        with pytest.raises(ValueError, match="Missing train_op."):
            tf.estimator.EstimatorSpec(M.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="Missing loss."):
            tf.estimator.EstimatorSpec(M.EVAL)
        with pytest.raises(ValueError, match="Missing predictions."):
            tf.estimator.EstimatorSpec(M.PREDICT)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            tf.estimator.EstimatorSpec(M.EVAL, loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="loss must be Tensor"):
            tf.estimator.EstimatorSpec(M.EVAL, loss=1.0)
        with pytest.raises(TypeError, match="Values of eval_metric_ops must be"):
            tf.estimator.EstimatorSpec(M.EVAL, loss=loss, eval_metric_ops={"a": loss})
        with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
            tf.estimator.EstimatorSpec(M.EVAL, loss=loss, evaluation_hooks=[object()])
        spec = tf.estimator.EstimatorSpec(M.EVAL, loss=tf.constant([3.0]))
        assert spec.loss.shape.as_list() == []           # a [1] loss is reshaped to a scalar
        predict = tf.estimator.EstimatorSpec(M.PREDICT, predictions=loss)
        assert set(predict.export_outputs) == {"serving_default"}
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be from the default graph"):
            tf.estimator.EstimatorSpec(M.EVAL, loss=loss)
    with pytest.raises(ValueError, match="does not include params argument"):
        tf.estimator.Estimator(lambda features, labels: None, params={"a": 1})
    with pytest.raises(ValueError, match="has following not expected args: \\['extra'\\]"):
        tf.estimator.Estimator(lambda features, labels, extra: None)
    with pytest.raises(TypeError, match="config must be an instance of `RunConfig`"):
        tf.estimator.Estimator(digits_model_fn, config={})


def test_dataset_input_fn_and_train_and_evaluate_locally(tmp_path):
    """An input_fn returning a tf.data.Dataset; train_and_evaluate evaluates after each new
    checkpoint and returns the last evaluation's metrics."""
    images, labels = DIGITS.train.images, DIGITS.train.labels

    def train_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": images}, labels)).shuffle(
            500, seed=1).repeat().batch(64)

    def eval_fn():
        return tf.data.Dataset.from_tensor_slices(
            ({"x": DIGITS.test.images}, DIGITS.test.labels)).batch(200)

    config = tf.estimator.RunConfig(save_checkpoints_steps=100, log_step_count_steps=1000)
    estimator = tf.estimator.Estimator(digits_model_fn, model_dir=str(tmp_path), config=config,
                                       params={"learning_rate": 0.5})
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"x": tf.placeholder(tf.float32, [None, 64])})
    exporters = [tf.estimator.LatestExporter("latest", receiver_fn, exports_to_keep=2),
                 tf.estimator.FinalExporter("final", receiver_fn)]
    metrics, exports = tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(train_fn, max_steps=300),
        tf.estimator.EvalSpec(eval_fn, steps=None, throttle_secs=0, exporters=exporters))
    assert metrics["global_step"] == 300 and metrics["accuracy"] >= 0.9
    # Each evaluation exported the latest model (2 kept); the last one also the final model.
    latest = sorted(os.listdir(tmp_path / "export" / "latest"))
    assert len(latest) == 2 and os.listdir(tmp_path / "export" / "final") == \
        [os.path.basename(exports[1]).decode()]
    assert os.path.basename(exports[0]).decode() == latest[-1]
    evaluated_steps = sorted(event.step for path in glob.glob(str(tmp_path / "eval" / "*"))
                             for event in summary_iterator(path)
                             if any(v.tag == "accuracy" for v in event.summary.value))
    assert evaluated_steps == [100, 200, 300]          # every checkpoint but the first


def test_train_and_evaluate_specs_are_checked():
    fn = lambda: None  # noqa: E731
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tf.estimator.TrainSpec(None)
    with pytest.raises(ValueError, match="Must specify max_steps > 0, given: 0"):
        tf.estimator.TrainSpec(fn, max_steps=0)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0, given: -1"):
        tf.estimator.EvalSpec(fn, throttle_secs=-1)
    with pytest.raises(ValueError, match="`exporters` must have unique names"):
        tf.estimator.EvalSpec(fn, exporters=[tf.estimator.FinalExporter("a", fn),
                                             tf.estimator.LatestExporter("a", fn)])
    with pytest.raises(TypeError, match="`exporters` must be an Exporter, an iterable"):
        tf.estimator.EvalSpec(fn, exporters=[fn])
    with pytest.raises(TypeError, match="`eval_spec` must have type `tf.estimator.EvalSpec`"):
        tf.estimator.train_and_evaluate(None, tf.estimator.TrainSpec(fn), None)


def test_numpy_input_fn_batches_and_errors():
    x = {"b": np.arange(5.0), "a": np.arange(5) * 10}
    features, target = tf.estimator.inputs.numpy_input_fn(
        x, np.arange(5), batch_size=2, num_epochs=2, shuffle=False)()
    batches = []
    with tf.train.MonitoredSession() as sess:
        while not sess.should_stop():
            batches.append(sess.run([features, target]))
    assert [list(t) for _, t in batches] == [[0, 1], [2, 3], [4, 0], [1, 2], [3, 4]]
    assert list(batches[0][0]["a"]) == [0, 10]
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as "
                                         "boolean"):
        tf.estimator.inputs.numpy_input_fn(x)
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        tf.estimator.inputs.numpy_input_fn(x, np.arange(4), shuffle=False)
    with pytest.raises(ValueError, match="1 duplicate keys are found in both x and y"):
        tf.estimator.inputs.numpy_input_fn(x, {"a": np.arange(5)}, shuffle=False)


def test_numpy_input_fn_keeps_the_arrays_out_of_the_graph():
    # TF feeds the arrays through queues: a 4 MB array must not become a 4 MB Const (the
    # Estimator writes the graph to graph.pbtxt, each checkpoint's .meta and the events file)
    images = np.random.RandomState(0).rand(20000, 50).astype(np.float32)
    words = np.array(["w%d" % i for i in range(20000)])
    features, labels = tf.estimator.inputs.numpy_input_fn(
        {"images": images, "words": words}, np.arange(20000), batch_size=3, shuffle=True)()
    assert tf.get_default_graph().as_graph_def().ByteSize() < 100000
    assert features["images"].shape.as_list() == [None, 50]
    assert (features["words"].dtype, labels.dtype) == (tf.string, tf.int64)
    with tf.train.MonitoredSession() as sess:
        got, rows = sess.run([features, labels])
    np.testing.assert_array_equal(got["images"], images[rows])
    assert [w.decode() for w in got["words"]] == ["w%d" % r for r in rows]

def test_pandas_input_fn():
    try:
        import pandas as pd
    except ImportError:
        with pytest.raises(ImportError, match="pandas_input_fn needs pandas"):
            tf.estimator.inputs.pandas_input_fn(object(), shuffle=False)
        return
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    features, target = tf.estimator.inputs.pandas_input_fn(
        frame, pd.Series([0, 1, 0]), batch_size=3, shuffle=False)()
    with tf.train.MonitoredSession() as sess:
        f, t = sess.run([features, target])
    assert list(f["a"]) == [1.0, 2.0, 3.0] and list(t) == [0, 1, 0]


def test_training_steps_reach_step_telemetry_with_their_examples(tmp_path):
    """Dashboards and experiment records see an Estimator's steps as MonitoredTrainingSession's:
    each training step with its batch's examples (the last batch of the input is smaller)."""
    from tfjupyter.runtime import events
    steps = []
    listener = events.subscribe("step", steps.append)
    try:
        estimator = tf.estimator.Estimator(digits_model_fn, model_dir=str(tmp_path),
                                           params={"learning_rate": 0.1})
        estimator.train(tf.estimator.inputs.numpy_input_fn(
            {"x": DIGITS.test.images[:250]}, DIGITS.test.labels[:250], batch_size=100,
            shuffle=False))
    finally:
        events.unsubscribe("step", listener)
    trained = [s for s in steps if s.global_step is not None and s.examples]
    assert [s.examples for s in trained] == [100, 100, 50]
    assert [s.global_step for s in trained] == [0, 1, 2]   # read as each step starts


def test_warm_start_from_another_model_dir(trained, tmp_path):
    """A new model_dir starts from the trained model's weights (here with a learning rate of
    0, so they stay as they came); the global step is not warm-started."""
    source = trained[0]
    warm = tf.estimator.Estimator(digits_model_fn, model_dir=str(tmp_path),
                                  params={"learning_rate": 0.0},
                                  warm_start_from=source.model_dir)
    warm.train(train_input(), steps=1)
    assert warm.get_variable_value("global_step") == 1
    for name in ("hidden/kernel", "logits/bias"):
        np.testing.assert_array_equal(warm.get_variable_value(name),
                                      source.get_variable_value(name))

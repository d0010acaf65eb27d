"""tf.metrics against TensorFlow 1.15's streaming metrics: values TensorFlow computed for the
same two batches (pasted below), hand-computed cases, and TF's variables and collections."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import metrics

# Two batches of 20 examples; TensorFlow 2.21's tf.compat.v1.metrics (TF 1.15's
# metrics_impl) gave the values below after running every update_op on both.
_rng = np.random.RandomState(0)
LABELS = (_rng.rand(40) > 0.5).astype(np.int64)
PREDS = np.clip(LABELS * 0.3 + _rng.rand(40) * 0.7, 0, 1).astype(np.float32)
WEIGHTS = _rng.rand(40).astype(np.float32)

TF_VALUES = {
    "acc": 0.575, "accw": 0.55625105, "mean": 0.45986107, "prec": 0.7151834, "rec": 0.5185185,
    "auc": 0.7065527, "aucw": 0.63940024, "aucpr": 0.82500255, "aucpri": 0.8243704,
    "aucmin": 0.61823356, "mse": 0.23674949, "rmse": 0.4680713, "mae": 0.42616266,
    "pat": [0.7714286, 0.7777778, 1.0], "rat": [1.0, 0.4941423, 0.027360536],
    "tp": 14.0, "tn": 5.014952, "mpca": 0.5147086, "miou": 0.40106952, "pb": 0.15,
    "fp": 4.0, "fn": 6.561221, "fpt": [7.0, 2.0], "fnt": [0.0, 8.913043], "tnt": [6.0],
    "tpt": [27.0], "sas": 0.6296296, "sas2": 0.31282127, "ssn": 0.46153846,
    "ssn2": 0.3846154, "mcd": 0.2668929, "mre": 0.27193946,
    "mt": [[0.45610446, 0.515695, 0.48582602, 0.37389052, 0.36632413],
           [0.62475526, 0.37416396, 0.3711123, 0.6229173, 0.15976603],
           [0.6900188, 0.6187821, 0.7325862, 0.47469613, 0.42008817],
           [0.25964215, 0.4816641, 0.3872527, 0.56501967, 0.38370192]],
}


def _metrics(l, p, w):
    hard = tf.cast(p > 0.5, tf.int64)
    return {
        "acc": metrics.accuracy(l, hard),
        "accw": metrics.accuracy(l, hard, weights=w),
        "mean": metrics.mean(p, weights=w),
        "prec": metrics.precision(l, p > 0.5, weights=w),
        "rec": metrics.recall(l, p > 0.5),
        "auc": metrics.auc(l, p),
        "aucw": metrics.auc(l, p, weights=w),
        "aucpr": metrics.auc(l, p, curve="PR"),
        "aucpri": metrics.auc(l, p, curve="PR", summation_method="careful_interpolation",
                              num_thresholds=50),
        "aucmin": metrics.auc(l, p, summation_method="minoring", num_thresholds=10),
        "mse": metrics.mean_squared_error(tf.cast(l, tf.float32), p, weights=w),
        "rmse": metrics.root_mean_squared_error(tf.cast(l, tf.float32), p),
        "mae": metrics.mean_absolute_error(tf.cast(l, tf.float32), p),
        "pat": metrics.precision_at_thresholds(l, p, [0.2, 0.5, 0.8]),
        "rat": metrics.recall_at_thresholds(l, p, [0.2, 0.5, 0.8], weights=w),
        "tp": metrics.true_positives(l, p > 0.5),
        "tn": metrics.true_negatives(l, p > 0.5, weights=w),
        "mpca": metrics.mean_per_class_accuracy(l, tf.cast(p > 0.4, tf.int64), 2, weights=w),
        "miou": metrics.mean_iou(l, tf.cast(p > 0.4, tf.int64), 3),
        "pb": metrics.percentage_below(p, 0.3),
        "fp": metrics.false_positives(l, p > 0.5),
        "fn": metrics.false_negatives(l, p > 0.5, weights=w),
        "fpt": metrics.false_positives_at_thresholds(l, p, [0.3, 0.6]),
        "fnt": metrics.false_negatives_at_thresholds(l, p, [0.3, 0.6], weights=w),
        "tnt": metrics.true_negatives_at_thresholds(l, p, [0.3]),
        "tpt": metrics.true_positives_at_thresholds(l, p, [0.3]),
        "sas": metrics.sensitivity_at_specificity(l, p, 0.6),
        "sas2": metrics.sensitivity_at_specificity(l, p, 0.9, weights=w, num_thresholds=20),
        "ssn": metrics.specificity_at_sensitivity(l, p, 0.7),
        "ssn2": metrics.specificity_at_sensitivity(l, p, 1.0, num_thresholds=7),
        "mcd": metrics.mean_cosine_distance(tf.reshape(tf.cast(l, tf.float32), [10, 2]),
                                            tf.reshape(p, [10, 2]), 1),
        "mre": metrics.mean_relative_error(tf.cast(l, tf.float32), p,
                                           normalizer=tf.cast(l, tf.float32) + 1.0),
        "mt": metrics.mean_tensor(tf.reshape(p, [4, 5]), weights=tf.reshape(w, [4, 5])),
    }


def test_streaming_values_match_tensorflow():
    with tf.Graph().as_default():
        l = tf.placeholder(tf.int64, [None])
        p = tf.placeholder(tf.float32, [None])
        w = tf.placeholder(tf.float32, [None])
        pairs = _metrics(l, p, w)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for batch in (slice(0, 20), slice(20, 40)):
                sess.run({k: v[1] for k, v in pairs.items()},
                         {l: LABELS[batch], p: PREDS[batch], w: WEIGHTS[batch]})
            got = sess.run({k: v[0] for k, v in pairs.items()})
    for key, want in TF_VALUES.items():
        np.testing.assert_allclose(got[key], want, rtol=2e-6, err_msg=key)


def test_accuracy_variables_collections_and_update_op():
    with tf.Graph().as_default():
        labels = tf.constant([1, 2, 3, 4])
        value, update = metrics.accuracy(labels, tf.constant([1, 2, 0, 0]),
                                         metrics_collections=["my_metrics"],
                                         updates_collections=["my_updates"])
        names = [v.op.name for v in tf.local_variables()]
        assert names == ["accuracy/total", "accuracy/count"]
        assert [v.op.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
        assert tf.trainable_variables() == [] and tf.global_variables() == []
        assert tf.get_collection("my_metrics") == [value]
        assert tf.get_collection("my_updates") == [update]
        assert value.name == "accuracy/value:0" and update.name == "accuracy/update_op:0"
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(value) == 0.0          # no batch yet: 0/0 is 0, not nan
            assert sess.run(update) == 0.5
            assert sess.run(update) == 0.5
            assert sess.run(value) == 0.5
            sess.run(tf.local_variables_initializer())   # a new evaluation starts from zero
            assert sess.run(value) == 0.0


def test_uninitialized_metric_fails_like_tensorflow():
    with tf.Graph().as_default():
        value, _ = metrics.mean(tf.constant([1.0, 2.0]))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match=r"uninitialized value mean/(total|count)"):
                sess.run(value)


def test_hand_computed_weighted_mean_and_precision_recall():
    with tf.Graph().as_default():
        mean, mean_update = metrics.mean([1.0, 2.0, 3.0, 4.0], weights=[1.0, 0.0, 1.0, 2.0])
        # Weights of rank one more than the values lose their last dimension (as in TF).
        mean2, mean2_update = metrics.mean([[1.0], [3.0]], weights=[[[1.0]], [[3.0]]])
        labels = tf.constant([True, True, False, False, True])
        predictions = tf.constant([True, False, True, False, True])
        prec, prec_update = metrics.precision(labels, predictions)
        rec, rec_update = metrics.recall(labels, predictions)
        names = {v.op.name for v in tf.local_variables()}
        assert {"precision/true_positives/count", "precision/false_positives/count",
                "recall/true_positives/count", "recall/false_negatives/count"} <= names
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run([mean_update, mean2_update, prec_update, rec_update])
            assert sess.run(mean) == pytest.approx((1 + 3 + 8) / 4)
            assert sess.run(mean2) == pytest.approx((1 + 9) / 4)
            assert sess.run(prec) == pytest.approx(2 / 3)
            assert sess.run(rec) == pytest.approx(2 / 3)


def test_auc_perfect_and_inverted_rankings():
    with tf.Graph().as_default():
        labels = tf.constant([0, 0, 1, 1])
        perfect, perfect_update = metrics.auc(labels, tf.constant([0.1, 0.4, 0.6, 0.9]))
        inverted, inverted_update = metrics.auc(labels, tf.constant([0.9, 0.6, 0.4, 0.1]))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            sess.run([perfect_update, inverted_update])
            assert sess.run(perfect) == pytest.approx(1.0, abs=1e-5)
            assert sess.run(inverted) == pytest.approx(0.0, abs=1e-5)


def test_auc_rejects_bad_arguments_and_out_of_range_predictions():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="curve must be either ROC or PR, XYZ unknown"):
            metrics.auc([0, 1], [0.2, 0.8], curve="XYZ")
        with pytest.raises(ValueError, match="Invalid summation_method: nope"):
            metrics.auc([0, 1], [0.2, 0.8], summation_method="nope")
        _, update = metrics.auc(tf.constant([0, 1]), tf.constant([0.2, 1.5]))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"predictions must be in"):
                sess.run(update)


def test_mean_iou_and_per_class_accuracy_by_hand():
    with tf.Graph().as_default():
        labels = tf.constant([0, 0, 1, 1, 2])
        predictions = tf.constant([0, 1, 1, 1, 0])
        iou, iou_update = metrics.mean_iou(labels, predictions, 3)
        acc, acc_update = metrics.mean_per_class_accuracy(labels, predictions, 3)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            cm = sess.run(iou_update)
            np.testing.assert_array_equal(cm, [[1, 1, 0], [0, 2, 0], [1, 0, 0]])
            # IoU: class 0: 1/(2+2-1), class 1: 2/(2+3-2), class 2: 0/(1+0-0).
            assert sess.run(iou) == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)
            np.testing.assert_allclose(sess.run(acc_update), [0.5, 1.0, 0.0])
            assert sess.run(acc) == pytest.approx(0.5)


def test_confusion_matrix_and_div_no_nan():
    with tf.Graph().as_default():
        cm = tf.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=5)
        weighted = tf.confusion_matrix([0, 1], [1, 1], weights=[2.0, 0.5], dtype=tf.float32)
        safe = tf.div_no_nan([1.0, 0.0, 3.0], [0.0, 0.0, 2.0])
        bad = tf.confusion_matrix([5], [0], num_classes=5)
        with tf.Session() as sess:
            want = np.zeros((5, 5), np.int32)
            want[1, 2] = want[2, 2] = want[4, 4] = 1
            np.testing.assert_array_equal(sess.run(cm), want)
            np.testing.assert_array_equal(sess.run(weighted), [[0, 2.0], [0, 0.5]])
            np.testing.assert_array_equal(sess.run(safe), [0.0, 0.0, 1.5])
            with pytest.raises(tf.errors.InvalidArgumentError, match="`labels` out of bound"):
                sess.run(bad)


def test_top_k_metrics_match_tensorflow():
    # TF's recall_at_k/precision_at_k count with set operations: a label given twice counts
    # once, a label out of range (7) is a miss, a SparseTensor's missing entries are no labels.
    with tf.Graph().as_default():
        preds = tf.constant([[0.1, 0.5, 0.2, 0.9], [0.8, 0.1, 0.3, 0.2], [0.2, 0.3, 0.4, 0.1]])
        dup = tf.constant([[3, 3, 1], [2, 0, 0], [7, 2, 2]], tf.int64)
        sparse = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 1]],
                                 tf.constant([3, 0, 2, 1], tf.int64), [3, 3])
        pairs = {"rd": metrics.recall_at_k(dup, preds, 2),
                 "pd": metrics.precision_at_k(dup, preds, 2),
                 "rs": metrics.recall_at_k(sparse, preds, 2),
                 "ps": metrics.precision_at_k(sparse, preds, 1),
                 "rsc": metrics.recall_at_k(sparse, preds, 2, class_id=3),
                 "ptk": metrics.precision_at_top_k(tf.constant([3, 1, 0], tf.int64),
                                                   tf.nn.top_k(preds, 3)[1],
                                                   weights=[1.0, 0.0, 2.0])}
        names = sorted(v.op.name for v in tf.local_variables())
        assert names[:4] == ["precision_at_1/false_positive_at_1",
                             "precision_at_1/true_positive_at_1",
                             "precision_at_2/false_positive_at_2",
                             "precision_at_2/true_positive_at_2"]
        assert "recall_at_2_class3/true_positive_at_2_class3" in names
        assert all(v.dtype.base_dtype == tf.float64 for v in tf.local_variables())
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            got = sess.run({k: v[1] for k, v in pairs.items()})
    # From TensorFlow 2.21's tf.compat.v1.metrics on the same inputs (ptk: by hand, (1 + 2) /
    # (3 + 6): row 0 finds its label in its top 3, row 2 finds it too, row 1 weighs nothing).
    want = {"rd": 5 / 6, "pd": 5 / 6, "rs": 0.75, "ps": 1 / 3, "rsc": 1.0, "ptk": 3 / 9}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key

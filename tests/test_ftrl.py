"""tf.train.FtrlOptimizer against TensorFlow 1.x's: variables, slots and values after three
steps that TensorFlow computed (pasted below), for a dense and a sparse (gather) gradient."""
import numpy as np
import pytest

import tfjupyter as tf

CASES = [
    dict(learning_rate=0.3),
    dict(learning_rate=0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.2),
    dict(learning_rate=0.2, learning_rate_power=-0.7, initial_accumulator_value=0.5,
         l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.1,
         l2_regularization_strength=0.05),
]
# Per case, from TensorFlow 2.21's tf.compat.v1.train.FtrlOptimizer: w, emb, w's accum slot and
# emb's linear slot after three steps.
TF_RESULTS = \
[[[[0.8164861798286438, -0.8493813872337341],
   [-0.1924421489238739, 1.9621856212615967],
   [0.536308765411377, 0.5133972764015198]],
  [[0.35425129532814026, 1.2866106033325195], [3.0, 4.0], [4.178308963775635, 5.1744184494018555]],
  [[0.3374682068824768, 2.3016316890716553],
   [1.049872636795044, 8.906526565551758],
   [6.036703586578369, 55.14079284667969]],
  [[-5.990629196166992, -50.5600700378418], [0.0, 0.0], [-223.7037811279297, -336.6495361328125]]],
 [[[0.5135422348976135, -1.1816366910934448],
   [0.09736556559801102, 2.306589365005493],
   [0.21043667197227478, 0.1194099560379982]],
  [[0.6998226046562195, 1.6904462575912476], [3.0, 4.0], [4.5982866287231445, 5.5974345207214355]],
  [[0.49461597204208374, 2.7761647701263428],
   [1.6784639358520508, 10.804658889770508],
   [9.965398788452148, 67.00411987304688]],
  [[-42.11279296875, -218.06178283691406], [0.0, 0.0], [-765.7571411132812, -1125.8863525390625]]],
 [[[0.3387477397918701, -0.7204005718231201],
   [-0.11191318929195404, 2.049865961074829],
   [0.2766190469264984, 0.10575924813747406]],
  [[0.6754541397094727, 1.744601845741272], [3.0, 4.0], [4.693548202514648, 5.714566707611084]],
  [[0.8522356152534485, 2.958312511444092],
   [1.908942461013794, 10.333250045776367],
   [9.305890083312988, 61.95780944824219]],
  [[-40.755218505859375, -317.48809814453125],
   [0.0, 0.0],
   [-1217.817138671875, -1932.50927734375]]]]


def _train(kwargs):
    w = tf.Variable([[1.0, -2.0], [0.5, 3.0], [0.0, -0.1]], name="w")
    emb = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="emb")
    x = tf.constant([[0.2, -0.4, 1.0]])
    loss = (tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0)) +
            tf.reduce_sum(tf.gather(emb, [0, 2, 0]) ** 2))     # emb gets an IndexedSlices
    opt = tf.train.FtrlOptimizer(**kwargs)
    train = opt.minimize(loss)
    return w, emb, opt, train


@pytest.mark.parametrize("case", range(len(CASES)))
def test_three_steps_match_tensorflow(case):
    with tf.Graph().as_default():
        w, emb, opt, train = _train(CASES[case])
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "emb", "emb/Ftrl", "emb/Ftrl_1", "w", "w/Ftrl", "w/Ftrl_1"]
        assert opt.get_slot(w, "accum").op.name == "w/Ftrl"
        assert opt.get_slot(w, "linear").op.name == "w/Ftrl_1"
        kinds = {op.type for op in tf.get_default_graph().get_operations()}
        v2 = CASES[case].get("l2_shrinkage_regularization_strength", 0) > 0
        assert {"ApplyFtrlV2", "SparseApplyFtrlV2"} <= kinds if v2 else \
            {"ApplyFtrl", "SparseApplyFtrl"} <= kinds
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(opt.get_slot(w, "accum")),
                                       np.full((3, 2), CASES[case].get(
                                           "initial_accumulator_value", 0.1)), rtol=1e-7)
            for _ in range(3):
                sess.run(train)
            got = sess.run([w, emb, opt.get_slot(w, "accum"), opt.get_slot(emb, "linear")])
    for name, have, want in zip(("w", "emb", "w accum", "emb linear"), got, TF_RESULTS[case]):
        np.testing.assert_allclose(have, want, rtol=3e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("kwargs, message", [
    ({"initial_accumulator_value": -1.0}, "initial_accumulator_value -1.000000 needs to be "
                                          "positive or zero"),
    ({"learning_rate_power": 0.5}, "learning_rate_power 0.500000 needs to be negative or zero"),
    ({"l1_regularization_strength": -0.1}, "l1_regularization_strength -0.100000 needs to be "
                                           "positive or zero"),
    ({"l2_shrinkage_regularization_strength": -2.0}, "l2_shrinkage_regularization_strength "
                                                     "-2.000000 needs to be positive or zero"),
])
def test_tensorflows_argument_checks(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.train.FtrlOptimizer(0.1, **kwargs)

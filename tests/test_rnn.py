"""RNN cells and RNN functions as TensorFlow 1.x defines them: variable names and shapes (what
TF checkpoints need), one step of each cell against TF's documented equations in numpy,
MultiRNNCell and DropoutWrapper, static_rnn vs dynamic_rnn, sequence_length semantics,
bidirectional RNNs, gradients against central differences, and a tiny LSTM that learns."""
import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.test import compute_gradient

RNG = np.random.RandomState(3)
rnn_cell = tf.nn.rnn_cell


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def variable_shapes():
    return {v.op.name: v.shape.as_list() for v in tf.global_variables()}


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# -- numpy versions of TF's equations ---------------------------------------------------------

def np_basic_lstm(x, c, h, kernel, bias, forget_bias=1.0):
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    return new_c, np.tanh(new_c) * sigmoid(o)


def np_gru(x, h, gate_kernel, gate_bias, candidate_kernel, candidate_bias):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ gate_kernel + gate_bias), 2, axis=1)
    candidate = np.tanh(np.concatenate([x, r * h], 1) @ candidate_kernel + candidate_bias)
    return u * h + (1 - u) * candidate


def np_basic_rnn(x, h, kernel, bias):
    return np.tanh(np.concatenate([x, h], 1) @ kernel + bias)


# -- variable names ---------------------------------------------------------------------------

def test_variable_names_and_shapes_match_tensorflow():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    tf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(4), x, dtype=tf.float32)
    tf.nn.dynamic_rnn(rnn_cell.LSTMCell(4), x, dtype=tf.float32, scope="lstm")
    tf.nn.dynamic_rnn(rnn_cell.GRUCell(4), x, dtype=tf.float32, scope="gru")
    tf.nn.static_rnn(rnn_cell.BasicRNNCell(4), tf.unstack(x, axis=1), dtype=tf.float32,
                     scope="elman")
    stacked = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(4), rnn_cell.BasicLSTMCell(2)])
    tf.nn.dynamic_rnn(stacked, x, dtype=tf.float32, scope="deep")
    tf.nn.bidirectional_dynamic_rnn(rnn_cell.GRUCell(2), rnn_cell.GRUCell(2), x,
                                    dtype=tf.float32)
    tf.nn.dynamic_rnn(rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=2), x,
                      dtype=tf.float32, scope="peep")
    assert variable_shapes() == {
        "rnn/basic_lstm_cell/kernel": [7, 16], "rnn/basic_lstm_cell/bias": [16],
        "lstm/lstm_cell/kernel": [7, 16], "lstm/lstm_cell/bias": [16],
        "gru/gru_cell/gates/kernel": [7, 8], "gru/gru_cell/gates/bias": [8],
        "gru/gru_cell/candidate/kernel": [7, 4], "gru/gru_cell/candidate/bias": [4],
        "elman/basic_rnn_cell/kernel": [7, 4], "elman/basic_rnn_cell/bias": [4],
        "deep/multi_rnn_cell/cell_0/basic_lstm_cell/kernel": [7, 16],
        "deep/multi_rnn_cell/cell_0/basic_lstm_cell/bias": [16],
        "deep/multi_rnn_cell/cell_1/basic_lstm_cell/kernel": [6, 8],
        "deep/multi_rnn_cell/cell_1/basic_lstm_cell/bias": [8],
        "bidirectional_rnn/fw/gru_cell/gates/kernel": [5, 4],
        "bidirectional_rnn/fw/gru_cell/gates/bias": [4],
        "bidirectional_rnn/fw/gru_cell/candidate/kernel": [5, 2],
        "bidirectional_rnn/fw/gru_cell/candidate/bias": [2],
        "bidirectional_rnn/bw/gru_cell/gates/kernel": [5, 4],
        "bidirectional_rnn/bw/gru_cell/gates/bias": [4],
        "bidirectional_rnn/bw/gru_cell/candidate/kernel": [5, 2],
        "bidirectional_rnn/bw/gru_cell/candidate/bias": [2],
        "peep/lstm_cell/kernel": [5, 16], "peep/lstm_cell/bias": [16],
        "peep/lstm_cell/w_f_diag": [4], "peep/lstm_cell/w_i_diag": [4],
        "peep/lstm_cell/w_o_diag": [4], "peep/lstm_cell/projection/kernel": [4, 2],
    }
    assert set(v.op.name for v in tf.trainable_variables()) == set(variable_shapes())


def test_wrappers_keep_the_wrapped_cells_names_and_contrib_is_the_same():
    assert tf.contrib.rnn.BasicLSTMCell is rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    x = tf.placeholder(tf.float32, [None, 3])
    cells = [rnn_cell.DropoutWrapper(tf.contrib.rnn.BasicLSTMCell(4), output_keep_prob=0.5)
             for _ in range(2)]
    tf.contrib.rnn.static_rnn(rnn_cell.MultiRNNCell(cells), [x, x], dtype=tf.float32)
    assert sorted(variable_shapes()) == [
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel"]


def test_gru_gate_bias_starts_at_one():
    cell = rnn_cell.GRUCell(3)
    cell(tf.zeros([2, 2]), cell.zero_state(2, tf.float32))
    gate_bias, candidate_bias = run([cell.weights[1], cell.weights[3]])
    np.testing.assert_array_equal(gate_bias, np.ones(6))
    np.testing.assert_array_equal(candidate_bias, np.zeros(3))


# -- one step against numpy -------------------------------------------------------------------

@pytest.mark.parametrize("state_is_tuple", [True, False])
def test_basic_lstm_cell_one_step_matches_tf_equations(state_is_tuple):
    x_value, c_value, h_value = RNG.randn(2, 3), RNG.randn(2, 4), RNG.randn(2, 4)
    cell = rnn_cell.BasicLSTMCell(4, forget_bias=0.7, state_is_tuple=state_is_tuple)
    state = rnn_cell.LSTMStateTuple(tf.constant(c_value, tf.float32),
                                    tf.constant(h_value, tf.float32))
    if not state_is_tuple:
        state = tf.concat([state.c, state.h], 1)
    output, new_state = cell(tf.constant(x_value, tf.float32), state)
    new_c, new_h = new_state if state_is_tuple else tf.split(new_state, 2, axis=1)
    output_value, c_got, h_got, kernel, bias = run([output, new_c, new_h] + cell.weights)
    c_want, h_want = np_basic_lstm(x_value, c_value, h_value, kernel, bias, 0.7)
    np.testing.assert_allclose(c_got, c_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_got, h_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(output_value, h_want, rtol=1e-5, atol=1e-6)


def test_gru_and_basic_rnn_cells_one_step_match_tf_equations():
    x_value, h_value = RNG.randn(2, 3), RNG.randn(2, 4)
    x, h = tf.constant(x_value, tf.float32), tf.constant(h_value, tf.float32)
    bias_init = tf.random_normal_initializer(seed=1)
    gru = rnn_cell.GRUCell(4, bias_initializer=bias_init)
    elman = rnn_cell.BasicRNNCell(4, activation=tf.tanh)
    gru_out, gru_state = gru(x, h)
    elman_out, elman_state = elman(x, h)
    values = run([gru_out, gru_state, elman_out, elman_state] + gru.weights + elman.weights)
    gru_out_v, gru_state_v, elman_out_v, elman_state_v = values[:4]
    gru_want = np_gru(x_value, h_value, *values[4:8])
    elman_want = np_basic_rnn(x_value, h_value, *values[8:10])
    for got, want in ((gru_out_v, gru_want), (gru_state_v, gru_want),
                      (elman_out_v, elman_want), (elman_state_v, elman_want)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lstm_cell_with_peepholes_clip_and_projection():
    x_value, c_value, m_value = RNG.randn(2, 3), 3 * RNG.randn(2, 4), RNG.randn(2, 2)
    cell = rnn_cell.LSTMCell(4, use_peepholes=True, cell_clip=0.5, num_proj=2, proj_clip=0.3,
                             forget_bias=1.0, initializer=tf.random_uniform_initializer(-1, 1))
    assert cell.state_size == (4, 2) and cell.output_size == 2
    state = rnn_cell.LSTMStateTuple(tf.constant(c_value, tf.float32),
                                    tf.constant(m_value, tf.float32))
    output, (c, m) = cell(tf.constant(x_value, tf.float32), state)
    values = run([output, c, m] + cell.weights)
    output_v, c_v, m_v = values[:3]
    kernel, bias, w_f, w_i, w_o, projection = values[3:]
    i, j, f, o = np.split(np.concatenate([x_value, m_value], 1) @ kernel + bias, 4, axis=1)
    c_want = sigmoid(f + 1.0 + w_f * c_value) * c_value + sigmoid(i + w_i * c_value) * np.tanh(j)
    c_want = np.clip(c_want, -0.5, 0.5)
    m_want = np.clip((sigmoid(o + w_o * c_want) * np.tanh(c_want)) @ projection, -0.3, 0.3)
    np.testing.assert_allclose(c_v, c_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m_v, m_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(output_v, m_want, rtol=1e-5, atol=1e-6)


def test_lstm_cell_rejects_shards_by_name():
    with pytest.raises(NotImplementedError, match="num_unit_shards"):
        rnn_cell.LSTMCell(4, num_unit_shards=2)


# -- MultiRNNCell and DropoutWrapper ----------------------------------------------------------

def test_multi_rnn_cell_state_structure():
    cells = [rnn_cell.BasicLSTMCell(4), rnn_cell.GRUCell(3), rnn_cell.BasicRNNCell(2)]
    stacked = rnn_cell.MultiRNNCell(cells)
    assert stacked.state_size == ((4, 4), 3, 2) and stacked.output_size == 2
    batch = tf.placeholder(tf.int32, [])
    zero = stacked.zero_state(batch, tf.float32)
    assert isinstance(zero, tuple) and isinstance(zero[0], rnn_cell.LSTMStateTuple)
    output, state = stacked(tf.ones([5, 6]), stacked.zero_state(5, tf.float32))
    assert state[0].c.shape.as_list() == [5, 4] and state[1].shape.as_list() == [5, 3]
    assert output.shape.as_list() == [5, 2]
    zero_values = run(zero, {batch: 3})
    assert zero_values[0].c.shape == (3, 4) and zero_values[2].shape == (3, 2)
    assert len(stacked.trainable_weights) == 8
    # Not tuple: the state is one [batch, sum of sizes] tensor, sliced per cell.
    flat_cell = rnn_cell.MultiRNNCell([rnn_cell.GRUCell(3), rnn_cell.GRUCell(2)],
                                      state_is_tuple=False)
    assert flat_cell.state_size == 5
    _, flat_state = flat_cell(tf.ones([2, 4]), flat_cell.zero_state(2, tf.float32))
    assert flat_state.shape.as_list() == [2, 5]
    with pytest.raises(ValueError, match="state_is_tuple"):
        rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)


def test_dropout_wrapper_with_keep_prob_one_is_the_cell():
    x = tf.constant(RNG.randn(3, 2), tf.float32)
    cell = rnn_cell.BasicLSTMCell(4)
    wrapped = rnn_cell.DropoutWrapper(cell, input_keep_prob=1.0, output_keep_prob=1.0,
                                      state_keep_prob=1.0)
    assert wrapped.state_size == cell.state_size and wrapped.output_size == 4
    plain, _ = cell(x, cell.zero_state(3, tf.float32))
    through, _ = wrapped(x, wrapped.zero_state(3, tf.float32))
    plain_v, through_v = run([plain, through])
    np.testing.assert_array_equal(plain_v, through_v)


def test_dropout_wrapper_drops_with_the_right_statistics():
    batch, units, keep = 400, 25, 0.6
    x = tf.constant(RNG.randn(batch, 3), tf.float32)
    h = tf.constant(RNG.randn(batch, units), tf.float32)
    cell = rnn_cell.BasicLSTMCell(units)
    state = rnn_cell.LSTMStateTuple(h, h)
    keep_prob = tf.placeholder_with_default(1.0, [])
    wrapped = rnn_cell.DropoutWrapper(cell, output_keep_prob=keep_prob, state_keep_prob=keep,
                                      seed=5)
    plain_out, (plain_c, plain_h) = cell(x, state)
    out, (c, dropped_h) = wrapped(x, state)
    values = run([plain_out, plain_c, plain_h, out, c, dropped_h], {keep_prob: keep})
    plain_out_v, plain_c_v, plain_h_v, out_v, c_v, h_v = values
    for dropped, plain in ((out_v, plain_out_v), (h_v, plain_h_v)):
        kept = dropped != 0
        assert abs(kept.mean() - keep) < 0.02
        np.testing.assert_allclose(dropped[kept], plain[kept] / keep, rtol=1e-5)
    # The LSTM's c is never dropped (TF's default state filter).
    np.testing.assert_array_equal(c_v, plain_c_v)
    # Fed 1.0 (the default), nothing is dropped.
    out_at_one, plain_at_one = run([out, plain_out])
    np.testing.assert_array_equal(out_at_one, plain_at_one)


def test_variational_dropout_uses_one_mask_for_every_step():
    cell = rnn_cell.DropoutWrapper(rnn_cell.BasicRNNCell(50), output_keep_prob=0.5,
                                   variational_recurrent=True, dtype=tf.float32, seed=3)
    outputs, _ = tf.nn.dynamic_rnn(cell, tf.ones([2, 4, 3]), dtype=tf.float32)
    outputs_v = run(outputs)
    masks = outputs_v != 0
    for step in range(1, 4):
        np.testing.assert_array_equal(masks[:, step], masks[:, 0])
    np.testing.assert_array_equal(masks[0], masks[1])  # shared by the batch, as TF


# -- static_rnn, dynamic_rnn, sequence_length --------------------------------------------------

@pytest.mark.parametrize("time_major", [False, True])
def test_static_rnn_and_dynamic_rnn_agree(time_major):
    inputs = RNG.randn(3, 5, 2).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 5, 2])
    cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(4), rnn_cell.GRUCell(3)])
    static_outputs, static_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1),
                                                    dtype=tf.float32)
    dynamic_input = tf.transpose(x, [1, 0, 2]) if time_major else x
    dynamic_outputs, dynamic_state = tf.nn.dynamic_rnn(cell, dynamic_input, dtype=tf.float32,
                                                       time_major=time_major)
    assert len(tf.global_variables()) == 6  # one cell: both calls share its variables
    assert dynamic_outputs.shape.as_list() == ([5, None, 3] if time_major else [None, 5, 3])
    s_out, s_state, d_out, d_state = run(
        [static_outputs, static_state, dynamic_outputs, dynamic_state], {x: inputs})
    d_out = np.transpose(d_out, [1, 0, 2]) if time_major else d_out
    np.testing.assert_allclose(np.stack(s_out, 1), d_out, rtol=1e-5, atol=1e-6)
    for s, d in zip(_flatten(s_state), _flatten(d_state)):
        np.testing.assert_allclose(s, d, rtol=1e-5, atol=1e-6)


def _flatten(structure):
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


@pytest.mark.parametrize("function", ["static", "dynamic"])
def test_sequence_length_zeroes_outputs_and_keeps_the_last_valid_state(function):
    lengths = np.array([5, 2, 0, 3], np.int32)
    inputs = RNG.randn(4, 5, 2).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 5, 2])
    sequence_length = tf.placeholder(tf.int32, [None])
    cell = rnn_cell.BasicLSTMCell(3)
    if function == "static":
        outputs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32,
                                          sequence_length=sequence_length)
        outputs = tf.stack(outputs, 1)
    else:
        outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=sequence_length,
                                           dtype=tf.float32)
    full_outputs, full_states = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)  # no lengths
    per_step_c = [tf.nn.static_rnn(cell, tf.unstack(x, axis=1)[:t + 1], dtype=tf.float32)[1].c
                  for t in range(5)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feeds = {x: inputs, sequence_length: lengths}
        out_v, state_v, full_v, c_by_step = sess.run(
            [outputs, state, full_outputs, per_step_c], feeds)
    for example, length in enumerate(lengths):
        np.testing.assert_allclose(out_v[example, :length], full_v[example, :length],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out_v[example, length:], 0)
        want_c = 0 if length == 0 else c_by_step[length - 1][example]
        want_h = 0 if length == 0 else full_v[example, length - 1]
        np.testing.assert_allclose(state_v.c[example], want_c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state_v.h[example], want_h, rtol=1e-5, atol=1e-6)


def test_dynamic_rnn_needs_a_dtype_and_vector_lengths():
    with pytest.raises(ValueError, match="dtype must be specified"):
        tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), tf.placeholder(tf.float32, [None, 4, 3]))
    with pytest.raises(ValueError, match="sequence_length must be a vector"):
        tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), tf.placeholder(tf.float32, [None, 4, 3]),
                          sequence_length=[[1]], dtype=tf.float32)


def test_dynamic_rnn_with_an_initial_state():
    cell = rnn_cell.GRUCell(3)
    h0_value = RNG.randn(2, 3).astype(np.float32)
    x_value = RNG.randn(2, 4, 2).astype(np.float32)
    outputs, state = tf.nn.dynamic_rnn(cell, tf.constant(x_value),
                                       initial_state=tf.constant(h0_value))
    values = run([outputs, state] + cell.weights)
    h = h0_value
    for t in range(4):
        h = np_gru(x_value[:, t], h, *values[2:])
        np.testing.assert_allclose(values[0][:, t], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[1], h, rtol=1e-5, atol=1e-6)


# -- bidirectional ----------------------------------------------------------------------------

def test_bidirectional_dynamic_rnn_reverses_within_each_sequence():
    lengths = np.array([4, 2, 3], np.int32)
    inputs = RNG.randn(3, 4, 2).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4, 2])
    cell_fw, cell_bw = rnn_cell.BasicRNNCell(3), rnn_cell.BasicRNNCell(3)
    (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
        cell_fw, cell_bw, x, sequence_length=lengths, dtype=tf.float32)
    assert out_fw.shape.as_list()[1:] == [4, 3] and out_bw.shape.as_list()[1:] == [4, 3]
    values = run([out_fw, out_bw, state_fw, state_bw] + cell_fw.weights + cell_bw.weights,
                 {x: inputs})
    fw_v, bw_v, state_fw_v, state_bw_v = values[:4]
    fw_kernel, fw_bias, bw_kernel, bw_bias = values[4:]
    for example, length in enumerate(lengths):
        h = np.zeros((1, 3))
        for t in range(length):
            h = np_basic_rnn(inputs[example:example + 1, t], h, fw_kernel, fw_bias)
            np.testing.assert_allclose(fw_v[example, t], h[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state_fw_v[example], h[0], rtol=1e-5, atol=1e-6)
        h = np.zeros((1, 3))
        for t in reversed(range(length)):  # the backward cell reads the sequence from its end
            h = np_basic_rnn(inputs[example:example + 1, t], h, bw_kernel, bw_bias)
            np.testing.assert_allclose(bw_v[example, t], h[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state_bw_v[example], h[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(fw_v[example, length:], 0)
        np.testing.assert_array_equal(bw_v[example, length:], 0)


def test_static_bidirectional_rnn_concatenates_both_directions():
    x = tf.constant(RNG.randn(2, 3, 2), tf.float32)
    cell_fw, cell_bw = rnn_cell.GRUCell(2), rnn_cell.GRUCell(3)
    outputs, state_fw, state_bw = tf.contrib.rnn.static_bidirectional_rnn(
        cell_fw, cell_bw, tf.unstack(x, axis=1), dtype=tf.float32)
    (dyn_fw, dyn_bw), _ = tf.nn.bidirectional_dynamic_rnn(cell_fw, cell_bw, x,
                                                          dtype=tf.float32)
    assert [o.shape.as_list() for o in outputs] == [[2, 5]] * 3
    outputs_v, fw_v, bw_v = run([outputs, dyn_fw, dyn_bw])
    np.testing.assert_allclose(np.stack(outputs_v, 1), np.concatenate([fw_v, bw_v], 2),
                               rtol=1e-5, atol=1e-6)


# -- gradients and training -------------------------------------------------------------------

def test_lstm_loss_gradients_match_central_differences():
    x_value = RNG.uniform(-1, 1, (2, 3, 2))
    x = tf.placeholder(tf.float64, [2, 3, 2])
    cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(3), rnn_cell.GRUCell(2)])
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 2], dtype=tf.float64)
    loss = (tf.reduce_sum(tf.square(outputs)) + tf.reduce_sum(state[0].c) +
            tf.reduce_sum(tf.square(state[1])))
    loss = tf.reshape(loss, [1])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        theoretical, numerical = compute_gradient(x, x_value.shape, loss, [1],
                                                  x_init_value=x_value, delta=1e-6,
                                                  session=sess)
        np.testing.assert_allclose(theoretical, numerical, atol=1e-7, rtol=1e-5)
        assert np.abs(theoretical).max() > 0
        # With respect to the LSTM's kernel: perturb the variable itself.
        kernel = cell.trainable_weights[0]
        (kernel_grad,) = tf.gradients(loss, [kernel])
        new_value = tf.placeholder(tf.float64, kernel.shape)
        assign = kernel.assign(new_value)
        feeds = {x: x_value}
        kernel_value, analytic = sess.run([kernel, kernel_grad], feeds)
        delta = 1e-6
        for index in [(0, 0), (2, 5), (4, 11), (1, 7)]:
            shifted = []
            for sign in (1, -1):
                value = kernel_value.copy()
                value[index] += sign * delta
                sess.run(assign, {new_value: value})
                shifted.append(sess.run(loss, feeds)[0])
            sess.run(assign, {new_value: kernel_value})
            numeric = (shifted[0] - shifted[1]) / (2 * delta)
            np.testing.assert_allclose(analytic[index], numeric, rtol=1e-5, atol=1e-8)


def test_bidirectional_rnn_gradients_match_central_differences():
    # The backward direction reverses each sequence with a gather: its gradient is sparse.
    x_value = RNG.uniform(-1, 1, (3, 4, 2))
    x = tf.placeholder(tf.float64, [3, 4, 2])
    (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
        rnn_cell.GRUCell(2), rnn_cell.BasicRNNCell(3), x, sequence_length=[4, 1, 3],
        dtype=tf.float64)
    weights = tf.constant(RNG.randn(4, 3), tf.float64)  # breaks the symmetry between steps
    loss = tf.reshape(tf.reduce_sum(tf.square(out_fw)) + tf.reduce_sum(out_bw * weights) +
                      tf.reduce_sum(state_bw), [1])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        theoretical, numerical = compute_gradient(x, x_value.shape, loss, [1],
                                                  x_init_value=x_value, delta=1e-6,
                                                  session=sess)
    np.testing.assert_allclose(theoretical, numerical, atol=1e-7, rtol=1e-5)
    # Steps past a sequence's end do not reach the loss.
    np.testing.assert_array_equal(theoretical.reshape(3, 4, 2)[1, 1:], 0)


def test_a_tiny_lstm_learns_to_remember_the_first_input():
    # The label is the first of 6 random bits: the LSTM must carry it through 5 steps.
    tf.set_random_seed(1)
    data = np.random.RandomState(0)
    bits = data.randint(0, 2, (64, 6, 1)).astype(np.float32)
    labels = bits[:, 0, 0].astype(np.int32)
    x = tf.placeholder(tf.float32, [None, 6, 1])
    y = tf.placeholder(tf.int32, [None])
    outputs, state = tf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(8), x, dtype=tf.float32)
    logits = tf.layers.dense(state.h, 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feeds = {x: bits, y: labels}
        first = sess.run(loss, feeds)
        for _ in range(50):
            sess.run(train, feeds)
        last = sess.run(loss, feeds)
    assert last < 0.3 * first, (first, last)


# -- dynamic time (a while loop) ----------------------------------------------------------------

@pytest.mark.parametrize("time_major", [False, True])
def test_dynamic_time_matches_the_unrolled_rnn(time_major):
    """Time unknown while building: the cell runs in a while loop; same variables, outputs,
    final states (sequence_length included) and gradients as the unrolled static-time run."""
    lengths = np.array([5, 2, 0], np.int32)
    inputs = RNG.randn(3, 5, 2).astype(np.float32)
    static_x = tf.placeholder(tf.float32, [None, 5, 2])
    dynamic_x = tf.placeholder(tf.float32, [None, None, 2])
    seq = tf.placeholder(tf.int32, [None])
    cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(4), rnn_cell.GRUCell(3)])
    results = []
    for x in (static_x, dynamic_x):
        fed = tf.transpose(x, [1, 0, 2]) if time_major else x
        outputs, state = tf.nn.dynamic_rnn(cell, fed, sequence_length=seq, dtype=tf.float32,
                                           time_major=time_major)
        loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(state[0].c)
        results.append([outputs, state] + tf.gradients(loss, [x] + cell.weights))
    assert len(tf.global_variables()) == 6
    assert results[1][0].shape.as_list() == ([None, None, 3] if time_major else [None, None, 3])
    assert any(op.type == "While" for op in tf.get_default_graph().get_operations())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        unrolled, looped = sess.run(results, {static_x: inputs, dynamic_x: inputs, seq: lengths})
    for a, b in zip(_flatten(unrolled), _flatten(looped)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bidirectional_dynamic_rnn_over_dynamic_time():
    lengths = np.array([4, 2, 3], np.int32)
    inputs = RNG.randn(3, 4, 2).astype(np.float32)
    static_x = tf.placeholder(tf.float32, [None, 4, 2])
    dynamic_x = tf.placeholder(tf.float32, [None, None, 2])
    cell_fw, cell_bw = rnn_cell.BasicRNNCell(3), rnn_cell.GRUCell(2)
    runs = [tf.nn.bidirectional_dynamic_rnn(cell_fw, cell_bw, x, sequence_length=lengths,
                                            dtype=tf.float32)
            for x in (static_x, dynamic_x)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        unrolled, looped = sess.run(runs, {static_x: inputs, dynamic_x: inputs})
    for a, b in zip(_flatten(unrolled), _flatten(looped)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

"""RNN cells (``tf.nn.rnn_cell``, ``tf.contrib.rnn``) as TensorFlow 1.x builds them.

The cells with weights are ``tf.layers.Layer``s, as in TF r1.15's ``rnn_cell_impl.py``: the
first call builds them inside ``variable_scope(None, default_name=<snake-case class name>)``
under the caller's scope, so ``static_rnn``/``dynamic_rnn`` give ``rnn/basic_lstm_cell/kernel``
and ``rnn/basic_lstm_cell/bias``, ``MultiRNNCell`` gives
``rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel``, and TF checkpoints restore unchanged.
Kernels act on ``concat([inputs, h], 1)``, so a kernel is [input_depth + num_units, ...].

Wrappers (``DropoutWrapper``, ``ResidualWrapper``, ``DeviceWrapper``) call their cell directly,
without a scope of their own, as TF's ``_RNNCellWrapperV1``: wrapping a cell never renames its
variables.
"""
from __future__ import annotations

import collections
import hashlib
import numbers
from typing import Any, Callable, List, Optional

from ..framework import dtypes
from ..framework.nest import flatten, is_sequence, map_structure, pack_sequence_as
from ..framework.ops import Tensor, convert_to_tensor, device as _device_scope, name_scope
from ..framework.tensor_shape import TensorShape
from ..init_ops import constant_initializer, zeros_initializer
from ..layers.base import Layer
from ..variable_scopes import variable_scope
from . import _shapes, array_ops, math_ops, nn_ops
from .clip_ops import clip_by_value
from .random_ops import random_uniform

__all__ = ["RNNCell", "LayerRNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell",
           "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper",
           "LSTMStateTuple"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The LSTM state (c, h): the cell state and the output (hidden) state."""
    __slots__ = ()

    @property
    def dtype(self) -> dtypes.DType:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _batch_dims(batch_size, size, static: bool):
    """[batch_size, *size] as a static list (None for unknown) or as a shape tensor."""
    size = [int(d) if d is not None else None for d in TensorShape(size).as_list()]
    if static:
        known = _shapes.constant_value(batch_size) if isinstance(batch_size, Tensor) \
            else batch_size
        return [None if known is None else int(known)] + size
    if isinstance(batch_size, Tensor):
        return array_ops.concat([array_ops.reshape(batch_size, [1]), size], 0)
    return [int(batch_size)] + size


def zero_state_tensors(state_size, batch_size, dtype) -> Any:
    """Zeros of shape [batch_size, size] for every size in the (nested) ``state_size``."""
    dtype = dtypes.as_dtype(dtype)

    def zeros_for(size):
        zeros = array_ops.zeros(_batch_dims(batch_size, size, static=False), dtype=dtype)
        zeros.set_shape(TensorShape(_batch_dims(batch_size, size, static=True)))
        return zeros

    return map_structure(zeros_for, state_size)


class RNNCell(Layer):
    """The abstract RNN cell: ``output, new_state = cell(inputs, state)``, with inputs
    [batch, input_size], output [batch, output_size] and the state [batch, state_size] (or a
    tuple of such, per ``state_size``). Subclasses define ``state_size``, ``output_size`` and
    ``call(inputs, state)``; their variables live in the cell's layer scope."""

    def __call__(self, inputs, state, scope=None):
        return super().__call__(inputs, state, scope=scope)

    @property
    def state_size(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_size.")

    @property
    def output_size(self):
        raise NotImplementedError(f"{type(self).__name__} must define output_size.")

    def build(self, inputs_shape) -> None:
        # Cells without variables of their own (MultiRNNCell) have nothing to build.
        self.built = True

    def zero_state(self, batch_size, dtype):
        """The all-zero state for a batch: a tensor [batch_size, state_size], or a structure
        of them matching ``state_size``. ``batch_size`` is an int or a scalar int tensor."""
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return zero_state_tensors(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """TF 1.14+'s spelling of zero_state, taking the batch and dtype from ``inputs``."""
        if inputs is not None:
            inputs = convert_to_tensor(inputs)
            batch_size = array_ops.shape(inputs)[0] if inputs.shape[0].value is None \
                else inputs.shape[0].value
            dtype = inputs.dtype
        return self.zero_state(batch_size, dtype)


class LayerRNNCell(RNNCell):
    """An RNN cell whose ``build`` creates its variables with ``add_weight``."""


def _activation_or_tanh(activation) -> Callable:
    """The cell's activation: a callable or a Keras name ('relu'), tanh when None."""
    # Imported here: tf.layers.core imports tf.nn, which imports this module.
    from ..layers.core import get_activation
    return get_activation(activation) or math_ops.tanh


def _input_depth(cell: Layer, inputs_shape) -> int:
    inputs_shape = TensorShape(inputs_shape)
    depth = None if inputs_shape.ndims is None else inputs_shape.as_list()[-1]
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape} "
                         f"(cell {cell.name})")
    return int(depth)


def _linear(inputs: Tensor, state: Tensor, kernel, bias) -> Tensor:
    """concat([inputs, state], 1) @ kernel + bias: every cell's gate pre-activations."""
    return nn_ops.bias_add(math_ops.matmul(array_ops.concat([inputs, state], 1), kernel), bias)


class BasicRNNCell(LayerRNNCell):
    """The Elman cell: output = new_state = activation(W [inputs, state] + b).
    Variables 'kernel' [input_depth + num_units, num_units] and 'bias' [num_units]."""

    def __init__(self, num_units: int, activation=None, reuse=None, name: Optional[str] = None,
                 dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation_or_tanh(activation)

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape) -> None:
        depth = _input_depth(self, inputs_shape)
        self._kernel = self.add_weight("kernel", shape=[depth + self._num_units,
                                                        self._num_units])
        self._bias = self.add_weight("bias", shape=[self._num_units],
                                     initializer=zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        output = self._activation(_linear(inputs, state, self._kernel, self._bias))
        return output, output


class GRUCell(LayerRNNCell):
    """The gated recurrent unit (Cho et al., 2014), TF's equations:
    r, u = split(sigmoid(W_g [x, h] + b_g)); c = activation(W_c [x, r * h] + b_c);
    h' = u * h + (1 - u) * c. Variables 'gates/kernel' [depth + n, 2n], 'gates/bias' [2n]
    (initialized to 1.0: the gates start open, so state passes through),
    'candidate/kernel' [depth + n, n], 'candidate/bias' [n]."""

    def __init__(self, num_units: int, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name: Optional[str] = None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._activation = _activation_or_tanh(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape) -> None:
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_weight("gates/kernel", shape=[depth + n, 2 * n],
                                            initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            "gates/bias", shape=[2 * n], initializer=self._bias_initializer or
            constant_initializer(1.0, dtype=self.dtype))
        self._candidate_kernel = self.add_weight("candidate/kernel", shape=[depth + n, n],
                                                 initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            "candidate/bias", shape=[n], initializer=self._bias_initializer or
            zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        gates = math_ops.sigmoid(_linear(inputs, state, self._gate_kernel, self._gate_bias))
        reset, update = array_ops.split(gates, 2, axis=1)
        candidate = self._activation(_linear(inputs, math_ops.multiply(reset, state),
                                             self._candidate_kernel, self._candidate_bias))
        new_h = math_ops.add(math_ops.multiply(update, state),
                             math_ops.multiply(math_ops.subtract(1.0, update), candidate))
        return new_h, new_h


class BasicLSTMCell(LayerRNNCell):
    """The LSTM of Zaremba et al. (2014) without peepholes, clipping or projection. Gates
    i, j, f, o = split(W [x, h] + b, 4) (that order: TF's checkpoints depend on it);
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j);
    h' = activation(c') * sigmoid(o). Variables 'kernel' [depth + n, 4n], 'bias' [4n]."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation=None, reuse=None, name: Optional[str] = None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation_or_tanh(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape) -> None:
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._kernel = self.add_weight("kernel", shape=[depth + n, 4 * n])
        self._bias = self.add_weight("bias", shape=[4 * n],
                                     initializer=zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(state, 2, axis=1)
        i, j, f, o = array_ops.split(_linear(inputs, h, self._kernel, self._bias), 4, axis=1)
        forget = math_ops.sigmoid(math_ops.add(f, math_ops.cast(self._forget_bias, f.dtype)))
        new_c = math_ops.add(math_ops.multiply(c, forget),
                             math_ops.multiply(math_ops.sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), math_ops.sigmoid(o))
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            array_ops.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(LayerRNNCell):
    """The LSTM with optional peepholes (Gers & Schmidhuber, 2000), cell clipping and an
    output projection (Sak et al., 2014). Variables 'kernel' [depth + h_depth, 4n] (h_depth =
    num_proj or n), 'bias' [4n]; with peepholes 'w_f_diag', 'w_i_diag', 'w_o_diag' [n]; with a
    projection 'projection/kernel' [n, num_proj]. Gate order i, j, f, o as BasicLSTMCell."""

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip=None,
                 initializer=None, num_proj: Optional[int] = None, proj_clip=None,
                 num_unit_shards=None, num_proj_shards=None, forget_bias: float = 1.0,
                 state_is_tuple: bool = True, activation=None, reuse=None,
                 name: Optional[str] = None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        for argument, value in (("num_unit_shards", num_unit_shards),
                                ("num_proj_shards", num_proj_shards)):
            if value is not None:
                # Deprecated in TF 1.x in favour of partitioned variable scopes.
                raise NotImplementedError(f"LSTMCell: {argument} is not supported; use a "
                                          "variable scope with a partitioner instead.")
        self._num_units = int(num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = None if num_proj is None else int(num_proj)
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation_or_tanh(activation)

    @property
    def state_size(self):
        n, h_depth = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, h_depth) if self._state_is_tuple else n + h_depth

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, inputs_shape) -> None:
        depth = _input_depth(self, inputs_shape)
        n, h_depth = self._num_units, self._num_proj or self._num_units
        self._kernel = self.add_weight("kernel", shape=[depth + h_depth, 4 * n],
                                       initializer=self._initializer)
        self._bias = self.add_weight("bias", shape=[4 * n],
                                     initializer=zeros_initializer(dtype=self.dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", shape=[n], initializer=self._initializer)
            self._w_i_diag = self.add_weight("w_i_diag", shape=[n], initializer=self._initializer)
            self._w_o_diag = self.add_weight("w_o_diag", shape=[n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/kernel", shape=[n, self._num_proj],
                                                initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        n = self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, n])
            m_prev = array_ops.slice(state, [0, n], [-1, self._num_proj or n])
        i, j, f, o = array_ops.split(_linear(inputs, m_prev, self._kernel, self._bias), 4,
                                     axis=1)
        f = math_ops.add(f, math_ops.cast(self._forget_bias, f.dtype))
        if self._use_peepholes:
            # Peepholes let the gates see the cell state (the previous one for i and f).
            f = math_ops.add(f, math_ops.multiply(self._w_f_diag, c_prev))
            i = math_ops.add(i, math_ops.multiply(self._w_i_diag, c_prev))
        c = math_ops.add(math_ops.multiply(math_ops.sigmoid(f), c_prev),
                         math_ops.multiply(math_ops.sigmoid(i), self._activation(j)))
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            o = math_ops.add(o, math_ops.multiply(self._w_o_diag, c))
        m = math_ops.multiply(math_ops.sigmoid(o), self._activation(c))
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else \
            array_ops.concat([c, m], 1)
        return m, new_state


class MultiRNNCell(RNNCell):
    """Cells stacked: each cell's output is the next one's input. Cell i's variables are
    under 'multi_rnn_cell/cell_i/'; the state is a tuple of the cells' states (or, with
    state_is_tuple=False, their concatenation)."""

    def __init__(self, cells, state_is_tuple: bool = True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not is_sequence(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(is_sequence(c.state_size) for c in self._cells):
            raise ValueError("Some cells return tuples of states, but the flag state_is_tuple "
                             "is not set. State sizes are: "
                             f"{[c.state_size for c in self._cells]}")

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return zero_state_tensors(self.state_size, batch_size, dtype)

    @property
    def trainable_weights(self):
        return [w for cell in self._cells for w in cell.trainable_weights]

    @property
    def non_trainable_weights(self):
        return [w for cell in self._cells for w in cell.non_trainable_weights]

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    variables = weights

    def call(self, inputs, state):
        current_input, new_states, state_offset = inputs, [], 0
        for index, cell in enumerate(self._cells):
            with variable_scope(f"cell_{index}"):
                if self._state_is_tuple:
                    if not is_sequence(state):
                        raise ValueError(f"Expected state to be a tuple of length "
                                         f"{len(self.state_size)}, but received: {state}")
                    cell_state = state[index]
                else:
                    cell_state = array_ops.slice(state, [0, state_offset],
                                                 [-1, cell.state_size])
                    state_offset += cell.state_size
                current_input, cell_new_state = cell(current_input, cell_state)
                new_states.append(cell_new_state)
        new_state = tuple(new_states) if self._state_is_tuple else \
            array_ops.concat(new_states, 1)
        return current_input, new_state


class _RNNCellWrapper(RNNCell):
    """A cell that calls another one without opening a scope of its own, so the wrapped
    cell's variables keep their names (TF's _RNNCellWrapperV1)."""

    def __init__(self, cell: RNNCell):
        super().__init__()
        self._cell = cell

    cell = property(lambda self: self._cell)
    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)
    trainable_weights = property(lambda self: self._cell.trainable_weights)
    non_trainable_weights = property(lambda self: self._cell.non_trainable_weights)
    weights = property(lambda self: self._cell.weights)
    trainable_variables = trainable_weights
    variables = weights

    def zero_state(self, batch_size, dtype):
        with name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self._call_wrapped_cell(inputs, state, scope)

    def _call_wrapped_cell(self, inputs, state, scope):
        raise NotImplementedError(f"{type(self).__name__} must define _call_wrapped_cell.")


def _keeps_everything(keep_prob) -> bool:
    """True when ``keep_prob`` is known to be 1 while building: no dropout op then (TF)."""
    value = _shapes.constant_value(keep_prob) if isinstance(keep_prob, Tensor) else keep_prob
    return value is not None and float(value) == 1.0


def _lstm_c_is_not_dropped(substate) -> Any:
    """TF's default state filter: an LSTMStateTuple's c is never dropped, everything else is."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


class DropoutWrapper(_RNNCellWrapper):
    """Dropout on the cell's inputs, outputs and new state (each with its keep probability,
    a float or a scalar tensor such as a placeholder fed 1.0 at test time).

    ``variational_recurrent=True`` is Gal & Ghahramani's variational dropout: each run draws
    one mask per dropout site, shared by every time step and (as TF) every example; it needs
    ``dtype``, and ``input_size`` when inputs are dropped.
    ``dropout_state_filter_visitor(substate)`` says which parts of the state may be dropped
    (default: all but an LSTMStateTuple's c, whose dropout would erase the cell's memory).
    """

    def __init__(self, cell: RNNCell, input_keep_prob=1.0, output_keep_prob=1.0,
                 state_keep_prob=1.0, variational_recurrent: bool = False, input_size=None,
                 dtype=None, seed: Optional[int] = None,
                 dropout_state_filter_visitor: Optional[Callable] = None):
        super().__init__(cell)
        if not hasattr(cell, "state_size") or not callable(cell):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        self._probabilities = {}
        for name, keep_prob in (("input_keep_prob", input_keep_prob),
                                ("state_keep_prob", state_keep_prob),
                                ("output_keep_prob", output_keep_prob)):
            if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
                raise ValueError(f"Parameter {name} must be between 0 and 1: {keep_prob:g}")
            self._probabilities[name] = keep_prob
        self._seed = seed
        self._variational_recurrent = bool(variational_recurrent)
        self._state_filter = dropout_state_filter_visitor or _lstm_c_is_not_dropped
        self._masks = {}
        if self._variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            self._input_size = input_size

    def _seed_for(self, salt: str) -> Optional[int]:
        # Different, reproducible seeds per dropout site, derived from the wrapper's seed.
        if self._seed is None:
            return None
        digest = hashlib.md5(f"{self._seed}{salt}".encode()).hexdigest()
        return int(digest[:8], 16) & 0x7FFFFFFF

    def _variational_mask(self, kind: str, index: int, size, keep_prob, dtype) -> Tensor:
        """floor(keep_prob + U[0, 1)) of shape [1, size]: one op per site, built at the first
        step and reused by the later ones, so a run draws one mask for all its steps."""
        key = (kind, index)
        if key not in self._masks:
            shape = [1] + TensorShape(size).as_list()
            noise = random_uniform(shape, seed=self._seed_for(f"{kind}_{index}"), dtype=dtype)
            self._masks[key] = math_ops.floor(math_ops.add(
                math_ops.cast(keep_prob, dtype), noise))
        return self._masks[key]

    def _dropout(self, values, kind: str, keep_prob, sizes=None, filter_structure=None):
        from .. import nn  # here: tf.nn imports this module

        def drop(index, value, size, allowed=True):
            if not allowed:
                return value
            if self._variational_recurrent:
                mask = self._variational_mask(kind, index, size, keep_prob, value.dtype)
                return math_ops.multiply(math_ops.divide(
                    value, math_ops.cast(keep_prob, value.dtype)), mask)
            return nn.dropout(value, keep_prob, seed=self._seed_for(f"{kind}_{index}"))

        flat_values = flatten(values)
        flat_sizes = flatten(sizes) if sizes is not None else [None] * len(flat_values)
        flat_allowed = [True] * len(flat_values)
        if filter_structure is not None:
            flat_allowed = _droppable_leaves(values, filter_structure)
        dropped = [drop(i, v, s, a) for i, (v, s, a) in
                   enumerate(zip(flat_values, flat_sizes, flat_allowed))]
        return pack_sequence_as(values, dropped)

    def _call_wrapped_cell(self, inputs, state, scope):
        probabilities = self._probabilities
        if not _keeps_everything(probabilities["input_keep_prob"]):
            if self._variational_recurrent and self._input_size is None:
                raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                 "or is unknown, input_size must be provided")
            inputs = self._dropout(inputs, "input", probabilities["input_keep_prob"],
                                   sizes=getattr(self, "_input_size", None))
        output, new_state = self._cell(inputs, state, scope=scope)
        if not _keeps_everything(probabilities["state_keep_prob"]):
            new_state = self._dropout(new_state, "state", probabilities["state_keep_prob"],
                                      sizes=self._cell.state_size,
                                      filter_structure=self._state_filter)
        if not _keeps_everything(probabilities["output_keep_prob"]):
            output = self._dropout(output, "output", probabilities["output_keep_prob"],
                                   sizes=self._cell.output_size)
        return output, new_state


def _droppable_leaves(state, visitor: Callable) -> List[bool]:
    """Per leaf of ``state`` (flattened), whether the filter allows dropping it. As TF's
    get_traverse_shallow_structure: the visitor answers for a substate with a bool (False:
    none of it; True: look inside) or with one bool per direct part (LSTMStateTuple(False,
    True))."""
    verdict = visitor(state)
    if isinstance(verdict, bool):
        if not verdict:
            return [False] * len(flatten(state))
        if not is_sequence(state):
            return [True]
        verdict = [True] * len(state)
    leaves = []
    for part, allowed in zip(state, verdict):
        leaves += _droppable_leaves(part, visitor) if allowed else [False] * len(flatten(part))
    return leaves


class ResidualWrapper(_RNNCellWrapper):
    """output = cell's output + inputs (``residual_fn(inputs, output)`` if given)."""

    def __init__(self, cell: RNNCell, residual_fn: Optional[Callable] = None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, scope):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return map_structure(math_ops.add, inputs, output), new_state


class DeviceWrapper(_RNNCellWrapper):
    """Runs the cell (and builds its zero state) on ``device``."""

    def __init__(self, cell: RNNCell, device: str):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with _device_scope(self._device):
            return super().zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, scope):
        with _device_scope(self._device):
            return self._cell(inputs, state, scope=scope)

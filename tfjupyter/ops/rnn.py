"""``static_rnn``, ``dynamic_rnn``, ``bidirectional_dynamic_rnn`` and ``static_bidirectional_rnn``
with TensorFlow 1.x's variable scopes ('rnn', 'bidirectional_rnn/fw', 'bidirectional_rnn/bw'),
so the cells' variables get TF's names.

When the time dimension is known while the graph is built, ``dynamic_rnn`` unrolls the cell
over it: the graph has one copy of the cell per time step, called with the "rnn" scope set to
reuse after the first step, as ``static_rnn`` does. When it is not (a placeholder of shape
[batch, None, features]), the cell runs in a ``tf.while_loop`` (``functional_ops``' scan loop
over time-major inputs), as TF's does. The results and the variables are the same either way.

With ``sequence_length``, a step past a sequence's end outputs zeros and carries the state
unchanged, so the final state is the one at the sequence's last valid step (TF's semantics;
``Select`` per step, which passes gradients only to the chosen side).
"""
from __future__ import annotations

from typing import List, Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..variable_scopes import variable_scope
from . import array_ops, math_ops
from ..framework.nest import flatten, is_sequence, map_structure, pack_sequence_as
from .rnn_cell_impl import zero_state_tensors

__all__ = ["static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn"]


def _check_cell(cell) -> None:
    if not (hasattr(cell, "output_size") and hasattr(cell, "state_size") and callable(cell)):
        raise TypeError(f"The argument 'cell' ({cell!r}) is not an RNNCell: it needs the "
                        "properties output_size and state_size and must be callable.")


def _state_dtype(dtype, state) -> dtypes.DType:
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    flat = flatten(state)
    if not flat:
        raise ValueError("Unable to infer dtype from empty state.")
    return flat[0].dtype


def _batch_size_of(first_input: Tensor):
    """The static batch size when known, else a scalar tensor."""
    shape = first_input.shape
    static = shape.as_list()[0] if shape.ndims else None
    return static if static is not None else array_ops.shape(first_input)[0]


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If no initial_state is provided, dtype must be specified")
    return cell.zero_state(batch_size, dtype)


def _unrolled(cell, step_inputs: list, state, sequence_length, dtype, varscope):
    """Calls ``cell`` once per step; with ``sequence_length`` (int32 [batch]) the steps at or
    past a sequence's length output zeros and keep its state."""
    batch_size = _batch_size_of(flatten(step_inputs[0])[0])
    state = _initial_state(cell, state, batch_size, dtype)
    if sequence_length is not None:
        zero_output = zero_state_tensors(cell.output_size, batch_size,
                                         _state_dtype(dtype, state))
    outputs = []
    for time, step_input in enumerate(step_inputs):
        if time > 0:
            # Cells that call get_variable themselves share their variables across steps.
            varscope.reuse_variables()
        output, new_state = cell(step_input, state)
        if sequence_length is not None:
            with name_scope(f"step_{time}_past_end"):
                finished = math_ops.greater_equal(time, sequence_length)
                output = map_structure(lambda zero, out: array_ops.where(finished, zero, out),
                                       zero_output, output)
                new_state = map_structure(
                    lambda old, new: array_ops.where(finished, old, new), state, new_state)
        outputs.append(output)
        state = new_state
    return outputs, state


def _sequence_length_tensor(sequence_length) -> Optional[Tensor]:
    if sequence_length is None:
        return None
    sequence_length = convert_to_tensor(sequence_length, name="sequence_length")
    if sequence_length.shape.ndims not in (None, 1):
        raise ValueError(f"sequence_length must be a vector of length batch_size, but saw "
                         f"shape: {sequence_length.shape}")
    if sequence_length.dtype is not dtypes.int32:
        sequence_length = math_ops.cast(sequence_length, dtypes.int32)
    return array_ops.identity(sequence_length, name="sequence_length")


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None):
    """The cell applied to a Python list of step inputs ([batch, input_size] each, or nested
    structures of them): (a list of outputs, the final state). Variables under ``scope``
    (default 'rnn')."""
    _check_cell(cell)
    if not is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "rnn") as varscope:
        for flat_input in flatten(inputs[0]):
            shape = convert_to_tensor(flat_input).shape
            if shape.ndims is not None and shape.ndims >= 2:
                for i, size in enumerate(shape.as_list()[1:]):
                    if size is None:
                        raise ValueError(f"Input size (dimension {i} of inputs) must be "
                                         "accessible via shape inference, but saw value None.")
        step_inputs = [map_structure(convert_to_tensor, step) for step in inputs]
        return _unrolled(cell, step_inputs, initial_state,
                         _sequence_length_tensor(sequence_length), dtype, varscope)


def _static_time_steps(flat_inputs: List[Tensor], time_axis: int) -> Optional[int]:
    """The number of time steps, None when some input's time dimension is not static."""
    steps = set()
    for flat_input in flat_inputs:
        shape = flat_input.shape
        if shape.ndims is None or shape.ndims < 2:
            raise ValueError(f"dynamic_rnn: inputs must have rank >= 2 (batch and time), got "
                             f"{flat_input.name} of shape {shape}.")
        steps.add(shape.as_list()[time_axis])
    known = steps - {None}
    if len(known) > 1:
        raise ValueError(f"dynamic_rnn: the inputs disagree on the number of time steps: "
                         f"{sorted(known)}")
    return None if None in steps else steps.pop()


def _time_major(t: Tensor) -> Tensor:
    return array_ops.transpose(t, [1, 0] + list(range(2, t.shape.ndims)))


def _looped(cell, inputs, flat_inputs: List[Tensor], state, sequence_length, dtype,
            time_major: bool, parallel_iterations, swap_memory: bool):
    """dynamic_rnn over a time dimension known only at run time: a while loop (the scan loop
    of functional_ops) over time-major inputs. Returns (time-major outputs, final state)."""
    from .functional_ops import _loop
    steps = [t if time_major else _time_major(t) for t in flat_inputs]
    batch_static = steps[0].shape.as_list()[1]
    batch_size = batch_static if batch_static is not None else array_ops.shape(steps[0])[1]
    state = _initial_state(cell, state, batch_size, dtype)
    zero_output = zero_state_tensors(cell.output_size, batch_size, _state_dtype(dtype, state))

    def step(carry, step_input):
        time, _, old_state = carry
        output, new_state = cell(step_input, old_state)
        if sequence_length is not None:
            finished = math_ops.greater_equal(time, sequence_length)
            output = map_structure(lambda zero, out: array_ops.where(finished, zero, out),
                                   zero_output, output)
            new_state = map_structure(lambda old, new: array_ops.where(finished, old, new),
                                      old_state, new_state)
        return (time + 1, output, new_state)

    initial = (array_ops.constant(0, dtypes.int32), zero_output, state)
    elems = pack_sequence_as(inputs, steps)
    with name_scope("while") as loop_scope:
        final, stacked, _ = _loop(step, elems, initial, True, False, True,
                                  parallel_iterations or 32, swap_memory, loop_scope,
                                  "dynamic_rnn")
    n_output = len(flatten(zero_output))
    outputs = pack_sequence_as(zero_output, stacked[1:1 + n_output])
    final_state = pack_sequence_as(state, final[1 + n_output:])
    return outputs, final_state


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory: bool = False, time_major: bool = False,
                scope=None):
    """(outputs, final state): outputs [batch, time, output_size] ([time, batch, ...] when
    ``time_major``). Unrolled over the static time dimension (see the module docstring);
    ``parallel_iterations`` and ``swap_memory`` tune TF's while loop and change nothing."""
    _check_cell(cell)
    with variable_scope(scope or "rnn") as varscope:
        flat_inputs = [convert_to_tensor(t, name="input") for t in flatten(inputs)]
        time_axis = 0 if time_major else 1
        num_steps = _static_time_steps(flat_inputs, time_axis)
        if num_steps is None:
            outputs, final_state = _looped(cell, inputs, flat_inputs, initial_state,
                                           _sequence_length_tensor(sequence_length), dtype,
                                           time_major, parallel_iterations, swap_memory)
            if not time_major:
                outputs = map_structure(_time_major, outputs)
            return outputs, final_state
        # Per input, its time slices; then per step, the inputs' structure.
        slices = [array_ops.unstack(t, num=num_steps, axis=time_axis) for t in flat_inputs]
        step_inputs = [pack_sequence_as(inputs, [s[time] for s in slices])
                       for time in range(num_steps)]
        outputs, final_state = _unrolled(cell, step_inputs, initial_state,
                                         _sequence_length_tensor(sequence_length), dtype,
                                         varscope)
        flat_outputs = [flatten(o) for o in outputs]
        stacked = [array_ops.stack([step[k] for step in flat_outputs], axis=time_axis)
                   for k in range(len(flat_outputs[0]))]
        return pack_sequence_as(outputs[0], stacked), final_state


def _reverse_sequences(value: Tensor, sequence_length: Optional[Tensor], time_axis: int
                       ) -> Tensor:
    """Each sequence's first ``sequence_length`` steps reversed, the padding after them left
    in place (tf.reverse_sequence), or the whole time axis when no lengths are given."""
    if sequence_length is None:
        return array_ops.reverse(value, [time_axis])
    num_steps = value.shape.as_list()[time_axis]
    if num_steps is None:
        num_steps = array_ops.shape(value)[time_axis]
    batch_major = value if time_axis == 1 else array_ops.transpose(
        value, [1, 0] + list(range(2, value.shape.ndims)))
    # Source step of each (example, step): length - 1 - step inside the sequence, else step.
    steps = array_ops.reshape(math_ops.range(num_steps), [1, num_steps])
    lengths = array_ops.reshape(sequence_length, [-1, 1])
    inside = math_ops.less(steps, lengths)
    source = array_ops.where(inside, math_ops.subtract(math_ops.subtract(lengths, 1), steps),
                             math_ops.add(array_ops.zeros_like(lengths), steps))
    batch = array_ops.shape(batch_major)[0]
    rows = array_ops.reshape(math_ops.multiply(math_ops.range(batch), num_steps), [-1, 1])
    flat_index = array_ops.reshape(math_ops.add(rows, source), [-1])
    rest = batch_major.shape.as_list()[2:]
    flat = array_ops.reshape(batch_major, [-1] + rest)
    reversed_flat = array_ops.gather(flat, flat_index)
    reversed_value = array_ops.reshape(reversed_flat, array_ops.shape(batch_major))
    reversed_value.set_shape(batch_major.shape)
    if time_axis == 1:
        return reversed_value
    return array_ops.transpose(reversed_value, [1, 0] + list(range(2, value.shape.ndims)))


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory: bool = False,
                              time_major: bool = False, scope=None):
    """((output_fw, output_bw), (state_fw, state_bw)): ``cell_fw`` over the sequences and
    ``cell_bw`` over each sequence reversed (within its length), its outputs reversed back so
    both are aligned with the inputs. Variables under 'bidirectional_rnn/fw' and '/bw'."""
    _check_cell(cell_fw)
    _check_cell(cell_bw)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype, time_major=time_major,
                scope=fw_scope)
        time_axis = 0 if time_major else 1
        lengths = _sequence_length_tensor(sequence_length)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = map_structure(
                lambda t: _reverse_sequences(convert_to_tensor(t), lengths, time_axis), inputs)
            reversed_output_bw, state_bw = dynamic_rnn(
                cell_bw, reversed_inputs, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype, time_major=time_major,
                scope=bw_scope)
        output_bw = map_structure(lambda t: _reverse_sequences(t, lengths, time_axis),
                                  reversed_output_bw)
    return (output_fw, output_bw), (state_fw, state_bw)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw) for a list of step inputs: each output is the depth
    concatenation of the forward and the backward cell's output at that step. Variables
    under 'bidirectional_rnn/fw' and '/bw'."""
    _check_cell(cell_fw)
    _check_cell(cell_bw)
    if not is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            lengths = _sequence_length_tensor(sequence_length)
            # Reverse the steps within each sequence: stack, reverse, unstack.
            flat_steps = [flatten(step) for step in inputs]
            reversed_flat = []
            for k in range(len(flat_steps[0])):
                stacked = array_ops.stack([convert_to_tensor(s[k]) for s in flat_steps], 0)
                reversed_flat.append(array_ops.unstack(
                    _reverse_sequences(stacked, lengths, 0), num=len(inputs), axis=0))
            reversed_inputs = [pack_sequence_as(inputs[0], [r[t] for r in reversed_flat])
                               for t in range(len(inputs))]
            reversed_output_bw, state_bw = static_rnn(cell_bw, reversed_inputs,
                                                      initial_state_bw, dtype,
                                                      sequence_length, scope=bw_scope)
    flat_bw = [flatten(o) for o in reversed_output_bw]
    output_bw = []
    for k in range(len(flat_bw[0])):
        stacked = array_ops.stack([o[k] for o in flat_bw], 0)
        output_bw.append(array_ops.unstack(_reverse_sequences(stacked, lengths, 0),
                                           num=len(inputs), axis=0))
    # Each output (each part of a nested one) is [forward, backward] along depth.
    outputs = [pack_sequence_as(fw, [array_ops.concat([fw_part, bw_steps[t]], 1)
                                     for fw_part, bw_steps in zip(flatten(fw), output_bw)])
               for t, fw in enumerate(output_fw)]
    return outputs, state_fw, state_bw

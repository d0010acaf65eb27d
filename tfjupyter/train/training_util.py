"""The global step (TensorFlow's training_util), and the slot variables that optimizers and
moving averages keep beside a variable (TensorFlow's slot_creator)."""
from __future__ import annotations

import contextlib
from typing import Callable, Optional, Union

import numpy as np

from ..framework import dtypes
from ..framework.ops import Graph, GraphKeys, Tensor, get_default_graph
from ..framework.tensor_shape import as_shape
from ..ops import array_ops
from ..variables import Variable

__all__ = ["global_step", "get_global_step", "create_global_step", "get_or_create_global_step",
           "assert_global_step", "set_examples_per_step", "get_examples_per_step"]

_GLOBAL_STEP_NAME = "global_step"
# The graph collection holding the examples-per-step override (one int or one tensor name).
EXAMPLES_PER_STEP_KEY = "examples_per_step"


# -- the global step -------------------------------------------------------------------------------
def global_step(sess, global_step_tensor: Union[Variable, Tensor, str]) -> int:
    """The current value of the global step, as a Python int.

    ``print('global_step: %s' % tf.train.global_step(sess, global_step_tensor))``
    """
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor) -> None:
    """Raises TypeError unless ``global_step_tensor`` can be a global step: an integer scalar
    Variable or Tensor."""
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: '
                        f'{global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: '
                        f'{global_step_tensor.dtype}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def get_global_step(graph: Optional[Graph] = None) -> Optional[Union[Variable, Tensor]]:
    """The global step of ``graph`` (the default graph): the one element of the GLOBAL_STEP
    collection, else the tensor named 'global_step:0', else None."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        import logging
        logging.getLogger("tfjupyter").error("Multiple tensors in global_step collection.")
        return None
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name(_GLOBAL_STEP_NAME + ":0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph: Optional[Graph] = None) -> Variable:
    """Creates the global step of ``graph``: an int64 scalar variable named 'global_step',
    initialized to 0, not trainable, in the GLOBAL_VARIABLES and GLOBAL_STEP collections.

    Raises ValueError if the graph already has one."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        return Variable(lambda: array_ops.constant(0, dtype=dtypes.int64, name="zeros"),
                        trainable=False, name=_GLOBAL_STEP_NAME,
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Optional[Graph] = None) -> Union[Variable, Tensor]:
    """The global step of ``graph``, created first if there is none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


# -- examples per step (what StepRecord.examples counts) -------------------------------------------
def set_examples_per_step(examples: Union[int, Tensor, str, None],
                          graph: Optional[Graph] = None) -> None:
    """Says how many examples each step of ``graph`` (the default graph) processes, for step
    telemetry (``StepRecord.examples``, ``watch()``'s examples/sec), overriding the feed rule.

    ``examples`` is an int (every Session.run of the graph counts it), a scalar integer tensor
    or its name (its value counts, in steps that feed it, fetch it or compute it anyway; other
    steps fall back to the feed rule), or None to remove the override. Kept in the graph
    collection ``examples_per_step``, so it travels with exported meta graphs."""
    graph = graph or get_default_graph()
    graph.clear_collection(EXAMPLES_PER_STEP_KEY)
    if examples is None:
        return
    if isinstance(examples, Variable):
        examples = examples.value()
    if isinstance(examples, (Tensor, str)):
        tensor = graph.as_graph_element(examples, allow_tensor=True, allow_operation=False)
        if tensor.shape.ndims not in (None, 0) or not tensor.dtype.base_dtype.is_integer:
            raise ValueError(f"set_examples_per_step: {tensor.name} must be a scalar integer "
                             f"tensor, not {tensor.dtype.name} of shape {tensor.shape}")
        graph.add_to_collection(EXAMPLES_PER_STEP_KEY, tensor.name)
        return
    if isinstance(examples, bool) or int(examples) != examples or examples < 0:
        raise ValueError(f"set_examples_per_step: expected a count >= 0, a scalar integer tensor "
                         f"or None, got {examples!r}")
    graph.add_to_collection(EXAMPLES_PER_STEP_KEY, int(examples))


def get_examples_per_step(graph: Optional[Graph] = None) -> Union[int, str, None]:
    """The override ``set_examples_per_step`` set on ``graph``: an int, a tensor name, or None."""
    graph = graph or get_default_graph()
    found = graph.get_collection(EXAMPLES_PER_STEP_KEY)
    if not found:
        return None
    value = found[-1]
    return value.decode() if isinstance(value, bytes) else value


# -- slot variables ----------------------------------------------------------------------------------
def _is_variable_op(op) -> bool:
    return op.type in ("VariableV2", "Variable")


def create_slot(primary: Union[Variable, Tensor],
                initial_value: Union[Tensor, Callable[[], Tensor]], name: str,
                colocate_with_primary: bool = True,
                validate_shape: Optional[bool] = None) -> Variable:
    """A non-trainable variable named ``<primary op name>/<name>`` (made unique), wherever the
    current name scope is and whatever the variable scope's reuse flag, initialized by
    ``initial_value`` (a tensor, or a callable making one) and placed with ``primary``.

    Slots are created outside any control dependencies, as TensorFlow's slot_creator does.
    """
    graph = primary.graph
    if validate_shape is None:
        validate_shape = primary.get_shape().is_fully_defined()
    colocation = graph.colocate_with(primary.op) if colocate_with_primary else \
        contextlib.nullcontext()
    with graph.as_default(), graph.control_dependencies(None), graph.name_scope(None), \
            colocation:
        slot = Variable(initial_value, trainable=False, validate_shape=validate_shape,
                        name=f"{primary.op.name}/{name}")
    _slice_like_primary(slot, primary)
    return slot


def _slice_like_primary(slot: Variable, primary) -> None:
    """A slot of a part of a partitioned variable is the same part of the full variable's
    slot: 'w/part_1/Adagrad' is saved as a slice of 'w/Adagrad', as TensorFlow saves it (a
    scalar slot stays whole; a slot of lower rank takes the leading dimensions' slice)."""
    info = primary._get_save_slice_info() if isinstance(primary, Variable) else None
    if info is None:
        return
    slot_name = slot.op.name[len(primary.op.name) + 1:]
    n = slot.shape.ndims
    if n is None or n > 0:
        slot._set_save_slice_info(Variable.SaveSliceInfo(
            f"{info.full_name}/{slot_name}", info.full_shape[:n], info.var_offset[:n],
            info.var_shape[:n]))


def create_filled_slot(primary: Union[Variable, Tensor], value: float, name: str,
                       dtype=None, colocate_with_primary: bool = True,
                       shape=None) -> Variable:
    """A slot with every element ``value`` (zeros, ones, a constant), of ``primary``'s shape
    and dtype unless ``shape`` or ``dtype`` is given."""
    dtype = dtypes.as_dtype(dtype or primary.dtype.base_dtype)
    shape = primary.get_shape() if shape is None else as_shape(shape)
    op_name = {0: "zeros", 1: "ones"}.get(value, "Const")

    def initial_value() -> Tensor:
        if shape.is_fully_defined():
            if value == 0:
                return array_ops.zeros(shape.as_list(), dtype=dtype, name=op_name)
            if value == 1:
                return array_ops.ones(shape.as_list(), dtype=dtype, name=op_name)
            return array_ops.fill(shape.as_list(), np.asarray(value, dtype.as_numpy_dtype),
                                  name=op_name)
        # Unknown static shape: size it from the primary's value once that is initialized.
        like = primary.initialized_value() if isinstance(primary, Variable) else primary
        return array_ops.fill(array_ops.shape(like), np.asarray(value, dtype.as_numpy_dtype),
                              name=op_name)

    return create_slot(primary, initial_value, name, colocate_with_primary,
                       validate_shape=shape.is_fully_defined())

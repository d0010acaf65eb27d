"""``tf.keras.backend`` in graph mode (TF 1.15): the Keras session, the learning phase, object
names, and the variables Keras initializes itself.

Keras runs every step in one session: ``get_session()`` returns the default session when one
is entered (``with sess.as_default()``), else a session of its own on the default graph (made
again when the default graph changes). Before returning it, it initializes the variables Keras
created (layers' weights, optimizers' slots) that are not initialized yet, as TF 1.15 does, so
a model trains without ``global_variables_initializer``, and a variable restored or assigned
by the user is never reset.
"""
from __future__ import annotations

import collections
import weakref
from typing import List, Optional

import numpy as np

from ..client.session import Session, get_default_session
from ..framework import dtypes
from ..framework.ops import get_default_graph, reset_default_graph
from ..ops import array_ops
from ..variables import is_variable_initialized, variables_initializer

__all__ = ["get_session", "set_session", "clear_session", "learning_phase",
           "set_learning_phase", "get_uid", "reset_uids", "floatx", "epsilon",
           "image_data_format", "track_variable", "get_value", "set_value", "batch_get_value",
           "batch_set_value", "placeholder", "int_shape"]

_SESSION: Optional[Session] = None
_USER_SESSION: Optional[Session] = None
# Per graph: name uids ('dense', 'dense_1', ...), the learning phase placeholder or the value
# set_learning_phase fixed, and the variables Keras made (to initialize); per session, the
# variables it has initialized there (or found initialized).
_UIDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LEARNING_PHASE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FIXED_LEARNING_PHASE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_TRACKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_INITIALIZED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def floatx() -> str:
    return "float32"


def epsilon() -> float:
    """The fuzz factor Keras's losses clip with (1e-7)."""
    return 1e-7


def image_data_format() -> str:
    return "channels_last"


# -- names -----------------------------------------------------------------------------------------
def get_uid(prefix: str = "") -> int:
    """1, 2, ... per prefix and graph (Keras's object counter)."""
    uids = _UIDS.setdefault(get_default_graph(), collections.defaultdict(int))
    uids[prefix] += 1
    return uids[prefix]


def reset_uids() -> None:
    _UIDS.pop(get_default_graph(), None)


def unique_object_name(base_name: str) -> str:
    """'dense', then 'dense_1', 'dense_2', ... in one graph (TF's zero-based rule)."""
    uid = get_uid(base_name) - 1
    return base_name if uid == 0 else f"{base_name}_{uid}"


# -- the learning phase ----------------------------------------------------------------------------
def learning_phase():
    """The training flag layers read when their call gives none: the value
    ``set_learning_phase`` fixed, else the graph's bool placeholder 'keras_learning_phase'
    (False unless fed; ``fit`` feeds True)."""
    graph = get_default_graph()
    if graph in _FIXED_LEARNING_PHASE:
        return _FIXED_LEARNING_PHASE[graph]
    if graph not in _LEARNING_PHASE:
        _LEARNING_PHASE[graph] = array_ops.placeholder_with_default(
            False, shape=[], name="keras_learning_phase")
    return _LEARNING_PHASE[graph]


def learning_phase_placeholder(graph):
    """The graph's learning phase placeholder, or None (fixed, or no layer asked for it)."""
    return None if graph in _FIXED_LEARNING_PHASE else _LEARNING_PHASE.get(graph)


def set_learning_phase(value: int) -> None:
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _FIXED_LEARNING_PHASE[get_default_graph()] = value


# -- the session -----------------------------------------------------------------------------------
def track_variable(variable) -> None:
    """Keras initializes ``variable`` in ``get_session()`` unless it already is."""
    _TRACKED.setdefault(variable.graph, []).append(variable)


def _initialize_tracked_variables(session: Session) -> None:
    graph = session.graph
    done = _INITIALIZED.setdefault(session, set())
    candidates = [v for v in _TRACKED.get(graph, []) if id(v) not in done]
    if not candidates:
        return
    with graph.as_default():
        flags = session.run([is_variable_initialized(v) for v in candidates])
        uninitialized = [v for v, flag in zip(candidates, flags) if not flag]
        if uninitialized:
            session.run(variables_initializer(uninitialized))
    done.update(id(v) for v in candidates)


def get_session() -> Session:
    """The session Keras runs in (see the module's docstring), with Keras's variables
    initialized."""
    global _SESSION
    session = get_default_session()
    if session is None:
        session = _USER_SESSION
        if session is None or session.graph is not get_default_graph() or session.closed:
            stale = _SESSION is None or _SESSION.graph is not get_default_graph()
            if stale or _SESSION.closed:
                _SESSION = Session(graph=get_default_graph())
            session = _SESSION
    _initialize_tracked_variables(session)
    return session


def set_session(session: Session) -> None:
    """Makes Keras run in ``session`` (its graph's variables are then initialized there)."""
    global _USER_SESSION
    _USER_SESSION = session


def clear_session() -> None:
    """A new default graph, no Keras session, names counted from the start again."""
    global _SESSION, _USER_SESSION
    if _SESSION is not None:
        _SESSION.close()
    _SESSION = _USER_SESSION = None
    reset_default_graph()


# -- values ----------------------------------------------------------------------------------------
def get_value(x) -> np.ndarray:
    return get_session().run(x)


def batch_get_value(tensors) -> List[np.ndarray]:
    return get_session().run(list(tensors)) if tensors else []


def set_value(x, value) -> None:
    batch_set_value([(x, value)])


def batch_set_value(pairs) -> None:
    """Assigns each (variable, value); the assign ops are built once per variable and fed."""
    if not pairs:
        return
    session = get_session()
    ops, feeds = [], {}
    for variable, value in pairs:
        value = np.asarray(value, dtype=variable.dtype.base_dtype.as_numpy_dtype)
        if tuple(value.shape) != tuple(variable.get_shape().as_list()):
            raise ValueError(f"Cannot assign a value of shape {value.shape} to variable "
                             f"{variable.name} of shape {variable.get_shape()}.")
        assign_placeholder, assign_op = _assign_op(variable)
        ops.append(assign_op)
        feeds[assign_placeholder] = value
    session.run(ops, feed_dict=feeds)


# Per graph: variable id -> (variable, value placeholder, assign op), built once.
_ASSIGN_OPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _assign_op(variable):
    ops = _ASSIGN_OPS.setdefault(variable.graph, {})
    key = id(variable)
    if key not in ops or ops[key][0] is not variable:
        with variable.graph.as_default():
            value = array_ops.placeholder(variable.dtype.base_dtype, variable.get_shape(),
                                          name=variable.op.name + "/assign_value")
            ops[key] = (variable, value, variable.assign(value))
    return ops[key][1:]


def placeholder(shape=None, ndim=None, dtype=None, name=None):
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return array_ops.placeholder(dtypes.as_dtype(dtype or floatx()), shape, name=name)


def int_shape(x):
    shape = x.get_shape()
    return None if shape.ndims is None else tuple(shape.as_list())

"""tf.py_func and tf.numpy_function: a Python function as an op of the graph.

The op (PyFunc, or PyFuncStateless for ``stateful=False``) carries only a token; the function
itself stays in this process, in ``FUNCTIONS``, for as long as its graph lives. So, as in
TensorFlow, the op runs only in the process that built it: on a device of this process, never
on a remote task (where the kernel reports that the token is unknown). The function gets numpy
values (read-only arrays; 0-d inputs as numpy scalars, strings as bytes) and returns one value,
or a list or tuple of them for a list ``Tout``, each exactly of its declared dtype
(kernels/cpu/script_kernels.py). Not differentiable.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Callable, Dict, Optional

from ..framework import dtypes
from ..framework.ops import convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import unknown_shape

__all__ = ["py_func", "numpy_function"]

# token -> function, for the kernel; an entry goes when its graph does.
FUNCTIONS: Dict[str, Callable] = {}
_tokens = itertools.count()
_lock = threading.Lock()


@register_op("PyFunc", stateful=True)
@register_op("PyFuncStateless")
def _py_func_shape(op):
    tin = list(op.get_attr("Tin"))
    got = [t.dtype for t in op.inputs]
    if got != tin:
        raise TypeError(f"{op.type} '{op.name}': inputs are {[d.name for d in got]}, "
                        f"but Tin is {[d.name for d in tin]}")
    return [(dtype, unknown_shape()) for dtype in op.get_attr("Tout")]


NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")


def op_calling(func: Callable, prefix: str, build: Callable[[str], object]):
    """The op ``build(token)`` makes, whose kernel calls ``func`` through ``FUNCTIONS[token]``
    (a py_func, a tf.data generator); the entry goes when the op's graph does."""
    with _lock:
        token = f"{prefix}_{next(_tokens)}"
        FUNCTIONS[token] = func
    try:
        op = build(token)
    except BaseException:
        FUNCTIONS.pop(token, None)
        raise
    weakref.finalize(op.graph, FUNCTIONS.pop, token, None)
    return op


def py_func(func: Callable, inp, Tout, stateful: bool = True,  # noqa: N803 (TensorFlow's name)
            name: Optional[str] = None):
    """An op that calls ``func(*values of inp)`` each time it runs.

    ``Tout``: one dtype (the op's one output is returned) or a list of them (a list of outputs;
    for an empty list, the op itself). ``stateful=False`` declares that equal inputs give equal
    outputs (the op is then PyFuncStateless)."""
    if not callable(func):
        raise TypeError(f"tf.py_func: func must be callable, got {func!r}")
    if not isinstance(inp, (list, tuple)):
        raise TypeError(f"tf.py_func: inp must be a list of tensors, got {type(inp).__name__}")
    single = not isinstance(Tout, (list, tuple))
    types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    inputs = [convert_to_tensor(x) for x in inp]
    op = op_calling(func, "pyfunc", lambda token: _new_op(
        "PyFunc" if stateful else "PyFuncStateless", inputs,
        {"token": token, "Tin": [t.dtype for t in inputs], "Tout": types},
        name=name or "PyFunc"))
    if single:
        return op.outputs[0]
    return list(op.outputs) if types else op


def numpy_function(func: Callable, inp, Tout, stateful: bool = True,  # noqa: N803
                   name: Optional[str] = None):
    """``tf.numpy_function``: ``tf.py_func`` under its TensorFlow 1.14+ name."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


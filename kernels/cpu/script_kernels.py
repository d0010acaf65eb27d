"""CPU kernel of PyFunc / PyFuncStateless (tfjupyter/ops/script_ops.py), with TensorFlow's
conversions and errors:

- inputs reach the function read-only (they may be a variable's own buffer), 0-d ones as numpy
  scalars, strings as bytes;
- a list or tuple returned is that many values, anything else one value (None: none); each goes
  through ``np.asarray`` and must then be exactly its declared dtype (a Python float is a
  double, a Python int an int64: "0-th value returned by pyfunc_0 is double, but expects float");
- an exception fails the step with the error TensorFlow maps it to (ValueError and TypeError:
  InvalidArgument, StopIteration: OutOfRange, NotImplementedError: Unimplemented, MemoryError:
  ResourceExhausted, others: Unknown), its message followed by the function's traceback.
"""
from __future__ import annotations

import os
import traceback

import numpy as np

from tfjupyter.framework import dtypes, errors
from tfjupyter.ops.script_ops import FUNCTIONS
from tfjupyter.summary._encoding import tf_type_name

from . import KERNELS

_ERRORS = ((ValueError, errors.InvalidArgumentError), (TypeError, errors.InvalidArgumentError),
           (StopIteration, errors.OutOfRangeError),
           (NotImplementedError, errors.UnimplementedError),
           (MemoryError, errors.ResourceExhaustedError))


def _argument(value):
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        value = value.view()
        value.flags.writeable = False
    return value


def _result(value) -> np.ndarray:
    out = np.asarray(value, order="C")
    if out.dtype.kind in "SU":  # numpy's fixed-width strings: TensorFlow's are bytes objects
        flat = [x.encode("utf-8") if isinstance(x, str) else bytes(x) for x in out.ravel().tolist()]
        return np.array(flat, dtype=object).reshape(out.shape)
    return out


def _type_name(array: np.ndarray) -> str:
    try:
        return tf_type_name(dtypes.as_dtype(array.dtype))
    except (TypeError, ValueError, KeyError):
        return f"numpy {array.dtype}"


@KERNELS.register("PyFunc", "PyFuncStateless")
def py_func(op, ctx):
    token = op.get_attr("token")
    wanted = list(op.get_attr("Tout"))

    def run(*inputs):
        func = FUNCTIONS.get(token)
        if func is None:
            raise errors.InvalidArgumentError(
                None, None, f"{op.type} '{op.name}': no Python function for {token} in this "
                f"process (pid {os.getpid()}). A py_func runs only in the process of the program "
                "that built it: place it on a device of that process, not on a remote task.")
        try:
            returned = func(*[_argument(x) for x in inputs])
        except Exception as e:  # the function's own failure, reported as TensorFlow does
            kind = next((k for cls, k in _ERRORS if isinstance(e, cls)), errors.UnknownError)
            trace = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
            raise kind(None, None, f"{type(e).__name__}: {e}\n{trace}") from e
        values = ([] if returned is None else list(returned)
                  if isinstance(returned, (list, tuple)) else [returned])
        if len(values) != len(wanted):
            raise errors.InvalidArgumentError(
                None, None, f"{token} returns {len(values)} values, but expects to see "
                f"{len(wanted)} values.")
        outputs = []
        for i, (value, dtype) in enumerate(zip(values, wanted)):
            try:
                array = _result(value)
            except (TypeError, ValueError) as e:
                raise errors.InvalidArgumentError(
                    None, None, f"{i}-th value returned by {token} is not an array: {e}") from e
            if array.dtype != dtype.as_numpy_dtype:
                raise errors.InvalidArgumentError(
                    None, None, f"{i}-th value returned by {token} is {_type_name(array)}, but "
                    f"expects {tf_type_name(dtype)}")
            if array.dtype == object:
                odd = next((x for x in array.flat if not isinstance(x, bytes)), None)
                if odd is not None:
                    raise errors.InvalidArgumentError(
                        None, None, f"{i}-th value returned by {token} holds a "
                        f"{type(odd).__name__}, but a string tensor holds bytes")
            # The step may reuse an output's buffer: never one of the inputs' (a variable's).
            if not array.flags.writeable or any(
                    isinstance(x, np.ndarray) and np.may_share_memory(array, x) for x in inputs):
                array = array.copy()
            # 0-d: a numpy scalar, as numpy's own kernels give and TF fetches (strings stay
            # arrays: a bare bytes value is no tensor value to the other kernels).
            outputs.append(array[()] if array.ndim == 0 and array.dtype != object else array)
        return tuple(outputs) if len(outputs) != 1 else outputs[0]
    return run

"""DTypes: TensorFlow's type objects over numpy dtypes."""
from __future__ import annotations

import builtins
from typing import Any, Dict

import numpy as np

__all__ = ["DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "bool", "string", "complex64",
           "complex128", "half", "double"]


class DType:
    """A tensor element type; ``as_datatype_enum`` is its number in TensorFlow's DataType enum
    (the number GraphDefs, checkpoints and ``tf.as_dtype(1)`` use)."""
    __slots__ = ("name", "as_numpy_dtype", "as_datatype_enum", "_np")

    def __init__(self, name: str, numpy_type: Any, datatype_enum: int):
        self.name = name
        self.as_numpy_dtype = numpy_type
        self.as_datatype_enum = datatype_enum
        self._np = np.dtype(numpy_type)

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def is_floating(self) -> bool:
        return self._np.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_complex(self) -> bool:
        return self._np.kind == "c"

    @property
    def is_numeric(self) -> bool:
        return self._np.kind in "fiuc"

    @property
    def real_dtype(self) -> "DType":
        """float32 for complex64, float64 for complex128, else the type itself."""
        if self is complex64:
            return float32
        return float64 if self is complex128 else self

    @property
    def size(self) -> int:
        return self._np.itemsize

    @property
    def min(self):
        if not (self.is_floating or self.is_integer):     # as TensorFlow: not bool, string, complex
            raise TypeError(f"Cannot find minimum value of {self!r}.")
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        if not (self.is_floating or self.is_integer):     # as TensorFlow: not bool, string, complex
            raise TypeError(f"Cannot find maximum value of {self!r}.")
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other) -> bool:
        return self is as_dtype(other)

    def __eq__(self, other) -> builtins.bool:
        """As TensorFlow: ``tf.float32 == "float"`` and ``x.dtype == np.float32`` hold."""
        if isinstance(other, DType):
            return self is other
        if other is None:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other) -> builtins.bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self.as_datatype_enum

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = half = DType("float16", np.float16, 19)
float32 = DType("float32", np.float32, 1)
float64 = double = DType("float64", np.float64, 2)
int8 = DType("int8", np.int8, 6)
int16 = DType("int16", np.int16, 5)
int32 = DType("int32", np.int32, 3)
int64 = DType("int64", np.int64, 9)
uint8 = DType("uint8", np.uint8, 4)
uint16 = DType("uint16", np.uint16, 17)
uint32 = DType("uint32", np.uint32, 22)
uint64 = DType("uint64", np.uint64, 23)
bool = DType("bool", np.bool_, 10)  # noqa: A001 - TensorFlow's name
string = DType("string", np.object_, 7)
complex64 = DType("complex64", np.complex64, 8)
complex128 = DType("complex128", np.complex128, 18)

ALL_DTYPES = (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              bool, string, complex64, complex128)
# The names tf.as_dtype accepts: each dtype's own, and TensorFlow's C names ("float", "double").
_BY_NAME: Dict[str, DType] = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update(half=float16, float=float32, double=float64)
_BY_ENUM: Dict[int, DType] = {d.as_datatype_enum: d for d in ALL_DTYPES}
# A dataset (tf.data) as a graph value: a Python object on the host, never a tensor's elements.
variant = DType("variant", np.object_, 21)
_BY_NAME["variant"] = _BY_ENUM[21] = variant
_BY_NP: Dict[np.dtype, DType] = {d._np: d for d in ALL_DTYPES if d is not string}
# Python types, as TensorFlow maps them (but int is int32, tfjupyter's default integer type).
_BY_PYTHON_TYPE: Dict[type, DType] = {float: float32, int: int32, builtins.bool: bool,
                                      complex: complex128, bytes: string, str: string,
                                      object: string}


def as_dtype(value: Any) -> DType:
    """Converts a value to a DType, as ``tf.as_dtype``: a DType; a name ("float32", or
    TensorFlow's "float", "double", "half"); a DataType enum number; a numpy dtype or scalar
    type; a Python type (float, int, bool, complex, str, bytes). Anything else: TypeError."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType; known names: "
                        f"{', '.join(sorted(_BY_NAME))}")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (builtins.bool, np.bool_)):
        if int(value) in _BY_ENUM:
            return _BY_ENUM[int(value)]
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType: no DataType "
                        "has that number")
    if isinstance(value, type) and value in _BY_PYTHON_TYPE:
        return _BY_PYTHON_TYPE[value]
    if not isinstance(value, (type, np.dtype)):
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.")
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType.") from None
    if np_dtype.kind in "OSU":
        return string
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType: numpy dtype "
                        f"{np_dtype} is not supported (supported: "
                        f"{', '.join(d.name for d in ALL_DTYPES)})") from None

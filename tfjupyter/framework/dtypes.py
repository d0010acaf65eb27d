"""DTypes: TensorFlow's type objects over numpy dtypes."""
from __future__ import annotations

import builtins
from typing import Any, Dict

import numpy as np

__all__ = ["DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "bool", "string", "half", "double"]


class DType:
    __slots__ = ("name", "as_numpy_dtype", "_np")

    def __init__(self, name: str, numpy_type: Any):
        self.name = name
        self.as_numpy_dtype = numpy_type
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
    def is_numeric(self) -> bool:
        return self._np.kind in "fiu"

    @property
    def size(self) -> int:
        return self._np.itemsize

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other) -> bool:
        return self is as_dtype(other)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = half = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = double = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool = DType("bool", np.bool_)  # noqa: A001 - TensorFlow's name
string = DType("string", np.object_)

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, string)
_BY_NAME: Dict[str, DType] = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64)
_BY_NP: Dict[np.dtype, DType] = {d._np: d for d in _ALL if d is not string}


def as_dtype(value: Any) -> DType:
    """Converts a DType, name, numpy dtype or Python type into a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"Cannot convert {value!r} to a tfjupyter dtype; known: "
                        f"{', '.join(sorted(_BY_NAME))}")
    if value is bytes or value is str:
        return string
    if value is float:
        return float32
    if value is int:
        return int32
    if value is builtins.bool:
        return bool
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a tfjupyter dtype") from None
    if np_dtype.kind in "OSU":
        return string
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(f"Unsupported dtype {np_dtype}: tfjupyter supports "
                        f"{', '.join(d.name for d in _ALL)}") from None


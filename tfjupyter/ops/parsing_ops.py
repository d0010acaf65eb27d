"""Parsing ``tf.train.Example`` protos and raw bytes, as TensorFlow 1.x's ``parsing_ops``.

``parse_example(serialized, features)`` turns a batch of serialized Examples into a dict of
tensors, one per key of ``features``: a ``FixedLenFeature(shape, dtype, default_value)`` gives a
dense ``[batch] + shape`` tensor (every example must have exactly that many values, unless it
lacks the feature and a default is given); a ``VarLenFeature(dtype)`` gives a ``SparseTensor``
(indices ``[N, 2]`` of (example, position), dense_shape ``[batch, longest]``).
``parse_single_example`` does the same for one scalar serialized Example, without the batch
dimension. Feature dtypes are those an Example can hold: float32, int64 and string.

The ops differ from TensorFlow's in one respect: the feature keys are attrs (``dense_keys``,
``sparse_keys``), not string inputs; the shapes, types and defaults are as in TensorFlow.
The kernels are in ``kernels/cpu/parsing_kernels.py``.
"""
from __future__ import annotations

import collections
from typing import Dict, List, Optional

import numpy as np

from ..framework import dtypes as _dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.sparse_tensor import SparseTensor
from ..framework.tensor_shape import TensorShape, as_shape

__all__ = ["FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example",
           "decode_raw"]

_FEATURE_DTYPES = (_dtypes.float32, _dtypes.int64, _dtypes.string)
_RAW_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int8, _dtypes.int16,
               _dtypes.int32, _dtypes.int64, _dtypes.uint8)


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature with exactly ``prod(shape)`` values in every example: a dense ``shape`` tensor
    per example. Without ``default_value`` it is required in every example."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values (maybe none): a SparseTensor."""


class _ParseSpec:
    """``features`` checked and sorted by key (as TensorFlow orders them)."""

    def __init__(self, features, where: str):
        if not isinstance(features, dict) or not features:
            raise ValueError(f"{where}: features must be a non-empty dict of feature key -> "
                             f"FixedLenFeature or VarLenFeature, got {features!r}")
        self.dense_keys: List[str] = []
        self.dense_types: List[_dtypes.DType] = []
        self.dense_shapes: List[TensorShape] = []
        self.dense_defaults: List = []   # a numpy array of the feature's shape, or None
        self.sparse_keys: List[str] = []
        self.sparse_types: List[_dtypes.DType] = []
        for key in sorted(features):
            feature = features[key]
            if not isinstance(key, str):
                raise TypeError(f"{where}: feature keys must be strings, got {key!r}")
            if isinstance(feature, VarLenFeature):
                self.sparse_keys.append(key)
                self.sparse_types.append(self._dtype(feature.dtype, key, where))
            elif isinstance(feature, FixedLenFeature):
                dtype = self._dtype(feature.dtype, key, where)
                shape = as_shape(feature.shape)
                if not shape.is_fully_defined():
                    raise ValueError(f"{where}: FixedLenFeature '{key}' needs a fully defined "
                                     f"shape, got {shape}")
                self.dense_keys.append(key)
                self.dense_types.append(dtype)
                self.dense_shapes.append(shape)
                self.dense_defaults.append(self._default(feature.default_value, dtype, shape,
                                                         key, where))
            else:
                raise TypeError(f"{where}: feature '{key}' must be a FixedLenFeature or "
                                f"VarLenFeature, got {feature!r}")

    @staticmethod
    def _dtype(dtype, key: str, where: str) -> _dtypes.DType:
        dtype = _dtypes.as_dtype(dtype)
        if dtype not in _FEATURE_DTYPES:
            raise ValueError(f"{where}: feature '{key}' has dtype {dtype.name}; an Example holds "
                             f"only float32, int64 or string features")
        return dtype

    @staticmethod
    def _default(value, dtype: _dtypes.DType, shape: TensorShape, key: str, where: str):
        if value is None:
            return None
        if dtype is _dtypes.string:
            items = np.asarray(value, dtype=object)
            arr = np.empty(items.shape, dtype=object)
            for i, v in enumerate(items.reshape(-1)):
                arr.reshape(-1)[i] = v.encode("utf-8") if isinstance(v, str) else v
                if not isinstance(arr.reshape(-1)[i], bytes):
                    raise TypeError(f"{where}: the default_value of string feature '{key}' must "
                                    f"hold bytes or str, got {v!r}")
        else:
            given = np.asarray(value)
            arr = given.astype(dtype.as_numpy_dtype) if given.dtype.kind in "biuf" else None
            if arr is None or (given.dtype.kind == "f" and not np.array_equal(arr, given)):
                # TensorFlow converts the default as a constant: 0.7 is no int64
                raise TypeError(f"{where}: the default_value of {dtype.name} feature '{key}' "
                                f"must hold {dtype.name} values, got {value!r}")
        size = shape.num_elements()
        if arr.size != size:  # TensorFlow reshapes the default to the shape: same size needed
            raise ValueError(f"{where}: the default_value of feature '{key}' has {arr.size} "
                             f"values but its shape {shape.as_list()} needs {size}")
        return arr.reshape(shape.as_list())

    def attrs(self) -> Dict:
        return {"sparse_keys": list(self.sparse_keys), "sparse_types": list(self.sparse_types),
                "dense_keys": list(self.dense_keys), "Tdense": list(self.dense_types),
                "dense_shapes": list(self.dense_shapes)}

    def default_tensors(self) -> List[Tensor]:
        """One input per dense feature: its default, or an empty tensor when it is required
        (TensorFlow's convention)."""
        out = []
        for key, dtype, value in zip(self.dense_keys, self.dense_types, self.dense_defaults):
            if value is None:
                value = np.empty((0,), dtype=dtype.as_numpy_dtype)
            out.append(convert_to_tensor(value, dtype=dtype, name=_valid_name(key)))
        return out


def _valid_name(key: str) -> str:
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
    return name if name and name[0].isalnum() else "key_" + name


# -- shape rules -----------------------------------------------------------------------------------
def _check_string(op, t: Tensor, what: str, ranks) -> None:
    if t.dtype is not _dtypes.string:
        raise TypeError(f"Input '{what}' of '{op.type}' Op '{op.name}' has type {t.dtype.name} "
                        f"that does not match expected type of string.")
    if t.shape.ndims is not None and t.shape.ndims not in ranks:
        raise ValueError(f"Shape must be rank {' or '.join(map(str, ranks))} but is rank "
                         f"{t.shape.ndims} for '{op.name}' (op: '{op.type}') input '{what}'")


def _check_defaults(op, defaults) -> None:
    dense_keys, types = op.get_attr("dense_keys"), op.get_attr("Tdense")
    shapes = op.get_attr("dense_shapes")
    if not len(dense_keys) == len(types) == len(shapes) == len(defaults):
        raise ValueError(f"'{op.name}' (op: '{op.type}'): dense_keys, Tdense, dense_shapes and "
                         f"dense_defaults must have the same length")
    if len(op.get_attr("sparse_keys")) != len(op.get_attr("sparse_types")):
        raise ValueError(f"'{op.name}' (op: '{op.type}'): sparse_keys and sparse_types must have "
                         f"the same length")
    for key, dtype, shape, default in zip(dense_keys, types, shapes, defaults):
        if default.dtype is not dtype:
            raise TypeError(f"'{op.name}' (op: '{op.type}'): the default of feature '{key}' is "
                            f"{default.dtype.name}, the feature is {dtype.name}")
        n = default.shape.num_elements()
        if n not in (None, 0) and n != shape.num_elements():
            raise ValueError(f"'{op.name}' (op: '{op.type}'): the default of feature '{key}' has "
                             f"{n} values, its shape {shape} needs {shape.num_elements()}")


@register_op("ParseExample")
def _parse_example_shape(op):
    serialized, names, *defaults = op.inputs
    _check_string(op, serialized, "serialized", (1,))
    _check_string(op, names, "names", (1,))
    _check_defaults(op, defaults)
    batch = serialized.shape.as_list()[0] if serialized.shape.ndims == 1 else None
    sparse_types = op.get_attr("sparse_types")
    return ([(_dtypes.int64, TensorShape([None, 2])) for _ in sparse_types]
            + [(t, TensorShape([None])) for t in sparse_types]
            + [(_dtypes.int64, TensorShape([2])) for _ in sparse_types]
            + [(t, TensorShape([batch]).concatenate(s))
               for t, s in zip(op.get_attr("Tdense"), op.get_attr("dense_shapes"))])


@register_op("ParseSingleExample")
def _parse_single_example_shape(op):
    serialized, *defaults = op.inputs
    _check_string(op, serialized, "serialized", (0,))
    _check_defaults(op, defaults)
    sparse_types = op.get_attr("sparse_types")
    return ([(_dtypes.int64, TensorShape([None, 1])) for _ in sparse_types]
            + [(t, TensorShape([None])) for t in sparse_types]
            + [(_dtypes.int64, TensorShape([1])) for _ in sparse_types]
            + [(t, s) for t, s in zip(op.get_attr("Tdense"), op.get_attr("dense_shapes"))])


@register_op("DecodeRaw")
def _decode_raw_shape(op):
    _check_string(op, op.inputs[0], "bytes", range(0, 64))
    out_type = op.get_attr("out_type")
    if out_type not in _RAW_DTYPES:
        raise TypeError(f"'{op.name}' (op: 'DecodeRaw'): out_type {out_type.name} is not one of "
                        f"{', '.join(d.name for d in _RAW_DTYPES)}")
    return [(out_type, op.inputs[0].shape.concatenate([None]))]


NotDifferentiable("ParseExample")
NotDifferentiable("ParseSingleExample")
NotDifferentiable("DecodeRaw")


# -- API -------------------------------------------------------------------------------------------
def _results(spec: _ParseSpec, outputs: List[Tensor]) -> Dict[str, object]:
    n_sparse = len(spec.sparse_keys)
    indices = outputs[:n_sparse]
    values = outputs[n_sparse:2 * n_sparse]
    shapes = outputs[2 * n_sparse:3 * n_sparse]
    dense = outputs[3 * n_sparse:]
    result: Dict[str, object] = {}
    for key, i, v, s in zip(spec.sparse_keys, indices, values, shapes):
        result[key] = SparseTensor(i, v, s)
    result.update(zip(spec.dense_keys, dense))
    return result


def parse_example(serialized, features, name: Optional[str] = None,
                  example_names=None) -> Dict[str, object]:
    """Parses a batch (a string vector) of serialized Examples: a dict of feature key ->
    ``[batch] + shape`` tensor (FixedLenFeature) or SparseTensor (VarLenFeature).
    ``example_names`` (a string vector, one per example) only label error messages."""
    spec = _ParseSpec(features, "parse_example")
    with name_scope(name, "ParseExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        names = convert_to_tensor(np.array([] if example_names is None else example_names,
                                           dtype=object), dtype=_dtypes.string, name="names")
        defaults = spec.default_tensors()
        op = _new_op("ParseExample", [serialized, names] + defaults, spec.attrs(),
                     name="ParseExample")
    return _results(spec, op.outputs)


def parse_single_example(serialized, features, name: Optional[str] = None,
                         example_names=None) -> Dict[str, object]:
    """Parses one serialized Example (a scalar string): a dict of feature key -> ``shape``
    tensor (FixedLenFeature) or SparseTensor of rank 1 (VarLenFeature)."""
    del example_names  # one example: TensorFlow ignores its name too
    spec = _ParseSpec(features, "parse_single_example")
    with name_scope(name, "ParseSingleExample", [serialized]):
        serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        defaults = spec.default_tensors()
        op = _new_op("ParseSingleExample", [serialized] + defaults, spec.attrs(),
                     name="ParseSingleExample")
    return _results(spec, op.outputs)


def decode_raw(bytes, out_type, little_endian: bool = True,  # noqa: A002  (TF's argument name)
               name: Optional[str] = None) -> Tensor:
    """Reinterprets the bytes of each string as a vector of ``out_type`` numbers: shape
    ``bytes.shape + [length / itemsize]``. All strings must have the same length."""
    t = convert_to_tensor(bytes, dtype=_dtypes.string)
    return _new_op("DecodeRaw", [t], {"out_type": _dtypes.as_dtype(out_type),
                                      "little_endian": bool(little_endian)},
                   name=name or "DecodeRaw").outputs[0]

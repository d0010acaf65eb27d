"""CPU kernels of lookup tables (tfjupyter/ops/lookup_ops.py).

A table is a resource of its device, found like a queue (``data_flow_kernels``'s resource
getter): made by the first kernel that needs it, under its shared_name or, without one, private
to the session. It is filled once; initializing it again with the same entries does nothing,
with others is an error, and a lookup before any initialization is a FailedPreconditionError,
as in TensorFlow.
"""
from __future__ import annotations

import threading
from typing import Dict

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS
from .data_flow_kernels import _resource_getter, resource_handle

_TABLE_TYPES = ("HashTableV2",)
_WHOLE_LINE, _LINE_NUMBER = -2, -1


def _key(value):
    """A key or value as the dict holds it: bytes for strings, Python numbers otherwise."""
    if isinstance(value, str):
        return value.encode()
    return value.item() if isinstance(value, np.generic) else value


class HashTableResource:
    def __init__(self, name: str, signature: tuple, value_dtype: np.dtype):
        self.name = name
        self.signature = signature
        self.value_dtype = value_dtype
        self.entries: Dict[object, object] = {}
        self.initialized = False
        self._lock = threading.Lock()

    def insert(self, keys, values, op) -> None:
        """Fills the table once; refilling checks that the entries are the same."""
        new: Dict[object, object] = {}
        for k, v in zip(keys, values):
            k, v = _key(k), _key(v)
            if new.setdefault(k, v) != v:
                raise errors.FailedPreconditionError(
                    None, op, f"HashTable has different value for same key. Key {k!r} has "
                              f"{new[k]!r} and trying to add value {v!r}")
        with self._lock:
            if self.initialized:
                if new != self.entries:
                    raise errors.FailedPreconditionError(
                        None, op, "Table was already initialized with different data.")
                return
            self.entries = new
            self.initialized = True

    def find(self, keys: np.ndarray, default, op) -> np.ndarray:
        if not self.initialized:
            raise errors.FailedPreconditionError(None, op, "Table not initialized.")
        get, default = self.entries.get, _key(np.asarray(default)[()])
        array = np.asarray(keys)
        found = [get(_key(k), default) for k in array.reshape(-1).tolist()]
        out = np.empty(len(found), dtype=self.value_dtype)
        out[:] = found
        return out.reshape(array.shape)


def _signature(src) -> tuple:
    return src.type, (("key_dtype", src.get_attr("key_dtype").name),
                      ("value_dtype", src.get_attr("value_dtype").name))


def _make_table(src, signature: tuple, name: str) -> HashTableResource:
    value_dtype = src.get_attr("value_dtype")
    return HashTableResource(name, signature,
                             np.dtype(object) if value_dtype.name == "string"
                             else np.dtype(value_dtype.as_numpy_dtype))


def _table(op, ctx):
    return _resource_getter(op, ctx, _TABLE_TYPES, "table", _make_table, _signature)


@KERNELS.register(*_TABLE_TYPES)
def hash_table(op, ctx):
    return resource_handle(_table(op, ctx))


@KERNELS.register("InitializeTableV2")
def initialize_table(op, ctx):
    get = _table(op, ctx)

    def run(keys, values):
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.shape != values.shape:
            raise errors.InvalidArgumentError(
                None, op, f"Expected shape {list(keys.shape)} for value, got "
                          f"{list(values.shape)}")
        get().insert(keys.tolist(), values.tolist(), op)
    return run


def _column(line: str, parts, index: int, number: int, dtype, filename: str, op):
    """The key or value of one vocabulary line."""
    if index == _WHOLE_LINE:
        text = line
    elif index == _LINE_NUMBER:
        return number
    elif index >= len(parts):
        raise errors.InvalidArgumentError(
            None, op, f"Invalid number of columns in {filename} line {number} ({line}) for the "
                      f"index {index}")
    else:
        text = parts[index]
    if dtype.name == "string":
        return text.encode()
    try:
        return float(text) if dtype.is_floating else int(text)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, op, f"Field {index} in line {number} is not a valid {dtype.name}: "
                      f"{text}") from None


@KERNELS.register("InitializeTableFromTextFileV2")
def initialize_table_from_text_file(op, ctx):
    get = _table(op, ctx)
    table_op = op.inputs[0].op
    key_dtype, value_dtype = table_op.get_attr("key_dtype"), table_op.get_attr("value_dtype")
    key_index, value_index = op.get_attr("key_index"), op.get_attr("value_index")
    vocab_size, delimiter = op.get_attr("vocab_size"), op.get_attr("delimiter")

    def run(filename):
        filename = np.asarray(filename, dtype=object)[()]
        filename = filename.decode() if isinstance(filename, bytes) else str(filename)
        try:
            with open(filename, "rb") as f:
                lines = f.read().decode("utf-8", "surrogateescape").splitlines()
        except FileNotFoundError:
            raise errors.NotFoundError(None, op, f"{filename}; No such file or directory") \
                from None
        if vocab_size > 0:
            if len(lines) < vocab_size:
                raise errors.InvalidArgumentError(
                    None, op, f"Invalid vocab_size in {filename}: expected {vocab_size} but got "
                              f"{len(lines)}")
            lines = lines[:vocab_size]
        keys, values = [], []
        for number, line in enumerate(lines):
            parts = line.split(delimiter) if delimiter else list(line)
            keys.append(_column(line, parts, key_index, number, key_dtype, filename, op))
            values.append(_column(line, parts, value_index, number, value_dtype, filename, op))
        get().insert(keys, values, op)
    return run


@KERNELS.register("LookupTableFindV2")
def lookup_table_find(op, ctx):
    get = _table(op, ctx)
    return lambda keys, default: get().find(keys, default, op)


@KERNELS.register("LookupTableSizeV2")
def lookup_table_size(op, ctx):
    get = _table(op, ctx)
    return lambda: np.array(len(get().entries), dtype=np.int64)

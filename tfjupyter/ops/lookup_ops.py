"""Lookup tables, as TensorFlow 1.x's ``lookup_ops`` (``tf.contrib.lookup``): ``HashTable``
with its initializers, ``index_table_from_tensor``/``_file`` (vocabulary -> id, with hashed
out-of-vocabulary buckets), ``index_to_string_table_from_tensor``/``_file``, and
``tf.tables_initializer()``.

A table is state kept by a device, like a queue: ``HashTableV2`` outputs its handle, and the
ops that use it (``InitializeTableV2``, ``InitializeTableFromTextFileV2``,
``LookupTableFindV2``, ``LookupTableSizeV2``) take the handle as a reference input, so they run
where it lives. The initializer ops go to the ``TABLE_INITIALIZERS`` collection, which
``tables_initializer()`` groups; a lookup in a table not yet initialized is a
FailedPreconditionError. Kernels in ``kernels/cpu/lookup_kernels.py``.

As in TensorFlow, a table made while a function is traced (a ``Dataset.map`` function, a
``tf.cond`` branch) is made in the outermost graph (``init_scope``), with its initializer, so
that ``tables_initializer()`` there fills it once; the function's lookups capture its handle.
Its keys and values must then be known while building (constants): they are rebuilt outside.
"""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import (GraphKeys, Operation, Tensor, add_to_collection, convert_to_tensor,
                             get_collection, get_default_graph, name_scope)
from ..framework.ops import op as _new_op
from ..framework.func_graph import init_scope
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from . import array_ops, math_ops
from ._shapes import constant_value, scalar_input
from .array_index_ops import where
from .control_flow_ops import group, no_op
from .string_hash_ops import string_to_hash_bucket_fast
from .string_transform_ops import as_string

__all__ = ["HashTable", "StaticHashTable", "KeyValueTensorInitializer", "TextFileInitializer",
           "TextFileIndex", "TextFileIdTableInitializer", "TextFileStringTableInitializer",
           "IdTableWithHashBuckets", "HasherSpec", "FastHashSpec", "LookupInterface",
           "InitializableLookupTableBase", "index_table_from_tensor", "index_table_from_file",
           "index_to_string_table_from_tensor", "index_to_string_table_from_file",
           "string_to_index", "index_to_string", "tables_initializer", "initialize_all_tables"]

_KEY_DTYPES = (dtypes.string, dtypes.int32, dtypes.int64)
TABLE_TYPES = ("HashTableV2",)


# -- shape rules -----------------------------------------------------------------------------------
@register_op("HashTableV2", stateful=True)
def _hash_table_shape(op):
    if op.get_attr("key_dtype") not in _KEY_DTYPES:
        raise TypeError(f"HashTable '{op.name}': keys of type {op.get_attr('key_dtype').name} "
                        f"are not supported (string, int32 or int64)")
    return [(dtypes.string, TensorShape(()))]


def _table_of(op) -> Optional[Operation]:
    scalar_input(op, 0, (dtypes.string,), "table_handle")
    src = op.inputs[0].op
    return src if src.type in TABLE_TYPES else None


def _check_table_types(op, keys: Tensor, values: Tensor, values_label: str) -> None:
    """Keys and values (or the default value) of the table's dtypes, when its op is known."""
    table = _table_of(op)
    if table is None:
        return
    for t, want, what in ((keys, table.get_attr("key_dtype"), "keys"),
                          (values, table.get_attr("value_dtype"), values_label)):
        if t.dtype != want:
            raise TypeError(f"{op.type} '{op.name}': {what} must be {want.name}, got "
                            f"{t.dtype.name}")


@register_op("InitializeTableV2", ref_inputs=(0,), stateful=True)
def _initialize_table_shape(op):
    keys, values = op.inputs[1], op.inputs[2]
    _check_table_types(op, keys, values, "values")
    if keys.shape.ndims not in (None, 1) or values.shape.ndims not in (None, 1):
        raise ValueError(f"InitializeTableV2 '{op.name}': keys and values must be vectors, got "
                         f"shapes {keys.shape} and {values.shape}")
    keys.shape.assert_is_compatible_with(values.shape)
    return []


@register_op("InitializeTableFromTextFileV2", ref_inputs=(0,), stateful=True)
def _initialize_from_file_shape(op):
    _table_of(op)
    scalar_input(op, 1, (dtypes.string,), "filename")
    return []


@register_op("LookupTableFindV2", ref_inputs=(0,), stateful=True)
def _find_shape(op):
    keys, default = op.inputs[1], op.inputs[2]
    _check_table_types(op, keys, default, "default_value")
    return [(default.dtype, keys.shape)]


@register_op("LookupTableSizeV2", ref_inputs=(0,), stateful=True)
def _size_shape(op):
    _table_of(op)
    return [(dtypes.int64, TensorShape(()))]


for _t in ("HashTableV2", "InitializeTableV2", "InitializeTableFromTextFileV2",
           "LookupTableFindV2", "LookupTableSizeV2"):
    NotDifferentiable(_t)


# -- tables ----------------------------------------------------------------------------------------
class LookupInterface:
    """What every table has: key and value dtypes, a name, ``lookup`` and ``size``."""

    def __init__(self, key_dtype, value_dtype, name: str):
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)
        self._name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    name = property(lambda self: self._name)


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by its initializer (an op in ``TABLE_INITIALIZERS``), then
    read-only. Missing keys get ``default_value``."""

    def __init__(self, default_value, initializer, name: str, shared_name: Optional[str] = None):
        super().__init__(initializer.key_dtype, initializer.value_dtype, name)
        with name_scope(None, name, [default_value]) as scope:
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype,
                                                    name="Const")
            with init_scope():
                self._resource_handle = _new_op(
                    "HashTableV2", [], {"key_dtype": self._key_dtype,
                                        "value_dtype": self._value_dtype,
                                        "shared_name": shared_name or "", "container": "",
                                        "use_node_name_sharing": False},
                    name="hash_table").outputs[0]
                self._init_op = initializer.initialize(self)
        self._name = scope.rstrip("/")

    @property
    def resource_handle(self) -> Tensor:
        return self._resource_handle

    table_ref = resource_handle
    init = property(lambda self: self._init_op)
    initializer = init
    default_value = property(lambda self: self._default_value)

    def size(self, name: Optional[str] = None) -> Tensor:
        with name_scope(name, f"{self._name}_Size"):
            return _new_op("LookupTableSizeV2", [self._resource_handle], {},
                           name="SizeV2" if name is None else None).outputs[0]

    def lookup(self, keys, name: Optional[str] = None):
        """The values of ``keys`` (a Tensor, or a SparseTensor whose values are looked up)."""
        from ..framework.sparse_tensor import SparseTensor
        if isinstance(keys, SparseTensor):
            return SparseTensor(keys.indices, self.lookup(keys.values, name), keys.dense_shape)
        keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
        with name_scope(name, f"{self._name}_Lookup", [keys]):
            values = _new_op("LookupTableFindV2",
                             [self._resource_handle, keys, self._default_value], {},
                             name="hash_table_Lookup").outputs[0]
        return values


class HashTable(InitializableLookupTableBase):
    """``tf.contrib.lookup.HashTable(initializer, default_value)``."""

    def __init__(self, initializer, default_value, shared_name: Optional[str] = None,
                 name: Optional[str] = None):
        super().__init__(default_value, initializer, name or "hash_table", shared_name)


StaticHashTable = HashTable


class KeyValueTensorInitializer:
    """Fills a table with ``keys[i] -> values[i]``."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None,
                 name: Optional[str] = None):
        with init_scope(), name_scope(name, "key_value_init") as scope:
            self._keys = _lifted(keys, key_dtype, "keys")
            self._values = _lifted(values, value_dtype, "values")
            self._name = scope
        self.key_dtype, self.value_dtype = self._keys.dtype, self._values.dtype

    def initialize(self, table: InitializableLookupTableBase) -> Operation:
        with name_scope(self._name, values=(table.resource_handle, self._keys, self._values)):
            op = _new_op("InitializeTableV2", [table.resource_handle, self._keys, self._values],
                         {}, name="table_init")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


def _lifted(value, dtype, name: str) -> Tensor:
    """``value`` as a tensor of the current (outermost) graph: a tensor of a function being
    traced is rebuilt as a constant, which it must be."""
    if isinstance(value, Tensor) and value.graph is not get_default_graph():
        known = constant_value(value)
        if known is None:
            raise ValueError(f"A lookup table made inside a function (a Dataset.map function, a "
                             f"tf.cond branch, a loop body) is made once, outside it, so its "
                             f"{name} must be constants; {value.name} is computed in the "
                             f"function")
        value = known
    return convert_to_tensor(value, dtype=dtype, name=name)


class TextFileIndex:
    """Special column numbers of a text file initializer."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer:
    """Fills a table from a text file: per line, the key is column ``key_index`` (or the whole
    line, or the line number) and the value column ``value_index``, columns split by
    ``delimiter``; ``vocab_size`` lines at most (all when None)."""

    def __init__(self, filename, key_dtype, key_index: int, value_dtype, value_index: int,
                 vocab_size: Optional[int] = None, delimiter: str = "\t",
                 name: Optional[str] = None):
        if key_index == TextFileIndex.LINE_NUMBER and dtypes.as_dtype(key_dtype) != dtypes.int64:
            raise ValueError(f"Signature mismatch. Keys must be dtype {dtypes.int64.name}, got "
                             f"{dtypes.as_dtype(key_dtype).name}.")
        if value_index == TextFileIndex.WHOLE_LINE and \
                dtypes.as_dtype(value_dtype) != dtypes.string:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.string.name}, "
                             f"got {dtypes.as_dtype(value_dtype).name}.")
        if key_index < -2 or value_index < -2:
            raise ValueError(f"Invalid key_index {key_index} or value_index {value_index}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        self._filename, self._key_index, self._value_index = filename, key_index, value_index
        self._vocab_size, self._delimiter, self._name = vocab_size, delimiter, name

    def initialize(self, table: InitializableLookupTableBase) -> Operation:
        with name_scope(self._name, "text_file_init", (table.resource_handle,)):
            filename = _lifted(self._filename, dtypes.string, "asset_filepath")
            op = _new_op("InitializeTableFromTextFileV2", [table.resource_handle, filename],
                         {"key_index": self._key_index, "value_index": self._value_index,
                          "vocab_size": -1 if self._vocab_size is None else self._vocab_size,
                          "delimiter": self._delimiter}, name="InitializeTableFromTextFileV2")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class TextFileIdTableInitializer(TextFileInitializer):
    """Whole lines -> their line numbers (a vocabulary file)."""

    def __init__(self, filename, key_column_index=TextFileIndex.WHOLE_LINE,
                 value_column_index=TextFileIndex.LINE_NUMBER, vocab_size=None, delimiter="\t",
                 name="text_file_id_table_init", key_dtype=dtypes.string):
        super().__init__(filename, key_dtype, key_column_index, dtypes.int64,
                         value_column_index, vocab_size, delimiter, name)


class TextFileStringTableInitializer(TextFileInitializer):
    """Line numbers -> whole lines (a reverse vocabulary file)."""

    def __init__(self, filename, key_column_index=TextFileIndex.LINE_NUMBER,
                 value_column_index=TextFileIndex.WHOLE_LINE, vocab_size=None, delimiter="\t",
                 name="text_file_string_table_init"):
        super().__init__(filename, dtypes.int64, key_column_index, dtypes.string,
                         value_column_index, vocab_size, delimiter, name)


class HasherSpec:
    """How out-of-vocabulary keys are hashed to buckets; only TF's default, the fast hash."""

    def __init__(self, hasher: str = "fasthash", key=None):
        if hasher != "fasthash" or key is not None:
            raise ValueError(f"Unsupported hasher spec {hasher!r} (only FastHashSpec, TF's "
                             f"default, is available)")
        self.hasher, self.key = hasher, key


FastHashSpec = HasherSpec("fasthash")


class IdTableWithHashBuckets(LookupInterface):
    """A string -> id table (or None) plus ``num_oov_buckets`` buckets: a key the table does
    not hold maps to ``table size + Fingerprint64(key) % num_oov_buckets``."""

    def __init__(self, table, num_oov_buckets: int, hasher_spec=FastHashSpec,
                 name: Optional[str] = None, key_dtype=None):
        if table is None and key_dtype is None:
            key_dtype = dtypes.string
        super().__init__(table.key_dtype if table is not None else key_dtype, dtypes.int64,
                         name or "hash_bucket")
        if num_oov_buckets < 0:
            raise ValueError(f"oov_buckets must be >= 0, got {num_oov_buckets}.")
        if not isinstance(hasher_spec, HasherSpec):
            raise TypeError(f"hasher_spec must be of type HasherSpec, got {hasher_spec}")
        self._table, self._num_oov_buckets = table, num_oov_buckets

    init = property(lambda self: self._table.init if self._table is not None else no_op())
    initializer = init
    resource_handle = property(lambda self: self._table.resource_handle)

    def size(self, name: Optional[str] = None) -> Tensor:
        with name_scope(name, f"{self.name}_Size"):
            table_size = (self._table.size() if self._table is not None
                          else math_ops.cast(0, dtypes.int64))
            return table_size + self._num_oov_buckets

    def lookup(self, keys, name: Optional[str] = None):
        from ..framework.sparse_tensor import SparseTensor
        if isinstance(keys, SparseTensor):
            return SparseTensor(keys.indices, self.lookup(keys.values, name), keys.dense_shape)
        keys = convert_to_tensor(keys, name="keys")
        if self._table is not None and self._table.key_dtype == dtypes.int64:
            keys = math_ops.cast(keys, dtypes.int64)
        with name_scope(name, f"{self.name}_Lookup", [keys]):
            ids = self._table.lookup(keys) if self._table is not None else None
            if not self._num_oov_buckets:
                return ids
            # Integer keys hash as their decimal text, as in TensorFlow.
            text = keys if keys.dtype == dtypes.string else as_string(keys)
            buckets = string_to_hash_bucket_fast(text, self._num_oov_buckets,
                                                 name="hash_bucket")
            if ids is None:
                return buckets
            oov = math_ops.add(buckets, self._table.size())
            return where(math_ops.not_equal(ids, self._table.default_value), ids, oov)


# -- the vocabulary helpers ------------------------------------------------------------------------
def _check_oov(num_oov_buckets: int, default_value) -> None:
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got "
                         f"{num_oov_buckets}.")
    if num_oov_buckets and default_value != -1:
        raise ValueError("Can't specify both num_oov_buckets and default_value")


def _with_buckets(table, num_oov_buckets: int, hasher_spec, scope: str, key_dtype):
    if not num_oov_buckets:
        return table
    return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec, name=scope,
                                  key_dtype=key_dtype)


def _positions(vocabulary: Tensor) -> Tensor:
    """0, 1, ... len(vocabulary) - 1, as int64."""
    return math_ops.cast(math_ops.range(array_ops.size(vocabulary)), dtypes.int64)


def index_table_from_tensor(vocabulary_list, num_oov_buckets: int = 0, default_value: int = -1,
                            hasher_spec=FastHashSpec, dtype=dtypes.string,
                            name: Optional[str] = None):
    """A table mapping each entry of ``vocabulary_list`` to its position; other keys to
    ``default_value``, or to one of ``num_oov_buckets`` buckets after the vocabulary."""
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    _check_oov(num_oov_buckets, default_value)
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name, "string_to_index") as scope:
        with init_scope():
            keys = _lifted(vocabulary_list, None, "vocabulary_list")
            if keys.dtype != dtype and not (keys.dtype.is_integer and dtype.is_integer):
                raise ValueError(f"Expected {dtype.name}, got {keys.dtype.name}.")
            if dtype.is_integer and keys.dtype != dtypes.int64:
                keys = math_ops.cast(keys, dtypes.int64)     # integer tables have int64 keys
                dtype = dtypes.int64
            init = KeyValueTensorInitializer(keys, _positions(keys), name="table_init")
        table = HashTable(init, default_value, name="hash_table")
        return _with_buckets(table, num_oov_buckets, hasher_spec, scope.rstrip("/"), dtype)


def index_table_from_file(vocabulary_file=None, num_oov_buckets: int = 0,
                          vocab_size: Optional[int] = None, default_value: int = -1,
                          hasher_spec=FastHashSpec, key_dtype=dtypes.string,
                          name: Optional[str] = None, key_column_index=TextFileIndex.WHOLE_LINE,
                          value_column_index=TextFileIndex.LINE_NUMBER, delimiter: str = "\t"):
    """A table mapping each line of ``vocabulary_file`` to its line number (see
    index_table_from_tensor for the out-of-vocabulary keys)."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    _check_oov(num_oov_buckets, default_value)
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}. "
                         f"vocabulary_file: {vocabulary_file}")
    with name_scope(name, "string_to_index") as scope:
        init = TextFileIdTableInitializer(vocabulary_file, key_column_index, value_column_index,
                                          vocab_size, delimiter, key_dtype=key_dtype)
        table = HashTable(init, default_value, name="hash_table")
        return _with_buckets(table, num_oov_buckets, hasher_spec, scope.rstrip("/"),
                             dtypes.as_dtype(key_dtype))


def index_to_string_table_from_tensor(vocabulary_list, default_value="UNK",
                                      name: Optional[str] = None) -> HashTable:
    """A table mapping ids (int64) to the entries of ``vocabulary_list``; others to
    ``default_value``."""
    if vocabulary_list is None:
        raise ValueError("vocabulary_list must be specified.")
    with name_scope(name, "index_to_string"):
        with init_scope():
            values = _lifted(vocabulary_list, dtypes.string, "vocabulary_list")
            init = KeyValueTensorInitializer(_positions(values), values, dtypes.int64,
                                             dtypes.string, name="table_init")
        return HashTable(init, default_value, name="hash_table")


def index_to_string_table_from_file(vocabulary_file, vocab_size: Optional[int] = None,
                                    default_value="UNK", name: Optional[str] = None,
                                    key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE,
                                    delimiter: str = "\t") -> HashTable:
    """A table mapping line numbers (int64) to the lines of ``vocabulary_file``."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    with name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(vocabulary_file, key_column_index,
                                              value_column_index, vocab_size, delimiter)
        return HashTable(init, default_value, name="hash_table")


def string_to_index(tensor, mapping, default_value: int = -1, name: Optional[str] = None):
    """Deprecated in TF 1.x: ``index_table_from_tensor(mapping).lookup(tensor)``."""
    with name_scope(name, "string_to_index"):
        return index_table_from_tensor(mapping, default_value=default_value).lookup(tensor)


def index_to_string(tensor, mapping, default_value="UNK", name: Optional[str] = None):
    """Deprecated in TF 1.x: ``index_to_string_table_from_tensor(mapping).lookup(tensor)``."""
    with name_scope(name, "index_to_string"):
        table = index_to_string_table_from_tensor(mapping, default_value=default_value)
        return table.lookup(math_ops.cast(tensor, dtypes.int64))


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """One op running every table initializer of the graph (a no-op when there is none)."""
    initializers = get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return group(*initializers, name=name)
    return no_op(name=name)


initialize_all_tables = tables_initializer

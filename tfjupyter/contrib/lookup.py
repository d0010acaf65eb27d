"""``tf.contrib.lookup``: TF 1.x's lookup tables (tfjupyter/ops/lookup_ops.py)."""
from __future__ import annotations

from ..ops.lookup_ops import (FastHashSpec, HashTable, HasherSpec,  # noqa: F401
                              IdTableWithHashBuckets, InitializableLookupTableBase,
                              KeyValueTensorInitializer, LookupInterface, TextFileIndex,
                              TextFileInitializer, TextFileIdTableInitializer,
                              TextFileStringTableInitializer, index_table_from_file,
                              index_table_from_tensor, index_to_string,
                              index_to_string_table_from_file, index_to_string_table_from_tensor,
                              string_to_index)

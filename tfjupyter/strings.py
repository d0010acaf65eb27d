"""``tf.strings``: TF 1.13+'s names of the string ops (the same objects as ``tf.as_string``,
``tf.substr``...; ``split`` is TF 1.15's ``tf.strings.split``, Python's ``str.split``)."""
from __future__ import annotations

from .ops.string_hash_ops import string_to_hash_bucket_fast as to_hash_bucket_fast  # noqa: F401
from .ops.string_ops import regex_full_match  # noqa: F401
from .ops.string_ops import string_join as join  # noqa: F401
from .ops.string_transform_ops import as_string, reduce_join, regex_replace, substr  # noqa: F401
from .ops.string_transform_ops import string_length as length  # noqa: F401
from .ops.string_transform_ops import string_lower as lower  # noqa: F401
from .ops.string_transform_ops import string_strip as strip  # noqa: F401
from .ops.string_transform_ops import string_to_number as to_number  # noqa: F401
from .ops.string_transform_ops import string_upper as upper  # noqa: F401
from .ops.string_transform_ops import strings_split as split  # noqa: F401

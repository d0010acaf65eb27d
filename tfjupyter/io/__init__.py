"""``tf.io``: TensorFlow 1.13+'s home for file and record I/O, gathering names found elsewhere
(``tf.gfile``, ``tf.python_io``, the parsing ops) under the newer spelling."""
from __future__ import annotations

from . import gfile  # noqa: F401
from ..ops.io_ops import matching_files, read_file  # noqa: F401
from ..ops.parsing_ops import (FixedLenFeature, VarLenFeature, decode_raw,  # noqa: F401
                               parse_example, parse_single_example)
from ..python_io import TFRecordCompressionType, TFRecordOptions, TFRecordWriter  # noqa: F401
from ..python_io import tf_record_iterator  # noqa: F401
from ..ops.csv_ops import decode_csv  # noqa: F401
from ..framework.graph_io import write_graph  # noqa: F401

__all__ = ["gfile", "matching_files", "read_file", "FixedLenFeature", "VarLenFeature",
           "decode_raw", "parse_example", "parse_single_example", "TFRecordCompressionType",
           "TFRecordOptions", "TFRecordWriter", "tf_record_iterator", "decode_csv", "write_graph"]

"""``tensorflow.python.ops.parsing_ops``: the parsing ops (tfjupyter/ops/parsing_ops.py) and
``decode_csv`` (tfjupyter/ops/csv_ops.py)."""
from ...ops.csv_ops import *  # noqa: F401,F403
from ...ops.parsing_ops import *  # noqa: F401,F403

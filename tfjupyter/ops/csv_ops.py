"""``tf.decode_csv`` (``tf.io.decode_csv``): CSV records to one tensor per column, as
TensorFlow's ``DecodeCSV`` op. Each column's ``record_defaults`` entry gives its dtype and the
value of an empty field (or one equal to ``na_value``); an empty entry makes the column
required. Kernel in ``kernels/cpu/csv_kernels.py``."""
from __future__ import annotations

from typing import List, Optional, Sequence

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ._shapes import check_dtype_in

__all__ = ["decode_csv"]

CSV_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)


@register_op("DecodeCSV")
def _decode_csv_shape(op):
    records = op.inputs[0]
    check_dtype_in(op, records, (dtypes.string,))
    for i, default in enumerate(op.inputs[1:]):
        check_dtype_in(op, default, CSV_DTYPES)
        if default.shape.ndims not in (None, 0, 1) or \
                (default.shape.ndims == 1 and default.shape.as_list()[0] not in (None, 0, 1)):
            raise ValueError(f"Shape of a default must be a length-0 or length-1 vector, or a "
                             f"scalar (record_defaults[{i}] of '{op.name}': {default.shape})")
    return [(d.dtype, records.shape) for d in op.inputs[1:]]


NotDifferentiable("DecodeCSV")


def decode_csv(records, record_defaults: Sequence, field_delim: str = ",",
               use_quote_delim: bool = True, name: Optional[str] = None, na_value: str = "",
               select_cols: Optional[Sequence[int]] = None) -> List[Tensor]:
    """One tensor per column, of the shape of ``records``. ``select_cols`` (increasing column
    numbers) decodes only those columns, one default per selected column."""
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    if len(field_delim) != 1:
        raise ValueError(f"field_delim should be only 1 char, got {field_delim!r}")
    with name_scope(name, "DecodeCSV", [records]):
        records = convert_to_tensor(records, dtype=dtypes.string, name="records")
        defaults = [convert_to_tensor(d, name=f"record_defaults_{i}")
                    for i, d in enumerate(record_defaults)]
        attrs = {"OUT_TYPE": [d.dtype for d in defaults], "field_delim": field_delim,
                 "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
                 "select_cols": list(select_cols or [])}
        return list(_new_op("DecodeCSV", [records] + defaults, attrs, name="DecodeCSV").outputs)

"""CPU kernel of ``DecodeCSV`` (tfjupyter/ops/csv_ops.py), with TensorFlow's rules and
messages: RFC 4180 quoting (a quoted field may hold the delimiter, ``""`` is a quote), empty or
``na_value`` fields take the column's default, a required column must be present."""
from __future__ import annotations

from typing import List

import numpy as np

from tfjupyter.framework import errors

from . import KERNELS

_PARSERS = {"float32": float, "float64": float, "int32": int, "int64": int}
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "int32": "int32", "int64": "int64"}
_INT_RANGES = {"int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


def split_record(record: bytes, delim: bytes, quoted: bool, op) -> List[bytes]:
    """The fields of one record."""
    if not quoted or b'"' not in record:
        return record.split(delim)
    fields, i, n = [], 0, len(record)
    while True:
        if i < n and record[i:i + 1] == b'"':
            field, i = bytearray(), i + 1
            while True:
                end = record.find(b'"', i)
                if end < 0:
                    raise errors.InvalidArgumentError(
                        None, op, "Quoted field has to end with quote followed by delim or end")
                field += record[i:end]
                if record[end + 1:end + 2] == b'"':        # an escaped quote
                    field += b'"'
                    i = end + 2
                    continue
                i = end + 1
                break
            if i < n and record[i:i + 1] != delim:
                raise errors.InvalidArgumentError(
                    None, op, "Quote inside a string has to be escaped by another quote")
            fields.append(bytes(field))
        else:
            end = record.find(delim, i)
            end = n if end < 0 else end
            fields.append(record[i:end])
            i = end
        if i >= n:
            return fields
        i += 1                                          # past the delimiter
        if i == n:                                      # a trailing delimiter: an empty field
            fields.append(b"")
            return fields


@KERNELS.register("DecodeCSV")
def decode_csv(op, ctx):
    types = [t.name for t in op.get_attr("OUT_TYPE")]
    delim = op.get_attr("field_delim").encode()
    quoted = op.get_attr("use_quote_delim")
    na_value = op.get_attr("na_value").encode()
    select = list(op.get_attr("select_cols"))
    n_out = len(types)

    def parse(text: bytes, column: int, record: int):
        kind = types[column]
        if kind == "string":
            return text
        try:
            value = _PARSERS[kind](text.strip())
        except ValueError:
            raise errors.InvalidArgumentError(
                None, op, f"Field {column} in record {record} is not a valid "
                          f"{_TF_TYPE_NAMES[kind]}: {text.decode('utf-8', 'replace')}") from None
        lo_hi = _INT_RANGES.get(kind)
        if lo_hi and not lo_hi[0] <= value <= lo_hi[1]:
            raise errors.InvalidArgumentError(
                None, op, f"Field {column} in record {record} is not a valid "
                          f"{_TF_TYPE_NAMES[kind]}: {text.decode('utf-8', 'replace')}")
        return value

    def run(records, *defaults):
        defaults = [np.asarray(d).reshape(-1) for d in defaults]
        records = np.asarray(records, dtype=object)
        flat = records.reshape(-1).tolist()
        columns = [[None] * len(flat) for _ in range(n_out)]
        for r, record in enumerate(flat):
            record = record if isinstance(record, bytes) else str(record).encode()
            fields = split_record(record, delim, quoted, op)
            if select:
                if select[-1] >= len(fields):
                    found = sum(c < len(fields) for c in select)
                    raise errors.InvalidArgumentError(
                        None, op, f"Expect {len(select)} fields but have {found} in record {r}")
                fields = [fields[c] for c in select]
            elif len(fields) != n_out:
                raise errors.InvalidArgumentError(
                    None, op, f"Expect {n_out} fields but have {len(fields)} in record {r}")
            for c, text in enumerate(fields):
                if text == b"" or text == na_value:
                    if defaults[c].size == 0:
                        raise errors.InvalidArgumentError(
                            None, op, f"Field {c} is required but missing in record {r}!")
                    columns[c][r] = defaults[c][0]
                else:
                    columns[c][r] = parse(text, c, r)
        outputs = []
        for c, kind in enumerate(types):
            out = np.empty(len(flat), dtype=object if kind == "string" else kind)
            out[:] = columns[c]
            outputs.append(out.reshape(records.shape))
        return tuple(outputs) if n_out > 1 else outputs[0]   # one output: the array itself
    return run

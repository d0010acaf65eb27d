"""Writes tfjupyter/framework/tf_op_args.py from real TensorFlow's op registry (any 2.x; 2.21
wrote the committed file), best in a virtual environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_tf_op_args.py

For each public op type whose inputs or outputs take their types from attrs, the module lists
those attrs per argument; ``graph_io.export_graph_def`` adds them to NodeDefs, since
TensorFlow's importer requires them and infers none.
"""
import os

import tensorflow as tf
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                   "tfjupyter", "framework", "tf_op_args.py")

HEADER = '''"""The attrs that TensorFlow's OpDefs derive from an op's inputs and outputs: for
each op type, per input and per output argument, "T" (one tensor whose type is attr T), "N*T"
(N tensors of type T), "N*" (N tensors of a fixed type), "[L]" (tensors whose types are the list
attr L) or "" (one tensor of a fixed type).

Generated from TensorFlow {version}'s op registry by tests/data/make_tf_op_args.py: do not edit.
"""

TENSORFLOW_VERSION = "{version}"

OP_ARGS = {{
'''


def arg_spec(arg) -> str:
    if arg.type_list_attr:
        return f"[{arg.type_list_attr}]"
    return (f"{arg.number_attr}*" if arg.number_attr else "") + arg.type_attr


def write_table(path: str, header: str, entry) -> None:
    """A module: the header, then ``entry(op)`` for each public op of TensorFlow's registry
    (none where it gives None)."""
    buffer = pywrap_tf_session.TF_GetAllOpList()
    op_list = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetBuffer(buffer))
    lines = []
    for op in sorted(op_list.op, key=lambda op: op.name):
        value = None if op.name.startswith("_") else entry(op)
        if value is not None:
            lines.append(f"    {op.name!r}: {value!r},\n")
    with open(path, "w") as f:
        f.write(header.format(version=tf.__version__))
        f.writelines(lines)
        f.write("}\n")


def op_args(op):
    inputs = tuple(arg_spec(a) for a in op.input_arg)
    outputs = tuple(arg_spec(a) for a in op.output_arg)
    return (inputs, outputs) if any(inputs + outputs) else None


def main():
    write_table(OUT, HEADER, op_args)


if __name__ == "__main__":
    main()

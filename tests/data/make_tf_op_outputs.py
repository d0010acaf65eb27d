"""Writes tfjupyter/framework/tf_op_outputs.py from real TensorFlow's op registry (any 2.x; 2.21
wrote the committed file), best in a virtual environment of its own:

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python tests/data/make_tf_op_outputs.py

For each op type, the names of its OpDef's output arguments: inside a FunctionDef, TensorFlow
names an op's output ``node:output_arg:index``, so ``framework/function_io.py`` needs them to
write function bodies TensorFlow runs and to read those TensorFlow wrote.
"""
import os

from make_tf_op_args import write_table

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                   "tfjupyter", "framework", "tf_op_outputs.py")

HEADER = '''"""The names of the output arguments of TensorFlow's OpDefs, per op type; an op type not
listed has one output argument named "output" (or none). The arguments' lengths are in
tf_op_args.py.

Generated from TensorFlow {version}'s op registry by tests/data/make_tf_op_outputs.py: do not
edit.
"""

TENSORFLOW_VERSION = "{version}"

OUTPUT_NAMES = {{
'''


def output_names(op):
    names = tuple(a.name for a in op.output_arg)
    return None if names in ((), ("output",)) else names


if __name__ == "__main__":
    write_table(OUT, HEADER, output_names)

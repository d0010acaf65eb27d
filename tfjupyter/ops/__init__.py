"""Op definitions: for each op type its Python API function, shape rule and gradient, side by side.

Kernels live in the backends (``tfjupyter.kernels.cpu`` ...), registered under the same op type.

array_ops and math_ops gather parts that import them back (array_join_ops, array_index_ops,
array_scatter_ops; clip_ops, reduction_ops): a cycle only they can enter, so they load first
whichever module of this package is imported first.
"""
from . import array_ops, math_ops  # noqa: F401

"""Op definitions: for each op type its Python API function, shape rule and gradient, side by side.

Kernels live in the backends (``tfjupyter.kernels.cpu`` ...), registered under the same op type.
"""

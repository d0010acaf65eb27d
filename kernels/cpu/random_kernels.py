from . import KERNELS  # noqa: F401

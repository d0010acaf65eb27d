"""(being written)"""
from . import KERNELS  # noqa: F401

"""``tf.compat``: TensorFlow's helpers for text versus bytes and for number types, and
``tf.compat.v1`` (``import tfjupyter.compat.v1 as tf``: the whole TF 1.x API), imported on
first use so that this module stays light."""
from __future__ import annotations

import importlib
import numbers
import os
from typing import Union

import numpy as np

__all__ = ["as_bytes", "as_text", "as_str", "as_str_any", "path_to_str", "bytes_or_text_types",
           "integral_types", "real_types", "complex_types"]

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text: Union[bytes, bytearray, str], encoding: str = "utf-8") -> bytes:
    """``bytes_or_text`` as bytes (text is encoded); TypeError for anything else."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Union[bytes, str], encoding: str = "utf-8") -> str:
    """``bytes_or_text`` as str (bytes are decoded); TypeError for anything else."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text    # Python 3's str is text


def as_str_any(value) -> str:
    """Bytes decoded as text; any other value through ``str()``."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path) -> str:
    """A path-like object (``pathlib.Path``) as a str; other values unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def __getattr__(name: str):
    """``tf.compat.v1``: the submodule, imported on first use."""
    if name == "v1":
        return importlib.import_module(".v1", __name__)
    raise AttributeError(f"module 'tfjupyter.compat' has no attribute {name!r}")

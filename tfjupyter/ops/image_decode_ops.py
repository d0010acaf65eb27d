"""tf.image.decode_jpeg / decode_png: encoded image bytes to uint8 (PNG: or uint16) pixels
[height, width, channels]. The CPU kernels decode with Pillow (kernels/cpu/image_kernels.py)."""
from __future__ import annotations

from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor
from ..framework.ops import op as _new_op
from ..framework.registry import NotDifferentiable, register_op
from ..framework.tensor_shape import TensorShape
from ._shapes import scalar_input

__all__ = ["decode_jpeg", "decode_png"]

_CHANNELS = {"DecodeJpeg": (0, 1, 3), "DecodePng": (0, 1, 3, 4)}


def _decode_shape(op):
    scalar_input(op, 0, (dtypes.string,), "contents")
    channels = op.get_attr("channels")
    if channels not in _CHANNELS[op.type]:
        raise ValueError(f"'{op.name}' (op: '{op.type}'): channels must be one of "
                         f"{_CHANNELS[op.type]}, got {channels}")
    dtype = op.get_attr("dtype") if op.type == "DecodePng" else dtypes.uint8
    return [(dtype, TensorShape([None, None, channels or None]))]


register_op("DecodeJpeg")(_decode_shape)
register_op("DecodePng")(_decode_shape)
NotDifferentiable("DecodeJpeg")
NotDifferentiable("DecodePng")


def decode_jpeg(contents, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1.0,
                dct_method: str = "", name: Optional[str] = None) -> Tensor:
    """A JPEG's pixels, uint8 [height, width, channels]: channels 0 keeps the file's (1 or 3),
    1 gives grayscale, 3 RGB; ``ratio`` (1, 2, 4, 8) downscales while decoding."""
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"decode_jpeg: ratio must be 1, 2, 4 or 8, got {ratio}")
    contents = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
    attrs = {"channels": int(channels), "ratio": int(ratio),
             "fancy_upscaling": bool(fancy_upscaling),
             "try_recover_truncated": bool(try_recover_truncated),
             "acceptable_fraction": float(acceptable_fraction), "dct_method": dct_method}
    return _new_op("DecodeJpeg", [contents], attrs, name=name or "DecodeJpeg").outputs[0]


def decode_png(contents, channels: int = 0, dtype=dtypes.uint8,
               name: Optional[str] = None) -> Tensor:
    """A PNG's pixels [height, width, channels] as uint8 or uint16: channels 0 keeps the
    file's, 1 grayscale, 3 RGB, 4 RGBA."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"decode_png: dtype must be uint8 or uint16, got {dtype.name}")
    contents = convert_to_tensor(contents, dtype=dtypes.string, name="contents")
    return _new_op("DecodePng", [contents], {"channels": int(channels), "dtype": dtype},
                   name=name or "DecodePng").outputs[0]

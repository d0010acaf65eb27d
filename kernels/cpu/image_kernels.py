"""CPU kernels for the image resize ops (tfjupyter/ops/image_resize_ops.py).

Each output row/column reads fixed input rows/columns, so the sampling is computed once per
(input size, output size) as index and weight vectors and applied with numpy fancy indexing;
the gradients scatter back through the same vectors with ``np.add.at``.
"""
from __future__ import annotations

import functools

import numpy as np

from . import KERNELS

__all__ = ["bilinear_taps", "nearest_taps", "resize_bilinear", "resize_nearest"]


def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


@functools.lru_cache(maxsize=64)
def bilinear_taps(in_size: int, out_size: int, align_corners: bool):
    """(lower index, upper index, weight of the upper) for each output position."""
    src = np.arange(out_size, dtype=np.float64) * _scale(in_size, out_size, align_corners)
    lower = np.floor(src).astype(np.int64)
    upper = np.minimum(lower + 1, in_size - 1)
    return lower, upper, (src - lower).astype(np.float32)


@functools.lru_cache(maxsize=64)
def nearest_taps(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    # TensorFlow 1.x rounds with align_corners and floors without (roundf: halves away from 0).
    src = np.arange(out_size, dtype=np.float64) * _scale(in_size, out_size, align_corners)
    picked = np.floor(src + 0.5) if align_corners else np.floor(src)
    return np.minimum(picked.astype(np.int64), in_size - 1)


def _check(op_name: str, images: np.ndarray, size) -> tuple:
    if images.ndim != 4:
        raise ValueError(f"{op_name}: input must be 4-dimensional, got shape {images.shape}")
    size = np.asarray(size).reshape(-1)
    if size.shape != (2,):
        raise ValueError(f"{op_name}: size must be 1-dimensional with 2 elements, got {size}")
    out_h, out_w = int(size[0]), int(size[1])
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"{op_name}: output dimensions must be positive, got {[out_h, out_w]}")
    if images.shape[1] == 0 or images.shape[2] == 0:
        raise ValueError(f"{op_name}: input image must be of non-zero size, got {images.shape}")
    return out_h, out_w


def resize_bilinear(images: np.ndarray, out_h: int, out_w: int, align_corners: bool) -> np.ndarray:
    _, in_h, in_w, _ = images.shape
    top, bottom, dy = bilinear_taps(in_h, out_h, align_corners)
    left, right, dx = bilinear_taps(in_w, out_w, align_corners)
    x = images.astype(np.float32, copy=False)
    rows_top, rows_bottom = x[:, top], x[:, bottom]
    dx4 = dx[None, None, :, None]
    upper = rows_top[:, :, left] + (rows_top[:, :, right] - rows_top[:, :, left]) * dx4
    lower = rows_bottom[:, :, left] + (rows_bottom[:, :, right] - rows_bottom[:, :, left]) * dx4
    return upper + (lower - upper) * dy[None, :, None, None]


def resize_bilinear_grad(grads: np.ndarray, in_h: int, in_w: int, align_corners: bool,
                         dtype) -> np.ndarray:
    n, out_h, out_w, c = grads.shape
    top, bottom, dy = bilinear_taps(in_h, out_h, align_corners)
    left, right, dx = bilinear_taps(in_w, out_w, align_corners)
    g = grads.astype(np.float64)
    # Rows first: spread each output row to its two input rows, then the columns likewise.
    rows = np.zeros((n, in_h, out_w, c))
    np.add.at(rows, (slice(None), top), g * (1 - dy)[None, :, None, None])
    np.add.at(rows, (slice(None), bottom), g * dy[None, :, None, None])
    out = np.zeros((n, in_h, in_w, c))
    np.add.at(out, (slice(None), slice(None), left), rows * (1 - dx)[None, None, :, None])
    np.add.at(out, (slice(None), slice(None), right), rows * dx[None, None, :, None])
    return out.astype(dtype)


def resize_nearest(images: np.ndarray, out_h: int, out_w: int, align_corners: bool) -> np.ndarray:
    _, in_h, in_w, _ = images.shape
    rows = nearest_taps(in_h, out_h, align_corners)
    cols = nearest_taps(in_w, out_w, align_corners)
    return images[:, rows][:, :, cols]


def resize_nearest_grad(grads: np.ndarray, in_h: int, in_w: int, align_corners: bool) -> np.ndarray:
    n, out_h, out_w, c = grads.shape
    rows = nearest_taps(in_h, out_h, align_corners)
    cols = nearest_taps(in_w, out_w, align_corners)
    acc = np.zeros((n, in_h, in_w, c), np.float64 if grads.dtype.kind == "f" else grads.dtype)
    np.add.at(acc, (slice(None), rows[:, None], cols[None, :]), grads)
    return acc.astype(grads.dtype)


def _resize_kernel(resize):
    """The kernel factory of a forward resize op: ``resize(images, out_h, out_w, align)``."""
    def factory(op, ctx):
        align = bool(op.get_attr("align_corners"))

        def run(images, size):
            out_h, out_w = _check(f"{op.type} '{op.name}'", images, size)
            return resize(images, out_h, out_w, align)
        return run
    return factory


KERNELS.register("ResizeBilinear")(_resize_kernel(resize_bilinear))
KERNELS.register("ResizeNearestNeighbor")(_resize_kernel(resize_nearest))


@KERNELS.register("ResizeBilinearGrad")
def resize_bilinear_grad_kernel(op, ctx):
    align = bool(op.get_attr("align_corners"))

    def run(grads, original):
        return resize_bilinear_grad(grads, original.shape[1], original.shape[2], align,
                                    original.dtype)
    return run


@KERNELS.register("ResizeNearestNeighborGrad")
def resize_nearest_grad_kernel(op, ctx):
    align = bool(op.get_attr("align_corners"))

    def run(grads, size):
        in_h, in_w = _check(f"{op.type} '{op.name}'", grads, size)
        return resize_nearest_grad(grads, in_h, in_w, align)
    return run


# -- DecodeJpeg, DecodePng -------------------------------------------------------------------------
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def decode_image(data: bytes, channels: int, what: str, draft_ratio: int = 1) -> np.ndarray:
    """Pixels [height, width, channels] of an encoded image, with Pillow (a dependency of
    bokeh, which tfjupyter requires); 16-bit PNGs stay 16-bit."""
    import io

    from PIL import Image, UnidentifiedImageError
    from tfjupyter.framework import errors
    try:
        image = Image.open(io.BytesIO(data))
        if draft_ratio > 1:   # libjpeg's DCT scaling, as TensorFlow's ratio attribute does
            image.draft(image.mode, (image.width // draft_ratio, image.height // draft_ratio))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise errors.InvalidArgumentError(None, None, f"{what}: invalid image data ({e})")
    if channels:
        if image.mode.startswith("I;16") and channels == 1:
            pixels = np.asarray(image, dtype=np.uint16)
        else:
            pixels = np.asarray(image.convert(_MODES[channels]))
    elif image.mode in ("L", "RGB", "RGBA", "LA") or image.mode.startswith("I;16"):
        pixels = np.asarray(image)
    else:
        pixels = np.asarray(image.convert("RGB"))
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return np.ascontiguousarray(pixels)


def _decode_kernel(kind: str):
    def factory(op, ctx):
        channels = int(op.get_attr("channels"))
        ratio = int(op.get_attr("ratio")) if kind == "DecodeJpeg" else 1
        out_dtype = np.dtype(op.outputs[0].dtype.as_numpy_dtype)
        what = f"{kind} '{op.name}'"

        def run(contents):
            data = contents[()] if isinstance(contents, np.ndarray) else contents
            pixels = decode_image(bytes(data), channels, what, ratio)
            if pixels.dtype == out_dtype:
                return pixels
            if pixels.dtype == np.uint8:   # an 8-bit PNG asked for as uint16: scale by 257
                return pixels.astype(np.uint16) * np.uint16(257)
            return (pixels // 257).astype(np.uint8)
        return run
    return factory


KERNELS.register("DecodeJpeg")(_decode_kernel("DecodeJpeg"))
KERNELS.register("DecodePng")(_decode_kernel("DecodePng"))

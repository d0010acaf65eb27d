"""tf.image: flips, crops and pads, brightness/contrast, standardization, dtype conversion,
resizing; and tf.random_crop.

As in TensorFlow, everything but resizing is built from existing ops (slice, pad, reverse,
select, reductions, random_uniform), so gradients and device placement come with them. Images
are [height, width, channels] or a batch of them [batch, height, width, channels].
"""
from __future__ import annotations

import enum
from typing import Optional

from ..framework import dtypes
from ..framework.ops import Tensor, convert_to_tensor, name_scope
from . import array_ops, math_ops, random_ops
from .image_decode_ops import decode_jpeg, decode_png
from .image_resize_ops import resize_bilinear, resize_nearest_neighbor

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
           "convert_image_dtype", "crop_to_bounding_box", "decode_jpeg", "decode_png",
           "flip_left_right", "flip_up_down",
           "pad_to_bounding_box", "per_image_standardization", "random_brightness",
           "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "resize_bilinear", "resize_image_with_crop_or_pad", "resize_images",
           "resize_nearest_neighbor", "transpose_image"]


def _image(image, what: str = "image") -> Tensor:
    """``image`` as a tensor of rank 3 or 4 (unknown rank is allowed: checked when run)."""
    image = convert_to_tensor(image, name=what)
    if image.shape.ndims not in (None, 3, 4):
        raise ValueError(f"'{what}' ({image.name}) must be 3-D [height, width, channels] or "
                         f"4-D [batch, height, width, channels], got shape {image.shape}")
    return image


def _rank(image: Tensor) -> int:
    if image.shape.ndims is None:
        raise ValueError(f"'{image.name}' must have a known rank (3 or 4) for this image op")
    return image.shape.ndims


# -- flips -----------------------------------------------------------------------------------------
def _flip(image, axis_from_end: int, name: str) -> Tensor:
    with name_scope(None, name, [image]) as scope:
        image = _image(image)
        return array_ops.reverse(image, [_rank(image) - axis_from_end], name=scope)


def flip_left_right(image) -> Tensor:
    """The image mirrored horizontally (the width dimension reversed)."""
    return _flip(image, 2, "flip_left_right")


def flip_up_down(image) -> Tensor:
    """The image mirrored vertically (the height dimension reversed)."""
    return _flip(image, 3, "flip_up_down")


def _random_flip(image, axis_from_end: int, seed, name: str) -> Tensor:
    """Flips with probability 1/2: a 3-D image as a whole, a batch image by image."""
    with name_scope(None, name, [image]) as scope:
        image = _image(image)
        rank = _rank(image)
        draws = [] if rank == 3 else array_ops.shape(image)[:1]
        uniform = random_ops.random_uniform(draws, 0, 1.0, seed=seed)
        flipped = array_ops.reverse(image, [rank - axis_from_end])
        return array_ops.select(math_ops.less(uniform, 0.5), flipped, image, name=scope)


def random_flip_left_right(image, seed: Optional[int] = None) -> Tensor:
    return _random_flip(image, 2, seed, "random_flip_left_right")


def random_flip_up_down(image, seed: Optional[int] = None) -> Tensor:
    return _random_flip(image, 3, seed, "random_flip_up_down")


def transpose_image(image) -> Tensor:
    """Height and width swapped."""
    with name_scope(None, "transpose_image", [image]) as scope:
        image = _image(image)
        perm = [1, 0, 2] if _rank(image) == 3 else [0, 2, 1, 3]
        return array_ops.transpose(image, perm, name=scope)


# -- crops and pads --------------------------------------------------------------------------------
def _hw(image: Tensor):
    """(height, width) of an image: ints where known, else scalar int32 tensors."""
    rank = _rank(image)
    static = image.shape.as_list()[rank - 3:rank - 1]
    dynamic = array_ops.shape(image)
    return [d if d is not None else dynamic[rank - 3 + i] for i, d in enumerate(static)]


def _check_static(ok, message: str) -> None:
    """Raises ValueError when a condition is decidable now and false."""
    if isinstance(ok, bool) and not ok:
        raise ValueError(message)


def _is_int(*values) -> bool:
    return all(isinstance(v, int) for v in values)


def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width) -> Tensor:
    """The [target_height, target_width] window whose top-left corner is at the offsets."""
    with name_scope(None, "crop_to_bounding_box", [image]) as scope:
        image = _image(image)
        height, width = _hw(image)
        if _is_int(offset_height, offset_width, target_height, target_width):
            _check_static(offset_width >= 0, "offset_width must be >= 0.")
            _check_static(offset_height >= 0, "offset_height must be >= 0.")
            _check_static(target_width > 0, "target_width must be > 0.")
            _check_static(target_height > 0, "target_height must be > 0.")
            if _is_int(width):
                _check_static(width >= target_width + offset_width,
                              "width must be >= target + offset.")
            if _is_int(height):
                _check_static(height >= target_height + offset_height,
                              "height must be >= target + offset.")
        begin = [offset_height, offset_width, 0]
        size = [target_height, target_width, -1]
        if _rank(image) == 4:
            begin, size = [0] + begin, [-1] + size
        return array_ops.slice(image, array_ops.stack(begin), array_ops.stack(size), name=scope)


def pad_to_bounding_box(image, offset_height, offset_width, target_height,
                        target_width) -> Tensor:
    """The image placed at the offsets on a zero canvas of [target_height, target_width]."""
    with name_scope(None, "pad_to_bounding_box", [image]) as scope:
        image = _image(image)
        height, width = _hw(image)
        after_h = target_height - offset_height - height
        after_w = target_width - offset_width - width
        _check_static(not _is_int(offset_height) or offset_height >= 0,
                      "offset_height must be >= 0")
        _check_static(not _is_int(offset_width) or offset_width >= 0, "offset_width must be >= 0")
        _check_static(not _is_int(after_h) or after_h >= 0, "height must be <= target - offset")
        _check_static(not _is_int(after_w) or after_w >= 0, "width must be <= target - offset")
        rows = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
        if _rank(image) == 4:
            rows = [[0, 0]] + rows
        paddings = array_ops.stack([array_ops.stack(r) for r in rows])
        return array_ops.pad(image, paddings, name=scope)


def _max(a, b):
    return max(a, b) if _is_int(a, b) else math_ops.maximum(a, b)


def _min(a, b):
    return min(a, b) if _is_int(a, b) else math_ops.minimum(a, b)


def resize_image_with_crop_or_pad(image, target_height: int, target_width: int) -> Tensor:
    """Crops the centre or pads evenly with zeros to [target_height, target_width]."""
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = _image(image)
        for value, what in ((target_height, "target_height"), (target_width, "target_width")):
            _check_static(not _is_int(value) or value > 0, f"{what} must be > 0.")
        height, width = _hw(image)
        width_diff, height_diff = target_width - width, target_height - height
        cropped = crop_to_bounding_box(image, _max(-height_diff // 2, 0), _max(-width_diff // 2, 0),
                                       _min(target_height, height), _min(target_width, width))
        resized = pad_to_bounding_box(cropped, _max(height_diff // 2, 0), _max(width_diff // 2, 0),
                                      target_height, target_width)
        static = [t if _is_int(t) else None for t in (target_height, target_width)]
        if _rank(image) == 3:
            resized.set_shape(static + [image.shape.as_list()[2]])
        else:
            resized.set_shape(image.shape.as_list()[:1] + static + image.shape.as_list()[3:])
        return resized


def central_crop(image, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` of the image's height and width (a 3-D image)."""
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    image = _image(image)
    if central_fraction == 1.0:
        return image
    height, width = image.shape.as_list()[-3:-1]
    if height is None or width is None:
        raise ValueError(f"central_crop needs the height and width of {image.name} known")
    top = int(height - height * central_fraction) // 2
    left = int(width - width * central_fraction) // 2
    return crop_to_bounding_box(image, top, left, height - 2 * top, width - 2 * left)


def random_crop(value, size, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """A window of shape ``size`` at a uniformly random offset in ``value`` (any rank)."""
    with name_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        static_size = array_ops._const(size)
        if static_size is not None and value.shape.ndims is not None:
            dims = value.shape.as_list()
            if len(static_size) != len(dims):
                raise ValueError(f"random_crop: size {list(static_size)} must have one entry per "
                                 f"dimension of {value.name} (shape {value.shape})")
            for want, have in zip(static_size, dims):
                if have is not None and not 0 <= want <= have:
                    raise ValueError(f"random_crop: need value.shape >= size, got "
                                     f"{value.shape} and {list(static_size)}")
        limit = array_ops.shape(value) - size + 1
        offset = random_ops.random_uniform(array_ops.shape(limit), dtype=dtypes.int32,
                                           maxval=dtypes.int32.max, seed=seed) % limit
        return array_ops.slice(value, offset, size, name=scope)


# -- colour ----------------------------------------------------------------------------------------
def convert_image_dtype(image, dtype, saturate: bool = False, name: Optional[str] = None) -> Tensor:
    """Converts between image types, rescaling: floats span [0, 1], integers [0, MAX]."""
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if image.dtype is dtype:
        return array_ops.identity(image, name=name)
    with name_scope(name, "convert_image", [image]) as scope:
        if image.dtype.is_integer and dtype.is_integer:
            scale_in, scale_out = image.dtype.max + 1, dtype.max + 1
            if scale_in > scale_out:
                shrunk = math_ops.floordiv(image, scale_in // scale_out)
                return math_ops.cast(shrunk, dtype, name=scope)
            return math_ops.multiply(math_ops.cast(image, dtype), scale_out // scale_in, name=scope)
        if image.dtype.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=scope)
        if image.dtype.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / image.dtype.max, name=scope)
        scaled = math_ops.multiply(image, dtype.max + 0.5)
        if saturate:
            scaled = math_ops.clip_by_value(scaled, float(dtype.min), float(dtype.max))
        return math_ops.cast(scaled, dtype, name=scope)


def _in_float(image: Tensor, fn, name: str) -> Tensor:
    """fn applied to the image as floats; an integer image is converted there and back."""
    with name_scope(None, name, [image]) as scope:
        if image.dtype.is_floating:
            return array_ops.identity(fn(image), name=scope)
        result = fn(convert_image_dtype(image, dtypes.float32))
        return convert_image_dtype(result, image.dtype, saturate=True, name=scope)


def adjust_brightness(image, delta) -> Tensor:
    """``delta`` added to every pixel (in [0, 1] units for integer images)."""
    image = _image(image)
    return _in_float(image, lambda x: math_ops.add(x, math_ops.cast(delta, x.dtype)),
                     "adjust_brightness")


def adjust_contrast(images, contrast_factor) -> Tensor:
    """Each channel of each image moved away from its mean by ``contrast_factor``:
    (x - mean) * contrast_factor + mean, the mean taken over height and width."""
    images = _image(images, "images")

    def contrast(x):
        mean = math_ops.reduce_mean(x, axis=[-3, -2], keepdims=True)
        return math_ops.add(math_ops.multiply(math_ops.subtract(x, mean),
                                              math_ops.cast(contrast_factor, x.dtype)), mean)
    return _in_float(images, contrast, "adjust_contrast")


def random_brightness(image, max_delta, seed: Optional[int] = None) -> Tensor:
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed: Optional[int] = None) -> Tensor:
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image) -> Tensor:
    """(x - mean) / max(stddev, 1/sqrt(num_pixels)) per image, as float32: zero mean and unit
    variance, without dividing by zero on a uniform image."""
    with name_scope(None, "per_image_standardization", [image]) as scope:
        image = math_ops.cast(_image(image), dtypes.float32)
        axes = [-3, -2, -1]
        dims = array_ops.shape(image)[-3:]
        num_pixels = math_ops.cast(math_ops.reduce_prod(dims), dtypes.float32)
        mean = math_ops.reduce_mean(image, axis=axes, keepdims=True)
        variance = math_ops.subtract(
            math_ops.reduce_mean(math_ops.square(image), axis=axes, keepdims=True),
            math_ops.square(mean))
        stddev = math_ops.sqrt(math_ops.maximum(variance, 0.0))
        scale = math_ops.maximum(stddev, math_ops.rsqrt(num_pixels))
        return math_ops.truediv(math_ops.subtract(image, mean), scale, name=scope)


# -- resizing --------------------------------------------------------------------------------------
class ResizeMethod(enum.IntEnum):
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def resize_images(images, size, method=ResizeMethod.BILINEAR,
                  align_corners: bool = False) -> Tensor:
    """Images (3-D or 4-D) resized to ``size`` = [new_height, new_width]. Bilinear results are
    float32; nearest neighbour keeps the type. An image already of that size is returned as is."""
    images = _image(images, "images")
    batched = _rank(images) == 4
    with name_scope(None, "ResizeImages", [images, size]):
        x = images if batched else array_ops.expand_dims(images, 0)
        size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        static = array_ops._const(size_t)
        if static is not None and list(static) == x.shape.as_list()[1:3]:
            return images
        method = ResizeMethod(method)
        if method is ResizeMethod.BILINEAR:
            out = resize_bilinear(x, size_t, align_corners=align_corners)
        elif method is ResizeMethod.NEAREST_NEIGHBOR:
            out = resize_nearest_neighbor(x, size_t, align_corners=align_corners)
        else:
            raise NotImplementedError(f"resize_images: method {method.name} is not supported "
                                      "yet (BILINEAR and NEAREST_NEIGHBOR are)")
        return out if batched else array_ops.squeeze(out, [0])


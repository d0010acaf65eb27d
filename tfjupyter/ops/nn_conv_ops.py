"""Spatial neural-network ops: 2-D convolution, pooling and bias addition.

Shape rules and gradients are registered beside each Python API, with TensorFlow 1.x's op
type names, attrs and argument orders. Layouts are NHWC (default) or NCHW; output sizes follow
TensorFlow's formulas:

    VALID: out = ceil((in - (k - 1) * dilation) / stride)      SAME: out = ceil(in / stride)

Part of ``tf.nn`` through ``nn_ops``.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..framework.ops import Tensor, convert_to_tensor, name_scope
from ..framework.registry import register_gradient, register_op
from ..framework.tensor_shape import TensorShape, list_str
from . import _shapes, array_ops
from ._nn_util import (FLOATS, INDEX_TYPES, REALS, const_ints, convert_like, dims_must_match,
                       input_shapes, outputs, partial_ints, rank_dims, shape_of)

__all__ = ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "conv2d_transpose",
           "max_pool", "avg_pool", "bias_add"]


# ---------------------------------------------------------------------------------------------
# Attributes and geometry


def _str_attr(op, name: str) -> str:
    value = op.get_attr(name)
    return value.decode() if isinstance(value, bytes) else value


def _data_format(op) -> str:
    fmt = _str_attr(op, "data_format")
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"{op.type} op '{op.name}': data_format must be \"NHWC\" or \"NCHW\", "
                         f"got {fmt!r}.")
    return fmt


def _padding(op) -> str:
    padding = _str_attr(op, "padding")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of '{op.type}' Op '{op.name}' passed string "
                         f"{padding!r} not in: \"SAME\", \"VALID\".")
    return padding


def _spatial_attr(op, name: str, fmt: str) -> Tuple[int, int]:
    """The (height, width) of a 4-value attr (strides, ksize, dilations); the batch and
    channel entries must be 1."""
    values = op.get_attr(name)
    if len(values) != 4:
        raise ValueError(f"{op.type} op '{op.name}' requires the {name} attribute to contain "
                         f"4 values, but got: {len(values)}")
    if any(v < 1 for v in values):
        raise ValueError(f"{op.type} op '{op.name}': {name} must be positive, got {list(values)}.")
    n, h, w, c = _to_nhwc(values, fmt)
    if n != 1 or c != 1:
        raise ValueError(f"{op.type} op '{op.name}': {name} in the batch and depth dimensions "
                         f"must be 1 (current implementation does not yet support them), got "
                         f"{list(values)} for data_format {fmt}.")
    return h, w


def _to_nhwc(dims: Sequence, fmt: str) -> List:
    dims = list(dims)
    return dims if fmt == "NHWC" else [dims[0], dims[2], dims[3], dims[1]]


def _from_nhwc(dims: Sequence, fmt: str) -> List:
    dims = list(dims)
    return dims if fmt == "NHWC" else [dims[0], dims[3], dims[1], dims[2]]


def _output_size(op, size: Optional[int], k: Optional[int], stride: int, dilation: int,
                 padding: str) -> Optional[int]:
    if padding == "SAME":
        return None if size is None else -(-size // stride)
    if size is None or k is None:
        return None
    span = (k - 1) * dilation + 1
    if size < span:
        raise ValueError(f"Negative dimension size caused by subtracting {span} from {size} for "
                         f"'{op.name}' (op: '{op.type}') with input shapes: {input_shapes(op)}.")
    return -(-(size - span + 1) // stride)


def _int_list(value, arg: str, api: str) -> List[int]:
    if not hasattr(value, "__len__") or isinstance(value, (str, bytes)):
        raise TypeError(f"Expected list for '{arg}' argument to '{api}' Op, not {value!r}.")
    return [int(v) for v in value]


def _as_str(value, arg: str, api: str) -> str:
    if isinstance(value, bytes):
        value = value.decode()
    if not isinstance(value, str):
        raise TypeError(f"Expected string for '{arg}' argument to '{api}' Op, not {value!r}.")
    return value


# ---------------------------------------------------------------------------------------------
# Convolution


def _conv_attrs(op) -> dict:
    return {"strides": op.get_attr("strides"), "padding": op.get_attr("padding"),
            "data_format": op.get_attr("data_format"), "dilations": op.get_attr("dilations"),
            "use_cudnn_on_gpu": op.get_attr("use_cudnn_on_gpu")}


def _conv_geometry(op) -> Tuple[str, Tuple[int, int], Tuple[int, int], str]:
    fmt = _data_format(op)
    return fmt, _spatial_attr(op, "strides", fmt), _spatial_attr(op, "dilations", fmt), _padding(op)


def _conv_output_nhwc(op, x_nhwc: List, w: List) -> List[Optional[int]]:
    """The NHWC output dims of a convolution of an NHWC input by an HWIO filter."""
    fmt, (sh, sw), (dh, dw), padding = _conv_geometry(op)
    n, h, wd, c = x_nhwc
    kh, kw, ci, co = w
    dims_must_match(op, c, ci, "input channels vs. filter in_channels")
    return [n, _output_size(op, h, kh, sh, dh, padding),
            _output_size(op, wd, kw, sw, dw, padding), co]


@register_op("Conv2D")
def _conv2d_shape(op):
    x, w = op.inputs
    _shapes.check_dtype_in(op, x, FLOATS)
    _shapes.check_same_dtype(op, x, w)
    fmt = _data_format(op)
    xs, ws = _to_nhwc(rank_dims(op, x, 4), fmt), rank_dims(op, w, 4)
    return [(x.dtype, TensorShape(_from_nhwc(_conv_output_nhwc(op, xs, ws), fmt)))]


def _check_backprop_shapes(op, x_dims: List, w_dims: List, dy: Tensor) -> None:
    """The out_backprop must have the shape the forward convolution gives (TF checks the
    same in its kernels)."""
    fmt = _data_format(op)
    want = _conv_output_nhwc(op, _to_nhwc(x_dims, fmt), w_dims)
    got = _to_nhwc(rank_dims(op, dy, 4), fmt)
    for axis, (a, b) in enumerate(zip(got, want)):
        if a is not None and b is not None and a != b:
            raise ValueError(f"{op.type} op '{op.name}': the shape of out_backprop "
                             f"{list_str(dy.shape)} does not match the convolution output "
                             f"computed from the input {list_str(TensorShape(x_dims))} and filter "
                             f"{list_str(TensorShape(w_dims))}: dimension {axis} is {a}, "
                             f"expected {b}.")


def _sizes_input(op, t: Tensor, what: str) -> List[Optional[int]]:
    """The static dims a 4-element shape input (input_sizes, filter_sizes) describes."""
    _shapes.check_dtype_in(op, t, INDEX_TYPES)
    dims = rank_dims(op, t, 1)
    dims_must_match(op, dims[0], 4, f"{what} must have 4 elements")
    values = const_ints(t)
    if values is not None and any(v < 0 for v in values):
        raise ValueError(f"{op.type} op '{op.name}': {what} must be non-negative, got {values}.")
    return partial_ints(t, 4)


@register_op("Conv2DBackpropInput")
def _conv2d_backprop_input_shape(op):
    sizes, w, dy = op.inputs
    _shapes.check_dtype_in(op, w, FLOATS)
    _shapes.check_same_dtype(op, w, dy)
    x_dims = _sizes_input(op, sizes, "input_sizes")
    _check_backprop_shapes(op, x_dims, rank_dims(op, w, 4), dy)
    return [(w.dtype, TensorShape(x_dims))]


@register_op("Conv2DBackpropFilter")
def _conv2d_backprop_filter_shape(op):
    x, sizes, dy = op.inputs
    _shapes.check_dtype_in(op, x, FLOATS)
    _shapes.check_same_dtype(op, x, dy)
    w_dims = _sizes_input(op, sizes, "filter_sizes")
    _check_backprop_shapes(op, rank_dims(op, x, 4), w_dims, dy)
    return [(x.dtype, TensorShape(w_dims))]


@register_gradient("Conv2D")
def _conv2d_grad(op, grad):
    x, w = op.inputs
    attrs = _conv_attrs(op)
    return [outputs("Conv2DBackpropInput", [shape_of(x), w, grad], attrs, None)[0],
            outputs("Conv2DBackpropFilter", [x, shape_of(w), grad], attrs, None)[0]]


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    attrs = _conv_attrs(op)
    return [None,
            outputs("Conv2DBackpropFilter", [grad, shape_of(w), dy], attrs, None)[0],
            outputs("Conv2D", [grad, w], attrs, None)[0]]


@register_gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    attrs = _conv_attrs(op)
    return [outputs("Conv2DBackpropInput", [shape_of(x), grad, dy], attrs, None)[0],
            None,
            outputs("Conv2D", [x, grad], attrs, None)[0]]


def _conv_api_attrs(api: str, strides, padding, use_cudnn_on_gpu, data_format, dilations) -> dict:
    return {"strides": _int_list(strides, "strides", api),
            "padding": _as_str(padding, "padding", api),
            "data_format": "NHWC" if data_format is None else
            _as_str(data_format, "data_format", api),
            "dilations": _int_list([1, 1, 1, 1] if dilations is None else dilations,
                                   "dilations", api),
            "use_cudnn_on_gpu": bool(use_cudnn_on_gpu)}


def conv2d(input, filter, strides: Sequence[int], padding: str,  # noqa: A002
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
           dilations: Optional[Sequence[int]] = None, name: Optional[str] = None) -> Tensor:
    """2-D convolution of a 4-D ``input`` [batch, height, width, in_channels] (NHWC) with a
    ``filter`` [filter_height, filter_width, in_channels, out_channels]."""
    attrs = _conv_api_attrs("conv2d", strides, padding, use_cudnn_on_gpu, data_format, dilations)
    x = convert_to_tensor(input, name="input")
    w = convert_like(filter, x, "filter")
    return outputs("Conv2D", [x, w], attrs, name)[0]


def conv2d_backprop_input(input_sizes, filter, out_backprop, strides: Sequence[int],  # noqa: A002
                          padding: str, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                          dilations: Optional[Sequence[int]] = None,
                          name: Optional[str] = None) -> Tensor:
    """The gradient of conv2d with respect to its input, whose shape is ``input_sizes``."""
    attrs = _conv_api_attrs("conv2d_backprop_input", strides, padding, use_cudnn_on_gpu,
                            data_format, dilations)
    sizes = array_ops._to_int_tensor(input_sizes, "input_sizes")
    w = convert_to_tensor(filter, name="filter")
    dy = convert_like(out_backprop, w, "out_backprop")
    return outputs("Conv2DBackpropInput", [sizes, w, dy], attrs, name)[0]


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides: Sequence[int],  # noqa: A002
                           padding: str, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                           dilations: Optional[Sequence[int]] = None,
                           name: Optional[str] = None) -> Tensor:
    """The gradient of conv2d with respect to its filter, whose shape is ``filter_sizes``."""
    attrs = _conv_api_attrs("conv2d_backprop_filter", strides, padding, use_cudnn_on_gpu,
                            data_format, dilations)
    x = convert_to_tensor(input, name="input")
    sizes = array_ops._to_int_tensor(filter_sizes, "filter_sizes")
    dy = convert_like(out_backprop, x, "out_backprop")
    return outputs("Conv2DBackpropFilter", [x, sizes, dy], attrs, name)[0]


def conv2d_transpose(value, filter, output_shape, strides: Sequence[int],  # noqa: A002
                     padding: str = "SAME", data_format: str = "NHWC",
                     name: Optional[str] = None) -> Tensor:
    """The transpose of conv2d ("deconvolution"): ``filter`` is [height, width,
    output_channels, in_channels] and ``output_shape`` the 4-D shape of the result."""
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        fmt = _as_str(data_format, "data_format", "conv2d_transpose")
        if fmt not in ("NHWC", "NCHW"):
            raise ValueError(f"data_format has to be either NCHW or NHWC, got {fmt!r}.")
        value = convert_to_tensor(value, name="value")
        w = convert_like(filter, value, "filter")
        channel = 3 if fmt == "NHWC" else 1
        in_c = value.shape[channel].value if value.shape.ndims == 4 else None
        w_in = w.shape[3].value if w.shape.ndims == 4 else None
        if in_c is not None and w_in is not None and in_c != w_in:
            raise ValueError(f"input channels does not match filter's input channels, "
                             f"{in_c} != {w_in}")
        sizes = array_ops._to_int_tensor(output_shape, "output_shape")
        if sizes.shape.ndims is not None and not sizes.shape.is_compatible_with([4]):
            raise ValueError(f"output_shape must have shape (4,), got {sizes.shape}")
        out = partial_ints(sizes, 4)
        w_out = w.shape[2].value if w.shape.ndims == 4 else None
        if out[channel] is not None and w_out is not None and out[channel] != w_out:
            raise ValueError(f"output_shape does not match filter's output channels, "
                             f"{out[channel]} != {w_out}")
        return conv2d_backprop_input(sizes, w, value, strides, padding, data_format=fmt,
                                     name=scope)


# ---------------------------------------------------------------------------------------------
# Pooling


def _pool_output(op, x: Tensor) -> Tuple[str, TensorShape]:
    fmt = _data_format(op)
    kh, kw = _spatial_attr(op, "ksize", fmt)
    sh, sw = _spatial_attr(op, "strides", fmt)
    padding = _padding(op)
    n, h, w, c = _to_nhwc(rank_dims(op, x, 4), fmt)
    out = [n, _output_size(op, h, kh, sh, 1, padding), _output_size(op, w, kw, sw, 1, padding), c]
    return fmt, TensorShape(_from_nhwc(out, fmt))


def _pool_attrs(op) -> dict:
    return {"ksize": op.get_attr("ksize"), "strides": op.get_attr("strides"),
            "padding": op.get_attr("padding"), "data_format": op.get_attr("data_format")}


@register_op("MaxPool")
def _max_pool_shape(op):
    x = op.inputs[0]
    _shapes.check_dtype_in(op, x, REALS)
    return [(x.dtype, _pool_output(op, x)[1])]


@register_op("AvgPool")
def _avg_pool_shape(op):
    x = op.inputs[0]
    _shapes.check_dtype_in(op, x, FLOATS)
    return [(x.dtype, _pool_output(op, x)[1])]


@register_op("MaxPoolGrad")
def _max_pool_grad_shape(op):
    x, y, grad = op.inputs
    _shapes.check_dtype_in(op, x, REALS)
    _shapes.check_same_dtype(op, x, y, grad)
    _, want = _pool_output(op, x)
    for t in (y, grad):
        if not t.shape.is_compatible_with(want):
            raise ValueError(f"{op.type} op '{op.name}': {t.name} has shape {t.shape}, but the "
                             f"pooling output of an input of shape {x.shape} is {want}.")
    return [(x.dtype, x.shape)]


@register_op("MaxPoolGradGrad")
def _max_pool_grad_grad_shape(op):
    x, y, grad = op.inputs
    _shapes.check_dtype_in(op, x, REALS)
    _shapes.check_same_dtype(op, x, y, grad)
    _, want = _pool_output(op, x)
    if not y.shape.is_compatible_with(want) or not grad.shape.is_compatible_with(x.shape):
        raise ValueError(f"{op.type} op '{op.name}': expected orig_output of shape {want} and "
                         f"grad of the input's shape {x.shape}, got {input_shapes(op)}.")
    return [(x.dtype, want.merge_with(y.shape))]


@register_op("AvgPoolGrad")
def _avg_pool_grad_shape(op):
    sizes, grad = op.inputs
    _shapes.check_dtype_in(op, grad, FLOATS)
    x_dims = _sizes_input(op, sizes, "orig_input_shape")
    _, want = _pool_output(op, _StaticShape(x_dims))
    if not grad.shape.is_compatible_with(want):
        raise ValueError(f"{op.type} op '{op.name}': the gradient has shape {grad.shape}, but the "
                         f"pooling output of an input of shape {list_str(TensorShape(x_dims))} "
                         f"is {want}.")
    return [(grad.dtype, TensorShape(x_dims))]


class _StaticShape:
    """Stands for a tensor whose static shape is known from a shape input's value."""

    def __init__(self, dims: Sequence[Optional[int]]):
        self.shape = TensorShape(dims)


@register_gradient("MaxPool")
def _max_pool_grad(op, grad):
    return [outputs("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs(op),
                     None)[0]]


@register_gradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    # Linear in its gradient input (it routes each window's gradient to the window's max);
    # piecewise constant in the pooled values, whose gradients are therefore zero.
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            outputs("MaxPoolGradGrad", [x, y, grad], _pool_attrs(op), None)[0]]


@register_gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [array_ops.zeros_like(x), array_ops.zeros_like(y),
            outputs("MaxPoolGrad", [x, y, grad], _pool_attrs(op), None)[0]]


@register_gradient("AvgPool")
def _avg_pool_grad(op, grad):
    return [outputs("AvgPoolGrad", [shape_of(op.inputs[0]), grad], _pool_attrs(op), None)[0]]


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    # AvgPoolGrad is the adjoint of the linear map AvgPool, so its gradient is AvgPool.
    return [None, outputs("AvgPool", [grad], _pool_attrs(op), None)[0]]


def _pool(op_type: str, api: str, value, ksize, strides, padding, data_format,
          name: Optional[str]) -> Tensor:
    attrs = {"ksize": _int_list(ksize, "ksize", api), "strides": _int_list(strides, "strides", api),
             "padding": _as_str(padding, "padding", api),
             "data_format": "NHWC" if data_format is None else
             _as_str(data_format, "data_format", api)}
    return outputs(op_type, [convert_to_tensor(value, name="input")], attrs, name)[0]


def max_pool(value, ksize: Sequence[int], strides: Sequence[int], padding: str,
             data_format: str = "NHWC", name: Optional[str] = None) -> Tensor:
    """Max pooling of a 4-D ``value``; ``ksize`` and ``strides`` are 4 values (batch and
    channel entries 1). With SAME padding, the padding never wins a max."""
    return _pool("MaxPool", "max_pool", value, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize: Sequence[int], strides: Sequence[int], padding: str,
             data_format: str = "NHWC", name: Optional[str] = None) -> Tensor:
    """Average pooling of a 4-D ``value``; with SAME padding each output averages over the
    input pixels its window covers (padding is not counted)."""
    return _pool("AvgPool", "avg_pool", value, ksize, strides, padding, data_format, name)


# ---------------------------------------------------------------------------------------------
# Bias


def _bias_axis(op, value: Tensor) -> Optional[int]:
    """The channel dim of a BiasAdd value: the last (NHWC) or dim 1 (NCHW); value rank >= 2."""
    ndims = value.shape.ndims
    if ndims is None:
        return None
    if ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {ndims} for '{op.name}' "
                         f"(op: '{op.type}') with input shapes: {input_shapes(op)}.")
    dims = value.shape.as_list()
    return dims[-1] if _data_format(op) == "NHWC" else dims[1]


@register_op("BiasAdd")
def _bias_add_shape(op):
    value, bias = op.inputs
    _shapes.check_dtype_in(op, value, REALS)
    _shapes.check_same_dtype(op, value, bias)
    (c,) = rank_dims(op, bias, 1)
    dims_must_match(op, _bias_axis(op, value), c, "channels of value vs. size of bias")
    return [(value.dtype, value.shape)]


@register_op("BiasAddGrad")
def _bias_add_grad_shape(op):
    grad = op.inputs[0]
    return [(grad.dtype, TensorShape([_bias_axis(op, grad)]))]


@register_gradient("BiasAdd")
def _bias_add_grad(op, grad):
    fmt = op.get_attr("data_format")
    return [grad, outputs("BiasAddGrad", [grad], {"data_format": fmt}, None)[0]]


@register_gradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    out_backprop = op.inputs[0]
    if _str_attr(op, "data_format") == "NCHW":
        ndims = out_backprop.shape.ndims
        if ndims is None:
            raise ValueError(f"The gradient of {op.name} (BiasAddGrad, NCHW) needs the rank of "
                             f"{out_backprop.name}, which is unknown.")
        grad = array_ops.reshape(grad, [-1] + [1] * (ndims - 2))
    return [array_ops.broadcast_to(grad, shape_of(out_backprop))]


def bias_add(value, bias, data_format: Optional[str] = None,
             name: Optional[str] = None) -> Tensor:
    """Adds the 1-D ``bias`` along the channel dimension of ``value`` (the last for NHWC)."""
    fmt = "NHWC" if data_format is None else _as_str(data_format, "data_format", "bias_add")
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        value = convert_to_tensor(value, name="input")
        bias = convert_like(bias, value, "bias")
        return outputs("BiasAdd", [value, bias], {"data_format": fmt}, scope)[0]

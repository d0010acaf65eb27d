"""The summaries of the ``TensorBoard`` callback's ``histogram_freq`` (TF 1.15's
``callbacks_v1.TensorBoard``), built once per model in its graph:

- a histogram of every layer weight, tagged with the weight's name, ':' made '_'
  ('dense/kernel_0'), and with ``write_images`` the weight as an image (a kernel [in, out] as
  one [1, rows, cols, 1] image, the longer side across; a convolution's kernel as one image per
  input channel; a bias as a [1, n, 1, 1] image);
- on data (the validation data TF 1.15 feeds, in batches): with ``write_grads`` a histogram of
  the loss's gradient for every trainable weight ('dense/kernel_0_grad'), and one of every
  layer's output ('dense_out', 'dense_out_<i>' for several outputs).

The summary ops are kept out of the graph's SUMMARIES collection, so the user's
``tf.summary.merge_all()`` does not pick them up.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..framework.indexed_slices import IndexedSlices
from ..framework.ops import Tensor
from ..gradients_impl import gradients
from ..ops import array_ops
from ..summary import histogram, image, merge
from .engine.base_layer import flatten
from .engine.input_layer import InputLayer

__all__ = ["weight_summaries", "data_summaries", "split_validation_data"]


def _tag(weight) -> str:
    return weight.name.replace(":", "_")


def _weight_image(weight) -> Optional[Tensor]:
    """``weight`` as TF 1.15 shows it: a 4-D [images, height, width, 1] tensor, or None for
    shapes it does not show (3-D convolutions and up)."""
    shape = [d for d in weight.get_shape().as_list() if d != 1]
    w_img = array_ops.reshape(weight, shape) if shape else array_ops.reshape(weight, [1])
    if len(shape) == 2:                     # a dense kernel
        if shape[0] > shape[1]:
            w_img = array_ops.transpose(w_img)
            shape = shape[::-1]
        return array_ops.reshape(w_img, [1, shape[0], shape[1], 1])
    if len(shape) == 3:                     # a convolution's kernel: one image per channel
        w_img = array_ops.transpose(w_img, perm=[2, 0, 1])
        return array_ops.reshape(w_img, [shape[2], shape[0], shape[1], 1])
    if len(shape) <= 1:                     # a bias
        return array_ops.reshape(w_img, [1, shape[0] if shape else 1, 1, 1])
    return None


def weight_summaries(model, write_images: bool) -> Optional[Tensor]:
    """One merged summary of the model's weights (no feeds needed); None without weights."""
    summaries = []
    for layer in model.layers:
        for weight in layer.weights:
            summaries.append(histogram(_tag(weight), weight, collections=[]))
            if write_images:
                w_img = _weight_image(weight)
                if w_img is not None:
                    summaries.append(image(_tag(weight), w_img, collections=[]))
    return merge(summaries) if summaries else None


def data_summaries(model, write_grads: bool) -> Optional[Tensor]:
    """One merged summary of the layers' outputs (and the loss's gradients with
    ``write_grads``), which need the model's inputs (and targets) fed; None if empty."""
    summaries: List[Tensor] = []
    total_loss = model._training_graph()["total_loss"] if write_grads else None
    for layer in model.layers:
        if write_grads:
            for weight in layer.trainable_weights:
                (grad,) = gradients(total_loss, [weight])
                if grad is None:
                    continue
                if isinstance(grad, IndexedSlices):
                    grad = grad.values
                summaries.append(histogram(f"{_tag(weight)}_grad", grad, collections=[]))
        if isinstance(layer, InputLayer) or not layer.inbound_nodes:
            continue
        outputs = flatten(layer.output)
        if len(outputs) == 1:
            summaries.append(histogram(f"{layer.name}_out", outputs[0], collections=[]))
        else:
            summaries.extend(histogram(f"{layer.name}_out_{i}", t, collections=[])
                             for i, t in enumerate(outputs))
    return merge(summaries) if summaries else None


def split_validation_data(model, data) -> Tuple[List, List, List]:
    """TF 1.15's ``callback.validation_data`` ([inputs..., targets..., sample weights...,
    (learning phase)]) as the model's (inputs, targets, sample weights) lists."""
    data = list(data)
    n_in, n_out = len(model.inputs), len(model.outputs)
    xs, ys, ws = data[:n_in], data[n_in:n_in + n_out], data[n_in + n_out:n_in + 2 * n_out]
    return xs, ys, ws

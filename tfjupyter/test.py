"""Testing helpers, as TensorFlow's ``tf.test``: numerical vs symbolic Jacobians."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from .framework.ops import Tensor

__all__ = ["compute_gradient", "compute_gradient_error"]


def compute_gradient(x: Tensor, x_shape: Sequence[int], y: Tensor, y_shape: Sequence[int],
                     x_init_value: Optional[np.ndarray] = None, delta: float = 1e-3,
                     extra_feed_dict=None, session=None) -> Tuple[np.ndarray, np.ndarray]:
    """(theoretical, numerical) Jacobians of y w.r.t. x, each of shape [x.size, y.size].

    The theoretical one comes from tf.gradients with one-hot grad_ys; the numerical one from
    central differences of feeding x +- delta. Compute in float64 for tight tolerances.
    """
    from .client.session import Session
    from .gradients_impl import gradients
    from .ops.array_ops import placeholder

    x_shape, y_shape = tuple(x_shape), tuple(y_shape)
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    np_dtype = x.dtype.as_numpy_dtype
    if x_init_value is None:
        x_init_value = np.random.RandomState(0).uniform(-1, 1, x_shape)
    x0 = np.asarray(x_init_value, dtype=np_dtype).reshape(x_shape)
    graph = y.graph
    with graph.as_default():
        dy = placeholder(y.dtype, y_shape, name="compute_gradient_dy")
        (dx,) = gradients(y, x, grad_ys=dy)
    own_session = session is None
    sess = session or Session(graph=graph)
    feeds = dict(extra_feed_dict or {})
    try:
        theoretical = np.zeros((x_size, y_size), dtype=np.float64)
        if dx is not None:
            for j in range(y_size):
                unit = np.zeros(y_size, dtype=y.dtype.as_numpy_dtype)
                unit[j] = 1
                feeds.update({x: x0, dy: unit.reshape(y_shape)})
                theoretical[:, j] = _dense(sess.run(dx, feeds), x_shape).reshape(-1)
        numerical = np.zeros((x_size, y_size), dtype=np.float64)
        flat = x0.reshape(-1)
        for i in range(x_size):
            plus, minus = flat.copy(), flat.copy()
            plus[i] += delta
            minus[i] -= delta
            feeds[x] = plus.reshape(x_shape)
            y_plus = np.asarray(sess.run(y, feeds), dtype=np.float64).reshape(-1)
            feeds[x] = minus.reshape(x_shape)
            y_minus = np.asarray(sess.run(y, feeds), dtype=np.float64).reshape(-1)
            numerical[i] = (y_plus - y_minus) / (2 * delta)
    finally:
        if own_session:
            sess.close()
    return theoretical, numerical


def _dense(value, shape) -> np.ndarray:
    """A gradient's value as a float64 array of ``shape``: an IndexedSlicesValue (a gather's
    gradient) summed into its rows, as TensorFlow's gradient checker does."""
    from .framework.indexed_slices import IndexedSlicesValue
    if not isinstance(value, IndexedSlicesValue):
        return np.asarray(value, dtype=np.float64)
    dense = np.zeros(shape, dtype=np.float64)
    np.add.at(dense, np.asarray(value.indices), np.asarray(value.values, dtype=np.float64))
    return dense


def compute_gradient_error(x: Tensor, x_shape, y: Tensor, y_shape, x_init_value=None,
                           delta: float = 1e-3, extra_feed_dict=None, session=None) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    theoretical, numerical = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta,
                                              extra_feed_dict, session)
    return float(np.max(np.abs(theoretical - numerical))) if theoretical.size else 0.0

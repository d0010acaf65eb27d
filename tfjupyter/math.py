"""``tf.math``: TF 1.13+'s home for the math ops, the same objects as the top-level names
(``tf.math.reduce_sum is tf.reduce_sum``) and ``tf.nn``'s that TF also lists here."""
from __future__ import annotations

from .nn import (in_top_k, l2_normalize, log_softmax, softmax, softplus,  # noqa: F401
                 softsign, top_k, zero_fraction)
from .ops.array_ops import invert_permutation  # noqa: F401
from .ops.array_scatter_ops import unsorted_segment_sum  # noqa: F401
from .ops.check_ops import is_non_decreasing, is_strictly_increasing  # noqa: F401
from .ops.confusion_matrix import confusion_matrix  # noqa: F401
from .ops.math_compat_ops import div_no_nan, reduce_std, reduce_variance  # noqa: F401
from .ops.math_ops import (abs, accumulate_n, acos, add, add_n, argmax, argmin,  # noqa: F401,A004
                           asin, atan, ceil, cos, count_nonzero, cumprod, cumsum, divide, equal,
                           exp, expm1, floor, floordiv, floormod, greater, greater_equal,
                           is_finite, is_inf, is_nan, less, less_equal, log, log1p, logical_and,
                           logical_not, logical_or, logical_xor, maximum, minimum, mod,
                           multiply, negative, not_equal, pow, reciprocal, reduce_all,
                           reduce_any, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
                           reduce_prod, reduce_sum, round, rsqrt, scalar_mul, sigmoid, sign, sin,
                           sqrt, square, squared_difference, subtract, tan, tanh, truediv)

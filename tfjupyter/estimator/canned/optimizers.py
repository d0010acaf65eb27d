"""The optimizer argument of TF 1.15's canned estimators: a name, an Optimizer, or a callable
returning one (``canned/optimizers.py``)."""
from __future__ import annotations

from ...train.ftrl import FtrlOptimizer
from ...train.optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                                 Optimizer, RMSPropOptimizer)

__all__ = ["get_optimizer_instance"]

_OPTIMIZER_CLS_NAMES = {"Adagrad": AdagradOptimizer, "Adam": AdamOptimizer,
                        "Ftrl": FtrlOptimizer, "RMSProp": RMSPropOptimizer,
                        "SGD": GradientDescentOptimizer}


def get_optimizer_instance(opt, learning_rate=None) -> Optimizer:
    if isinstance(opt, str):
        if opt in _OPTIMIZER_CLS_NAMES:
            if not learning_rate:
                raise ValueError("learning_rate must be specified when opt is string.")
            return _OPTIMIZER_CLS_NAMES[opt](learning_rate=learning_rate)
        raise ValueError(f"Unsupported optimizer name: {opt}. Supported names are: "
                         f"{tuple(sorted(_OPTIMIZER_CLS_NAMES))}")
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt

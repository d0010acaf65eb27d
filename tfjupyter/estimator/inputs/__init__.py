"""``tf.estimator.inputs``: input_fns over numpy arrays and pandas DataFrames."""
from .numpy_io import numpy_input_fn  # noqa: F401
from .pandas_io import pandas_input_fn  # noqa: F401

__all__ = ["numpy_input_fn", "pandas_input_fn"]

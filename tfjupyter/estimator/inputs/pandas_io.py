"""``tf.estimator.inputs.pandas_input_fn``: an input_fn over a pandas DataFrame (pandas is
optional: it is imported when the function is called)."""
from __future__ import annotations

import numpy as np

from .numpy_io import _check_shuffle, numpy_input_fn

__all__ = ["pandas_input_fn"]


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                    num_threads=1, target_column="target"):
    """An input_fn returning ``(features, target)``: a dict of the DataFrame ``x``'s columns,
    and the Series ``y`` (or a dict of the DataFrame ``y``'s columns)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("tf.estimator.inputs.pandas_input_fn needs pandas, which is not "
                          "installed: pip install pandas") from None
    _check_shuffle(shuffle)
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"x must be a pandas DataFrame; got {type(x).__name__}")
    x = x.copy()
    if y is not None:
        if target_column in x:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame "
                             f"already has a column with that name: {x.columns}")
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                             f"Index for y: {y.index}\n")
        y = {c: y[c].values for c in y.columns} if isinstance(y, pd.DataFrame) else y.values
    features = {str(c): x[c].values for c in x.columns}
    return numpy_input_fn(features, y, batch_size=batch_size, num_epochs=num_epochs,
                          shuffle=shuffle, queue_capacity=queue_capacity,
                          num_threads=num_threads)

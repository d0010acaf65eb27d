"""``tensorflow.python.estimator.inputs.pandas_io``: pandas_input_fn."""
from ....estimator.inputs.pandas_io import *  # noqa: F401,F403

"""``tensorflow.python.estimator.inputs.numpy_io``: numpy_input_fn."""
from ....estimator.inputs.numpy_io import *  # noqa: F401,F403

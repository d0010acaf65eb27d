"""``tf.feature_column`` (TensorFlow 1.15): feature columns describe how raw features become
model input, for ``input_layer`` (dense input of a network) and ``linear_model`` (a linear
model's logits), with TensorFlow's variable names. base.py holds the column protocol,
dense.py and categorical.py the columns, feature_column.py the models and
``make_parse_example_spec``."""
from .categorical import *  # noqa: F401,F403
from .dense import *  # noqa: F401,F403
from .feature_column import *  # noqa: F401,F403
from . import categorical as _categorical, dense as _dense, feature_column as _feature_column

__all__ = _categorical.__all__ + _dense.__all__ + _feature_column.__all__

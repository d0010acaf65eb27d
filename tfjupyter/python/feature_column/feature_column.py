"""``tensorflow.python.feature_column.feature_column``: ``tf.feature_column``
(tfjupyter/feature_column/), with the v1 protocol's private names that programs import."""
from ...feature_column import *  # noqa: F401,F403
from ...feature_column.feature_column import (_CategoricalColumn, _DenseColumn,  # noqa: F401
                                              _FeatureColumn, _LazyBuilder)

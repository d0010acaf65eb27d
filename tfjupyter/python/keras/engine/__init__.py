"""``tensorflow.python.keras.engine``: the layer base, inputs, networks, Model."""
from ....keras.engine.base_layer import Layer  # noqa: F401
from ....keras.engine.input_layer import Input, InputLayer  # noqa: F401
from ....keras.engine.network import Network  # noqa: F401
from ....keras.engine.training import Model  # noqa: F401

"""The Keras engine: the layer base (``base_layer``), networks of layers (``network``),
training (``training``: compile/fit/evaluate/predict, reading batches through
``data_input``), ``sequential`` and ``summary``."""
from .base_layer import Layer  # noqa: F401
from .network import Network  # noqa: F401
from .sequential import Sequential  # noqa: F401
from .training import Model  # noqa: F401

"""``tf.nn.rnn_cell``: the RNN cells and wrappers (defined in ``rnn_cell_impl.py``)."""
from .rnn_cell_impl import (BasicLSTMCell, BasicRNNCell, DeviceWrapper, DropoutWrapper,  # noqa: F401
                            GRUCell, LayerRNNCell, LSTMCell, LSTMStateTuple, MultiRNNCell,
                            ResidualWrapper, RNNCell)
from .rnn_cell_impl import __all__  # noqa: F401

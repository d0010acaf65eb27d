"""``tf.contrib.rnn``: the cells of ``tf.nn.rnn_cell`` (the same classes) and the RNN functions,
including the 0.x/1.0 ``static_rnn`` and ``static_bidirectional_rnn``."""
from ..ops.rnn import (bidirectional_dynamic_rnn, dynamic_rnn,  # noqa: F401
                       static_bidirectional_rnn, static_rnn)
from ..ops.rnn_cell import *  # noqa: F401,F403
from ..ops import rnn as _rnn, rnn_cell_impl as _rnn_cell_impl

__all__ = _rnn_cell_impl.__all__ + _rnn.__all__

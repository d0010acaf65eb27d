"""``tf.contrib``: the parts the classic tutorials use."""
from . import framework, layers, learn, legacy_seq2seq, rnn, slim, tensorboard, training  # noqa: F401,E501
from . import data, deprecated, factorization, keras, lookup, metrics  # noqa: F401
from . import saved_model  # noqa: F401

"""``tf.keras.datasets.imdb``: the IMDB reviews as lists of word indices, from Keras's cached
'imdb.npz' and 'imdb_word_index.json' (no download), prepared as TF 1.15's Keras does."""
from __future__ import annotations

import json

import numpy as np

from ..utils import get_file

__all__ = ["load_data", "get_word_index"]

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def _as_array(sequences):
    """numpy < 1.24 made a ragged list an object array by itself; numpy >= 1.24 needs telling."""
    lengths = {len(s) for s in sequences}
    if len(lengths) <= 1:
        return np.array(sequences)
    out = np.empty(len(sequences), dtype=object)
    out[:] = sequences
    return out


def load_data(path: str = "imdb.npz", num_words=None, skip_top: int = 0, maxlen=None,
              seed: int = 113, start_char=1, oov_char=2, index_from: int = 3, **kwargs):
    """((x_train, y_train), (x_test, y_test)): each review shuffled with ``seed``, prefixed with
    ``start_char``, its word indices (1 = most frequent word) shifted by ``index_from``; words
    outside [skip_top, num_words) become ``oov_char`` (dropped when it is None); reviews of
    ``maxlen`` words or more are left out."""
    if "nb_words" in kwargs:        # Keras 1's name
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    path = get_file(path, origin=_ORIGIN + "imdb.npz")
    with np.load(path, allow_pickle=True) as f:
        x_train, labels_train = f["x_train"], f["y_train"]
        x_test, labels_test = f["x_test"], f["y_test"]
    np.random.seed(seed)
    indices = np.arange(len(x_train))
    np.random.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    np.random.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]

    xs = list(x_train) + list(x_test)
    labels = np.concatenate([labels_train, labels_test])
    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]
    if maxlen:
        kept = [(x, y) for x, y in zip(xs, labels) if len(x) < maxlen]
        if not kept:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                             "sequence was kept. Increase maxlen.")
        xs, labels = [x for x, _ in kept], np.array([y for _, y in kept])
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    # TF 1.15 splits at the original training count, even after maxlen dropped reviews.
    split = len(x_train)
    return ((_as_array(xs[:split]), np.array(labels[:split])),
            (_as_array(xs[split:]), np.array(labels[split:])))


def get_word_index(path: str = "imdb_word_index.json") -> dict:
    """The word -> index dictionary (1 = the most frequent word)."""
    path = get_file(path, origin=_ORIGIN + "imdb_word_index.json")
    with open(path) as f:
        return json.load(f)

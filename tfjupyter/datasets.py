"""Small offline datasets and the MNIST IDX format.

``load_digits()`` gives scikit-learn's bundled 8x8 digits (1797 images, no download) split into
train/test ``DataSet``s with the classic ``next_batch``. ``read_data_sets(dir)`` reads the four
MNIST IDX files from a local directory like TensorFlow's ``input_data.read_data_sets`` (it never
downloads). ``read_idx``/``write_idx`` parse and write IDX files, gzipped or not.
"""
from __future__ import annotations

import collections
import functools
import gzip
import os
from typing import BinaryIO, Optional, Tuple, Union

import numpy as np

__all__ = ["DataSet", "Datasets", "load_digits", "read_data_sets", "read_idx", "write_idx",
           "extract_images", "extract_labels", "dense_to_one_hot"]

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])

PathOrFile = Union[str, os.PathLike, BinaryIO]

# IDX type code -> big-endian numpy dtype (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT")
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {dt.newbyteorder("="): code for code, dt in _IDX_TYPES.items()}

MNIST_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
               "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}


# -- IDX -------------------------------------------------------------------------------------------
def _describe_source(source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", None) or repr(source))


def read_idx(path_or_fileobj: PathOrFile) -> np.ndarray:
    """Reads an IDX file (gzipped or not) into a native-byte-order array.

    The header is two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), the number of dimensions, then each dimension as a big-endian
    uint32; the data follows, big-endian. MNIST images are 0x00000803 (uint8, [N, rows, cols]),
    labels 0x00000801 (uint8, [N]).
    """
    name = _describe_source(path_or_fileobj)
    if isinstance(path_or_fileobj, (str, os.PathLike)):
        with open(path_or_fileobj, "rb") as f:
            raw = f.read()
    elif hasattr(path_or_fileobj, "read"):
        raw = path_or_fileobj.read()
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise TypeError(f"read_idx needs a binary file object; reading {name} gave "
                            f"{type(raw).__name__}")
    else:
        raise TypeError(f"read_idx expects a path or a binary file object, got "
                        f"{type(path_or_fileobj).__name__}")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"Corrupt gzip data in IDX file {name}: {e}") from None
    return _parse_idx(bytes(raw), name)


def _parse_idx(raw: bytes, name: str) -> np.ndarray:
    if len(raw) < 4:
        raise ValueError(f"Invalid IDX file {name}: {len(raw)} bytes is too short for the "
                         "4-byte magic number (truncated file?)")
    magic = int.from_bytes(raw[:4], "big")
    code, ndim = raw[2], raw[3]
    if raw[0] != 0 or raw[1] != 0 or code not in _IDX_TYPES:
        raise ValueError(f"Invalid magic number 0x{magic:08X} in IDX file {name}: expected "
                         "0x000008NN (uint8), 0x000009NN, 0x00000BNN, 0x00000CNN, 0x00000DNN or "
                         "0x00000ENN, e.g. 0x00000803 for MNIST images, 0x00000801 for labels")
    if ndim == 0:
        raise ValueError(f"Invalid IDX file {name}: magic number 0x{magic:08X} declares 0 "
                         "dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"Truncated IDX file {name}: the header declares {ndim} dimensions "
                         f"({header} header bytes) but the file has only {len(raw)} bytes")
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    dtype = _IDX_TYPES[code]
    expected = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        what = "Truncated" if len(raw) < expected else "Oversized"
        raise ValueError(f"{what} IDX file {name}: the header declares "
                         f"{dtype.newbyteorder('=').name} data of shape {list(dims)} ({expected} "
                         f"bytes with the header), but the file has {len(raw)} bytes")
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return data.astype(dtype.newbyteorder("="))  # a writable native-order copy


def write_idx(path: PathOrFile, array) -> None:
    """Writes ``array`` as an IDX file; gzipped when ``path`` ends with ``.gz``.

    Supported dtypes: uint8, int8, int16, int32, float32, float64 (cast others first).
    ``path`` may also be a binary file object (written uncompressed).
    """
    arr = np.asarray(array)
    code = _IDX_CODES.get(arr.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"write_idx: IDX files cannot hold {arr.dtype} data; supported dtypes are "
                        "uint8, int8, int16, int32, float32 and float64 (cast with .astype)")
    if not 1 <= arr.ndim <= 255:
        raise ValueError(f"write_idx: IDX files hold arrays of 1 to 255 dimensions, got shape "
                         f"{arr.shape}")
    if any(d >= 2 ** 32 for d in arr.shape):
        raise ValueError(f"write_idx: dimension sizes must fit in 32 bits, got shape {arr.shape}")
    header = bytes([0, 0, code, arr.ndim]) + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    payload = header + np.ascontiguousarray(arr, dtype=_IDX_TYPES[code]).tobytes()
    if isinstance(path, (str, os.PathLike)):
        if os.fspath(path).endswith(".gz"):
            payload = gzip.compress(payload)
        with open(path, "wb") as f:
            f.write(payload)
    elif hasattr(path, "write"):
        path.write(payload)
    else:
        raise TypeError(f"write_idx expects a path or a binary file object, got "
                        f"{type(path).__name__}")


# -- classic mnist helpers -------------------------------------------------------------------------
def dense_to_one_hot(labels_dense, num_classes: int = 10) -> np.ndarray:
    """Class indices [N] -> one-hot float32 rows [N, num_classes]."""
    labels = np.asarray(labels_dense).reshape(-1)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"dense_to_one_hot: labels must be in [0, {num_classes}), got values "
                         f"from {labels.min()} to {labels.max()}")
    one_hot = np.zeros((labels.shape[0], num_classes), dtype=np.float32)
    one_hot[np.arange(labels.shape[0]), labels.astype(np.int64)] = 1.0
    return one_hot


def extract_images(f: PathOrFile) -> np.ndarray:
    """MNIST images file -> uint8 array [N, rows, cols, 1] (as TensorFlow's extract_images)."""
    data = read_idx(f)
    if data.ndim != 3 or data.dtype != np.uint8:
        raise ValueError(f"Invalid MNIST image file {_describe_source(f)}: expected uint8 data of "
                         f"shape [N, rows, cols] (magic 0x00000803), got {data.dtype} "
                         f"{list(data.shape)}")
    return data[..., np.newaxis]


def extract_labels(f: PathOrFile, one_hot: bool = False, num_classes: int = 10) -> np.ndarray:
    """MNIST labels file -> int64 [N] (or one-hot float32 [N, num_classes])."""
    data = read_idx(f)
    if data.ndim != 1 or data.dtype != np.uint8:
        raise ValueError(f"Invalid MNIST label file {_describe_source(f)}: expected uint8 data of "
                         f"shape [N] (magic 0x00000801), got {data.dtype} {list(data.shape)}")
    labels = data.astype(np.int64)
    return dense_to_one_hot(labels, num_classes) if one_hot else labels


# -- DataSet ---------------------------------------------------------------------------------------
def _image_dtype(dtype) -> np.dtype:
    if hasattr(dtype, "as_numpy_dtype"):  # a tfjupyter DType such as tf.float32
        dtype = dtype.as_numpy_dtype
    dt = np.dtype(dtype)
    if dt != np.uint8 and dt.kind != "f":
        raise TypeError(f"Invalid image dtype {dt.name!r}, expected uint8 or a float type "
                        "(float16, float32, float64)")
    return dt


class DataSet:
    """Images and labels with the classic ``next_batch`` of ``mnist.train``.

    Constructed like TensorFlow's ``DataSet(images, labels, ...)``: images [N, rows, cols, 1]
    are flattened to [N, rows*cols] when ``reshape``; integer images become ``dtype`` scaled by
    1/255 when ``dtype`` is a float type (float images are only cast). Batches are drawn in a
    fresh random order each epoch from a generator seeded by ``seed``, so runs repeat exactly;
    ``images``/``labels`` themselves keep their order.
    """

    def __init__(self, images, labels, fake_data: bool = False, one_hot: bool = False,
                 dtype=np.float32, reshape: bool = True, seed: Optional[int] = None):
        dt = _image_dtype(dtype)
        self._rng = np.random.RandomState(seed)
        self.one_hot = one_hot
        self._fake = fake_data
        if fake_data:
            self._num_examples = 10000
            self._images = np.zeros((0, 784), dtype=dt)
            self._labels = np.zeros((0, 10) if one_hot else (0,),
                                    dtype=np.float32 if one_hot else np.int64)
        else:
            images, labels = np.asarray(images), np.asarray(labels)
            if images.shape[:1] != labels.shape[:1]:
                raise ValueError(f"DataSet: images.shape: {images.shape} labels.shape: "
                                 f"{labels.shape} (need as many labels as images)")
            if reshape:
                if images.ndim != 4 or images.shape[3] != 1:
                    raise ValueError(f"DataSet: reshape=True needs images of shape "
                                     f"[N, rows, cols, 1], got {images.shape}")
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            was_integer = images.dtype.kind in "ui"
            images = images.astype(dt)
            if dt.kind == "f" and was_integer:
                images *= dt.type(1.0 / 255.0)
            self._images, self._labels = images, labels
            self._num_examples = images.shape[0]
        self._served = 0       # examples handed out since construction
        self._order: Optional[np.ndarray] = None

    @classmethod
    def _from_arrays(cls, images: np.ndarray, labels: np.ndarray, seed: Optional[int]) -> "DataSet":
        """Wraps arrays already in their final form (no reshaping or scaling)."""
        ds = cls.__new__(cls)
        ds._rng = np.random.RandomState(seed)
        ds.one_hot = labels.ndim == 2
        ds._fake = False
        ds._images, ds._labels = images, labels
        ds._num_examples = images.shape[0]
        ds._served = 0
        ds._order = None
        return ds

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)

    @property
    def epochs_completed(self) -> int:
        """Full passes over the data handed out by ``next_batch`` so far."""
        return self._served // self._num_examples if self._num_examples else 0

    def next_batch(self, batch_size: int, fake_data: bool = False,
                   shuffle: bool = True) -> Tuple[np.ndarray, np.ndarray]:
        """The next ``batch_size`` (images, labels); a batch crossing the end of an epoch takes
        the rest of that epoch and continues with the next one, reshuffled."""
        if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size,
                                                                      (int, np.integer)):
            raise TypeError(f"next_batch: batch_size must be an int, got {batch_size!r}")
        if batch_size <= 0:
            raise ValueError(f"next_batch: batch_size must be positive, got {batch_size}")
        if fake_data or self._fake:
            return self._fake_batch(int(batch_size))
        n = self._num_examples
        if n == 0:
            raise ValueError("next_batch: this DataSet has no examples")
        pieces = []
        needed = int(batch_size)
        while needed:
            start = self._served % n
            if start == 0:  # a new epoch: new order
                self._order = self._rng.permutation(n) if shuffle else np.arange(n)
            take = min(needed, n - start)
            pieces.append(self._order[start:start + take])
            self._served += take
            needed -= take
        index = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        return self._images[index], self._labels[index]

    def _fake_batch(self, batch_size: int) -> Tuple[np.ndarray, np.ndarray]:
        dt = self._images.dtype
        image = np.ones((batch_size, 784), dtype=dt)
        if self.one_hot:
            labels = np.zeros((batch_size, 10), dtype=np.float32)
            labels[:, 0] = 1.0
        else:
            labels = np.zeros(batch_size, dtype=np.int64)
        return image, labels

    def __repr__(self) -> str:
        return (f"DataSet(num_examples={self._num_examples}, images={list(self._images.shape)} "
                f"{self._images.dtype}, labels={list(self._labels.shape)} {self._labels.dtype})")


# -- MNIST from a local directory ------------------------------------------------------------------
def _find_mnist_file(train_dir: str, base: str) -> Optional[str]:
    for candidate in (base, base + ".gz"):
        path = os.path.join(train_dir, candidate)
        if os.path.isfile(path):
            return path
    return None


def read_data_sets(train_dir: str, fake_data: bool = False, one_hot: bool = False,
                   dtype=np.float32, reshape: bool = True, validation_size: int = 5000,
                   seed: Optional[int] = None, source_url: Optional[str] = None) -> Datasets:
    """MNIST from the four standard IDX files in ``train_dir`` (each optionally ``.gz``).

    As TensorFlow's ``input_data.read_data_sets`` but never downloads (``source_url`` is accepted
    for compatibility and ignored): the first ``validation_size`` training examples become the
    validation set. Images are [N, 784] (``reshape=False``: [N, 28, 28, 1]) scaled to [0, 1]
    for float dtypes; labels are int64 [N] or one-hot float32 [N, 10].
    """
    _image_dtype(dtype)  # fail before reading anything
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)
        return Datasets(train=fake(), validation=fake(), test=fake())
    train_dir = os.fspath(train_dir)
    paths = {key: _find_mnist_file(train_dir, base) for key, base in MNIST_FILES.items()}
    missing = [MNIST_FILES[key] for key, path in paths.items() if path is None]
    if missing:
        raise FileNotFoundError(
            f"MNIST files not found in {train_dir!r}: missing "
            f"{', '.join(m + '(.gz)' for m in missing)}. read_data_sets expects the four files "
            f"{', '.join(b + '(.gz)' for b in MNIST_FILES.values())} there and never downloads; "
            "fetch them from the MNIST page (or a mirror) into that directory.")
    train_images = extract_images(paths["train_images"])
    train_labels = extract_labels(paths["train_labels"], one_hot=one_hot)
    test_images = extract_images(paths["test_images"])
    test_labels = extract_labels(paths["test_labels"], one_hot=one_hot)
    for images, labels, kind in ((train_images, train_labels, "train"),
                                 (test_images, test_labels, "test")):
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"MNIST {kind} files in {train_dir!r} disagree: "
                             f"{paths[kind + '_images']} has {images.shape[0]} images but "
                             f"{paths[kind + '_labels']} has {labels.shape[0]} labels")
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. "
                         f"Received: {validation_size}.")
    seed_train, seed_val, seed_test = _child_seeds(seed, 3)
    options = dict(dtype=dtype, reshape=reshape)
    return Datasets(
        train=DataSet(train_images[validation_size:], train_labels[validation_size:],
                      seed=seed_train, **options),
        validation=DataSet(train_images[:validation_size], train_labels[:validation_size],
                           seed=seed_val, **options),
        test=DataSet(test_images, test_labels, seed=seed_test, **options))


def _child_seeds(seed: Optional[int], n: int):
    if seed is None:
        return [None] * n
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n)]


# -- scikit-learn's digits -------------------------------------------------------------------------
def load_digits(test_fraction: float = 0.2, seed: int = 0, one_hot: bool = False,
                flatten: bool = True, dtype=np.float32, validation_size: int = 0) -> Datasets:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, offline), split per class.

    Images are [N, 64] (``flatten=False``: [N, 8, 8, 1]) scaled from 0..16 to [0, 1] for float
    dtypes (uint8 keeps 0..16); labels are int64 [N] or one-hot float32 [N, 10]. The split is
    stratified: about ``test_fraction`` of each digit goes to ``test``, chosen by ``seed``; the
    first ``validation_size`` shuffled training examples become ``validation``.
    """
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"load_digits: test_fraction must be in [0, 1), got {test_fraction}")
    dt = _image_dtype(dtype)
    images, labels = _sklearn_digits()
    if dt.kind == "f":
        images = (images / 16.0).astype(dt)
    else:
        images = images.astype(dt)
    images = images.reshape(len(images), 64) if flatten else images[..., np.newaxis]
    out_labels = dense_to_one_hot(labels) if one_hot else labels

    rng = np.random.RandomState(seed)
    test_idx, train_idx = _stratified_split(labels, test_fraction, rng)
    if not 0 <= validation_size <= len(train_idx):
        raise ValueError(f"Validation size should be between 0 and {len(train_idx)}. "
                         f"Received: {validation_size}.")
    val_idx, train_idx = train_idx[:validation_size], train_idx[validation_size:]
    seeds = _child_seeds(seed, 3)
    return Datasets(*(DataSet._from_arrays(images[idx], out_labels[idx], s)
                      for idx, s in zip((train_idx, val_idx, test_idx), seeds)))


@functools.lru_cache(maxsize=1)
def _sklearn_digits() -> Tuple[np.ndarray, np.ndarray]:
    """(images float64 [1797, 8, 8] with values 0..16, labels int64 [1797]), read-only."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError:
        raise ImportError("load_digits needs scikit-learn, which ships the digits data: "
                          "pip install scikit-learn") from None
    bunch = sk_load_digits()
    images, labels = bunch.images, bunch.target.astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def _stratified_split(labels: np.ndarray, fraction: float,
                      rng: np.random.RandomState) -> Tuple[np.ndarray, np.ndarray]:
    """(test, train) indices, each shuffled: round(fraction * N) test examples, spread over the
    classes in proportion to their sizes (largest remainders get the leftover slots)."""
    classes, counts = np.unique(labels, return_counts=True)
    n_test = int(round(fraction * len(labels)))
    exact = counts * (n_test / len(labels))
    per_class = np.floor(exact).astype(np.int64)
    leftover = n_test - int(per_class.sum())
    if leftover:
        per_class[np.argsort(-(exact - per_class), kind="stable")[:leftover]] += 1
    test, train = [], []
    for c, k in zip(classes, per_class):
        members = rng.permutation(np.flatnonzero(labels == c))
        test.append(members[:k])
        train.append(members[k:])
    return rng.permutation(np.concatenate(test)), rng.permutation(np.concatenate(train))

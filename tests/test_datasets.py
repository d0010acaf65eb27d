"""tfjupyter.datasets: IDX files, MNIST directories, DataSet.next_batch and the digits split."""
import gzip
import io
import os

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter import datasets


# -- IDX -------------------------------------------------------------------------------------------
def _images(n=5, rows=4, cols=3):
    return (np.arange(n * rows * cols, dtype=np.int64).reshape(n, rows, cols) * 7 % 256).astype(np.uint8)


def test_write_idx_uses_the_mnist_header_and_big_endian(tmp_path):
    path = tmp_path / "imgs-idx3-ubyte"
    images = _images()
    datasets.write_idx(path, images)
    raw = path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x03"
    assert raw[4:16] == (5).to_bytes(4, "big") + (4).to_bytes(4, "big") + (3).to_bytes(4, "big")
    assert raw[16:] == images.tobytes()
    datasets.write_idx(tmp_path / "labels", np.array([3, 1, 4], np.uint8))
    assert (tmp_path / "labels").read_bytes() == b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + bytes([3, 1, 4])
    datasets.write_idx(tmp_path / "i16", np.array([258, -2], np.int16))
    assert (tmp_path / "i16").read_bytes()[3:] == b"\x01" + (2).to_bytes(4, "big") + b"\x01\x02\xff\xfe"


@pytest.mark.parametrize("dtype,code", [(np.uint8, 0x08), (np.int8, 0x09), (np.int16, 0x0B),
                                        (np.int32, 0x0C), (np.float32, 0x0D), (np.float64, 0x0E)])
def test_idx_round_trip_every_type(tmp_path, dtype, code):
    rng = np.random.RandomState(1)
    array = (rng.uniform(-100, 100, (2, 3, 4)) if np.dtype(dtype).kind == "f"
             else rng.randint(0 if dtype == np.uint8 else -100, 100, (2, 3, 4))).astype(dtype)
    path = tmp_path / "data.idx"
    datasets.write_idx(path, array)
    assert path.read_bytes()[2] == code
    back = datasets.read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    np.testing.assert_array_equal(back, array)
    back[0, 0, 0] = 1  # a writable copy
    # a big-endian input array is written the same way
    datasets.write_idx(tmp_path / "be.idx", array.astype(np.dtype(dtype).newbyteorder(">")))
    assert (tmp_path / "be.idx").read_bytes() == path.read_bytes()


def test_idx_gzip_by_suffix_and_by_magic_bytes(tmp_path):
    images = _images()
    datasets.write_idx(tmp_path / "x.gz", images)
    raw = (tmp_path / "x.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    np.testing.assert_array_equal(datasets.read_idx(tmp_path / "x.gz"), images)
    # gzip recognised by content, whatever the name
    (tmp_path / "plain-name").write_bytes(raw)
    np.testing.assert_array_equal(datasets.read_idx(str(tmp_path / "plain-name")), images)
    np.testing.assert_array_equal(datasets.read_idx(io.BytesIO(raw)), images)


def test_idx_file_objects(tmp_path):
    buf = io.BytesIO()
    datasets.write_idx(buf, np.array([[1.5, -2.0]], np.float32))
    buf.seek(0)
    np.testing.assert_array_equal(datasets.read_idx(buf), [[1.5, -2.0]])
    with open(tmp_path / "f", "wb") as f:
        datasets.write_idx(f, np.array([9], np.int32))
    with open(tmp_path / "f", "rb") as f:
        assert datasets.read_idx(f).tolist() == [9]


def _bad(tmp_path, raw: bytes, name="bad-idx"):
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def test_idx_bad_magic_names_the_file(tmp_path):
    path = _bad(tmp_path, b"\x00\x01\x08\x01" + (1).to_bytes(4, "big") + b"\x05")
    with pytest.raises(ValueError, match=r"Invalid magic number 0x00010801 in IDX file .*bad-idx"):
        datasets.read_idx(path)
    path = _bad(tmp_path, b"\x00\x00\x0a\x01" + (1).to_bytes(4, "big") + b"\x05", "unknown-type")
    with pytest.raises(ValueError, match=r"0x00000A01 in IDX file .*unknown-type"):
        datasets.read_idx(path)
    path = _bad(tmp_path, b"PK\x03\x04rest", "zip")
    with pytest.raises(ValueError, match="Invalid magic number 0x504B0304"):
        datasets.read_idx(path)


def test_idx_truncated_and_oversized_files(tmp_path):
    datasets.write_idx(tmp_path / "ok", _images())
    raw = (tmp_path / "ok").read_bytes()
    with pytest.raises(ValueError, match=r"Truncated IDX file .*short: the header declares uint8 "
                                         r"data of shape \[5, 4, 3\] \(76 bytes .*75 bytes"):
        datasets.read_idx(_bad(tmp_path, raw[:-1], "short"))
    with pytest.raises(ValueError, match=r"Oversized IDX file .*long"):
        datasets.read_idx(_bad(tmp_path, raw + b"\x00", "long"))
    with pytest.raises(ValueError, match=r"Truncated IDX file .*header-cut: the header declares 3 "
                                         "dimensions"):
        datasets.read_idx(_bad(tmp_path, raw[:9], "header-cut"))
    with pytest.raises(ValueError, match=r"Invalid IDX file .*tiny: 2 bytes is too short"):
        datasets.read_idx(_bad(tmp_path, b"\x00\x00", "tiny"))
    with pytest.raises(ValueError, match="declares 0 dimensions"):
        datasets.read_idx(_bad(tmp_path, b"\x00\x00\x08\x00", "zero-dims"))
    # truncated inside a gzip stream
    gz = gzip.compress(raw)
    with pytest.raises(ValueError, match=r"gz-cut"):
        datasets.read_idx(_bad(tmp_path, gz[:-10], "gz-cut"))


def test_idx_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        datasets.read_idx(tmp_path / "nope")
    with pytest.raises(TypeError, match="path or a binary file object"):
        datasets.read_idx(42)
    with pytest.raises(TypeError, match="binary file object"):
        datasets.read_idx(io.StringIO("text"))
    with pytest.raises(TypeError, match="cannot hold int64 data"):
        datasets.write_idx(tmp_path / "x", np.arange(3))
    with pytest.raises(ValueError, match="1 to 255 dimensions"):
        datasets.write_idx(tmp_path / "x", np.uint8(3))


# -- MNIST directories -----------------------------------------------------------------------------
def _write_mnist(directory, n_train=8, n_test=3, gz=("train-images-idx3-ubyte",)):
    rng = np.random.RandomState(0)
    arrays = {
        "train-images-idx3-ubyte": rng.randint(0, 256, (n_train, 28, 28)).astype(np.uint8),
        "train-labels-idx1-ubyte": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.randint(0, 256, (n_test, 28, 28)).astype(np.uint8),
        "t10k-labels-idx1-ubyte": ((np.arange(n_test) * 3) % 10).astype(np.uint8),
    }
    for name, array in arrays.items():
        datasets.write_idx(os.path.join(directory, name + (".gz" if name in gz else "")), array)
    return arrays


def test_read_data_sets_reads_local_files(tmp_path):
    arrays = _write_mnist(tmp_path)
    mnist = datasets.read_data_sets(str(tmp_path), validation_size=2)
    assert isinstance(mnist, datasets.Datasets)
    train_images = arrays["train-images-idx3-ubyte"].reshape(8, 784).astype(np.float32) / 255
    assert mnist.validation.num_examples == 2 and mnist.train.num_examples == 6
    assert mnist.test.num_examples == 3
    assert mnist.train.images.dtype == np.float32 and mnist.train.images.shape == (6, 784)
    np.testing.assert_allclose(mnist.validation.images, train_images[:2], rtol=1e-6)
    np.testing.assert_allclose(mnist.train.images, train_images[2:], rtol=1e-6)
    assert mnist.train.labels.dtype == np.int64
    np.testing.assert_array_equal(mnist.train.labels, [2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(mnist.test.labels, [0, 3, 6])
    assert 0.0 <= mnist.test.images.min() and mnist.test.images.max() <= 1.0


def test_read_data_sets_options(tmp_path):
    arrays = _write_mnist(tmp_path, gz=())
    mnist = datasets.read_data_sets(tmp_path, one_hot=True, reshape=False, validation_size=0,
                                    dtype=tf.float32)
    assert mnist.train.images.shape == (8, 28, 28, 1) and mnist.validation.num_examples == 0
    assert mnist.train.labels.shape == (8, 10) and mnist.train.labels.dtype == np.float32
    np.testing.assert_array_equal(mnist.train.labels.argmax(1), np.arange(8) % 10)
    np.testing.assert_array_equal(mnist.train.labels.sum(1), np.ones(8))
    raw = datasets.read_data_sets(tmp_path, dtype=np.uint8, validation_size=0)
    np.testing.assert_array_equal(raw.test.images, arrays["t10k-images-idx3-ubyte"].reshape(3, 784))
    with pytest.raises(ValueError, match="Validation size should be between 0 and 8. Received: 9."):
        datasets.read_data_sets(tmp_path, validation_size=9)
    with pytest.raises(TypeError, match="Invalid image dtype 'int32'"):
        datasets.read_data_sets(tmp_path, dtype=np.int32)


def test_read_data_sets_missing_files_lists_expected_names(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        datasets.read_data_sets(str(tmp_path))
    message = str(info.value)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        assert name in message
    assert "never downloads" in message
    _write_mnist(tmp_path)
    os.remove(tmp_path / "t10k-labels-idx1-ubyte")
    with pytest.raises(FileNotFoundError, match=r"missing t10k-labels-idx1-ubyte\(\.gz\)\. "):
        datasets.read_data_sets(str(tmp_path))


def test_read_data_sets_wrong_dims_and_counts(tmp_path):
    _write_mnist(tmp_path)
    datasets.write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros((3, 2), np.uint8))
    with pytest.raises(ValueError, match=r"Invalid MNIST label file .*t10k-labels-idx1-ubyte: "
                                         r"expected uint8 data of shape \[N\]"):
        datasets.read_data_sets(tmp_path)
    datasets.write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="has 3 images but .* has 4 labels"):
        datasets.read_data_sets(tmp_path)
    os.remove(tmp_path / "train-images-idx3-ubyte.gz")
    datasets.write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((8, 784), np.uint8))
    with pytest.raises(ValueError, match=r"Invalid MNIST image file .*train-images-idx3-ubyte: "
                                         r"expected uint8 data of shape \[N, rows, cols\]"):
        datasets.read_data_sets(tmp_path)


def test_fake_data():
    mnist = datasets.read_data_sets("/nonexistent", fake_data=True, one_hot=True)
    images, labels = mnist.train.next_batch(4)
    assert images.shape == (4, 784) and np.all(images == 1)
    np.testing.assert_array_equal(labels, np.tile([1.0] + [0.0] * 9, (4, 1)))


# -- DataSet ---------------------------------------------------------------------------------------
def _dataset(n=10, seed=3):
    images = np.arange(n, dtype=np.uint8).reshape(n, 1, 1, 1)
    return datasets.DataSet(images, np.arange(n), dtype=np.uint8, seed=seed)


def test_dataset_constructor_reshapes_and_scales():
    images = np.full((2, 2, 3, 1), 255, np.uint8)
    ds = datasets.DataSet(images, np.array([1, 2]))
    assert ds.images.shape == (2, 6) and ds.images.dtype == np.float32
    np.testing.assert_array_equal(ds.images, np.ones((2, 6), np.float32))
    ds = datasets.DataSet(images, np.array([1, 2]), reshape=False, dtype=np.float64)
    assert ds.images.shape == (2, 2, 3, 1) and ds.images.dtype == np.float64
    with pytest.raises(ValueError, match=r"images.shape: \(2, 2, 3, 1\) labels.shape: \(3,\)"):
        datasets.DataSet(images, np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\[N, rows, cols, 1\]"):
        datasets.DataSet(np.zeros((2, 3)), np.array([1, 2]))


def test_next_batch_epochs_and_reshuffling():
    ds = _dataset()
    seen = []
    for _ in range(2):
        x, y = ds.next_batch(4)
        np.testing.assert_array_equal(x.reshape(-1), y)  # images stay paired with labels
        seen.append(y)
    assert ds.epochs_completed == 0
    x, y = ds.next_batch(4)  # the last 2 of epoch 1, then 2 of epoch 2
    assert ds.epochs_completed == 1
    first_epoch = np.concatenate(seen + [y[:2]])
    assert sorted(first_epoch) == list(range(10))           # each example once per epoch
    assert list(first_epoch) != list(range(10))              # shuffled
    rest = np.concatenate([y[2:], ds.next_batch(8)[1]])
    assert ds.epochs_completed == 2
    assert sorted(rest) == list(range(10)) and list(rest) != list(first_epoch)  # reshuffled
    np.testing.assert_array_equal(ds.images.reshape(-1), np.arange(10))  # order kept


def test_next_batch_is_deterministic_given_the_seed():
    a, b, c = _dataset(seed=5), _dataset(seed=5), _dataset(seed=6)
    batches_a = [a.next_batch(3)[1] for _ in range(8)]
    batches_b = [b.next_batch(3)[1] for _ in range(8)]
    batches_c = [c.next_batch(3)[1] for _ in range(8)]
    np.testing.assert_array_equal(batches_a, batches_b)
    assert not np.array_equal(batches_a, batches_c)


def test_next_batch_without_shuffle_and_larger_than_the_data():
    ds = _dataset(n=5)
    np.testing.assert_array_equal(ds.next_batch(3, shuffle=False)[1], [0, 1, 2])
    np.testing.assert_array_equal(ds.next_batch(3, shuffle=False)[1], [3, 4, 0])
    ds = _dataset(n=5)
    x, y = ds.next_batch(12)
    assert len(y) == 12 and ds.epochs_completed == 2
    assert sorted(y[:5]) == sorted(y[5:10]) == list(range(5))
    with pytest.raises(ValueError, match="batch_size must be positive"):
        ds.next_batch(0)
    with pytest.raises(TypeError, match="batch_size must be an int"):
        ds.next_batch(2.5)
    empty = datasets.load_digits().validation
    with pytest.raises(ValueError, match="no examples"):
        empty.next_batch(1)


# -- digits ----------------------------------------------------------------------------------------
def test_load_digits_split_and_values():
    from sklearn.datasets import load_digits as sk

    bunch = sk()
    data = datasets.load_digits()
    assert data.train.num_examples + data.test.num_examples == 1797
    assert data.test.num_examples == round(0.2 * 1797)
    assert data.train.images.shape == (data.train.num_examples, 64)
    assert data.train.images.dtype == np.float32 and data.train.labels.dtype == np.int64
    assert data.train.images.min() == 0.0 and data.train.images.max() == 1.0
    # stratified: each class contributes its share (within one example)
    total = np.bincount(bunch.target, minlength=10)
    test_counts = np.bincount(data.test.labels, minlength=10)
    assert np.all(np.abs(test_counts - 0.2 * total) <= 1)
    np.testing.assert_array_equal(test_counts + np.bincount(data.train.labels, minlength=10), total)
    # every split example is a scaled digit of its own class, and no example is in both splits
    lookup = {row.tobytes(): [] for row in (bunch.data / 16.0).astype(np.float32)}
    for i, row in enumerate((bunch.data / 16.0).astype(np.float32)):
        lookup[row.tobytes()].append(i)
    used = []
    for split in (data.train, data.test):
        for image, label in zip(split.images, split.labels):
            candidates = lookup[image.tobytes()]
            assert label in bunch.target[candidates]
            used.append(candidates[0])
    assert len(used) == 1797


def test_load_digits_options_and_seeds():
    a, b = datasets.load_digits(seed=1), datasets.load_digits(seed=1)
    np.testing.assert_array_equal(a.test.labels, b.test.labels)
    np.testing.assert_array_equal(a.train.next_batch(50)[1], b.train.next_batch(50)[1])
    assert not np.array_equal(datasets.load_digits(seed=2).test.labels, a.test.labels)
    d = datasets.load_digits(test_fraction=0.5, one_hot=True, flatten=False, dtype=np.float64,
                             validation_size=100)
    assert d.test.num_examples == 898 and d.validation.num_examples == 100
    assert d.train.num_examples == 1797 - 898 - 100
    assert d.train.images.shape[1:] == (8, 8, 1) and d.train.images.dtype == np.float64
    assert d.train.labels.shape[1:] == (10,) and d.train.labels.dtype == np.float32
    np.testing.assert_array_equal(d.test.labels.sum(1), np.ones(898))
    raw = datasets.load_digits(dtype=np.uint8)
    assert raw.train.images.dtype == np.uint8 and raw.train.images.max() == 16
    assert tf.datasets.load_digits is datasets.load_digits
    with pytest.raises(ValueError, match=r"test_fraction must be in \[0, 1\)"):
        datasets.load_digits(test_fraction=1.0)
    with pytest.raises(ValueError, match="Validation size should be between 0 and 1438"):
        datasets.load_digits(validation_size=2000)


def test_dense_to_one_hot():
    np.testing.assert_array_equal(datasets.dense_to_one_hot(np.array([2, 0]), 3),
                                  [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        datasets.dense_to_one_hot(np.array([3]), 3)

"""tf.contrib.learn.datasets.load_dataset and its CSV readers: bundled iris, local files,
clear errors where TF 1.x would have downloaded."""
import numpy as np
import pytest

import tfjupyter as tf

datasets = tf.contrib.learn.datasets


def test_iris_is_tf_1x_iris():
    iris = datasets.load_dataset("iris")
    assert iris.data.shape == (150, 4) and iris.data.dtype == np.float64
    assert iris.target.shape == (150,) and np.bincount(iris.target).tolist() == [50, 50, 50]
    # The first row and the column means of Fisher's data (R. A. Fisher, 1936).
    assert iris.data[0].tolist() == [5.1, 3.5, 1.4, 0.2]
    np.testing.assert_allclose(iris.data.mean(axis=0), [5.8433, 3.0573, 3.758, 1.1993],
                               atol=1e-4)


def test_csv_readers(tmp_path):
    with_header = tmp_path / "h.csv"
    with_header.write_text("2,3,a,b\n1.5,2,3,0\n4,5,6.5,1\n")
    d = datasets.base.load_csv_with_header(str(with_header), np.int32, np.float32)
    assert d.data.tolist() == [[1.5, 2, 3], [4, 5, 6.5]] and d.target.tolist() == [0, 1]
    plain = tmp_path / "p.csv"
    plain.write_text("1,some title,text one\n2,other,text two\n")
    d = datasets.base.load_csv_without_header(str(plain), np.int32, np.str_, target_column=0)
    assert d.target.tolist() == [1, 2] and d.data[1].tolist() == ["other", "text two"]


def test_dbpedia_from_local_files(tmp_path):
    folder = tmp_path / "dbpedia_csv"
    folder.mkdir()
    for part in ("train", "test"):
        (folder / f"{part}.csv").write_text('3,Title,"An abstract, with a comma"\n')
    sets = datasets.load_dbpedia(size="large", data_dir=str(tmp_path))
    assert sets.validation is None
    assert sets.train.target.tolist() == [3]
    assert sets.test.data[0].tolist() == ["Title", "An abstract, with a comma"]
    with pytest.raises(FileNotFoundError, match="does not download; missing"):
        datasets.load_dbpedia(data_dir=str(tmp_path / "nothing"))


def test_no_download_errors():
    with pytest.raises(ValueError, match="Name of dataset is not found: cifar"):
        datasets.load_dataset("cifar")
    with pytest.raises(FileNotFoundError, match="boston_house_prices.csv"):
        datasets.load_dataset("boston")

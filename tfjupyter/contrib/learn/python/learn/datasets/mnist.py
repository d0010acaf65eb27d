"""``tensorflow.contrib.learn.python.learn.datasets.mnist``: TF 1.x's home of read_data_sets,
which examples/tutorials/mnist/input_data re-exported; here both are tfjupyter.datasets."""
from ......datasets import (DataSet, dense_to_one_hot, extract_images, extract_labels,  # noqa: F401
                           read_data_sets)

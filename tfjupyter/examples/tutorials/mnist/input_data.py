"""``from tensorflow.examples.tutorials.mnist import input_data`` — reads local IDX files."""
from tfjupyter.datasets import (DataSet, dense_to_one_hot, extract_images, extract_labels,  # noqa: F401
                                read_data_sets)

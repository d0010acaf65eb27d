"""notebooks/input_pipeline.ipynb runs top to bottom in a fresh Jupyter kernel, and what it
prints agrees with facts established here independently: the first record decodes to the
first training digit, the queue pipeline delivers every record once per epoch (its own count and
the experiment record's), the classifier trained from the queue is accurate, both pipelines'
examples/s are measured, and nothing is left behind.

tests/test_notebooks.py checks that the stored copy is one clean run; this test is the one
that executes the notebook.
"""
import math
import os
import re

import numpy as np
import pytest

from notebook_util import assert_no_errors, code_outputs, read, run_in_a_kernel, without_outputs

NAME = "input_pipeline.ipynb"


def output_of(outputs, prefix):
    """The output of the one code cell whose first line starts with ``prefix``."""
    found = [out for first, out in outputs.items() if first.startswith(prefix)]
    assert len(found) == 1, f"{len(found)} cells start with {prefix!r}: {list(outputs)}"
    return found[0]


@pytest.mark.timeout(240)
def test_input_pipeline_notebook(tmp_path, monkeypatch):
    import tfjupyter as tf

    notebook = without_outputs(read(NAME))
    assert notebook.cells[0].cell_type == "markdown" and "How long" in notebook.cells[0].source
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))   # the kernel's tempfile.mkdtemp() goes here
    run_in_a_kernel(notebook, tmp_path, monkeypatch)
    assert_no_errors(notebook)
    outputs = code_outputs(notebook)

    # The files: four shards holding the 1,438 training digits, one GZIP file of the 359 test
    # digits, smaller than its records framed (16 bytes each).
    digits = tf.datasets.load_digits(seed=0)
    written = output_of(outputs, "data = tf.datasets.load_digits")
    files = {name: (int(n), int(size)) for name, n, size in
             re.findall(r"^(\S+\.tfrecord(?:\.gz)?)\s+(\d+) records\s+(\d+) bytes$", written, re.M)}
    shards = {k: v for k, v in files.items() if k.startswith("train-")}
    assert len(shards) == 4, written
    records = sum(n for n, _ in shards.values())
    assert records == digits.train.num_examples == 1438, written
    test_records, test_size = files["test.tfrecord.gz"]
    assert test_records == digits.test.num_examples, written
    framed = int(re.search(r"would have (\d+) bytes", written).group(1))
    assert test_size < framed / 2, written

    # The first record, decoded back: the first training digit, and both checksums agree.
    decoded = output_of(outputs, "def masked_crc32c")
    crcs = re.search(r"masked CRC32C (0x\w+) \(computed (0x\w+)\); data CRC (0x\w+) "
                     r"\(computed (0x\w+)\)", decoded)
    assert crcs and crcs.group(1) == crcs.group(2) and crcs.group(3) == crcs.group(4), decoded
    assert int(re.search(r"^  value: (\d+)$", decoded, re.M).group(1)) == digits.train.labels[0]
    grid = re.search(r"image x 16:\n((?:\s*\[.*\n){8})", decoded).group(1)
    image = np.array([int(v) for v in re.findall(r"\d+", grid)])
    np.testing.assert_array_equal(image, (digits.train.images[0] * 16).round().astype(int))
    assert "equals the first training digit: True" in decoded

    # The tutorial pipeline: every record once per epoch, the smaller last batch included.
    trained = output_of(outputs, "sess = tf.Session()")
    done = re.search(r"OutOfRangeError after (\d+) epochs: (\d+) steps, (\d+) examples seen",
                     trained)
    assert done, trained
    epochs, steps, examples = map(int, done.groups())
    batch = int(re.search(r"EPOCHS, BATCH = (\d+), (\d+)", "\n".join(outputs)).group(2))
    assert examples == epochs * records, trained
    assert steps == math.ceil(examples / batch), trained
    accuracy = re.search(r"test accuracy ([0-9.]+) on the (\d+) digits.*global step (\d+)$",
                         trained, re.M)
    assert accuracy, trained
    assert float(accuracy.group(1)) >= 0.9, trained
    assert int(accuracy.group(2)) == test_records and int(accuracy.group(3)) == steps, trained

    # The experiment record counted the same steps and examples, from the dequeued batches,
    # and kept the final accuracy; it went to the kernel's ./experiments.
    record = output_of(outputs, "%tf_experiment end")
    figures = dict(re.findall(r"^  (\w+) +([^\s<]+)", record, re.M))  # text/plain, then html
    assert figures.get("status") == "finished", record
    assert int(figures["steps"]) == steps and int(figures["examples"]) == examples, record
    assert int(figures["global_step"]) == steps, record
    assert float(figures["test_accuracy"]) == pytest.approx(float(accuracy.group(1)), abs=5e-4), \
        record
    assert os.listdir(tmp_path / "cwd") == ["experiments"]

    # Both pipelines measured, and their ratio said. (How much faster batching the reads and
    # parses is, is a speed figure: bench/, never a timed test; 2.8x-3.5x seen here.)
    rates = output_of(outputs, "def pipeline_rate")
    tutorial = float(re.search(r"^tutorial path .*:\s+(\d+) examples/s$", rates, re.M).group(1))
    fast = float(re.search(r"^fast path .*:\s+(\d+) examples/s$", rates, re.M).group(1))
    ratio = float(re.search(r"^the fast path is ([0-9.]+)x faster$", rates, re.M).group(1))
    assert 0 < tutorial and 0 < fast, rates
    assert ratio == pytest.approx(fast / tutorial, rel=0.1, abs=0.5), rates

    # The TFRecord files were written to a temporary directory, removed at the end.
    assert not os.listdir(scratch), os.listdir(scratch)

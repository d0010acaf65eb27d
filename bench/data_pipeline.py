"""Examples/s of tf.data input pipelines against the queue fast path, alone and feeding the
tutorial's trainer.

    python bench/data_pipeline.py [--runs 3] [--epochs 10] [--batch 100]

The digits are written to TFRecord files as bench/input_pipeline.py writes them, and read by

* queue fast path: string_input_producer + TFRecordReader.read_up_to + parse_example +
  batch(enqueue_many) on queue runners (bench/input_pipeline.py's fast path);
* tf.data, per record: TFRecordDataset -> map(parse_single_example) -> shuffle -> batch ->
  prefetch (what TF 1.x input functions write);
* tf.data, batched: TFRecordDataset -> shuffle -> batch -> map(parse_example) -> prefetch
  (TensorFlow's performance guide's order: the parser runs once per batch);
* tf.data from numpy: from_tensor_slices((images, labels)) -> shuffle -> batch -> prefetch;
* TensorFlow's own per-record tf.data pipeline, when ``import tensorflow`` works.

Each pipeline runs ``--epochs`` epochs to its end (OutOfRangeError), counting examples/s from
its first batch on (bench/input_pipeline.py's run_to_end): "alone", or with every batch feeding
a step of the tutorial's model (tests/tutorials/mnist_inference.py, 64-500-10, one tower on the
CPU, GradientDescent): "trainer". Runs alternate between the
pipelines; the table gives the min and median of ``--runs`` runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tutorials"))


def _features(tf):
    return {"image": tf.FixedLenFeature([64], tf.float32),
            "label": tf.FixedLenFeature([], tf.int64)}


def queue_fast_path(tf, paths, args):
    q = tf.train.string_input_producer(paths, num_epochs=args.epochs, shuffle=False)
    _, serialized = tf.TFRecordReader().read_up_to(q, 500)
    parsed = tf.parse_example(serialized, _features(tf))
    return tf.train.batch([parsed["image"], parsed["label"]], args.batch, num_threads=2,
                          capacity=8 * args.batch, enqueue_many=True,
                          allow_smaller_final_batch=True)


def data_per_record(tf, paths, args):
    def parse(record):
        parsed = tf.parse_single_example(record, _features(tf))
        return parsed["image"], parsed["label"]
    ds = tf.data.TFRecordDataset(paths).repeat(args.epochs).map(parse)
    ds = ds.shuffle(1000, seed=1).batch(args.batch).prefetch(2)
    return ds.make_one_shot_iterator().get_next()


def data_batched(tf, paths, args):
    def parse(records):
        parsed = tf.parse_example(records, _features(tf))
        return parsed["image"], parsed["label"]
    ds = tf.data.TFRecordDataset(paths).repeat(args.epochs).shuffle(1000, seed=1)
    ds = ds.batch(args.batch).map(parse).prefetch(2)
    return ds.make_one_shot_iterator().get_next()


def data_numpy(tf, paths, args):
    digits = tf.datasets.load_digits().train
    ds = tf.data.Dataset.from_tensor_slices((digits.images.astype("float32"),
                                             digits.labels.astype("int64")))
    ds = ds.repeat(args.epochs).shuffle(1000, seed=1).batch(args.batch).prefetch(2)
    return ds.make_one_shot_iterator().get_next()


def trainer_op(tf, images, labels):
    import mnist_inference
    logits = mnist_inference.inference(images, None)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=logits))
    return tf.train.GradientDescentOptimizer(0.01).minimize(loss)


def measure(tf, build, paths, args, train: bool) -> float:
    """Examples/s of one pipeline run to its end, alone or each batch feeding a trainer step."""
    from input_pipeline import run_to_end
    with tf.Graph().as_default():
        images, labels = build(tf, paths, args)
        if train:
            with tf.control_dependencies([trainer_op(tf, images, labels)]):
                labels = tf.identity(labels)
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        with tf.Session() as sess:
            sess.run(init)
            coord = tf.train.Coordinator()
            threads = (tf.train.start_queue_runners(sess=sess, coord=coord)
                       if tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) else [])
            return run_to_end(sess, (images, labels), coord, threads)


def tensorflow_module():
    try:
        import tensorflow
    except Exception:  # not installed (the usual case), or broken
        return None
    tf1 = tensorflow.compat.v1
    tf1.disable_eager_execution()
    tf1.FixedLenFeature, tf1.parse_example = tf1.io.FixedLenFeature, tf1.io.parse_example
    tf1.parse_single_example = tf1.io.parse_single_example
    return tf1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--files", type=int, default=4)
    args = parser.parse_args()

    import tfjupyter as tf
    from input_pipeline import write_digits
    pipelines = [("queue fast path (read_up_to + parse_example + batch)", tf, queue_fast_path),
                 ("tf.data per record (map(parse_single_example), shuffle, batch, prefetch)",
                  tf, data_per_record),
                 ("tf.data batched (shuffle, batch, map(parse_example), prefetch)", tf,
                  data_batched),
                 ("tf.data from_tensor_slices (numpy; shuffle, batch, prefetch)", tf, data_numpy)]
    reference = tensorflow_module()
    if reference is not None:
        pipelines.append(("TensorFlow tf.data per record", reference, data_per_record))
    results = {(name, mode): [] for name, _, _ in pipelines for mode in ("alone", "trainer")}
    with tempfile.TemporaryDirectory() as directory:
        paths, n = write_digits(directory, args.files)
        print(f"{n} digits in {args.files} TFRecord files, batches of {args.batch}, "
              f"{args.epochs} epochs; {args.runs} alternating runs")
        for _ in range(args.runs):
            for name, module, build in pipelines:
                for mode in ("alone", "trainer"):
                    results[(name, mode)].append(measure(module, build, paths, args,
                                                         mode == "trainer"))
    print(f"\n{'pipeline':<78}{'alone min/median':>22}{'trainer min/median':>22}")
    for name, _, _ in pipelines:
        cells = []
        for mode in ("alone", "trainer"):
            rates = results[(name, mode)]
            cells.append(f"{min(rates):>10,.0f} /{statistics.median(rates):>9,.0f}")
        print(f"{name:<78}{cells[0]:>22}{cells[1]:>22}")
    if reference is None:
        print("TensorFlow: skipped (import tensorflow failed; it is not a dependency)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

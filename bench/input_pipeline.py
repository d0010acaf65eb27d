"""Examples/s of the queue-based input pipeline alone (TFRecord files -> parsed batches).

    python bench/input_pipeline.py [--epochs 20] [--batch 100] [--files 4] [--trainer-steps 60]
    python bench/input_pipeline.py --tutorial-rounds 5 --tf-python /tmp/tfvenv/bin/python

scikit-learn's digits are written to TFRecord files as tf.train.Example (image: FloatList of
64, label: Int64List), then read back by

* fast path: string_input_producer + TFRecordReader.read_up_to + parse_example + batch
  (enqueue_many): per record, only the reader's framing work is Python;
* tutorial path: read + parse_single_example + shuffle_batch(num_threads=4), one record per
  step of each runner thread, as the TF 0.x tutorials wrote it;
* numpy reference: the same files parsed in plain Python (python_io.tf_record_iterator +
  Example.FromString + numpy), batch after batch, with no graph or queue;
* TensorFlow's own fast path, the same graph, when ``import tensorflow`` works (skipped
  otherwise: TensorFlow is not a dependency).

Each pipeline runs ``--epochs`` epochs to the end (OutOfRangeError); examples/s is counted from
its first batch on (so plan building is left out).

``--tutorial-rounds N`` compares the tutorial path alone with TensorFlow's (its compat.v1 API,
run by ``--tf-python``, an interpreter that can ``import tensorflow``) on the same files: each
round runs tfjupyter's and TensorFlow's pipeline (in turns going first), each in a fresh
process of its own, and the table gives both sides' min and median examples/s and the per-round ratios.

The 4-tower trainer
(tests/tutorials/multi_gpu_train.py, as bench/gpu_towers.py runs it; soft-placed onto the CPU
when there is no GPU) is measured in the same run: a pipeline/trainer ratio above 1 means the
pipeline could feed that trainer.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def write_digits(directory: str, n_files: int):
    """The digits' training split as Examples, round-robin over ``n_files`` TFRecord files."""
    import tfjupyter as tf
    from tfjupyter import python_io
    digits = tf.datasets.load_digits().train
    paths = [os.path.join(directory, f"digits-{i:02d}.tfrecord") for i in range(n_files)]
    writers = [python_io.TFRecordWriter(p) for p in paths]
    for i, (image, label) in enumerate(zip(digits.images, digits.labels)):
        example = tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(float_list=tf.train.FloatList(value=image.tolist())),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)]))}))
        writers[i % n_files].write(example.SerializeToString())
    for w in writers:
        w.close()
    return paths, digits.num_examples


def run_to_end(sess, fetch, coord, threads) -> float:
    """Runs ``fetch`` (images, labels) until OutOfRangeError; examples/s after the first."""
    count, started = 0, None
    try:
        while not coord.should_stop():
            images, labels = sess.run(fetch)
            assert images.shape == (len(labels), 64)
            if started is None:
                started = time.perf_counter()
            else:
                count += len(labels)
    except Exception as e:  # OutOfRangeError of tfjupyter or TensorFlow: the end
        if type(e).__name__ != "OutOfRangeError":
            raise
    finally:
        coord.request_stop()
        coord.join(threads)
    return count / (time.perf_counter() - started)


def pipeline_rate(tf, paths, args, fast: bool) -> float:
    """One pipeline, built and run in ``tf`` (tfjupyter, or TensorFlow's compat.v1)."""
    graph = tf.Graph()
    with graph.as_default():
        features = {"image": tf.FixedLenFeature([64], tf.float32),
                    "label": tf.FixedLenFeature([], tf.int64)}
        q = tf.train.string_input_producer(paths, num_epochs=args.epochs, shuffle=False)
        reader = tf.TFRecordReader()
        if fast:
            _, serialized = reader.read_up_to(q, args.read_batch)
            parsed = tf.parse_example(serialized, features)
            fetch = tf.train.batch([parsed["image"], parsed["label"]], args.batch,
                                   num_threads=args.threads, capacity=8 * args.batch,
                                   enqueue_many=True, allow_smaller_final_batch=True)
        else:
            _, serialized = reader.read(q)
            parsed = tf.parse_single_example(serialized, features)
            fetch = tf.train.shuffle_batch([parsed["image"], parsed["label"]], args.batch,
                                           capacity=1000 + 3 * args.batch,
                                           min_after_dequeue=1000, num_threads=4,
                                           allow_smaller_final_batch=True)
        init = tf.local_variables_initializer()
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            return run_to_end(sess, fetch, coord, threads)


def compat_v1(tensorflow):
    """TensorFlow's compat.v1 in graph mode, with the 1.x names the pipelines use."""
    tf1 = tensorflow.compat.v1
    tf1.disable_eager_execution()
    tf1.FixedLenFeature = tf1.io.FixedLenFeature
    tf1.parse_example, tf1.parse_single_example = tf1.io.parse_example, \
        tf1.io.parse_single_example
    return tf1


def tutorial_worker(args) -> int:
    """One side of a --tutorial-rounds round, in its own process: prints the examples/s."""
    if args.worker == "tensorflow":
        import tensorflow
        tf = compat_v1(tensorflow)
    else:
        import tfjupyter as tf
    print(f"RATE {pipeline_rate(tf, args.paths.split(os.pathsep), args, fast=False)!r}")
    return 0


def tutorial_rounds(args) -> int:
    """The tutorial path of tfjupyter and of TensorFlow, alternating, --tutorial-rounds times."""
    import statistics
    import subprocess

    def rate(worker: str, python: str, paths) -> float:
        command = [python, os.path.abspath(__file__), "--worker", worker,
                   "--paths", os.pathsep.join(paths), "--epochs", str(args.epochs),
                   "--batch", str(args.batch)]
        done = subprocess.run(command, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RATE ")]
        if done.returncode or not lines:
            raise SystemExit(f"{worker} round failed ({' '.join(command)}):\n{done.stderr}")
        return float(lines[-1].split()[1])

    with tempfile.TemporaryDirectory() as directory:
        paths, n = write_digits(directory, args.files)
        print(f"tutorial path (read + parse_single_example + shuffle_batch, 4 threads): {n} "
              f"digits in {args.files} TFRecord files, {args.epochs} epochs, batches of "
              f"{args.batch}; TensorFlow run by {args.tf_python}")
        ours, theirs = [], []
        for r in range(args.tutorial_rounds):
            # Each side goes first every other round: neither always meets the machine as the
            # other left it.
            for side in (("tfjupyter", "tensorflow") if r % 2 == 0 else
                         ("tensorflow", "tfjupyter")):
                if side == "tfjupyter":
                    ours.append(rate(side, sys.executable, paths))
                else:
                    theirs.append(rate(side, args.tf_python, paths))
            print(f"round {r + 1}: tfjupyter {ours[-1]:>9,.0f}  TensorFlow {theirs[-1]:>9,.0f}"
                  f"  ratio {ours[-1] / theirs[-1]:.2f}", flush=True)
    ratios = [a / b for a, b in zip(ours, theirs)]
    print(f"\n{'examples/s':<12}{'min':>10}{'median':>10}")
    for name, rates in (("tfjupyter", ours), ("TensorFlow", theirs)):
        print(f"{name:<12}{min(rates):>10,.0f}{statistics.median(rates):>10,.0f}")
    print(f"{'ratio':<12}{min(ratios):>10.2f}{statistics.median(ratios):>10.2f}"
          "   (tfjupyter / TensorFlow, per round)")
    return 0


def numpy_rate(paths, args) -> float:
    """The same records parsed into batches in plain Python and numpy."""
    from tfjupyter import python_io
    from tfjupyter.example import Example
    count = 0
    started = time.perf_counter()
    for _ in range(args.epochs):
        images, labels = [], []
        for path in paths:
            for record in python_io.tf_record_iterator(path):
                feature = Example.FromString(record).features.feature
                images.append(np.array(feature["image"].float_list.value, dtype=np.float32))
                labels.append(feature["label"].int64_list.value[0])
                if len(labels) == args.batch:
                    batch = np.stack(images), np.array(labels, dtype=np.int64)
                    count += len(batch[1])
                    images, labels = [], []
        count += len(labels)
    return count / (time.perf_counter() - started)


def tensorflow_rate(paths, args):
    try:
        import tensorflow
    except Exception as e:  # not installed (the usual case), or broken
        return None, f"import tensorflow failed ({type(e).__name__})"
    return pipeline_rate(compat_v1(tensorflow), paths, args, fast=True), ""


def trainer_rate(steps: int) -> float:
    """Examples/s of the 4-tower trainer, run as bench/gpu_towers.py runs it."""
    import gpu_towers
    env = dict(os.environ)
    if gpu_towers.physical_gpu_count() == 0:
        env["CUDA_VISIBLE_DEVICES"] = ""  # the towers soft-place onto the CPU
    return gpu_towers.examples_per_sec(4, steps, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100, help="examples per batch")
    parser.add_argument("--read-batch", type=int, default=500,
                        help="records per read_up_to (fast path)")
    parser.add_argument("--threads", type=int, default=2, help="enqueue threads (fast path)")
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--trainer-steps", type=int, default=60,
                        help="steps of the 4-tower trainer (0: skip it)")
    parser.add_argument("--tutorial-rounds", type=int, default=0,
                        help="only compare the tutorial path with TensorFlow's, this many rounds")
    parser.add_argument("--tf-python", default=sys.executable,
                        help="the Python that runs TensorFlow's side of --tutorial-rounds")
    parser.add_argument("--worker", choices=("tfjupyter", "tensorflow"), help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return tutorial_worker(args)
    if args.tutorial_rounds:
        return tutorial_rounds(args)

    import tfjupyter as tf
    with tempfile.TemporaryDirectory() as directory:
        paths, n = write_digits(directory, args.files)
        print(f"{n} digits in {args.files} TFRecord files, {args.epochs} epochs, batches of "
              f"{args.batch}")
        rows = [("tfjupyter fast path (read_up_to + parse_example + batch)",
                 pipeline_rate(tf, paths, args, fast=True)),
                ("tfjupyter tutorial path (read + parse_single_example + shuffle_batch x4)",
                 pipeline_rate(tf, paths, args, fast=False)),
                ("numpy reference (tf_record_iterator + protobuf + numpy)",
                 numpy_rate(paths, args))]
        tf_rate, why = tensorflow_rate(paths, args)
    trainer = trainer_rate(args.trainer_steps) if args.trainer_steps else None
    reference = rows[2][1]

    print(f"\n{'pipeline':<76}{'examples/s':>12}{'/ numpy':>9}{'/ trainer':>11}")
    for name, rate in rows:
        vs_trainer = f"{rate / trainer:>11.2f}" if trainer else f"{'-':>11}"
        print(f"{name:<76}{rate:>12,.0f}{rate / reference:>9.2f}{vs_trainer}")
    if tf_rate is not None:
        vs_trainer = f"{tf_rate / trainer:>11.2f}" if trainer else f"{'-':>11}"
        print(f"{'TensorFlow fast path (same graph)':<76}{tf_rate:>12,.0f}"
              f"{tf_rate / reference:>9.2f}{vs_trainer}")
    else:
        print(f"{'TensorFlow fast path':<76}{'skipped: ' + why}")
    if trainer:
        print(f"{'4-tower trainer (tests/tutorials/multi_gpu_train.py)':<76}{trainer:>12,.0f}"
              f"{trainer / reference:>9.2f}{1.0:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

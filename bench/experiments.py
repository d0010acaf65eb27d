"""What recording an experiment costs a training loop.

    python bench/experiments.py [--seconds 1] [--rounds 15] [--batch 128]

Trains an MLP (64-128-10 on digits, SGD, a loss summary every step, the global step fetched:
the dashboard benchmark's model) for ``seconds`` per round, alternately without and with an
``Experiment`` recording (its flusher thread writing the timeline and TensorBoard events every
0.5 s). Short alternating rounds, so a machine whose load drifts disturbs both arms alike;
an experiment is recorded once before timing (its first flush imports TensorBoard's protos). Reports steps/s per arm (median of rounds) and the ratio with/without; steps per CPU second
of the process (all threads, so the flusher's work counts) and that ratio, which a loaded
machine disturbs less; and the CPU time the flusher thread spent per second of training
(measured on its thread). The recorder's
own cost to the training thread is a deque append per event, so the ratio should be >= 0.95.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()

    import tfjupyter as tf
    from tfjupyter.experiments import Experiment

    data = tf.datasets.load_digits(seed=0)
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.int64, [None])
    w1 = tf.Variable(tf.truncated_normal([64, 128], stddev=0.1))
    b1 = tf.Variable(tf.zeros([128]))
    w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1))
    b2 = tf.Variable(tf.zeros([10]))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    tf.summary.scalar("loss", loss)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    summaries = tf.summary.merge_all()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    batches = [data.train.next_batch(args.batch) for _ in range(64)]

    def train_for(seconds: float):
        """(steps per wall second, steps per CPU second of this process: all its threads)."""
        n, t0, cpu0 = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds:
            images, labels = batches[n % 64]
            sess.run([train, step, summaries], {x: images, y: labels})
            n += 1
        return n / (time.perf_counter() - t0), n / (time.process_time() - cpu0)

    # The flusher's CPU time (it shares the GIL with the training thread): every flush and
    # graph check, measured on its own thread.
    flusher_cpu = [0.0]
    for name in ("_flush", "_write_local_graphs"):
        def timed(self, *a, _inner=getattr(Experiment, name), **k):
            start = time.thread_time()
            try:
                return _inner(self, *a, **k)
            finally:
                flusher_cpu[0] += time.thread_time() - start
        setattr(Experiment, name, timed)

    train_for(1.0)   # warm-up: plans compiled, caches filled
    folder = tempfile.mkdtemp(prefix="tfjupyter-bench-experiments-")
    with Experiment("warm_up", dir=folder, cluster=False):
        train_for(1.0)
    without, with_, cpu = [], [], []
    for i in range(args.rounds):
        without.append(train_for(args.seconds))
        flusher_cpu[0] = 0.0
        with Experiment(f"bench_{i}", dir=folder, cluster=False) as e:
            with_.append(train_for(args.seconds))
        cpu.append(flusher_cpu[0] / args.seconds)
        recorded = e.record.final["steps"]
        print(f"round {i + 1}: without {without[-1][0]:.1f} steps/s ({without[-1][1]:.1f} per "
              f"CPU s), with {with_[-1][0]:.1f} steps/s ({with_[-1][1]:.1f} per CPU s); "
              f"{recorded} steps recorded; the flusher used {cpu[-1] * 1000:.1f} ms of CPU "
              f"per second", flush=True)
    a, b = statistics.median(r[0] for r in without), statistics.median(r[0] for r in with_)
    ca, cb = statistics.median(r[1] for r in without), statistics.median(r[1] for r in with_)
    # On a loaded machine wall-clock rates swing with the other processes; steps per CPU
    # second of this process (the flusher's CPU included) measure the recorder's own cost.
    print(json.dumps({"steps_per_sec_without": round(a, 1), "steps_per_sec_with": round(b, 1),
                      "ratio": round(b / a, 3), "steps_per_cpu_sec_without": round(ca, 1),
                      "steps_per_cpu_sec_with": round(cb, 1), "cpu_ratio": round(cb / ca, 3),
                      "batch": args.batch,
                      "flusher_cpu_ms_per_sec": round(1000 * statistics.median(cpu), 2),
                      "seconds": args.seconds, "rounds": args.rounds, "records": folder}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

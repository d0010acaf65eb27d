"""What a step costs on each kind of Session target, and the queue-runner pattern on each.

    python bench/session_targets.py [--elements 4000] [--steps 4000] [--repeats 5]

Targets, all measured in the same run:

* ``local``: ``Session('')``, the reference;
* ``in-process server``: ``Session(server.target)`` of a server in this process (the master
  calls the worker directly, as TensorFlow's in-process master/worker do);
* ``task process``: ``Session("grpc://...")`` of a ``tfjupyter server`` in another process
  (gRPC on loopback).

Two workloads: a trivial step (``x + 1``: per-step overhead, µs), and TensorFlow's queue-runner
pattern (4 runner threads enqueue into a FIFOQueue(10), the main thread dequeues one element per
step: elements/s). Before issue 13 the pattern deadlocked on server targets. Reports min and
median over ``--repeats`` and the ratio of each target's median to ``local``'s.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _step_us(tf, target: str, steps: int) -> float:
    with tf.Graph().as_default():
        y = tf.constant(1.0) + 1.0
        with tf.Session(target) as sess:
            for _ in range(50):
                sess.run(y)
            start = time.perf_counter()
            for _ in range(steps):
                sess.run(y)
            return (time.perf_counter() - start) / steps * 1e6


def _queue_runner_rate(tf, target: str, elements: int) -> float:
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
        enqueue = q.enqueue(tf.constant(1.0))
        dequeue = q.dequeue()
        runner = tf.train.QueueRunner(q, [enqueue] * 4)
        with tf.Session(target) as sess:
            coord = tf.train.Coordinator()
            threads = runner.create_threads(sess, coord=coord, start=True)
            for _ in range(50):
                sess.run(dequeue)
            start = time.perf_counter()
            for _ in range(elements):
                sess.run(dequeue)
            rate = elements / (time.perf_counter() - start)
            coord.request_stop()
            sess.run(q.close(cancel_pending_enqueues=True))
            coord.join(threads, stop_grace_period_secs=10)
            return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("TFJUPYTER_CLUSTER_TOKEN", secrets.token_hex(16))
    import tfjupyter as tf

    server = tf.train.Server.create_local_server()
    address = f"localhost:{_free_port()}"
    task = subprocess.Popen(
        [sys.executable, "-m", "tfjupyter.cli", "server", "--cluster",
         json.dumps({"ps": [address]}), "--job", "ps", "--max-seconds", "1800"],
        stdout=subprocess.PIPE, text=True)
    try:
        if not task.stdout.readline().startswith("serving"):
            raise SystemExit("the task process did not start")
        targets = {"local": "", "in-process server": server.target,
                   "task process": "grpc://" + address}
        results = {}
        for name, target in targets.items():
            step = [_step_us(tf, target, args.steps) for _ in range(args.repeats)]
            rate = [_queue_runner_rate(tf, target, args.elements) for _ in range(args.repeats)]
            results[name] = (step, rate)
        base_step = statistics.median(results["local"][0])
        base_rate = statistics.median(results["local"][1])
        print(f"{'target':<20}{'step µs min/med':>18}{'× local':>9}"
              f"{'queue runner elem/s min/med':>30}{'× local':>9}")
        for name, (step, rate) in results.items():
            print(f"{name:<20}{min(step):>9.1f}/{statistics.median(step):<8.1f}"
                  f"{statistics.median(step) / base_step:>9.2f}"
                  f"{min(rate):>21.0f}/{statistics.median(rate):<8.0f}"
                  f"{statistics.median(rate) / base_rate:>9.2f}")
    finally:
        task.kill()
        task.wait(10)
        server.stop()


if __name__ == "__main__":
    main()

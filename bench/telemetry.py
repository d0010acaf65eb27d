"""Per-step cost of step telemetry: Session.run of a trivial graph without and with the
process's telemetry collector listening (which a tf.train.Server installs).

    python bench/telemetry.py [--runs 10000] [--rounds 5]

Workloads (both on a local Session):
  trivial   sess.run(c), c a constant                               -> microseconds/run
  fed       sess.run(y, {x: batch}), x [None, 64] batch 50, y = x*2 -> microseconds/run
Without the collector, Session.run publishes nothing (one truth test); with it, each run
builds a StepRecord (examples, global step) and the collector appends it to its ring.
Reported: the best of ``rounds`` rounds of ``runs`` runs each (rounds with and without the
collector alternate), and the difference per step.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tfjupyter as tf  # noqa: E402
from tfjupyter.runtime import events  # noqa: E402


def timed(fn, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    c = tf.constant(1.0, name="c")
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = x * 2.0
    batch = np.ones((50, 64), np.float32)
    sess = tf.Session()
    workloads = {"trivial": lambda: sess.run(c), "fed": lambda: sess.run(y, {x: batch})}
    assert not events.listeners["step"], "something already listens to steps"

    from tfjupyter.distributed import telemetry
    collector = telemetry.collector()   # what constructing a tf.train.Server installs

    def listening(on: bool) -> None:
        if on and collector._on_step not in events.listeners["step"]:
            events.subscribe("step", collector._on_step)
        elif not on:
            events.unsubscribe("step", collector._on_step)

    # Rounds alternate without/with the collector, so load from elsewhere hits both alike;
    # each figure is the best round.
    best = {name: [float("inf"), float("inf")] for name in workloads}
    for name, fn in workloads.items():
        for _ in range(500):
            fn()
        for _ in range(args.rounds):
            for on in (False, True):
                listening(on)
                best[name][on] = min(best[name][on], timed(fn, args.runs))
    listening(True)
    sess.close()

    print(f"{args.runs} runs per round, best of {args.rounds} alternating rounds; "
          f"the collector's ring holds {len(collector.ring)} records")
    print(f"{'workload':10} {'without us':>11} {'with us':>9} {'overhead us':>12} {'ratio':>6}")
    for name, (without, with_) in best.items():
        print(f"{name:10} {without * 1e6:11.2f} {with_ * 1e6:9.2f} "
              f"{(with_ - without) * 1e6:12.2f} {with_ / without:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

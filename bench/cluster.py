"""Clusters on ipyparallel engines, measured against the same programs in tasks started by hand.

    python bench/cluster.py [--seconds 8] [--repeat 2]

  start      Cluster(ps=1, workers=2).start() on local engines, and stop()      -> seconds
  async2     async SGD, MLP 784-500-10, batch 100, 1 ps + 2 workers, as a %%tf_worker cell on
             the cluster, vs bench/distributed.py's async2 (each task a process started by
             hand, the same model and loop)                                     -> examples/s
  watched    async2 on the cluster while a telemetry watcher polls every task every 0.2 s
             (what the status table and dashboards do)                          -> examples/s

Cases alternate (cluster, by hand, watched, ...) ``--repeat`` times, best kept, since this
machine's other load moves single runs by 10-20%.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

import distributed  # noqa: E402  (bench/distributed.py: the hand-started reference)

# The worker loop of bench/distributed.py's role_worker (async case), as a cell: it finds
# tf, cluster, server, task_index and num_workers defined by the cluster.
CELL = inspect.getsource(distributed.mlp) + '''
import time
import numpy as np
tf.reset_default_graph()
x, y, train_op, global_step, opt = mlp(tf, cluster.as_dict(), task_index, num_workers)
rng = np.random.RandomState(task_index)
feed = {x: rng.rand(100, 784).astype(np.float32), y: rng.randint(0, 10, 100).astype(np.int32)}
config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task_index])
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, config=config,
                                       save_checkpoint_secs=None, save_summaries_steps=None,
                                       log_step_count_steps=None) as sess:
    for _ in range(5):
        sess.run(train_op, feed)
    steps, start = 0, time.time()
    while time.time() - start < SECONDS:
        sess.run(train_op, feed)
        steps += 1
    elapsed = time.time() - start
print("EXAMPLES_PER_S", steps * 100 / elapsed)
'''


def cluster_examples_per_s(cluster, seconds: float, watched: bool) -> float:
    import io
    watcher = cluster.watch(interval=0.2) if watched else None
    out = io.StringIO()
    try:
        run = cluster.run(f"SECONDS = {seconds}\n" + CELL, block=False)
        run.result(timeout=seconds + 120, out=out)
    finally:
        if watcher is not None:
            watcher.close()
    rates = [float(line.split()[-1]) for line in out.getvalue().splitlines()
             if "EXAMPLES_PER_S" in line]
    if len(rates) != len(cluster.select("worker")):
        raise RuntimeError(out.getvalue()[-3000:])
    return sum(rates)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="measuring time per case")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="tfjupyter-bench-ipython-"))
    from tfjupyter.cluster import Cluster

    starts, stops = [], []
    for _ in range(args.repeat):
        cluster = Cluster(ps=1, workers=2)
        cluster.start()
        starts.append(cluster.start_time)
        t0 = time.monotonic()
        cluster.stop()
        stops.append(time.monotonic() - t0)
    print(f"start      1 ps + 2 workers, local engines: start {min(starts):.1f} s "
          f"(runs: {', '.join(f'{s:.1f}' for s in starts)}), stop {min(stops):.1f} s")

    results = {"cluster": [], "by hand": [], "watched": []}
    with Cluster(ps=1, workers=2) as cluster:
        for _ in range(args.repeat):
            results["cluster"].append(cluster_examples_per_s(cluster, args.seconds, False))
            results["by hand"].append(distributed.run_case(sys.executable, "tfjupyter", "async2",
                                                           args.seconds))
            results["watched"].append(cluster_examples_per_s(cluster, args.seconds, True))
    best = {k: max(v) for k, v in results.items()}
    for name, values in results.items():
        print(f"async2     {name:8s} {best[name]:9.0f} examples/s "
              f"(runs: {', '.join(f'{v:.0f}' for v in values)})")
    print(f"ratio      cluster / by hand = {best['cluster'] / best['by hand']:.2f}, "
          f"watched / cluster = {best['watched'] / best['cluster']:.2f}")
    print(json.dumps({"start_s": min(starts), "stop_s": min(stops), **best}))


if __name__ == "__main__":
    main()

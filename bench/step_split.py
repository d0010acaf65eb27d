"""Where the time of one async step goes: 1 ps + 1 worker, MLP 784-500-10, batch 100, loopback.

    python bench/step_split.py [--steps 300] [--traced 40]

The ps runs in its own process (bench/distributed.py --role ps); this process is the worker and
its client, as in between-graph training. The script runs --steps plain steps (the wall time of
a step, and the CPU time each process spent per step, from /proc), then --traced steps with
RunOptions(FULL_TRACE), whose per-op timings (one clock: CLOCK_MONOTONIC is host-wide) cut a
step into consecutive parts that add up to its wall time:

  params in   step start -> the worker's first _Recv ends (here: the 784x500 weights): the
              RunGraph request reaching the ps, the ps reading, the transfer to the worker
  worker      -> the worker's last op ends (its computing ops alone: "of it ops"; the rest is
              the later variables' transfers and the gradients' sends)
  grads out   -> the ps has every gradient
  ps applies  -> the ps's last op ends
  reply       -> the step returns to the client (the RunGraph reply)

Medians over the traced steps; the first 20 steps of each kind are warm-up. Tracing costs a
little: the traced wall time is shown next to the plain one.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distributed as bench  # noqa: E402  (its roles, model and process helpers)

_TRANSFER_OPS = ("_Send", "_Recv")


def _thread_cpu_seconds(pid: int) -> dict:
    """CPU seconds per thread of a process, by Python thread name where this process knows it
    (threads of one name summed; numbered threads folded), else as "native" (BLAS, gRPC)."""
    names = {t.native_id: t.name.rstrip("0123456789_-").rstrip(" (") or t.name
             for t in threading.enumerate()} if pid == os.getpid() else {}
    totals: dict = {}
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            seconds = bench.process_cpu_seconds(pid, tid)
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        name = "main" if tid == pid else names.get(tid, "native")
        totals[name] = totals.get(name, 0.0) + seconds
    return totals


def split(step_stats, start: float, end: float) -> dict:
    """One traced step cut at its hand-offs (monotonic seconds); the parts add up to its wall."""
    def spans(job):
        return [(s["all_start_micros"] / 1e6, (s["all_start_micros"] + s["op_end_rel_micros"]) / 1e6,
                 s["op"]) for device, stats in step_stats.dev_stats.items()
                if f"/job:{job}/" in device for s in stats]
    worker, ps = spans("worker"), spans("ps")
    first_in = min((b, e) for b, e, op in worker if op == "_Recv")[1]
    worker_done = max(e for _, e, _ in worker)
    grads_in = max(worker_done, max(e for _, e, op in ps if op == "_Recv"))
    ps_done = max(grads_in, max(e for _, e, _ in ps))
    return {"params in": first_in - start,
            "worker": worker_done - first_in,
            "  of it ops": sum(e - b for b, e, op in worker if op not in _TRANSFER_OPS),
            "grads out": grads_in - worker_done,
            "ps applies": ps_done - grads_in,
            "reply": end - ps_done}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--traced", type=int, default=40)
    args = parser.parse_args()
    tf = bench.load("tfjupyter")
    os.environ["TFJUPYTER_CLUSTER_TOKEN"] = bench.TOKEN
    ps_port, worker_port = bench.free_ports(2)
    cluster = {"ps": [f"localhost:{ps_port}"], "worker": [f"localhost:{worker_port}"]}
    ps = bench.spawn(sys.executable, "tfjupyter", "ps", cluster)
    try:
        if ps.stdout.readline().strip() != "ready":
            raise RuntimeError(ps.stderr.read()[-2000:])
        server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="worker", task_index=0)
        x, y, train_op, _, _ = bench.mlp(tf, cluster, 0, 1)
        rng = np.random.RandomState(0)
        feed = {x: rng.rand(100, 784).astype(np.float32),
                y: rng.randint(0, 10, 100).astype(np.int32)}
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run(train_op, feed)
            walls = []
            cpu0 = (bench.process_cpu_seconds(os.getpid()), bench.process_cpu_seconds(ps.pid))
            threads0 = {role: _thread_cpu_seconds(pid) for role, pid in (("worker+client", os.getpid()), ("ps", ps.pid))}
            for _ in range(args.steps):
                t = time.perf_counter()
                sess.run(train_op, feed)
                walls.append(time.perf_counter() - t)
            cpu1 = (bench.process_cpu_seconds(os.getpid()), bench.process_cpu_seconds(ps.pid))
            threads1 = {role: _thread_cpu_seconds(pid) for role, pid in (("worker+client", os.getpid()), ("ps", ps.pid))}
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            parts, traced_walls = [], []
            for i in range(20 + args.traced):
                metadata = tf.RunMetadata()
                start = time.monotonic()
                sess.run(train_op, feed, options=options, run_metadata=metadata)
                end = time.monotonic()
                if i >= 20:
                    parts.append(split(metadata.step_stats, start, end))
                    traced_walls.append(end - start)
    finally:
        ps.kill()
        ps.communicate()
        from tfjupyter.distributed.shm import sweep_dead
        sweep_dead()
    ms = lambda s: s * 1e3  # noqa: E731
    n = args.steps
    print(f"tfjupyter at {os.path.dirname(tf.__file__)}")
    print(f"wall per step: median {ms(statistics.median(walls)):.2f} ms, min {ms(min(walls)):.2f} "
          f"ms ({args.steps} steps; {n * 100 / sum(walls):,.0f} examples/s)")
    print(f"CPU per step: worker+client {ms((cpu1[0] - cpu0[0]) / n):.2f} ms, "
          f"ps {ms((cpu1[1] - cpu0[1]) / n):.2f} ms")
    for role in threads1:
        spent = {name: t - threads0[role].get(name, 0.0) for name, t in threads1[role].items()}
        busiest = sorted(((t, name) for name, t in spent.items() if t > 0), reverse=True)[:6]
        print(f"  {role} by thread: " + ", ".join(f"{name} {ms(t / n):.2f}" for t, name in busiest))
    print(f"traced steps: median wall {ms(statistics.median(traced_walls)):.2f} ms; "
          "median of each part:")
    for key in parts[0]:
        print(f"  {key:10s} {ms(statistics.median(p[key] for p in parts)):6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

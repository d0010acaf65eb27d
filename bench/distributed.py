"""Distributed-runtime benchmarks on loopback, side by side with TensorFlow's gRPC runtime.

    python bench/distributed.py                          # tfjupyter, and TF if importable
    python bench/distributed.py --tf-python /venv/bin/python

  fetch    a 64 MiB float32 variable from a ps task to a client       -> MiB/s
  async1   async SGD, MLP 784-500-10, batch 100, 1 ps + 1 worker        -> examples/s (sum)
  async2   the same with 1 ps + 2 workers                               -> examples/s (sum)
  sync     sync SGD, 3 workers, one of them sleeping 0.2 s per step, without and with one
           backup worker (tfjupyter only)                               -> global steps/s

Every role runs in its own process (this script with --role); all are killed at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.abspath(__file__)
TOKEN = "bench-token-0123456789abcdef"


def load(backend: str):
    if backend == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        return tf
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), ".."))
    import tfjupyter as tf
    return tf


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# -- roles (run in their own processes) -------------------------------------------------------------
def role_ps(tf, cluster, task):
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="ps", task_index=task)
    print("ready", flush=True)
    server.join()


def mlp(tf, cluster, task, num_workers, mode="async", backups=0):
    with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:%d" % task,
                                                  cluster=tf.train.ClusterSpec(cluster))):
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int32, [None])
        w1 = tf.Variable(tf.truncated_normal([784, 500], stddev=0.1))
        b1 = tf.Variable(tf.zeros([500]))
        w2 = tf.Variable(tf.truncated_normal([500, 10], stddev=0.1))
        b2 = tf.Variable(tf.zeros([10]))
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(0.01)
        if mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(opt, num_workers - backups, num_workers)
        train_op = opt.minimize(loss, global_step=global_step)
    return x, y, train_op, global_step, opt


def role_worker(tf, cluster, task, seconds, mode, backups, straggle):
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="worker", task_index=task)
    num_workers = len(cluster["worker"])
    x, y, train_op, global_step, opt = mlp(tf, cluster, task, num_workers, mode, backups)
    rng = np.random.RandomState(task)
    feed = {x: rng.rand(100, 784).astype(np.float32), y: rng.randint(0, 10, 100).astype(np.int32)}
    # Sync workers stop together at a global step (one leaving early would stall the others,
    # as in TensorFlow); async ones after `seconds`.
    sync_steps = int(seconds * 10)
    hooks = ([opt.make_session_run_hook(task == 0), tf.train.StopAtStepHook(last_step=sync_steps)]
             if mode == "sync" else [])
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task])
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=task == 0, hooks=hooks,
                                           config=config, save_checkpoint_secs=None,
                                           save_summaries_steps=None, log_step_count_steps=None
                                           ) as sess:
        for _ in range(5):
            sess.run(train_op, feed)  # warm up
        start_step = sess.run(global_step)
        steps, start = 0, time.time()
        while not sess.should_stop() and (mode == "sync" or time.time() - start < seconds):
            sess.run(train_op, feed)
            steps += 1
            if straggle:
                time.sleep(straggle)
        elapsed = time.time() - start
        end_step = sess.run(global_step) if not sess.should_stop() else sync_steps
    print(json.dumps({"steps": steps, "seconds": elapsed, "global_steps": int(end_step - start_step)}),
          flush=True)
    os._exit(0)  # the other workers may still be mid-step; TF's servers do not stop cleanly


def role_fetch(tf, cluster, seconds):
    with tf.device("/job:ps/task:0"):
        big = tf.Variable(tf.zeros([16 << 20]), name="big")  # 64 MiB
    with tf.Session("grpc://" + cluster["ps"][0]) as sess:
        sess.run(big.initializer)
        sess.run(big)
        n, start = 0, time.time()
        while time.time() - start < seconds:
            value = sess.run(big)
            n += 1
        elapsed = time.time() - start
    assert value.nbytes == 64 << 20
    print(json.dumps({"mib_per_s": n * 64 / elapsed}), flush=True)


# -- orchestration --------------------------------------------------------------------------------
def spawn(python, backend, role, cluster, task=0, **kw):
    args = [python, HERE, "--role", role, "--backend", backend, "--cluster", json.dumps(cluster),
            "--task", str(task)] + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    env = dict(os.environ, TFJUPYTER_CLUSTER_TOKEN=TOKEN, PYTHONUNBUFFERED="1")
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_case(python, backend, case, seconds):
    procs = []
    try:
        if case == "fetch":
            cluster = {"ps": [f"localhost:{p}" for p in free_ports(1)]}
        elif case == "sync":
            ports = free_ports(4)
            cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
        else:
            n = 1 if case == "async1" else 2
            ports = free_ports(n + 1)
            cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
        ps = spawn(python, backend, "ps", cluster)
        procs.append(ps)
        if ps.stdout.readline().strip() != "ready":
            raise RuntimeError(ps.stderr.read()[-2000:])
        if case == "fetch":
            procs.append(spawn(python, backend, "fetch", cluster, seconds=seconds))
            return json.loads(_last_line(procs[-1]))["mib_per_s"]
        if case == "sync":
            out = {}
            for backups in (0, 1):
                workers = [spawn(python, backend, "worker", cluster, i, seconds=seconds, mode="sync",
                                 backups=backups, straggle=0.2 if i == 2 else 0)
                           for i in range(3)]
                procs += workers
                chief = json.loads(_last_line(workers[0]))
                out[f"backups={backups}"] = chief["global_steps"] / chief["seconds"]
                for w in workers[1:]:
                    w.kill()
            return out
        workers = [spawn(python, backend, "worker", cluster, i, seconds=seconds, mode="async",
                         backups=0, straggle=0) for i in range(len(cluster["worker"]))]
        procs += workers
        reports = [json.loads(_last_line(w)) for w in workers]
        return sum(r["steps"] * 100 / r["seconds"] for r in reports)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()


def _last_line(proc) -> str:
    out, err = proc.communicate(timeout=300)
    lines = out.strip().splitlines()
    if proc.returncode not in (0, None) or not lines:
        raise RuntimeError(err[-3000:])
    return lines[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="tfjupyter", help=argparse.SUPPRESS)
    parser.add_argument("--cluster", help=argparse.SUPPRESS)
    parser.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="async", help=argparse.SUPPRESS)
    parser.add_argument("--backups", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--straggle", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=8.0, help="measuring time per case")
    parser.add_argument("--only", nargs="*", default=["fetch", "async1", "async2", "sync"])
    parser.add_argument("--tf-python", default=None)
    args = parser.parse_args()
    if args.role:
        tf = load(args.backend)
        cluster = json.loads(args.cluster)
        if args.role == "ps":
            role_ps(tf, cluster, args.task)
        elif args.role == "fetch":
            role_fetch(tf, cluster, args.seconds)
        else:
            role_worker(tf, cluster, args.task, args.seconds, args.mode, args.backups, args.straggle)
        return

    tf_python = args.tf_python
    if tf_python is None:
        try:
            import tensorflow  # noqa: F401
            tf_python = sys.executable
        except ImportError:
            pass
    units = {"fetch": "MiB/s", "async1": "examples/s", "async2": "examples/s", "sync": "steps/s"}
    print(f"{'case':8s} {'tfjupyter':>12s} {'tensorflow':>12s} {'unit':>11s} {'ratio':>7s}")
    for case in args.only:
        mine = run_case(sys.executable, "tfjupyter", case, args.seconds)
        if case == "sync":
            for k, v in mine.items():
                print(f"{'sync ' + k:18s} {v:8.2f} {units[case]} (one worker sleeps 0.2 s/step)")
            continue
        ref = run_case(tf_python, "tensorflow", case, args.seconds) if tf_python else None
        if ref:
            print(f"{case:8s} {mine:12.1f} {ref:12.1f} {units[case]:>11s} {mine / ref:6.2f}x")
        else:
            print(f"{case:8s} {mine:12.1f} {'-':>12s} {units[case]:>11s}")


if __name__ == "__main__":
    main()

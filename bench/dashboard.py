"""What a live dashboard costs a training loop, measured in a real Jupyter kernel.

    python bench/dashboard.py [--seconds 6] [--rounds 3] [--batch 128]

One ipykernel (started with jupyter_client, its IOPub read by a thread as a front end would)
trains an MLP (64-128-10, digits, SGD, a loss summary every step, the global step fetched) for
``seconds`` per round, alternately without and with ``%tf_dashboard --local`` (tracing one run
in 100, the default). The dashboard arm starts timing after a warm-up of ``warmup`` seconds of
training, once the dashboard has made its figures (a one-time cost, reported separately as the
CPU its pump spent during the warm-up). Reported per arm: examples/s (median of rounds); for the
dashboard, its updates per second, the CPU seconds its pump used per second of training and the
comm messages it sent, and the ratio with/without. The requirement is >= 0.95.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

SETUP = '''
%load_ext tfjupyter
import time, json, numpy as np, tfjupyter as tf
data = tf.datasets.load_digits(seed=0)
x = tf.placeholder(tf.float32, [None, 64]); y = tf.placeholder(tf.int64, [None])
w1 = tf.Variable(tf.truncated_normal([64, 128], stddev=0.1)); b1 = tf.Variable(tf.zeros([128]))
w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.1)); b2 = tf.Variable(tf.zeros([10]))
logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
tf.summary.scalar("loss", loss)
step = tf.train.get_or_create_global_step()
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
summaries = tf.summary.merge_all()
sess = tf.Session()
sess.run(tf.global_variables_initializer())
batches = [data.train.next_batch(BATCH) for _ in range(64)]
def train_for(seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        images, labels = batches[n % 64]
        sess.run([train, step, summaries], {x: images, y: labels})
        n += 1
    return n * BATCH / (time.perf_counter() - t0)
train_for(1.0)
'''

PUMP_CPU = '''
dash = get_ipython().find_line_magic('tf_dashboard').__self__.dashboard
_pump_cpu = [0.0]
def _timed(final=False, _inner=dash._pump_once):
    start = time.thread_time()
    _inner(final)
    _pump_cpu[0] += time.thread_time() - start
dash._pump_once = _timed
train_for(WARMUP)
warmup_cpu, _pump_cpu[0] = _pump_cpu[0], 0.0
'''

ROUND = '''
rate = train_for(SECONDS)
dash = get_ipython().find_line_magic('tf_dashboard').__self__.dashboard
live = dash is not None and not dash.closed
print(json.dumps({"examples_per_sec": rate,
                  "updates_per_sec": dash.update_rate if live else 0.0,
                  "pump_cpu_per_sec": _pump_cpu[0] / SECONDS if live else 0.0,
                  "warmup_cpu": warmup_cpu if live else 0.0}))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--warmup", type=float, default=3.0)
    args = parser.parse_args()
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    replies: dict = {}
    outputs: dict = {}
    comm_messages = [0]
    stop = threading.Event()

    def front_end():   # reads IOPub as JupyterLab would, so the kernel never blocks on it
        while not stop.is_set():
            try:
                msg = kc.get_iopub_msg(timeout=0.2)
            except Exception:
                continue
            parent = msg["parent_header"].get("msg_id")
            if msg["msg_type"] == "comm_msg":
                comm_messages[0] += 1
            elif msg["msg_type"] == "stream":
                outputs.setdefault(parent, []).append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                outputs.setdefault(parent, []).append("\n".join(msg["content"]["traceback"]))

    reader = threading.Thread(target=front_end, daemon=True)
    reader.start()

    def execute(code: str) -> str:
        msg_id = kc.execute(code)
        while True:
            reply = kc.get_shell_msg(timeout=600)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        time.sleep(0.3)   # let the last stream output arrive
        text = "".join(outputs.get(msg_id, []))
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the kernel failed:\n{text}")
        return text

    results = {"without": [], "with": []}
    messages = {"without": 0, "with": 0}
    try:
        execute(SETUP.replace("BATCH", str(args.batch)))
        for _ in range(args.rounds):
            for arm in ("without", "with"):
                if arm == "with":
                    execute("%tf_dashboard --local\n" + PUMP_CPU.replace("WARMUP", str(args.warmup)))
                before = comm_messages[0]
                out = execute(ROUND.replace("SECONDS", str(args.seconds)))
                messages[arm] += comm_messages[0] - before
                results[arm].append(json.loads(out.strip().splitlines()[-1]))
                if arm == "with":
                    execute("%tf_dashboard close")
    finally:
        stop.set()
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    base = statistics.median(r["examples_per_sec"] for r in results["without"])
    dash = statistics.median(r["examples_per_sec"] for r in results["with"])
    rate = statistics.median(r["updates_per_sec"] for r in results["with"])
    pump = statistics.median(r["pump_cpu_per_sec"] for r in results["with"])
    warm = statistics.median(r["warmup_cpu"] for r in results["with"])
    print(f"MLP 64-128-10, batch {args.batch}, {args.rounds} rounds of {args.seconds:g} s, "
          f"one kernel, arms alternating")
    def rounds(arm: str) -> str:
        return ", ".join(f"{r['examples_per_sec']:,.0f}" for r in results[arm])

    print(f"  without dashboard: {base:10,.0f} examples/s  (rounds: {rounds('without')})")
    print(f"  with %tf_dashboard: {dash:9,.0f} examples/s  (rounds: {rounds('with')})")
    print(f"  ratio with/without: {dash / base:.3f}   (requirement: >= 0.95)")
    print(f"  dashboard updates: {rate:.1f}/s; its pump's CPU: {pump * 100:.1f}% of the training "
          f"time; comm messages per round: {messages['with'] / args.rounds:,.0f}")
    print(f"  one-time cost of making the figures (pump CPU during the {args.warmup:g} s warm-up): "
          f"{warm:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

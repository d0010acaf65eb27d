"""Distributed-runtime benchmarks on loopback, side by side with TensorFlow's gRPC runtime.

    python bench/distributed.py                          # tfjupyter, and TF if importable
    python bench/distributed.py --tf-python /venv/bin/python --repeats 3

  fetch    a 64 MiB float32 variable from a ps task to a client       -> MiB/s
           tfjupyter twice: tensors by shared memory (the default between tasks of one host)
           and with TFJUPYTER_SHM=0 (gRPC bytes, as across hosts); and the limit, a numpy
           copy of 64 MiB into a warm buffer in this process
  async1   async SGD, MLP 784-500-10, batch 100, 1 ps + 1 worker        -> examples/s (sum)
  async2   the same with 1 ps + 2 workers; async4: 1 ps + 4 workers;
  async2ps2  2 workers and 2 ps (the variables spread over them)        -> examples/s (sum)
           each also as a ratio to the same runtime's one worker ("/1w")
  sync     sync SGD, 3 workers, one of them sleeping 0.2 s per step, without and with one
           backup worker (tfjupyter only)                               -> global steps/s
  remote_step   Session("grpc://<ps>") from a client process, one small op (a 4-float
           variable + 1) on that task (TF's master runs in the task, ours in the client)
                                                                        -> us per step
  ps_read  Session(server.target) of a worker task served by the client's own process,
           one op on that worker reading a 4-float variable of a ps in another process
                                                                        -> us per step
           (both: long-lived processes, each round --steps steps per runtime, alternating;
           also the CPU per step of both processes, less sensitive to a busy machine)
  floors   a round trip between two processes on loopback: a minimal grpcio unary call, and
           ping-pongs of 8 bytes over TCP and over a Unix socket        -> us

Every role runs in its own process (this script with --role); all are killed at the end.
Async workers measure one common window: each warms up (5 steps), then all start on one signal
from this script, so that a runtime slow to start a worker gains nothing from its workers
running one after another.
Each case runs --repeats times, the runtimes alternating; min and median are reported, ratios
are of medians. The machine should be quiet: every task shares its cores.

Under each async case: the CPU time all its tasks spent per step (every thread, over the common
window), how busy the machine's cores were, and the throughput those cores would give at that
CPU cost per step, fully busy. Adding a worker pays only while the cores have room: at equal CPU
per step, 2 workers reach 1.6x one worker only where one worker kept the cores at most 62% busy.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

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
        if mode == "async":
            # Every worker measures the same window: the orchestrator says go once all are warm
            # (TensorFlow's take seconds to start; summing rates over windows that do not
            # overlap would count workers that ran alone).
            print("warm", flush=True)
            sys.stdin.readline()
        start_step = sess.run(global_step)
        steps, start, cpu_start = 0, time.time(), time.process_time()
        while not sess.should_stop() and (mode == "sync" or time.time() - start < seconds):
            sess.run(train_op, feed)
            steps += 1
            if straggle:
                time.sleep(straggle)
        elapsed, cpu = time.time() - start, time.process_time() - cpu_start
        end_step = sess.run(global_step) if not sess.should_stop() else sync_steps
    print(json.dumps({"steps": steps, "seconds": elapsed, "cpu_seconds": cpu,
                      "global_steps": int(end_step - start_step)}), flush=True)
    os._exit(0)  # the other workers may still be mid-step; TF's servers do not stop cleanly


def role_small_step(tf, cluster, case, steps):
    """The client of remote_step / ps_read: warms up, then runs ``steps`` steps per line read
    from stdin and prints the mean µs per step of each batch."""
    if case == "ps_read":
        server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="worker", task_index=0)
        target = server.target
    else:
        target = "grpc://" + cluster["ps"][0]
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([4]), name="v")
    # An op on the worker that reads the ps's variable (ps_read), or one beside the variable
    # on the target task (remote_step); a variable, so that nothing is constant-folded.
    with tf.device("/job:worker/task:0" if case == "ps_read" else "/job:ps/task:0"):
        fetch = v + 1.0
    with tf.Session(target) as sess:
        sess.run(v.initializer)
        for _ in range(300):
            sess.run(fetch)
        print("warm", flush=True)
        for _ in sys.stdin:
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(steps):
                sess.run(fetch)
            print(json.dumps({"us": (time.perf_counter() - start) / steps * 1e6,
                              "cpu_us": (time.process_time() - cpu_start) / steps * 1e6}),
                  flush=True)
    os._exit(0)


def role_echo(ports):
    """The far end of the floors: a grpcio server echoing unary calls (the default sync server,
    a thread pool), a TCP and a Unix-socket listener echoing 8-byte messages."""
    import grpc
    import threading
    from concurrent import futures
    grpc_port, tcp_port, unix_name = ports.split(",")
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("echo", {
        "Echo": grpc.unary_unary_rpc_method_handler(lambda request, context: request)}),))
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    server.start()

    def echo(listener):
        conn, _ = listener.accept()
        if conn.family == socket.AF_INET:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            data = conn.recv(8)
            if not data:
                return
            conn.sendall(data)
    tcp = socket.create_server(("127.0.0.1", int(tcp_port)))
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(b"\0" + unix_name.encode())
    unix.listen(1)
    for listener in (tcp, unix):
        threading.Thread(target=echo, args=(listener,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()
    os._exit(0)


def floors_us(python, calls=3000, repeats=3):
    """Mean µs of a round trip to another process on loopback, min over ``repeats`` batches:
    a minimal grpcio unary call, an 8-byte TCP ping-pong, an 8-byte Unix-socket ping-pong."""
    import grpc
    grpc_port, tcp_port = free_ports(2)
    unix_name = f"tfjupyter-bench-echo-{os.getpid()}"
    echo = subprocess.Popen([python, HERE, "--role", "echo", "--cluster",
                             f"{grpc_port},{tcp_port},{unix_name}"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if echo.stdout.readline().strip() != "ready":
            raise RuntimeError("the echo process did not start")
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        call = channel.unary_unary("/echo/Echo")
        tcp = socket.create_connection(("127.0.0.1", tcp_port))
        tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.connect(b"\0" + unix_name.encode())

        def ping(sock):
            sock.sendall(b"12345678")
            got = 0
            while got < 8:
                got += len(sock.recv(8 - got))
        ways = {"grpcio unary": lambda: call(b"12345678"),
                "TCP ping-pong": lambda: ping(tcp), "Unix ping-pong": lambda: ping(unix)}
        out = {}
        for name, way in ways.items():
            for _ in range(300):
                way()
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                for _ in range(calls):
                    way()
                best = min(best, (time.perf_counter() - start) / calls * 1e6)
            out[name] = best
        channel.close()
        return out
    finally:
        echo.kill()
        echo.wait()


SMALL_STEP_CASES = ("remote_step", "ps_read")


def small_steps(variants, case, steps, repeats):
    """µs per step of ``case`` for each (name, python, env) variant: long-lived processes,
    rounds alternating between the runtimes. Returns ({name: [µs per round]},
    {name: [CPU µs per step of both processes, per round]})."""
    procs, clients, tasks = [], {}, {}
    try:
        for name, python, env in variants:
            backend = "tensorflow" if name == "tensorflow" else "tfjupyter"
            ps_port, worker_port = free_ports(2)
            cluster = {"ps": [f"localhost:{ps_port}"]}
            if case == "ps_read":
                cluster["worker"] = [f"localhost:{worker_port}"]
            ps = spawn(python, backend, "ps", cluster, 0, env=env)
            procs.append(ps)
            if ps.stdout.readline().strip() != "ready":
                raise RuntimeError(ps.stderr.read()[-2000:])
            client = spawn(python, backend, "small_step", cluster, 0, env=env, mode=case,
                           steps=steps)
            procs.append(client)
            if client.stdout.readline().strip() != "warm":
                raise RuntimeError(f"{name} {case} client did not warm up: {_last_line(client)}")
            clients[name], tasks[name] = client, ps
        runs = {name: [] for name in clients}
        cpu = {name: [] for name in clients}
        for _ in range(repeats):
            for name, client in clients.items():
                task_cpu = process_cpu_seconds(tasks[name].pid)
                client.stdin.write("go\n")
                client.stdin.flush()
                report = json.loads(client.stdout.readline())
                task_cpu = process_cpu_seconds(tasks[name].pid) - task_cpu
                runs[name].append(report["us"])
                cpu[name].append(report["cpu_us"] + task_cpu / steps * 1e6)
        return runs, cpu
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        if any(name != "tensorflow" for name, _, _ in variants):
            from tfjupyter.distributed.shm import sweep_dead
            sweep_dead()


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
def spawn(python, backend, role, cluster, task=0, env=None, **kw):
    args = [python, HERE, "--role", role, "--backend", backend, "--cluster", json.dumps(cluster),
            "--task", str(task)] + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    env = dict(os.environ, TFJUPYTER_CLUSTER_TOKEN=TOKEN, PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


ASYNC_CASES = {"async1": (1, 1), "async2": (2, 1), "async4": (4, 1), "async2ps2": (2, 2)}


class Async(NamedTuple):
    examples_per_s: float
    cpu_ms_per_step: float   # every task's CPU (all its threads) per step, over the window
    busy: float              # the machine's cores' busy share over the window (steal is busy)


def process_cpu_seconds(pid: int, tid: int = 0) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), or of its thread ``tid``."""
    with open(f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy():
    """(busy, idle) jiffies of all cores since boot; idle includes iowait."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:9]]  # to steal; guest is in user
    idle = values[3] + values[4]
    return sum(values) - idle, idle


def run_case(python, backend, case, seconds, env=None):
    procs = []
    try:
        workers, num_ps = ASYNC_CASES.get(case, (3 if case == "sync" else 0, 1))
        ports = iter(free_ports(workers + num_ps))
        cluster = {"ps": [f"localhost:{next(ports)}" for _ in range(num_ps)]}
        if workers:
            cluster["worker"] = [f"localhost:{next(ports)}" for _ in range(workers)]
        for task in range(num_ps):
            ps = spawn(python, backend, "ps", cluster, task, env=env)
            procs.append(ps)
            if ps.stdout.readline().strip() != "ready":
                raise RuntimeError(ps.stderr.read()[-2000:])
        if case == "fetch":
            procs.append(spawn(python, backend, "fetch", cluster, seconds=seconds, env=env))
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
        for w in workers:
            if w.stdout.readline().strip() != "warm":
                raise RuntimeError(f"worker did not warm up: {_last_line(w)}")
        ps_cpu, machine = [process_cpu_seconds(p.pid) for p in procs[:num_ps]], machine_busy()
        for w in workers:
            w.stdin.write("go\n")
            w.stdin.flush()
        reports = [json.loads(_last_line(w)) for w in workers]
        ps_cpu = sum(process_cpu_seconds(p.pid) - c for p, c in zip(procs[:num_ps], ps_cpu))
        busy, idle = (b - a for a, b in zip(machine, machine_busy()))
        steps = sum(r["steps"] for r in reports)
        return Async(examples_per_s=sum(r["steps"] * 100 / r["seconds"] for r in reports),
                     cpu_ms_per_step=(ps_cpu + sum(r["cpu_seconds"] for r in reports)) / steps * 1e3,
                     busy=busy / (busy + idle))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
        if backend == "tfjupyter":   # killed tasks leave their shm segments: sweep them
            from tfjupyter.distributed.shm import sweep_dead
            sweep_dead()


def memcpy_mib_per_s(repeats: int = 20) -> float:
    """The limit of a 64 MiB fetch on one host: one copy into a warm buffer."""
    src = np.ones(16 << 20, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 64 / best


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
    parser.add_argument("--steps", type=int, default=2000,
                        help="steps per round of remote_step and ps_read")
    parser.add_argument("--only", nargs="*",
                        default=["floors", "remote_step", "ps_read", "fetch", "async1", "async2",
                                 "async4", "async2ps2", "sync"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tf-python", default=None)
    args = parser.parse_args()
    if args.role == "echo":
        role_echo(args.cluster)
        return
    if args.role:
        tf = load(args.backend)
        cluster = json.loads(args.cluster)
        if args.role == "ps":
            role_ps(tf, cluster, args.task)
        elif args.role == "fetch":
            role_fetch(tf, cluster, args.seconds)
        elif args.role == "small_step":
            role_small_step(tf, cluster, args.mode, args.steps)
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
    units = {"fetch": "MiB/s", "sync": "steps/s"}
    print(f"{'case':14s} {'tfjupyter min/med':>19s} {'tensorflow min/med':>19s} {'unit':>10s} "
          f"{'ratio':>6s} {'/1w ours':>8s} {'/1w TF':>7s}")
    one_worker = {}
    for case in args.only:
        if case in SMALL_STEP_CASES:
            variants = [("tfjupyter", sys.executable, None)]
            if tf_python:
                variants.append(("tensorflow", tf_python, None))
            runs, cpu = small_steps(variants, case, args.steps, args.repeats)
            mine, ref = runs["tfjupyter"], runs.get("tensorflow")
            tf_text = (f"{min(ref):9.1f}/{statistics.median(ref):<9.1f}" if ref else f"{'-':>19s}")
            ratio = (f"{statistics.median(mine) / statistics.median(ref):5.2f}x" if ref
                     else f"{'-':>6s}")
            print(f"{case:14s} {min(mine):9.1f}/{statistics.median(mine):<9.1f} {tf_text} "
                  f"{'us/step':>10s} {ratio}", flush=True)
            if ref:
                ratios = [a / b for a, b in zip(mine, ref)]
                print(f"  per-round ratios: {' '.join(f'{r:.2f}' for r in ratios)}", flush=True)
            print("  CPU per step (client + task, all threads), median: " + ", ".join(
                f"{name} {statistics.median(v):.0f} us" for name, v in cpu.items()), flush=True)
            continue
        if case == "floors":
            for name, us in floors_us(sys.executable).items():
                print(f"{'floor ' + name:22s} {us:9.1f} us per round trip (min of 3 batches)",
                      flush=True)
            continue
        if case == "sync":
            mine = run_case(sys.executable, "tfjupyter", case, args.seconds)
            for k, v in mine.items():
                print(f"{'sync ' + k:18s} {v:8.2f} {units[case]} (one worker sleeps 0.2 s/step)")
            continue
        variants = [("tfjupyter", sys.executable, None)]
        if case == "fetch":
            variants.append(("tfjupyter no-shm", sys.executable, {"TFJUPYTER_SHM": "0"}))
        if tf_python:
            variants.append(("tensorflow", tf_python, None))
        runs = {name: [] for name, _, _ in variants}
        costs = {name: [] for name, _, _ in variants}
        for _ in range(args.repeats):   # alternating, so that load changes hit every runtime
            for name, python, env in variants:
                backend = "tensorflow" if name == "tensorflow" else "tfjupyter"
                result = run_case(python, backend, case, args.seconds, env)
                if isinstance(result, Async):
                    costs[name].append(result)
                    result = result.examples_per_s
                runs[name].append(result)
        medians = {name: statistics.median(v) for name, v in runs.items()}
        ref = medians.get("tensorflow")
        for name, values in runs.items():
            if name == "tensorflow":
                continue
            label = case if name == "tfjupyter" else f"{case} ({name[10:]})"
            tf_text = (f"{min(runs['tensorflow']):9.1f}/{ref:<9.1f}" if ref else f"{'-':>19s}")
            line = (f"{label:14s} {min(values):9.1f}/{medians[name]:<9.1f} {tf_text} "
                    f"{units.get(case, 'ex/s'):>10s} "
                    + (f"{medians[name] / ref:5.2f}x" if ref else f"{'-':>6s}"))
            if case in ASYNC_CASES:
                if case == "async1":
                    one_worker = dict(medians)
                if one_worker:
                    line += f" {medians[name] / one_worker[name]:7.2f}x"
                    if ref:
                        line += f" {ref / one_worker['tensorflow']:6.2f}x"
            print(line, flush=True)
        for name, measured in costs.items():
            if measured:
                cpu = statistics.median(m.cpu_ms_per_step for m in measured)
                busy = statistics.median(m.busy for m in measured)
                print(f"  {name}: {cpu:.2f} ms CPU per step (all tasks), cores {busy:.0%} busy; "
                      f"a bound on these cores: {os.cpu_count() * 100e3 / cpu:,.0f} ex/s",
                      flush=True)
        if case == "fetch":
            print(f"{'fetch limit':14s} {memcpy_mib_per_s():9.1f} MiB/s (numpy copy of 64 MiB, "
                  "warm buffers)", flush=True)

if __name__ == "__main__":
    main()

"""The tutorial programs (shared/seeds/004), run as scripts with only the import changed."""
import glob
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.join(os.path.dirname(__file__), "tutorials")


def run_script(name, *args, timeout=240):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TFJUPYTER_LOGICAL_GPUS", None)  # these tests are about a machine without GPUs
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run([sys.executable, os.path.join(HERE, name), *args], cwd=HERE, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_placement_example_prints_tf_lines_and_result():
    result = run_script("placement.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Device mapping: no known devices."
    for line in ("add: (Add): /job:localhost/replica:0/task:0/device:CPU:0",
                 "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0",
                 "b: (Const): /job:localhost/replica:0/task:0/device:CPU:0"):
        assert line in lines
    assert lines[-1] == "[2. 4. 6.]"


def test_gpu1_example_fails_clearly_without_soft_placement():
    result = run_script("gpu1.py")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "InvalidArgumentError" in last and "add" in last and "GPU:1" in last
    assert "available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]" in last


def test_gpu1_example_runs_on_cpu_with_soft_placement():
    result = run_script("gpu1.py", "soft")
    assert result.returncode == 0, result.stderr
    assert "add: (Add): /job:localhost/replica:0/task:0/device:CPU:0" in result.stdout
    assert result.stdout.splitlines()[-1] == "[2. 4. 6.]"


def test_multi_gpu_tower_trainer_converges_checkpoints_and_restores(tmp_path):
    model_dir = str(tmp_path) + "/"
    result = run_script("multi_gpu_train.py", model_dir, "1000")
    assert result.returncode == 0, result.stderr[-3000:]
    progress = re.findall(r"^step (\d+), loss = ([\d.]+) \(([\d.]+) examples/  sec; ([\d.]+) sec/batch\)$",
                          result.stdout, re.M)
    assert len(progress) == 99
    first_loss, last_loss = float(progress[0][1]), float(progress[-1][1])
    assert last_loss < first_loss / 4
    # Every tower's ops were asked for their GPU and soft-placed onto the CPU.
    assert re.search(r"^GPU_3/layer1/MatMul: \(MatMul\): /job:localhost/replica:0/task:0/device:CPU:0$",
                     result.stdout, re.M)
    assert os.path.exists(os.path.join(model_dir, "checkpoint"))
    assert glob.glob(os.path.join(model_dir, "model.ckpt-999*"))
    assert glob.glob(os.path.join(model_dir, "events.out.tfevents.*"))
    evaluation = run_script("evaluate.py", model_dir)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    accuracy = float(re.search(r"After 999 training step\(s\), test accuracy = ([\d.]+)",
                               evaluation.stdout).group(1))
    assert accuracy >= 0.9


def test_two_task_local_cluster(tmp_path):
    """Task 0 starts first and waits for task 1; each then prints its hello; task 1's constant
    runs on task 1. The scripts end in server.join(), so they are stopped once they printed."""
    from cluster_util import free_ports
    ports = [str(p) for p in free_ports(2)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", TFJUPYTER_TOKEN_DIR=str(tmp_path))
    env.pop("TFJUPYTER_CLUSTER_TOKEN", None)
    procs = []
    try:
        for name in ("cluster_task0.py", "cluster_task1.py"):
            procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, name), *ports],
                                          cwd=HERE, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
            if name == "cluster_task0.py":
                import time
                time.sleep(1.0)  # task 0 is up and waiting for task 1
        outputs = []
        for proc, hello in zip(procs, ("Hello from server1!", "Hello from server2!")):
            lines = []
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if hello in line:
                    break
            outputs.append(lines)
            assert any(hello in l for l in lines), "\n".join(lines)
        assert "Const: (Const): /job:local/replica:0/task:0/device:CPU:0" in outputs[0]
        assert "Const: (Const): /job:local/replica:0/task:1/device:CPU:0" in outputs[1]
        assert outputs[0][-1] == "b'Hello from server1!'"
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)
            proc.stdout.close()

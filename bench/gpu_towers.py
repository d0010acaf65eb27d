"""The tutorial's tower trainer (tests/tutorials/multi_gpu_train.py) on 1, 2 and 4 GPUs.

    python bench/gpu_towers.py [--steps 300]

Each configuration runs the tutorial's own main() in a fresh process with N_GPU towers and
reports the median of the examples/sec lines it prints. With fewer physical GPUs than towers,
each physical GPU is split into logical GPUs (TFJUPYTER_LOGICAL_GPUS), so towers share cards.
The same trainer soft-placed onto the CPU is the reference measured in the same run; ratios are
GPU / CPU examples per second. Without a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIALS = os.path.join(HERE, "..", "tests", "tutorials")

_RUN_TRAINER = """
import sys
sys.path.insert(0, {tutorials!r})
import multi_gpu_train as trainer
trainer.N_GPU = {towers}
trainer.main()
"""


def physical_gpu_count() -> int:
    probe = "from tfjupyter.kernels.cuda._runtime import physical_gpus; print(len(physical_gpus()))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"))
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


def examples_per_sec(towers: int, steps: int, env: dict) -> float:
    with tempfile.TemporaryDirectory() as model_dir:
        code = _RUN_TRAINER.format(tutorials=os.path.abspath(TUTORIALS), towers=towers)
        result = subprocess.run([sys.executable, "-c", code, model_dir + "/", str(steps)],
                                cwd=TUTORIALS, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{towers}-tower trainer failed:\n{result.stderr[-3000:]}")
    rates = [float(r) for r in re.findall(r"\(([\d.]+) examples/", result.stdout)]
    if not rates:
        raise RuntimeError(f"{towers}-tower trainer printed no examples/sec:\n{result.stdout[-2000:]}")
    return statistics.median(rates[len(rates) // 4:])  # past the warm-up


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    physical = physical_gpu_count()
    if physical == 0:
        print("no GPU found (numba.cuda sees none): nothing to measure")
        return 0
    base = {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_ENABLE_CUDASIM", "TFJUPYTER_LOGICAL_GPUS")}
    cpu = examples_per_sec(4, args.steps, dict(base, CUDA_VISIBLE_DEVICES=""))
    print(f"reference: 4 towers soft-placed on the CPU: {cpu:,.0f} examples/s")
    print(f"{'towers':>6} {'physical GPUs used':>18} {'examples/s':>12} {'vs CPU':>8}")
    for towers in (1, 2, 4):
        used = min(towers, physical)
        env = dict(base, TFJUPYTER_LOGICAL_GPUS=str(math.ceil(towers / used)),
                   CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(used)))
        rate = examples_per_sec(towers, args.steps, env)
        print(f"{towers:>6} {used:>18} {rate:>12,.0f} {rate / cpu:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

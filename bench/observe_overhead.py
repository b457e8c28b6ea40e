"""What `thunder-lint run --observe` and `--observe --verify` cost over the program's own run, measured in the same
run: prints the ratios against the plain run (issue 34's targets: --observe within 1.2x, --verify within 3x).

Each mode runs the program in a fresh process (a warm-up run first fills inductor's on-disk cache for all of
them), one torch thread (OMP_NUM_THREADS=1: steadier on a shared machine), timing only the program (runpy), not
python's start, torch's import or the static linter. Two numbers per mode: the whole run (compiles included:
noisy where the machine is shared) and the steady state, the median CPU and wall time per training step after
the first two, which the program prints itself (`--time`, docs/observe/gpt_train.py).

    python3 bench/observe_overhead.py [PROGRAM] [--steps 12] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "docs", "observe", "gpt_train.py")

_CHILD = r"""
import json, runpy, sys, time
mode, program, steps, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
import torch
from analyzer.run.observe import Observer, observing
sys.argv = [program, "--steps", steps, *extra]
start = time.perf_counter()
if mode == "plain":
    runpy.run_path(program, run_name="__main__")
else:
    obs = Observer(verify=(mode == "verify"))
    with observing(obs):
        runpy.run_path(program, run_name="__main__")
print("seconds", time.perf_counter() - start)
"""


def run(mode: str, program: str, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, program, str(steps), "--time"], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(f"{mode} run failed:\n{out.stderr[-3000:]}")
    got: dict = {}
    for line in out.stdout.splitlines():
        if line.startswith("timing "):
            got.update(json.loads(line[len("timing "):]))
        elif line.startswith("seconds "):
            got["seconds"] = float(line.split()[1])
    return got


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("program", nargs="?", default=DEFAULT)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    run("plain", args.program, 3)  # warm-up: inductor's cache on disk, for every mode alike
    best: dict = {}
    for _ in range(args.repeat):  # interleaved, so a busy moment of the machine hits every mode
        for mode in ("plain", "observe", "verify"):
            got = run(mode, args.program, args.steps)
            for key, value in got.items():
                best[mode, key] = min(best.get((mode, key), value), value)
    print(f"program: {os.path.relpath(args.program, ROOT)}, {args.steps} steps (best of {args.repeat}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cpus, 1 torch thread)")
    print(f"{'mode':<10}{'whole run s':>13}{'ratio':>8}{'step cpu ms':>14}{'ratio':>8}{'step wall ms':>14}{'ratio':>8}")
    for mode in ("plain", "observe", "verify"):
        row = [best[mode, k] for k in ("seconds", "cpu_ms", "wall_ms")]
        base = [best["plain", k] for k in ("seconds", "cpu_ms", "wall_ms")]
        print(f"{mode:<10}{row[0]:>13.2f}{row[0] / base[0]:>8.2f}{row[1]:>14.1f}{row[1] / base[1]:>8.2f}"
              f"{row[2]:>14.1f}{row[2] / base[2]:>8.2f}")


if __name__ == "__main__":
    main()

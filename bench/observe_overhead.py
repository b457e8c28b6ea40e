"""What `thunder-lint run --observe` and `--observe --verify` cost over the program's own run, measured in the same
run: prints the ratios against the plain run (issue 34's targets: --observe within 1.2x, --verify within 3x).

Each mode runs the program in a fresh process (a warm-up run first fills inductor's on-disk cache for all of
them), timing only the program (runpy), not python's start, torch's import or the static linter. Two lengths
(--short and --long steps) give the whole run's ratio and the steady state's: (long - short) / steps, the cost
per training step once compiled, which compile time (noisy on a shared machine) does not enter.

    python3 bench/observe_overhead.py [PROGRAM] [--short 2] [--long 22] [--repeat 2]
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
mode, program, steps = sys.argv[1], sys.argv[2], sys.argv[3]
import torch
from analyzer.run.observe import Observer, observing
sys.argv = [program, "--steps", steps]
start = time.perf_counter()
if mode == "plain":
    runpy.run_path(program, run_name="__main__")
else:
    obs = Observer(verify=(mode == "verify"))
    with observing(obs):
        runpy.run_path(program, run_name="__main__")
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def run(mode: str, program: str, steps: int) -> float:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, program, str(steps)], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise SystemExit(f"{mode} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("program", nargs="?", default=DEFAULT)
    p.add_argument("--short", type=int, default=2)
    p.add_argument("--long", type=int, default=22)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    run("plain", args.program, args.short)  # warm-up: inductor's cache on disk, for every mode alike
    best: dict = {}
    for _ in range(args.repeat):  # interleaved, so a busy moment of the machine hits every mode
        for mode in ("plain", "observe", "verify"):
            for steps in (args.short, args.long):
                t = run(mode, args.program, steps)
                key = (mode, steps)
                best[key] = min(best.get(key, t), t)
    n = args.long - args.short
    plain_total, plain_step = best["plain", args.long], (best["plain", args.long] - best["plain", args.short]) / n
    print(f"program: {os.path.relpath(args.program, ROOT)}, {args.long} steps (best of {args.repeat}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cpus)")
    print(f"{'mode':<10}{'whole run s':>13}{'ratio':>8}{'per step ms':>14}{'ratio':>8}")
    for mode in ("plain", "observe", "verify"):
        total = best[mode, args.long]
        step = (best[mode, args.long] - best[mode, args.short]) / n
        print(f"{mode:<10}{total:>13.2f}{total / plain_total:>8.2f}{step * 1000:>14.1f}{step / plain_step:>8.2f}")


if __name__ == "__main__":
    main()

"""The overhead of `thunder-lint run` on the training-script test (tests/run/run_programs.py: a GPT-like
model, a DataLoader, AdamW, 20 steps) against plain python, both measured here, in this run.

    python3 bench/run_overhead.py [--repeat N] [--torch-compile]

Baseline: `python train.py` with TORCHDYNAMO_DISABLE=1 (torch.compile a no-op: the eager program, which is
what `run` must compute); with --torch-compile also plain `python train.py` with the real torch.compile
(inductor: minutes of compilation on CPU). Prints wall times (best of N), the first-call cost of each jitted
function inside `run` (trace + compile + the first call), and the target: run <= python + the first-call
costs + 10% of python.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "run"))

import run_programs  # noqa: E402


CPU = []  # CPU seconds (user + sys) of each timed child, in order: steadier than wall time on a busy machine


def _timed(cmd, cwd, env) -> tuple[float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, done


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--torch-compile", action="store_true")
    opts = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "train.py"), "w") as f:
            f.write(run_programs.TRAIN)
        timings = os.path.join(tmp, "timings.json")
        python_s, run_s, first = [], [], {}
        for _ in range(opts.repeat):
            t, eager = _timed([sys.executable, "train.py"], tmp, dict(env, TORCHDYNAMO_DISABLE="1"))
            assert eager.returncode == 0, eager.stderr
            python_s.append(t)
            t, ran = _timed([sys.executable, "-m", "analyzer.cli", "run", "--format", "json", "-o", "r.json",
                             "train.py"], tmp, dict(env, THUNDER_LINT_RUN_TIMINGS=timings))
            assert ran.returncode == 1 and ran.stdout == eager.stdout, ran.stderr
            run_s.append(t)
            with open(timings) as f:
                got = json.load(f)["first_call_seconds"]
            first = {k: min(v, first.get(k, v)) for k, v in got.items()}
        compiled = None
        if opts.torch_compile:
            compiled, done = _timed([sys.executable, "train.py"], tmp, env)
            assert done.returncode == 0, done.stderr
    py, rn, fc = min(python_s), min(run_s), sum(first.values())
    py_cpu, run_cpu = min(CPU[0:2 * opts.repeat:2]), min(CPU[1:2 * opts.repeat:2])
    print(f"cpu seconds (user+sys): python {py_cpu:.2f}, run {run_cpu:.2f} ({run_cpu / py_cpu:.2f}x); "
          f"cpu overhead {run_cpu - py_cpu:.2f} s vs first-call costs {fc:.2f} s + 10% {0.1 * py_cpu:.2f} s: "
          f"{'met' if run_cpu <= py_cpu * 1.1 + fc else 'NOT met'}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"plain python (eager, TORCHDYNAMO_DISABLE=1): {py:.2f} s")
    if compiled is not None:
        print(f"plain python with torch.compile (inductor):  {compiled:.2f} s")
    print(f"thunder-lint run:                            {rn:.2f} s   ({rn / py:.2f}x python)")
    for name, s in sorted(first.items()):
        print(f"  first call of {name}: {s:.2f} s (trace + compile + run)")
    budget = py + fc + 0.10 * py
    print(f"overhead: {rn - py:.2f} s; first-call costs {fc:.2f} s; beyond them {rn - py - fc:+.2f} s "
          f"({(rn - py - fc) / py:+.1%} of python)")
    print(f"target run <= python + first calls + 10% = {budget:.2f} s: {'met' if rn <= budget else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

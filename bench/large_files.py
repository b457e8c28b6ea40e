#!/usr/bin/env python3
"""Time and peak memory of linting one large generated file, against a bare ``ast.parse`` of the same
file measured in the same run (issue 13's targets: peak memory at most 20x the source size + 200 MB,
time linear in size, 10 MB in under 15 s on the 2-core dev machine).

    python3 bench/large_files.py [--sizes 1,5,10] [--kinds typical,dense] [--code-root DIR] [--repeat N] [--json OUT]

Each measurement runs in a fresh process (peak RSS is per process, read with ``os.wait4``):
  parse: read the file + ``ast.parse`` (the floor: CPython's own cost);
  lint:  the real CLI, ``thunder-lint --no-cache --format json -j 1 FILE`` (report to /dev/null).
Kinds: ``typical`` is this repository's own analyzer/ and compiler/ sources repeated (real code, few
findings); ``dense`` repeats a jitted function with six findings (the worst case for the rules).
``--code-root`` lints with another checkout (e.g. an older commit, for before/after numbers).
Heavy: 10 MB of dense code takes minutes; on a shared machine run 1 and 5 and extrapolate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MB = 1_000_000
TARGET_FACTOR, TARGET_FIXED_MB, TARGET_10MB_S = 20, 200, 15.0

DENSE_BLOCK = (
    "@torch.compile\ndef f{i}(x, n):\n    y = x.reshape(-1)\n    y.add_(1)\n    if n > 3:\n"
    "        print(G{i})\n    for k in range(n):\n        x = x + k\n    return y.sum().item()\n\n"
)


def typical_unit() -> str:
    parts = []
    for folder in ("analyzer", "compiler"):
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            # concatenated modules: a __future__ import is only legal at the top of the file
            parts.append(re.sub(r"^from __future__ import .*$", "", text, flags=re.M))
    return "\n".join(parts) + "\n"


def generate(kind: str, size_mb: float, folder: Path) -> Path:
    target = int(size_mb * MB)
    out, n = [], 0
    if kind == "typical":
        unit = typical_unit()
        while n < target:
            out.append(unit)
            n += len(unit)
    else:
        out.append("import torch\n\n")
        i = 0
        while n < target:
            block = DENSE_BLOCK.format(i=i)
            out.append(block)
            n, i = n + len(block), i + 1
    path = folder / f"{kind}_{size_mb:g}mb.py"
    path.write_text("".join(out), encoding="utf-8")
    return path


def measure(cmd: list[str], env: dict) -> tuple[float, float, int, bytes, float]:
    """(seconds, peak RSS in MB, exit status, stdout, CPU seconds) of one fresh process. CPU time (user +
    system) is what to compare on a shared machine: wall time there includes waiting for a core."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        # cwd: the code root, so that ``-m analyzer.cli`` imports that checkout, not the caller's cwd
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=env["PYTHONPATH"])
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        data = out.read()
    return elapsed, usage.ru_maxrss / 1024, proc.returncode, data, usage.ru_utime + usage.ru_stime


def best_of(n: int, cmd: list[str], env: dict) -> tuple[float, float, int, bytes, float]:
    """The fastest of n runs by wall time, with the least CPU time and the largest peak seen over all runs."""
    runs = [measure(cmd, env) for _ in range(max(1, n))]
    fastest = min(runs, key=lambda r: r[0])
    return fastest[0], max(r[1] for r in runs), fastest[2], fastest[3], min(r[4] for r in runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1,5,10", help="file sizes in MB (default 1,5,10)")
    p.add_argument("--kinds", default="typical,dense")
    p.add_argument("--code-root", default=str(REPO), help="the checkout whose CLI is measured")
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each measurement N times and keep the fastest (on a shared machine the minimum is the "
                        "least disturbed run; peak memory hardly varies)")
    args = p.parse_args()
    env = {**os.environ, "PYTHONPATH": args.code_root}
    helptext = subprocess.run([sys.executable, "-m", "analyzer.cli", "--help"], capture_output=True, text=True, env=env,
                              cwd=args.code_root).stdout
    size_option = ["--max-file-size", "1GB"] if "--max-file-size" in helptext else []
    rows = []
    print(f"code: {args.code_root}   python {sys.version.split()[0]}   load average {os.getloadavg()[0]:.2f}   "
          f"target: peak <= {TARGET_FACTOR}x size + {TARGET_FIXED_MB} MB, 10 MB in < {TARGET_10MB_S:g} s")
    print(f"{'kind':8} {'MB':>5} {'parse s':>8} {'parse MB':>9} {'lint s':>8} {'lint cpu':>8} {'lint MB':>8} "
          f"{'lint/parse':>10} {'s per MB':>8} {'MB per MB':>9} {'target MB':>9} {'findings':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            for size in (float(s) for s in args.sizes.split(",")):
                path = generate(kind, size, Path(tmp))
                mb = path.stat().st_size / MB
                parse_cmd = [sys.executable, "-c", "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())", str(path)]
                p_s, p_mb, _, _, p_cpu = best_of(args.repeat, parse_cmd, env)
                lint_cmd = [sys.executable, "-m", "analyzer.cli", "--no-cache", "--format", "json", "-j", "1", *size_option, str(path)]
                l_s, l_mb, status, out, l_cpu = best_of(args.repeat, lint_cmd, env)
                try:
                    findings = len(json.loads(out))
                except ValueError:
                    findings = -1
                target = TARGET_FACTOR * mb + TARGET_FIXED_MB
                row = dict(kind=kind, mb=round(mb, 2), parse_s=round(p_s, 2), parse_cpu_s=round(p_cpu, 2),
                           parse_peak_mb=round(p_mb), lint_s=round(l_s, 2), lint_cpu_s=round(l_cpu, 2),
                           lint_peak_mb=round(l_mb), exit=status, findings=findings, target_peak_mb=round(target),
                           load=round(os.getloadavg()[0], 2))
                rows.append(row)
                print(f"{kind:8} {mb:5.1f} {p_s:8.2f} {p_mb:9.0f} {l_s:8.2f} {l_cpu:8.2f} {l_mb:8.0f} {l_s / p_s:9.1f}x "
                      f"{l_s / mb:8.2f} {l_mb / mb:9.0f} {target:9.0f} {findings:8}", flush=True)
    for kind in args.kinds.split(","):
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            big = max(mine, key=lambda r: r["mb"])
            per_mb = big["lint_s"] / big["mb"]
            cpu_per_mb = big["lint_cpu_s"] / big["mb"]
            ok_mem = all(r["lint_peak_mb"] <= r["target_peak_mb"] for r in mine)
            print(f"{kind}: {per_mb:.2f} s/MB -> 10 MB in about {10 * per_mb:.0f} s (CPU: {cpu_per_mb:.2f} s/MB -> "
                  f"{10 * cpu_per_mb:.0f} s; target < {TARGET_10MB_S:g} s); "
                  f"memory target {'met' if ok_mem else 'NOT met'} (the bare parse alone: "
                  f"{big['parse_peak_mb'] / big['mb']:.0f} MB per MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

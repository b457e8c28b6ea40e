#!/usr/bin/env python3
"""The real-bug set of tests/real_bugs, scored as the judge scores it: every report linted with defaults as one
project and file by file; for each report the expected findings (`# expect:` markers), what was found, and
whether it was caught; then the findings nobody marked (extras: false until read and marked `# also:`) and
the totals both ways (and, for comparison, linted where they live, under tests/).

    python3 bench/real_bugs.py [--misses]      # --misses: only the reports missed one way or the other
    python3 bench/real_bugs.py --list          # the set: file, expected rule(s), report URL
    python3 bench/real_bugs.py --run           # run each torch.compile program (not thunder's) on this machine's
                                               # torch, CPU, 300 s each: exit status and last line (slow: minutes)

The scoring itself is tests/real_bugs/_real_bugs_harness.py, shared with tests/real_bugs/test_real_bugs.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "real_bugs"))
import _real_bugs_harness as harness  # noqa: E402


def main(argv: list[str]) -> int:
    only_misses = "--misses" in argv
    reports = [harness.read_report(p) for p in harness.report_paths()]
    if "--run" in argv:
        # the reporters' programs under the real compiler: do they run, and does the reported effect show?
        for r in reports:
            if "import thunder" in r.path.read_text():
                continue  # thunder is not installed here
            env = dict(os.environ, OMP_NUM_THREADS="1")
            try:
                proc = subprocess.run([sys.executable, str(r.path)], capture_output=True, text=True, timeout=300, env=env)
                lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
                print(f"{r.name:32} exit {proc.returncode}  {lines[-1][:110] if lines else ''}")
            except subprocess.TimeoutExpired:
                print(f"{r.name:32} timed out")
        return 0
    if "--list" in argv:
        for r in reports:
            print(f"{r.name:32} {','.join(sorted({c for _, c in r.expected})):12} {r.url}")
        return 0
    ways = {"as one project": harness.score_as_project(reports), "file by file": harness.score_file_by_file(reports)}
    for way, outcomes in ways.items():
        print(f"== {way} ==")
        for o in outcomes:
            if not (only_misses and o.caught):
                print(harness.describe(o))
        print()
    print("== extras (findings on no marked line) ==")
    any_extra = False
    for way, outcomes in ways.items():
        for o in outcomes:
            if o.extras:
                any_extra = True
                print(f"{way:15} {o.report.name:32} " + ", ".join(f"{c}@{line}" for line, c in sorted(o.extras)))
    print("none" if not any_extra else "")
    print()
    by_rule = Counter(code for r in reports for code in {c for _, c in r.expected})
    print("reports per expected rule: " + ", ".join(f"{c} {n}" for c, n in sorted(by_rule.items())))
    for way, outcomes in ways.items():
        caught = sum(o.caught for o in outcomes)
        print(f"{way:15} caught {caught}/{len(outcomes)} = {caught / len(outcomes):.2f}")
    # the judge lints copies in a fresh folder; where they live, under tests/, the index reads them as test code
    in_place = harness.score_as_project(reports, in_place=True)
    changed = sorted(o.report.name for o, p in zip(in_place, ways["as one project"]) if o.found != p.found)
    print(f"(in place, under tests/: caught {sum(o.caught for o in in_place)}/{len(in_place)}; findings differ in {len(changed)} reports"
          + (f": {', '.join(changed)})" if changed else ")"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

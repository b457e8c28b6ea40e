#!/usr/bin/env python3
"""Do two versions of thunder-lint report the same findings? The JSON output of ``thunder-lint . --no-cache
--format json`` (every finding with its message, span and fixes) from this checkout and from BASELINE (the
sources of an older commit: ``git archive COMMIT | tar -x -C DIR``), compared byte for byte on each tree.
BASELINE runs with ``-j 1``: before commit 3b90a63 a pool could name another entry point in a message than
one process (the index took the files in the order the workers finished them), one process never.

    python3 bench/same_findings.py BASELINE TREE [TREE ...] [-- EXTRA CLI ARGS]

With no TREE: the five projects of bench/real_code.py (fetched as it fetches them), this repository's
``examples/`` and ``tests/`` folders (the test suite's cases), each with the defaults, ``-j 1`` (one process:
files held parsed until the project index is built) and ``-j 2`` (the process pool). Exits 1 when any output differs, naming the tree and the first differing finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import real_code  # noqa: E402  (the pinned projects and how they are fetched)


def output(source: Path, tree: Path, extra: list[str]) -> str:
    if source != REPO:  # the baseline in one process (see above)
        extra = [a for i, a in enumerate(extra) if "-j" not in (a, extra[i - 1] if i else "")] + ["-j", "1"]
    env = real_code.engine_env(source)
    proc = subprocess.run(real_code.OURS_CMD + extra, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"thunder-lint from {source} failed on {tree}: {proc.stderr[-800:]}")
    return proc.stdout


def first_difference(a: str, b: str) -> str:
    old, new = json.loads(a), json.loads(b)
    for i, (x, y) in enumerate(zip(old, new)):
        if x != y:
            return f"finding {i}: baseline {x}\n    now {y}"
    return f"baseline has {len(old)} findings, now {len(new)}"


def main() -> int:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    if not args:
        raise SystemExit(__doc__)
    baseline, trees = Path(args[0]).resolve(), [Path(t).resolve() for t in args[1:]]
    runs = [(t, extra) for t in trees]
    if not trees:
        defaults = [real_code.fetch(spec) for spec in real_code.PROJECTS] + [REPO / "examples", REPO / "tests"]
        runs = [(t, extra + jobs) for jobs in ([], ["-j", "1"], ["-j", "2"]) for t in defaults]
    differing = 0
    for tree, cli_args in runs:
        before, now = output(baseline, tree, cli_args), output(REPO, tree, cli_args)
        same = before == now
        differing += not same
        shown = os.path.relpath(tree, REPO)
        print(f"{shown} {' '.join(cli_args)}: {len(json.loads(now))} findings, {'identical' if same else 'DIFFERENT'}")
        if not same:
            print("    " + first_difference(before, now))
    print(f"{len(runs) - differing} of {len(runs)} identical to {baseline}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

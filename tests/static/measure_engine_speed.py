"""Engine speed against a bare ``ast.parse`` loop, single process (not a test: run it by hand).

    python3 tests/static/measure_engine_speed.py DIR [DIR...]

For every file, ``ast.parse`` and ``lint_source(..., with_fixes=False)`` are timed back to back, so load
from other processes on the machine hits both sides alike. Prints both totals, lines/s, and the ratio
(the issue's budget for the engine alone is about 2.5x ``ast.parse``).
"""

from __future__ import annotations

import ast
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from analyzer.static import lint_source  # noqa: E402


def main(dirs: list[str]) -> None:
    texts = []
    for root in dirs:
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(".py"):
                    texts.append((os.path.join(dirpath, name), Path(dirpath, name).read_text(encoding="utf-8")))
    parse_s = lint_s = 0.0
    counts: Counter[str] = Counter()
    for path, text in texts:
        t0 = time.perf_counter()
        ast.parse(text)
        t1 = time.perf_counter()
        diagnostics = lint_source(text, path, with_fixes=False)
        t2 = time.perf_counter()
        parse_s += t1 - t0
        lint_s += t2 - t1
        counts.update(d.code for d in diagnostics)
    lines = sum(t.count("\n") for _, t in texts)
    print(f"{len(texts)} files, {lines} lines")
    print(f"ast.parse:   {parse_s:6.2f} s  {lines / parse_s:9.0f} lines/s")
    print(f"lint_source: {lint_s:6.2f} s  {lines / lint_s:9.0f} lines/s")
    print(f"ratio lint_source / ast.parse: {lint_s / parse_s:.2f}")
    print("findings:", dict(sorted(counts.items())))


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])

"""The compile-time error check over a corpus: is it sound against compile(), and what does it save?

For every .py file under the given folders (default: the transformers corpus of bench/lint_throughput.py
and the projects of bench/precision_new_projects.py under $THUNDER_LINT_BENCH_CORPUS, where present), parsed once:
  - soundness: where ``compile(tree)`` raises SyntaxError, ``may_fail_to_compile`` must say True (any miss
    is printed and the exit status is 1);
  - the fraction of files it proves fine (no compile needed);
  - CPU seconds of ``compile_error(tree, text)`` (the check, then compile where it says maybe) against
    compiling every tree (what compile_error did before), in the same run, best of ``--repeat``.

  - with ``--plant N``: every error kind of tests/static/test_compile_errors.py planted before a random
    statement of N random corpus files (at its indentation): wherever compile() then fails, the check must
    say True (the corpus itself has no such errors, so this is what tests soundness on real code).

    PYTHONPATH=$PWD python3 bench/compile_check.py [FOLDER ...] [--repeat 3] [--plant 200]
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import random
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analyzer.compile_check import may_fail_to_compile  # noqa: E402
from analyzer.parsing import PARSE_ERRORS, PSEUDO_FILENAME, compile_error, parse  # noqa: E402

DEFAULT_ROOTS = [REPO / "bench" / ".corpus" / "transformers-5.23.0", Path("/work/main/bench/.corpus/transformers-5.23.0")]
# where bench/precision_new_projects.py unpacks its projects ($THUNDER_LINT_BENCH_CORPUS moves it, as for the other benches)
NEW_PROJECTS = Path(os.environ.get("THUNDER_LINT_BENCH_CORPUS", Path.home() / ".cache" / "thunder-lint-bench")) / "new"


def default_folders() -> list[Path]:
    folders = [next((p for p in DEFAULT_ROOTS if p.is_dir()), None)]
    if NEW_PROJECTS.is_dir():
        folders += sorted(p for p in NEW_PROJECTS.iterdir() if p.is_dir() and p.name != "wheels")
    return [f for f in folders if f is not None]


def load(folders: list[Path]) -> list[tuple[str, str, ast.Module]]:
    out = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
                tree = parse(text)
            except (OSError, UnicodeDecodeError, *PARSE_ERRORS):
                continue
            out.append((str(path), text, tree))
    return out


def compile_all(files) -> None:
    for _, _, tree in files:
        try:
            compile(tree, PSEUDO_FILENAME, "exec", 0, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
            pass


def check_all(files) -> None:
    for _, text, tree in files:
        compile_error(tree, text)


def timed(fn, files, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(files)
        best = min(best, time.process_time() - t0)
    return best


def plant(files, n: int) -> list:
    sys.path.insert(0, str(REPO / "tests" / "static"))
    from test_compile_errors import ERRORS

    rng = random.Random(1193)
    checked, missed = 0, []
    for path, text, tree in rng.sample(files, min(n, len(files))):
        lines = text.splitlines(keepends=True)
        starts = [(s.lineno, s.col_offset) for s in ast.walk(tree) if isinstance(s, ast.stmt)
                  and lines[s.lineno - 1][: s.col_offset].strip() == ""
                  and not (isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and s.decorator_list)]
        if not starts:
            continue
        for kind, snippet in ERRORS.items():
            lineno, col = rng.choice(starts)
            planted = "".join(lines[: lineno - 1]) + textwrap.indent(snippet, " " * col) + "".join(lines[lineno - 1 :])
            try:
                planted_tree = parse(planted)
            except PARSE_ERRORS:
                continue  # the plant broke the parse (an indented block it split)
            try:
                compile(planted_tree, PSEUDO_FILENAME, "exec", 0, dont_inherit=True)
            except SyntaxError as e:
                checked += 1
                if not may_fail_to_compile(planted_tree, planted):
                    missed.append((f"{path} (+{kind} at line {lineno})", e))
            except (ValueError, RecursionError, MemoryError, TypeError):
                continue
    print(f"planted: {checked} compile-time errors in {min(n, len(files))} files, {len(missed)} missed")
    return missed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plant", type=int, default=0, metavar="N", help="plant every error kind in N random files")
    args = ap.parse_args()
    folders = args.folders or default_folders()
    gc.disable()  # as in the linter (analyzer.parsing.gc_paused): collections would rescan every tree
    files = load(folders)
    lines = sum(text.count("\n") for _, text, _ in files)
    print(f"{len(files)} files, {lines:,} lines, from {len(folders)} folders")

    misses, maybe, failing = [], 0, 0
    for path, text, tree in files:
        says = may_fail_to_compile(tree, text)
        maybe += says
        try:
            compile(tree, PSEUDO_FILENAME, "exec", 0, dont_inherit=True)
        except SyntaxError as e:
            failing += 1
            if not says:
                misses.append((path, e))
        except (ValueError, RecursionError, MemoryError, TypeError):
            pass
    print(f"compile() raises SyntaxError on {failing} files; the check says maybe on {maybe} "
          f"({maybe / len(files):.1%}), proves {len(files) - maybe} fine ({(len(files) - maybe) / len(files):.1%})")
    for path, e in misses:
        print(f"MISSED {path}:{e.lineno}: {e.msg}")

    if args.plant:
        misses += plant(files, args.plant)

    before = timed(compile_all, files, args.repeat)
    after = timed(check_all, files, args.repeat)
    check_only = timed(lambda fs: [may_fail_to_compile(t, x) for _, x, t in fs], files, args.repeat)
    print(f"CPU s, best of {args.repeat}: compile every tree {before:.2f}; compile_error now {after:.2f} "
          f"({after / before:.2f}x; the check alone {check_only:.2f})")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())

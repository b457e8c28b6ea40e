#!/usr/bin/env python3
"""Real projects, linted as a new user would (`thunder-lint .`, defaults), timed against ruff in the same run.

    python3 bench/real_code.py [--project NAME==VERSION ...] [--repeat N] [--baseline DIR] [--show] [--json OUT]

Each project's wheel is downloaded once with ``pip download --no-deps`` into ~/.cache/thunder-lint-bench/ (outside
this repository, or $THUNDER_LINT_BENCH_CORPUS) and unpacked. For every project, in the same run and alternating: ``thunder-lint . --no-cache`` (the real
CLI, a fresh process) and ``ruff check --select ALL --no-cache`` on the same tree, the best of ``--repeat``
runs each. It prints the findings per rule, whether the library default applied, and the time ratio to
ruff (target: at most 2x). ``--show`` prints every finding's first line and its source line, for reading;
bench/precision_real_code.md records what reading them found.

Both tools run as installed: ruff is the binary beside this Python (pip puts it there), whatever PATH holds (a
pyenv shim first on PATH runs ``pyenv exec``: 0.06 s CPU a call, as much as ruff's whole run on the smallest
tree; started through the shim, this script finds the real binary first on PATH anyway), and thunder-lint's
modules load from cached bytecode, as pip compiles them at install (kept under that folder's pycache/ even where
PYTHONDONTWRITEBYTECODE is set: compiling them costs about 0.07 s CPU a run). One untimed run
of each warms those caches. ``--baseline DIR`` also times the thunder-lint sources in DIR (an older commit:
``git archive COMMIT | tar -x -C DIR``) in the same alternation; bench/same_findings.py compares the findings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Outside this repository: a tree under it would find this repository's pyproject.toml as its configuration (a
# TOML parse a user's own project does not pay, and another project's settings); THUNDER_LINT_BENCH_CORPUS moves it.
CORPUS = Path(os.environ.get("THUNDER_LINT_BENCH_CORPUS", Path.home() / ".cache" / "thunder-lint-bench"))
# Never measured before issue 24 (lightning, torchtune, torchaudio, litgpt were the issue's own; timm, peft,
# diffusers issue 8's). Pinned so that figures from different days compare.
PROJECTS = ("x-transformers==2.31.10", "torchvision==0.29.1", "open_clip_torch==3.3.0", "torchao==0.18.0",
            "vector-quantize-pytorch==1.32.0")
RUFF_TARGET = 2.0


def fetch(spec: str) -> Path:
    """The unpacked wheel of ``name==version`` (downloaded and unpacked the first time)."""
    return fetch_wheel(spec, CORPUS)


def fetch_wheel(spec: str, corpus: Path, only_binary: bool = False) -> Path:
    """The unpacked .py files of the wheel of ``name==version`` under ``corpus`` (downloaded with pip and
    unpacked the first time; bench/precision_new_projects.py shares it)."""
    name, version = spec.split("==")
    wheel_name = re.sub(r"[-_.]+", "_", name)
    tree = corpus / f"{wheel_name}-{version}"
    if (tree / ".complete").exists():
        return tree
    wheels = corpus / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"{wheel_name}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *(["--only-binary", ":all:"] if only_binary else []),
                        "-q", "-d", str(wheels), spec], check=True)
        found = sorted(wheels.glob(f"{wheel_name}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel for {spec} in {wheels}")
    if tree.exists():
        shutil.rmtree(tree)
    with zipfile.ZipFile(found[0]) as z:
        for member in z.namelist():
            if member.endswith(".py"):
                z.extract(member, tree)
    (tree / ".complete").write_text(found[0].name)
    return tree


def _timed(cmd: list[str], cwd: Path, env=None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and its children, the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def ruff_command() -> list[str]:
    beside = Path(sys.executable).parent / "ruff"
    exe = str(beside) if beside.is_file() else shutil.which("ruff")
    if exe is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "ruff"], check=True)
        exe = shutil.which("ruff") or "ruff"
    return [exe, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", "--isolated", "."]


def engine_env(source: Path) -> dict:
    """The environment that runs thunder-lint from ``source`` with cached bytecode, as an installed package does."""
    env = dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONPYCACHEPREFIX=str(CORPUS / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


OURS_CMD = [sys.executable, "-m", "analyzer.cli", ".", "--no-cache", "--format", "json", "--exit-zero", "-q"]


def measure(tree: Path, repeat: int, baseline: Path | None = None) -> dict:
    engines = {"thunder_lint": engine_env(REPO)}
    if baseline is not None:
        engines["baseline"] = engine_env(baseline)
    commands = [(name, OURS_CMD, env) for name, env in engines.items()] + [("ruff", ruff_command(), None)]
    wall: dict[str, list[float]] = {name: [] for name, _, _ in commands}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in commands}
    output = ""
    for i in range(repeat + 1):  # the first round warms the bytecode and page caches, untimed
        for name, cmd, env in commands:
            t, c, proc = _timed(cmd, tree, env)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed on {tree}: {proc.stderr[-500:]}")
            if name == "thunder_lint":
                output = proc.stdout
            if i:
                wall[name].append(t)
                cpu[name].append(c)
    found = json.loads(output)
    note = subprocess.run([sys.executable, "-m", "analyzer.cli", ".", "--no-cache", "--exit-zero", "--statistics"],
                          cwd=tree, capture_output=True, text=True, env=engines["thunder_lint"]).stdout
    files = sum(1 for _ in tree.rglob("*.py"))
    row = {"tree": tree.name, "files": files, "findings": found, "by_rule": dict(sorted(Counter(d["code"] for d in found).items())),
           "library_default": "treated as compiled" in note, "lines": sum(len(p.read_bytes().splitlines()) for p in tree.rglob("*.py"))}
    for name in engines:
        row[f"{name}_s"], row[f"{name}_cpu_s"] = min(wall[name]), min(cpu[name])
        row[f"{name}_ratio"] = min(wall[name]) / min(wall["ruff"])
        row[f"{name}_cpu_ratio"] = min(cpu[name]) / min(cpu["ruff"])
    row["ruff_s"], row["ruff_cpu_s"] = min(wall["ruff"]), min(cpu["ruff"])
    row["ratio"], row["cpu_ratio"] = row["thunder_lint_ratio"], row["thunder_lint_cpu_ratio"]
    return row


def show(tree: Path, found: list[dict]) -> None:
    for d in found:
        try:
            line = (tree / d["path"]).read_text(encoding="utf-8").splitlines()[d["line"] - 1].strip()
        except (OSError, IndexError):
            line = ""
        print(f"  {d['path']}:{d['line']} {d['code']} {d['message'].splitlines()[0]}\n      | {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", action="append", help="name==version (default: the pinned list)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="thunder-lint sources of an older commit, timed in the same run")
    ap.add_argument("--show", action="store_true", help="print every finding with its source line")
    ap.add_argument("--json", help="write the figures (and findings) here")
    args = ap.parse_args()
    rows = []
    for spec in args.project or PROJECTS:
        tree = fetch(spec)
        row = measure(tree, args.repeat, args.baseline)
        row["project"] = spec
        rows.append(row)
        rules = ", ".join(f"{c} {n}" for c, n in row["by_rule"].items()) or "none"
        print(f"{spec}: {row['files']} files, {row['lines']} lines, {len(row['findings'])} findings ({rules}); library "
              f"default: {'yes' if row['library_default'] else 'no'}; wall: thunder-lint {row['thunder_lint_s']:.2f} s, "
              f"ruff {row['ruff_s']:.2f} s = {row['ratio']:.2f}x; CPU: {row['thunder_lint_cpu_s']:.2f} s vs "
              f"{row['ruff_cpu_s']:.2f} s = {row['cpu_ratio']:.2f}x")
        if args.baseline:
            print(f"  baseline: wall {row['baseline_s']:.2f} s = {row['baseline_ratio']:.2f}x ruff, CPU {row['baseline_cpu_s']:.2f} s "
                  f"= {row['baseline_cpu_ratio']:.2f}x; now/baseline wall {row['thunder_lint_s'] / row['baseline_s']:.2f}, CPU "
                  f"{row['thunder_lint_cpu_s'] / row['baseline_cpu_s']:.2f}")
        if args.show:
            show(tree, row["findings"])
    worst = max(r["ratio"] for r in rows)
    total = sum(r["thunder_lint_s"] for r in rows) / sum(r["ruff_s"] for r in rows)
    print(f"worst wall ratio to ruff: {worst:.2f}x, all projects together {total:.2f}x (target <= {RUFF_TARGET}x: "
          f"{'met' if worst <= RUFF_TARGET else 'NOT met'}); worst CPU ratio {max(r['cpu_ratio'] for r in rows):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Lint throughput on a real corpus: the Python sources of the `transformers` wheel (~2,900 files, 1.2M lines).

    python3 bench/lint_throughput.py [--version 5.23.0] [--jobs N] [--check] [--json OUT]

Downloads the wheel once with pip (into bench/.corpus/, which git ignores), unpacks its .py files, then
measures in the same run:
  1. baseline: a bare single-process loop of read + ``ast.parse`` over every file;
  2. cold: ``thunder-lint`` (the real CLI, in a fresh process) with an empty cache;
  3. warm: the same command again, answered from the cache;
  4. ruff: ``ruff check --select ALL --no-cache`` on the same files (ruff installed with pip into
     bench/.corpus/ruff the first time; ``--no-ruff`` skips it).
thunder-lint runs with its project index on (it always is). It prints files/s, lines/s and each run's
time relative to the baseline and to ruff. Targets on the 2-core dev machine: cold within 1.5x of the
baseline and within 2x of ruff, warm under 1 s. ``--check`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO / "bench" / ".corpus"
DEFAULT_VERSION = "5.23.0"  # pinned so that figures from different days compare; --version overrides
COLD_TARGET = 1.5
RUFF_TARGET = 2.0
WARM_TARGET_S = 1.0
RUFF_VERSION = "0.17.5"


def fetch_corpus(corpus_dir: Path, version: str) -> Path:
    """The folder of unpacked .py files, downloading the wheel with pip the first time."""
    src = corpus_dir / f"transformers-{version}"
    marker = src / ".complete"
    if marker.exists():
        return src
    wheels = corpus_dir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"transformers-{version}-*.whl"))
    if not found:
        print(f"downloading transformers=={version} with pip ...", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(wheels), f"transformers=={version}"],
            check=True,
        )
        found = sorted(wheels.glob(f"transformers-{version}-*.whl"))
        if not found:
            sys.exit(f"pip did not produce a transformers {version} wheel in {wheels}")
    if src.exists():
        shutil.rmtree(src)
    with zipfile.ZipFile(found[0]) as z:
        for name in z.namelist():
            if name.endswith(".py") and not name.startswith("/") and ".." not in Path(name).parts:
                z.extract(name, src)
    marker.write_text("ok\n")
    return src


def ruff_binary(corpus_dir: Path) -> Path:
    """ruff, installed with pip into the corpus folder the first time (pinned: figures compare across days)."""
    target = corpus_dir / f"ruff-{RUFF_VERSION}"
    exe = target / "bin" / "ruff"
    if not exe.exists():
        print(f"installing ruff=={RUFF_VERSION} with pip ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), f"ruff=={RUFF_VERSION}"],
                       check=True)
    return exe


def run_ruff(exe: Path, src: Path, jobs: int | None) -> tuple[float, float]:
    """``ruff check --select ALL`` without its cache; returns (wall seconds, CPU seconds)."""
    cmd = [str(exe), "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", "--isolated", str(src)]
    env = dict(os.environ)
    if jobs:
        env["RAYON_NUM_THREADS"] = str(jobs)
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, capture_output=True, env=env)
    return time.perf_counter() - start, _children_cpu() - cpu


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def baseline_ast_parse(files: list[Path]) -> tuple[float, float, int]:
    """A bare single-process read + ast.parse loop; returns (wall seconds, CPU seconds, lines)."""
    lines = 0
    cpu = time.process_time()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences etc. must not cost printing time
        for p in files:
            data = p.read_bytes()
            lines += data.count(b"\n")
            try:
                ast.parse(data, filename=str(p))
            except SyntaxError:
                pass
    return time.perf_counter() - start, time.process_time() - cpu, lines


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(src: Path, cache_dir: Path, jobs: int | None, out_json: Path) -> tuple[float, float]:
    """One thunder-lint run in a fresh process; returns (wall seconds, CPU seconds of it and its workers)."""
    cmd = [sys.executable, "-m", "analyzer.cli", str(src), "--format", "json", "--output-file", str(out_json),
           "--exit-zero", "--quiet", "--cache-dir", str(cache_dir)]
    if jobs:
        cmd += ["-j", str(jobs)]
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"thunder-lint failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return elapsed, _children_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default=DEFAULT_VERSION, help="transformers version to download")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--jobs", "-j", type=int, default=None, help="passed to thunder-lint -j (default: all cores)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--no-ruff", action="store_true", help="do not install or time ruff")
    ap.add_argument("--src", type=Path, help="lint this folder instead of the transformers corpus")
    args = ap.parse_args(argv)

    src = args.src.resolve() if args.src else fetch_corpus(args.corpus_dir, args.version)
    files = python_files(src)
    if not files:
        sys.exit(f"no .py files under {src}")

    base_s, base_cpu, lines = baseline_ast_parse(files)
    with tempfile.TemporaryDirectory(prefix="thunder-lint-bench-") as tmp:
        cache_dir, out = Path(tmp) / "cache", Path(tmp) / "out.json"
        cold_s, cold_cpu = run_cli(src, cache_dir, args.jobs, out)
        findings = json.loads(out.read_text())
        warm_s, warm_cpu = run_cli(src, cache_dir, args.jobs, out)
        warm_findings = json.loads(out.read_text())
    ruff_s = ruff_cpu = None
    if not args.no_ruff:
        ruff_s, ruff_cpu = run_ruff(ruff_binary(args.corpus_dir), src, args.jobs)
    if warm_findings != findings:
        sys.exit("the warm (cached) run reported different findings from the cold run")

    n = len(files)
    rows = [
        ("ast.parse loop (1 process)", base_s, base_cpu),
        ("thunder-lint cold (no cache)", cold_s, cold_cpu),
        ("thunder-lint warm (cache)", warm_s, warm_cpu),
    ]
    if ruff_s is not None:
        rows.append((f"ruff {RUFF_VERSION} --select ALL", ruff_s, ruff_cpu))
    print(f"corpus: transformers {args.version}: {n} files, {lines:,} lines ({src})")
    print(f"cores available: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}, jobs: {args.jobs or 'all'}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average at the end: {load:.1f} (other work on the machine slows every row; compare within one run)")
    print(f"{'run':<30} {'seconds':>8} {'files/s':>10} {'lines/s':>12} {'vs ast.parse':>13} {'vs ruff':>8} {'CPU s':>7}")
    for label, s, cpu in rows:
        vs_ruff = f"{s / ruff_s:>7.2f}x" if ruff_s else f"{'-':>8}"
        print(f"{label:<30} {s:>8.2f} {n / s:>10,.0f} {lines / s:>12,.0f} {s / base_s:>12.2f}x {vs_ruff} {cpu:>7.2f}")
    by_code = Counter(d["code"] for d in findings)
    print("findings: " + (", ".join(f"{c} {k}" for c, k in sorted(by_code.items())) or "none"))
    cold_ok, warm_ok = cold_s <= COLD_TARGET * base_s, warm_s < WARM_TARGET_S
    ruff_ok = ruff_s is None or cold_s <= RUFF_TARGET * ruff_s
    print(f"targets: cold <= {COLD_TARGET}x ast.parse: {'met' if cold_ok else 'MISSED'}; warm < {WARM_TARGET_S:.0f} s: "
          f"{'met' if warm_ok else 'MISSED'}" + ("" if ruff_s is None else
          f"; cold <= {RUFF_TARGET}x ruff: {'met' if ruff_ok else 'MISSED'}"))
    if args.json:
        args.json.write_text(json.dumps({
            "version": args.version, "files": n, "lines": lines, "ast_parse_s": base_s, "cold_s": cold_s,
            "warm_s": warm_s, "cold_ratio": cold_s / base_s, "ast_parse_cpu_s": base_cpu, "cold_cpu_s": cold_cpu,
            "warm_cpu_s": warm_cpu, "load_average": load, "findings": dict(by_code), "ruff_s": ruff_s,
            "ruff_cpu_s": ruff_cpu, "cold_vs_ruff": cold_s / ruff_s if ruff_s else None,
        }, indent=2) + "\n")
    return 0 if (cold_ok and warm_ok and ruff_ok) or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())

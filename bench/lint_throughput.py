#!/usr/bin/env python3
"""Lint speed on a real corpus, each figure against its baseline measured in the same run: the Python sources of
the `transformers` wheel (~2,900 files, 1.2M lines).

    python3 bench/lint_throughput.py [--version 5.23.0] [--jobs N] [--quick] [--skip cold|small|slope] [--check]
                                     [--json OUT]

Downloads the wheel once with pip (into bench/.corpus/, which git ignores) and ruff with pip the same way, then
measures, thunder-lint always as the real CLI in a fresh process (bytecode compiled first, as an installed
package has it):
  1. cold: ``thunder-lint --no-cache`` on the corpus, against ``ruff check --select ALL --no-cache`` on it (and a
     bare single-process ``ast.parse`` loop, the parser's own floor);
  2. warm: the same tree again with its cache filled (nothing changed);
  3. start-up: a 4-file tree (four mid-sized files of the corpus), against ruff on it and ``python3 -c pass`` (the
     interpreter's own start, the floor of any Python linter): medians of alternated runs;
  4. the slope: 1x, 2x and 4x copies of a slice of the corpus (every 10th file), cold: seconds per 1,000 lines
     at each size and the least-squares line through the three (time = a + b * lines); linear when the time per
     1,000 lines at 4x is within 1.25x of 1x.
``--quick`` (CI): the slice instead of the whole corpus for 1-2, and copies of a smaller slice (every 40th file)
for the slope. Targets: cold <= 1.0x ruff, warm <= 0.3 s (on the whole corpus), the 4-file tree <= 2x ruff, linear.
``--check`` exits 1 when one is missed. Timings on a shared machine vary with its load: compare within a run.
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
RUFF_TARGET = 1.0  # cold, as a multiple of ruff --select ALL
WARM_TARGET_S = 0.3
SMALL_TARGET = 2.0  # the 4-file tree, as a multiple of ruff
LINEAR_TARGET = 1.25  # seconds per 1,000 lines at 4x over 1x
SLICE_EVERY, QUICK_SLICE_EVERY = 10, 40
SMALL_REPEAT = 7
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


def run_cli(src: Path, cache_dir: Path | None, jobs: int | None, out_json: Path) -> tuple[float, float]:
    """One thunder-lint run in a fresh process (``cache_dir`` None: ``--no-cache``); returns (wall seconds, CPU
    seconds of it and its workers)."""
    cmd = [sys.executable, "-m", "analyzer.cli", str(src), "--format", "json", "--output-file", str(out_json),
           "--exit-zero", "--quiet"]
    cmd += ["--no-cache"] if cache_dir is None else ["--cache-dir", str(cache_dir)]
    if jobs:
        cmd += ["-j", str(jobs)]
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"thunder-lint failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return elapsed, _children_cpu() - cpu


def compile_bytecode() -> None:
    """The package's bytecode, as pip compiles it at install (PYTHONDONTWRITEBYTECODE would leave every run
    compiling ~80 modules from source: 0.2 s of CPU that no installed copy pays)."""
    import compileall

    for package in ("analyzer", "rules"):
        compileall.compile_dir(str(REPO / package), quiet=2)


def slice_of(files: list[Path], root: Path, every: int, dest: Path) -> list[Path]:
    """Every ``every``-th file of ``files`` (sorted), copied under ``dest`` with its path below ``root``."""
    out = []
    for i, p in enumerate(files):
        if i % every == every - 1:
            target = dest / p.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            out.append(target)
    return out


def small_tree(files: list[Path], root: Path, dest: Path) -> Path:
    """Four mid-sized files of the corpus (the four nearest its median size), in a folder of their own."""
    by_size = sorted(files, key=lambda p: (p.stat().st_size, str(p)))
    mid = len(by_size) // 2
    for p in by_size[mid - 2: mid + 2]:
        target = dest / p.relative_to(root).as_posix().replace("/", "__")
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    return dest


def python_start() -> float:
    """Wall seconds of ``python3 -c pass``: the floor of any run of a Python linter."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], cwd=REPO, capture_output=True)
    return time.perf_counter() - start


def median(values: list[float]) -> float:
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares ``y = a + b * x``: (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def count_lines(files: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in files)


def sorted_findings(path: Path) -> list[str]:
    return sorted(json.dumps(d, sort_keys=True) for d in json.loads(path.read_text()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default=DEFAULT_VERSION, help="transformers version to download")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--jobs", "-j", type=int, default=None, help="passed to thunder-lint -j (default: its own choice)")
    ap.add_argument("--quick", action="store_true", help="CI: a slice of the corpus, a smaller slope")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--src", type=Path, help="lint this folder instead of the transformers corpus")
    ap.add_argument("--skip", action="append", default=[], choices=("cold", "small", "slope"),
                    help="leave a measurement out (repeatable)")
    args = ap.parse_args(argv)

    src = args.src.resolve() if args.src else fetch_corpus(args.corpus_dir, args.version)
    all_files = python_files(src)
    if not all_files:
        sys.exit(f"no .py files under {src}")
    ruff = ruff_binary(args.corpus_dir)
    compile_bytecode()
    figures: dict = {"version": args.version, "quick": args.quick}
    met: dict[str, bool] = {}
    print(f"cores available: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}, "
          f"thunder-lint jobs: {args.jobs or 'its default'}; load average at the start: {_load():.1f}")

    with tempfile.TemporaryDirectory(prefix="thunder-lint-bench-") as tmp_name:
        tmp = Path(tmp_name)
        corpus, files = src, all_files
        if args.quick:
            corpus = tmp / "slice"
            files = slice_of(all_files, src, SLICE_EVERY, corpus)

        if "cold" not in args.skip:
            lines = count_lines(files)
            base_s, base_cpu, _ = baseline_ast_parse(files)
            out, cache = tmp / "out.json", tmp / "cache"
            cold_s, cold_cpu = run_cli(corpus, None, args.jobs, out)
            findings = sorted_findings(out)
            fill_s, fill_cpu = run_cli(corpus, cache, args.jobs, out)  # (fills the cache for the warm run)
            warm_s, warm_cpu = run_cli(corpus, cache, args.jobs, out)
            if sorted_findings(out) != findings:
                sys.exit("the warm (cached) run reported different findings from the cold run")
            ruff_s, ruff_cpu = run_ruff(ruff, corpus, args.jobs)
            print(f"\ncorpus: {'a 1/%d slice of ' % SLICE_EVERY if args.quick else ''}transformers {args.version}: "
                  f"{len(files):,} files, {lines:,} lines")
            print(f"{'run':<44} {'seconds':>8} {'CPU s':>7} {'vs ruff':>8} {'vs ast.parse':>13}")
            for label, sec, cpu in ((f"ruff {RUFF_VERSION} check --select ALL --no-cache", ruff_s, ruff_cpu),
                                    ("ast.parse loop (1 process)", base_s, base_cpu),
                                    ("thunder-lint --no-cache (cold)", cold_s, cold_cpu),
                                    ("thunder-lint, empty cache (filling it)", fill_s, fill_cpu),
                                    ("thunder-lint, cache filled (warm)", warm_s, warm_cpu)):
                print(f"{label:<44} {sec:>8.2f} {cpu:>7.2f} {sec / ruff_s:>7.2f}x {sec / base_s:>12.2f}x")
            by_code = Counter(json.loads(d)["code"] for d in findings)
            print("findings: " + (", ".join(f"{c} {k}" for c, k in sorted(by_code.items())) or "none"))
            figures.update(files=len(files), lines=lines, ruff_s=ruff_s, ruff_cpu_s=ruff_cpu, ast_parse_s=base_s,
                           cold_s=cold_s, cold_cpu_s=cold_cpu, fill_s=fill_s, warm_s=warm_s, warm_cpu_s=warm_cpu,
                           cold_vs_ruff=cold_s / ruff_s, cold_cpu_vs_ruff=cold_cpu / ruff_cpu,
                           findings=dict(by_code))
            met["cold <= %.1fx ruff" % RUFF_TARGET] = cold_s <= RUFF_TARGET * ruff_s
            if not args.quick:
                met["warm <= %.1f s" % WARM_TARGET_S] = warm_s <= WARM_TARGET_S

        if "small" not in args.skip:
            tree = small_tree(all_files, src, tmp / "small")
            small_files = python_files(tree)
            ours, theirs, ours_cpu, theirs_cpu, bare = [], [], [], [], []
            for _ in range(SMALL_REPEAT):  # alternated: a change of load hits all alike
                s, c = run_cli(tree, None, args.jobs, tmp / "small.json")
                ours.append(s)
                ours_cpu.append(c)
                s, c = run_ruff(ruff, tree, args.jobs)
                theirs.append(s)
                theirs_cpu.append(c)
                bare.append(python_start())
            o, t, p = median(ours), median(theirs), median(bare)
            print(f"\n4-file tree ({count_lines(small_files):,} lines), medians of {SMALL_REPEAT} alternated runs: "
                  f"thunder-lint --no-cache {o:.3f} s ({median(ours_cpu):.3f} s CPU), ruff {t:.3f} s "
                  f"({median(theirs_cpu):.3f} s CPU): {o / t:.2f}x; the interpreter alone (`python3 -c pass`) "
                  f"{p:.3f} s = {p / t:.2f}x ruff")
            figures.update(small_s=o, small_ruff_s=t, small_vs_ruff=o / t, small_cpu_s=median(ours_cpu),
                           small_ruff_cpu_s=median(theirs_cpu), python_start_s=p)
            met["4-file tree <= %.0fx ruff" % SMALL_TARGET] = o <= SMALL_TARGET * t

        if "slope" not in args.skip:
            every = QUICK_SLICE_EVERY if args.quick else SLICE_EVERY
            one = tmp / "slope" / "copy1"
            base = slice_of(all_files, src, every, one)
            base_lines = count_lines(base)
            rows = []
            print(f"\nslope: copies of every {every}th file ({len(base)} files, {base_lines:,} lines), cold "
                  f"(--no-cache), each size a fresh tree")
            print(f"{'copies':>6} {'files':>7} {'lines':>10} {'seconds':>8} {'CPU s':>7} {'s per 1k lines':>15}")
            for k in (1, 2, 4):
                tree = tmp / "slope" / f"x{k}"
                for i in range(k):
                    shutil.copytree(one, tree / f"copy{i + 1}")
                sec, cpu = run_cli(tree, None, args.jobs, tmp / "slope.json")
                rows.append((k, base_lines * k, sec, cpu))
                print(f"{k:>5}x {len(base) * k:>7,} {base_lines * k:>10,} {sec:>8.2f} {cpu:>7.2f} "
                      f"{sec / (base_lines * k / 1000):>15.4f}")
                shutil.rmtree(tree)
            a, b = line_fit([r[1] for r in rows], [r[2] for r in rows])
            growth = (rows[-1][2] / rows[-1][1]) / (rows[0][2] / rows[0][1])
            print(f"fit: seconds = {a:.2f} + {b * 1000:.4f} per 1,000 lines; per-line time at 4x / 1x: {growth:.2f}")
            figures.update(slope=[{"copies": k, "lines": n, "s": sec, "cpu_s": cpu} for k, n, sec, cpu in rows],
                           slope_fit_intercept_s=a, slope_fit_s_per_1k_lines=b * 1000, slope_growth=growth)
            met["linear (4x/1x per line <= %.2f)" % LINEAR_TARGET] = growth <= LINEAR_TARGET

    figures["load_average_end"] = _load()
    print(f"\nload average at the end: {figures['load_average_end']:.1f} (other work on the machine slows every row; "
          "compare within one run)")
    print("targets: " + "; ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in met.items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(met.values()) or not args.check else 1


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


if __name__ == "__main__":
    sys.exit(main())

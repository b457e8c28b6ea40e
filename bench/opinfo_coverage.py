"""Coverage of torch's OpInfo database by compiler.jit (issue 9): ok / refused by reason / crash / wrong.

For each dtype, every op of `op_db` with CPU support for it, up to --per-op samples each, jitted and
called twice against eager (tests/compiler/opinfo_db.py says how a sample is judged). The baseline is
eager in the same run: the percentages are of the samples eager runs. --grad adds the gradient pass
(float dtypes, ops with supports_autograd). The "chain" line feeds all samples of an op through one jitted
function (stale cached traces show as wrong); --no-chain skips it.

    python3 bench/opinfo_coverage.py [--dtypes float32,bfloat16,int64] [--per-op 8] [--ops add,mul]
                                     [--grad] [--top 15] [--list crash,wrong] [--json out.json]
                                     [--cache "symbolic values"] [--every N [--offset K]] [--progress] [--no-chain]

--every N runs every Nth op (a representative subset when the whole database takes too long; the op list
is printed so both modes can be run on the same subset); --progress prints each op's time to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "compiler"))

import torch  # noqa: E402

import opinfo_db as db  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="float32,bfloat16,int64")
    ap.add_argument("--per-op", type=int, default=8)
    ap.add_argument("--ops", default=None, help="comma-separated op names (default: all)")
    ap.add_argument("--grad", action="store_true")
    ap.add_argument("--no-inplace", action="store_true")
    ap.add_argument("--no-chain", action="store_true", help="skip feeding all samples of an op to one jitted function")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--list", default="crash,wrong", help="outcomes whose samples are listed one per line")
    ap.add_argument("--json", default=None)
    ap.add_argument("--cache", default="constant values", choices=("constant values", "symbolic values"))
    ap.add_argument("--every", type=int, default=1, help="run every Nth op only")
    ap.add_argument("--offset", type=int, default=0, help="with --every: start at this op")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--executor", default=None, choices=("inductor", "aot_eager"),
                    help="jit with executors=(EXECUTOR, 'torch'): the functional, fused path (aot_eager: torch.compile's "
                         "graph capture without code generation)")
    ap.add_argument("--inplace-only", action="store_true", help="only the ops' in-place variants")
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    names = set(a.ops.split(",")) if a.ops else None
    db.CACHE = a.cache
    if a.executor is not None:
        from compiler.executors.inductor import InductorExecutor

        db.EXECUTORS = (InductorExecutor(backend=a.executor), "torch")
    print(f"cache={a.cache!r}" + (f", executors=({a.executor!r}, 'torch')" if a.executor else ""))
    report = {}
    for dname in a.dtypes.split(","):
        dtype = getattr(torch, dname)
        tally = db.Tally()
        t0 = time.perf_counter()
        ops = db.ops_for(dtype, names)[a.offset::a.every]
        if a.inplace_only:
            ops = [op for op in ops if op.inplace_variant is not None]
        if a.every > 1:
            print(f"{dname}: every {a.every}th op from op {a.offset}: {len(ops)} ops")
        for k, op in enumerate(ops):
            t_op = time.perf_counter()
            db.run_op(op, dtype, tally, per_op=a.per_op, inplace=not a.no_inplace,
                      grad=a.grad and dtype.is_floating_point, chain=not a.no_chain, forward=not a.inplace_only)
            if a.progress:
                print(f"  [{k + 1}/{len(ops)}] {db.op_id(op)} {time.perf_counter() - t_op:.1f} s "
                      f"(total {time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        secs = time.perf_counter() - t0
        report[dname] = {}
        for variant in ("op", "inplace", "grad", "chain"):
            c = tally.counts(variant)
            n = sum(c.values())
            if not n:
                continue
            report[dname][variant] = dict(c)
            what = "ops, all samples of each through one jitted function" if variant == "chain" else \
                "samples eager runs (baseline)"
            print(f"{dname} {variant:8s}: {n} {what}; compiled: ok {c['ok']} "
                  f"({100 * c['ok'] / n:.1f}%), refused {c['refused']}, crash {c['crash']}, wrong {c['wrong']}")
        print(f"  ({secs:.0f} s)")
        for outcome in ("refused", "crash", "wrong"):
            reasons = sum((tally.reasons(outcome, v) for v in ("op", "inplace", "grad", "chain")), Counter())
            if reasons:
                print(f"  top {outcome}:")
                for reason, k in reasons.most_common(a.top):
                    print(f"    {k:5d}  {reason}")
        listed = set(a.list.split(",")) if a.list else set()
        for r in tally.results:
            if r.outcome in listed:
                print(f"  {r.outcome}: {r.key}: {r.reason}")
        report[dname]["results"] = [vars(r) for r in tally.results]
    if a.json:
        Path(a.json).write_text(json.dumps(report))


if __name__ == "__main__":
    main()

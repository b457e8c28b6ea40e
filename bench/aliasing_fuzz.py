"""Random aliasing programs (tests/compiler/aliasing_programs.py) through the functional path, against eager:
in-place ops, out= arguments, views of inputs and of intermediates returned, expanded, sliced and overlapping
inputs, tensors that require grad. Each program is called twice on fresh inputs and compared (values,
inputs left behind, memory shared among outputs and inputs, views, gradients, what a later write into each
output changes).

    python3 bench/aliasing_fuzz.py [--count N] [--start S] [--backend aot_eager|inductor]
                                   [--cache "constant values"|"symbolic values"] [--show]

Prints a line per program that is not the same as eager (with its source under --show), then counts:
same, wrong (silently different), crash (raised where eager runs), refused (a CompilerError), and the
reasons the functional path ran programs in eager order. Exit status 1 if any is wrong or crashed.
"""
from __future__ import annotations

import argparse
import collections
import re
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "compiler")))
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--cache", default="constant values")
    parser.add_argument("--default-path", action="store_true", help="the default executors instead (a baseline)")
    parser.add_argument("--show", action="store_true", help="print the source of each program that differs")
    parser.add_argument("--nvfuser-definitions", action="store_true",
                        help="instead: build each program's fusion regions as nvFuser definitions (needs nvfuser_direct; "
                             "no GPU: definitions build on CPU, nothing executes)")
    opts = parser.parse_args()
    warnings.simplefilter("ignore")
    import aliasing_programs as ap
    from compiler.executors.inductor import InductorExecutor

    if opts.nvfuser_definitions:
        return nvfuser_definitions(ap, opts)

    executors = None if opts.default_path else (InductorExecutor(backend=opts.backend), "torch")
    counts, fallbacks = collections.Counter(), collections.Counter()
    start = time.perf_counter()
    for seed in range(opts.start, opts.start + opts.count):
        program = ap.random_program(seed)
        outcome = ap.check_program(program, executors, cache=opts.cache)
        if outcome.kind in ("crash", "refused", "wrong") and executors is not None:
            # the default path's answer: what both paths get wrong or refuse is not the functional path's
            default = ap.check_program(program, None, cache=opts.cache)
            if default.kind == outcome.kind or outcome.kind != "wrong" and default.kind in ("crash", "refused"):
                outcome.kind += " (default path too)"
        counts[outcome.kind] += 1
        if outcome.fallback:
            fallbacks[re.sub(r"\b[tfc]\d+\b", "_", outcome.fallback.split(" (")[0])[:100]] += 1
        if outcome.kind not in ("same", "eager error"):
            print(f"{outcome.kind.upper()} seed {seed}: {outcome.detail}", flush=True)
            if opts.show:
                print(program.source, flush=True)
    took = time.perf_counter() - start
    print(f"\n{opts.count} programs (seeds {opts.start}..{opts.start + opts.count - 1}) through "
          f"{'the default executors' if executors is None else f'executors=({executors[0].name!r}, torch)'}, "
          f"cache={opts.cache!r}, in {took:.0f} s:")
    for kind, n in counts.most_common():
        print(f"  {n:5d} {kind}")
    if fallbacks:
        print("ran in eager order (functional path fallbacks), by reason:")
        for reason, n in fallbacks.most_common():
            print(f"  {n:5d} {reason}")
    return 1 if counts["wrong"] or counts["crash"] or counts["wrong (default path too)"] else 0


def nvfuser_definitions(ap, opts) -> int:
    """Each program's functional trace fused for nvFuser; every region built as a FusionDefinition (each prim
    through its translator) or refused with a reason. A crash is a translator or plan bug."""
    import compiler
    from compiler.executors.nvfuser import NvFuserExecutor, Refused, build_definition
    from compiler.passes.dce import dce
    from compiler.passes.functionalize import NotFunctional, functionalize
    from compiler.passes.fusion import fuse

    counts, reasons = collections.Counter(), collections.Counter()
    for seed in range(opts.start, opts.start + opts.count):
        program = ap.random_program(seed)
        jfn = compiler.jit(program.fn, cache=opts.cache)
        try:
            jfn(*program.make()[0])
            trace = compiler.last_traces(jfn)[-1]
            fused = fuse(dce(functionalize(trace)), NvFuserExecutor())
        except NotFunctional:
            counts["programs in eager order"] += 1
            continue
        except Exception:  # noqa: BLE001 - eager raised, a refusal, a segmented trace: nothing to build
            counts["programs not traced"] += 1
            continue
        counts["programs"] += 1
        for region in (b for b in fused.bsyms if getattr(b.symbol, "region", None) is not None):
            try:
                build_definition(region)
                counts["regions built"] += 1
            except Refused as e:
                counts["regions refused"] += 1
                reasons[str(e)[:90]] += 1
            except Exception as e:  # noqa: BLE001
                counts["regions crashed"] += 1
                print(f"CRASH seed {seed}: {type(e).__name__}: {e}", flush=True)
    print(f"{opts.count} programs through nvFuser's translator:", dict(counts))
    for reason, n in reasons.most_common(10):
        print(f"  {n:5d} refused: {reason}")
    return 1 if counts["regions crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())

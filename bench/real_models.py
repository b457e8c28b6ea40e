"""The compiler on real models: transformers families built from small configs (tests/compiler/real_models.py; no
weights, no network), called as users call them, forward and a training step, in each cache mode and through
`executors=("inductor", "torch")`. Each row: equal to eager (every call), cache hits on calls 2..n, segments,
fusion regions, and the median time of a call against eager's measured in the same run (ratio). Then the hit
overhead of a 2-layer Llama forward with the default executors, eager and jitted calls interleaved.

    PYTHONPATH=$PWD python3 bench/real_models.py                      # every family, mode, cache, inductor
    PYTHONPATH=$PWD python3 bench/real_models.py --families llama,gpt2 --no-inductor --timed 20

Mode "generate" (decoder families): each call of the judge is a generation (a prompt, then GENERATED decode
steps with the returned DynamicCache passed back), every generation from a prompt of the same length: the later
ones run every step from the cache. torchvision's resnet, vit and convnext come from their constructors out of its
pure-Python code (its compiled operators need the CUDA build of torch; tests/compiler/real_models.py says how)."""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tests", "compiler")))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))

import torch  # noqa: E402

import compiler  # noqa: E402
import real_models as rm  # noqa: E402

CACHES = ("constant values", "symbolic values", "no caching")


def llama_hit_overhead(n: int = 200) -> tuple[float, float]:
    """(eager, jitted) median seconds of a 2-layer Llama forward on a cache hit, calls interleaved so both see
    the same machine load."""
    model = rm.build("llama").eval()
    jm = compiler.jit(model)
    (ids,), _ = rm.inputs("llama", 0)
    eager, jit = [], []
    with torch.no_grad():
        for _ in range(3):
            jm(ids), model(ids)
        for _ in range(n):
            start = time.perf_counter()
            model(ids)
            eager.append(time.perf_counter() - start)
            start = time.perf_counter()
            jm(ids)
            jit.append(time.perf_counter() - start)
    assert compiler.cache_misses(jm) == 1, "the Llama forward did not hit the cache"
    return sorted(eager)[n // 2], sorted(jit)[n // 2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(rm.FAMILIES + rm.TORCHVISION_FAMILIES))
    ap.add_argument("--modes", default="forward,train,generate", help="generate: decoder families only")
    ap.add_argument("--caches", default=",".join(CACHES))
    ap.add_argument("--no-inductor", action="store_true", help="skip the executors=('inductor', 'torch') rows")
    ap.add_argument("--calls", type=int, default=3, help="calls checked against eager")
    ap.add_argument("--timed", type=int, default=10, help="calls timed (each of eager and jitted)")
    ap.add_argument("--warm", type=int, default=70,
                    help="untimed calls before the timed ones, inductor rows only: their steady state (a region "
                         "called compiler.executors.inductor.TIER_UP_CALLS times is compiled again)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier timings on a shared machine)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: each call's CPU time (with --threads 1, what other processes take is left out)")
    args = ap.parse_args(argv)
    if args.clock == "cpu":
        rm.CLOCK[0] = time.process_time
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    runs = [(c, None) for c in args.caches.split(",") if c in CACHES]  # (--caches none: inductor rows only)
    if not args.no_inductor:
        runs.append(("constant values", ("inductor", "torch")))
    rows, start = [], time.perf_counter()
    print(f"{'family':9} {'mode':8} {'cache':15} {'executors':16} {'eager':6} hits/calls segs regions "
          f"{'eager ms':>8} {'jit ms':>8} {'ratio':>6}")
    for name in args.families.split(","):
        for mode in args.modes.split(","):
            if mode == "generate" and name not in rm.DECODERS:
                continue
            for cache, executors in runs:
                r = rm.check(name, mode, cache=cache, executors=executors, calls=args.calls, timed=args.timed,
                             warm=args.warm if executors else 0)
                rows.append(r)
                ratio = f"{r.jit_s / r.eager_s:6.2f}" if r.eager_s else "     -"
                print(f"{name:9} {mode:8} {cache:15} {','.join(executors or ('default',)):16} "
                      f"{'yes' if r.error is None else 'NO':6} {r.hits:>4}/{r.hits + r.misses:<5} {r.segments:>4} "
                      f"{r.regions:>7} {r.eager_s * 1e3:8.2f} {r.jit_s * 1e3:8.2f} {ratio}"
                      + (f"  {r.error}" if r.error else ""), flush=True)
    ok = [r for r in rows if r.error is None]
    families_ok = {r.family for r in rows} - {r.family for r in rows if r.error is not None}
    per_call = lambda r: 1 + rm.GENERATED if r.mode == "generate" else 1  # noqa: E731 (model calls per judge call)
    hit_all = [r for r in ok if r.cache != "no caching" and r.hits == (args.calls - 1) * per_call(r)]
    print(f"\n{len(ok)}/{len(rows)} runs equal to eager; families with every run equal: {len(families_ok)}/"
          f"{len({r.family for r in rows})}; cached runs hitting on calls 2..{args.calls}: {len(hit_all)}/"
          f"{len([r for r in ok if r.cache != 'no caching'])}; {time.perf_counter() - start:.0f} s")
    fused = [r for r in ok if r.executors and r.eager_s]
    if fused:
        print("inductor (hit, median): " + ", ".join(f"{r.family}/{r.mode} {r.regions} regions "
                                                    f"{r.jit_s / r.eager_s:.2f}x" for r in fused))
    if "llama" in args.families.split(","):
        eager, jit = llama_hit_overhead()
        print(f"2-layer Llama forward, cache hit, default executors: eager {eager * 1e3:.2f} ms, jitted "
              f"{jit * 1e3:.2f} ms: {jit / eager:.2f}x eager")
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Cache-hit call overhead and first-call time of compiler.jit over eager PyTorch.

Workloads: a 10-op elementwise function on 8x8 tensors and a small MLP module (CPU). Overhead is the
per-call time of the jitted callable minus eager's, both measured in this one run (best of repeats,
eager and jitted loops interleaved).
Targets (issue 3): overhead <= 15 us per call, first call (trace + passes + build + run) < 0.15 s.
It also prints the first call through the interpreting front end (compiler.jit's default) against the
native one, for these two and for the two-layer GPT model of tests/compiler/test_gpt_model.py (issue 4).
Issue 14: the cache-hit overhead under cache="symbolic values" next to "constant values" (target: within
2x), and the first call in a fresh process under both caches (target 0.3 s; `import compiler` timed apart;
also without compiler/meta/cache.py, the same run's baseline for it), each against
eager's first call in a fresh process and torch.compile's (inductor, empty cache dir), wall and CPU
seconds (CPU time is what compares when other processes load the machine).

    python3 bench/jit_overhead.py [--repeat 7] [--number 2000] [--cold-repeat 3] [--no-cold]
                                  [--no-torch-compile] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import compiler  # noqa: E402
from compiler.runtime.cache import NativeFrontendWarning  # noqa: E402

OVERHEAD_TARGET_US = 15.0
FIRST_CALL_TARGET_S = 0.15
COLD_FIRST_CALL_TARGET_S = 0.3  # issue 14: first call in a fresh process
SYMBOLIC_OVERHEAD_RATIO_TARGET = 2.0  # issue 14: symbolic values' cache-hit overhead vs constant values'
ROOT = str(Path(__file__).resolve().parents[1])


def elementwise10(x, y):
    a = x + y
    b = a * x
    c = b - y
    d = torch.sin(c)
    e = d * 2.0
    f = torch.exp(e)
    g = f / (x.abs() + 1)
    h = torch.tanh(g)
    return torch.relu(h + c)


def make_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 16))


def _loop_us(fn, args, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number * 1e6


def per_call_us(eager_fn, jitted_fn, args, number: int, repeat: int) -> tuple[float, float]:
    """Best-of-`repeat` per-call times, eager and jitted loops interleaved so that load from other
    processes on the machine hits both alike."""
    return tuple(per_call_us_many([eager_fn, jitted_fn], args, number, repeat))


def per_call_us_many(fns, args, number: int, repeat: int) -> list[float]:
    for _ in range(50):
        for fn in fns:
            fn(*args)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], _loop_us(fn, args, number))
    return best


def symbolic_jit(fn):
    """compiler.jit(fn, cache="symbolic values") called once, or the reason it is not available here."""
    try:
        jfn = compiler.jit(fn, cache="symbolic values")
        return jfn, None
    except NotImplementedError as e:
        return None, str(e).splitlines()[0]


def symbolic_overheads(cases, x, y, number: int, repeat: int) -> list[dict]:
    """Cache-hit overhead under "symbolic values" next to "constant values", the three loops interleaved.
    The identity function's row is the fixed cost of a cache hit (guards or constraints, and the call)."""
    ident = lambda a, b: a  # noqa: E731
    rows = []
    for name, _, eager_fn, args in [*cases, ("identity fn, 2 tensors", None, ident, (x, y))]:
        n = number * 5 if eager_fn is ident else number
        const = compiler.jit(eager_fn)
        const(*args)
        sym, why = symbolic_jit(eager_fn)
        row = {"case": name, "symbolic_available": sym is not None}
        if sym is None:
            eager_us, const_us = per_call_us(eager_fn, const, args, n, repeat)
            row.update(eager_us=eager_us, constant_us=const_us, constant_overhead_us=const_us - eager_us,
                       not_available=why)
        else:
            sym(*args)
            out_s, out_e = sym(*args), eager_fn(*args)
            assert torch.allclose(out_s, out_e), f"{name}: symbolic values result differs from eager"
            eager_us, const_us, sym_us = per_call_us_many([eager_fn, const, sym], args, n, repeat)
            assert compiler.cache_misses(sym) == 1, "benchmark calls must all be cache hits"
            c_over, s_over = const_us - eager_us, sym_us - eager_us
            # An overhead within timing noise of zero (the MLP's) has no meaningful ratio.
            ratio = s_over / c_over if c_over >= 1.0 else None
            row.update(eager_us=eager_us, constant_us=const_us, symbolic_us=sym_us, constant_overhead_us=c_over,
                       symbolic_overhead_us=s_over, ratio=ratio,
                       ok=None if ratio is None else ratio <= SYMBOLIC_OVERHEAD_RATIO_TARGET)
        rows.append(row)
    return rows


def first_call_s(make_fn, args, repeat: int, frontend=None) -> float:
    times = []
    for _ in range(repeat):
        with warnings.catch_warnings():  # (the native front end's NativeFrontendWarning: known, timed on purpose)
            warnings.simplefilter("ignore", NativeFrontendWarning)
            jfn = compiler.jit(make_fn(), frontend=frontend)
        start = time.perf_counter()
        jfn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def frontend_costs(cases, repeat: int) -> list[dict]:
    """First call through the interpreting front end (the default) against the native one (the same
    tracing, the user's Python run natively over proxies), both measured here; plus the GPT model of
    tests/compiler/test_gpt_model.py, the compiler-core issue's model."""
    from compiler.frontend.native import native_frontend

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compiler"))
    from test_gpt_model import make_model, tokens

    gpt = [("gpt 2 layers, 2x12 tokens", lambda: make_model(torch.float32), None, (tokens(),))]
    rows = []
    for name, make_fn, _, args in [*cases, *gpt]:
        interpreted = first_call_s(make_fn, args, repeat)
        native = first_call_s(make_fn, args, repeat, frontend=native_frontend)
        rows.append({"case": name, "interpreted_s": interpreted, "native_s": native, "ratio": interpreted / native})
    return rows


# Fresh-process measurements. Each prints one JSON line; wall and CPU seconds (process_time: every thread).
_FRESH = """
import json, sys, time
w0, c0 = time.perf_counter(), time.process_time()
import torch
torch.set_num_threads(1)
sys.path.insert(0, {root!r})
{setup}
w1, c1 = time.perf_counter(), time.process_time()
import compiler
w2, c2 = time.perf_counter(), time.process_time()
from bench.jit_overhead import workload
make_fn, args = workload({case!r})
fn = {build}
loaded = set(sys.modules)
w3, c3 = time.perf_counter(), time.process_time()
fn(*args)  # grad mode on, as a fresh script starts
w4, c4 = time.perf_counter(), time.process_time()
import types  # modules the call executed (compiler/meta/lazy_sympy.py leaves some in sys.modules unexecuted)
ran = [m for m in set(sys.modules) - loaded if type(sys.modules[m]) is types.ModuleType]
print(json.dumps({{"import_torch_s": w1 - w0, "import_compiler_s": w2 - w1, "import_compiler_cpu_s": c2 - c1,
                  "first_call_s": w4 - w3, "first_call_cpu_s": c4 - c3,
                  "torch_dynamo_imported": "torch._dynamo" in sys.modules,
                  "modules_executed": len(ran), "sympy_executed": any(m == "sympy" for m in ran)}}))
"""
_BUILDS = {"jit": "compiler.jit(make_fn())", "jit symbolic": "compiler.jit(make_fn(), cache='symbolic values')",
           "eager": "make_fn()", "torch.compile": "torch.compile(make_fn())"}


def workload(case: str):
    """(a factory of the function or module, its inputs) for a case name; used by the fresh processes."""
    torch.manual_seed(0)
    if case == "elementwise10 8x8":
        return (lambda: elementwise10), (torch.randn(8, 8), torch.randn(8, 8))
    if case == "mlp 8x16 (3 Linear)":
        return make_mlp, (torch.randn(8, 16),)
    if case == "gpt 2 layers, 2x12 tokens":
        sys.path.insert(0, str(Path(ROOT) / "tests" / "compiler"))
        from test_gpt_model import make_model, tokens

        return (lambda: make_model(torch.float32)), (tokens(),)
    raise ValueError(case)


def fresh_process(case: str, build: str, preimport_dynamo: bool = False, meta_cache: bool = True) -> dict:
    setup = ["import torch._dynamo"] if preimport_dynamo else []
    if not meta_cache:  # the same-run baseline for compiler/meta/cache.py (it imports compiler before the clock)
        setup.append("from compiler.meta import cache as meta_cache; meta_cache.enabled = False")
    code = _FRESH.format(root=ROOT, case=case, build=_BUILDS[build], setup="; ".join(setup))
    env = dict(os.environ)
    tmp = None
    if build == "torch.compile":  # cold: an empty inductor cache (its compiled kernels are cached on disk)
        import tempfile

        tmp = tempfile.TemporaryDirectory(prefix="jit_overhead_inductor_")
        env["TORCHINDUCTOR_CACHE_DIR"] = tmp.name
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_first_call_s(preimport_dynamo: bool) -> float:
    """The elementwise case's first call in a fresh process (kept for callers of the earlier bench)."""
    return fresh_process("elementwise10 8x8", "jit", preimport_dynamo)["first_call_s"]


def cold_rows(case_names, repeat: int, with_torch_compile: bool) -> list[dict]:
    """Per case: medians over `repeat` fresh processes of import compiler, jit's first call and eager's
    first call; jit's first call with torch._dynamo imported before the clock (what the lazy import saves);
    torch.compile's first call with an empty inductor cache (once: it takes seconds)."""
    rows = []
    for case in case_names:
        jit, sym, eager, uncached = [], [], [], []
        for _ in range(repeat):  # interleaved, so that load from other processes hits them alike
            jit.append(fresh_process(case, "jit"))
            sym.append(fresh_process(case, "jit symbolic"))
            eager.append(fresh_process(case, "eager"))
            uncached.append(fresh_process(case, "jit", meta_cache=False))
        med = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
        row = {"case": case, "import_compiler_s": med(jit, "import_compiler_s"),
               "import_compiler_cpu_s": med(jit, "import_compiler_cpu_s"),
               "jit_first_call_s": med(jit, "first_call_s"), "jit_first_call_cpu_s": med(jit, "first_call_cpu_s"),
               "symbolic_first_call_s": med(sym, "first_call_s"),
               "symbolic_first_call_cpu_s": med(sym, "first_call_cpu_s"),
               "eager_first_call_s": med(eager, "first_call_s"),
               "eager_first_call_cpu_s": med(eager, "first_call_cpu_s"),
               "jit_imported_torch_dynamo": any(r["torch_dynamo_imported"] for r in jit + sym),
               "jit_first_call_modules_executed": med(jit, "modules_executed"),
               "jit_first_call_executed_sympy": any(r["sympy_executed"] for r in jit + sym),
               "no_meta_cache_first_call_s": med(uncached, "first_call_s"),
               "no_meta_cache_first_call_cpu_s": med(uncached, "first_call_cpu_s")}
        row["ratio_vs_eager"] = row["jit_first_call_s"] / row["eager_first_call_s"]
        row["ratio_vs_target"] = row["jit_first_call_s"] / COLD_FIRST_CALL_TARGET_S
        row["cpu_ratio_vs_target"] = row["jit_first_call_cpu_s"] / COLD_FIRST_CALL_TARGET_S
        row["symbolic_cpu_ratio_vs_target"] = row["symbolic_first_call_cpu_s"] / COLD_FIRST_CALL_TARGET_S
        row["ok"] = row["jit_first_call_s"] <= COLD_FIRST_CALL_TARGET_S
        pre = fresh_process(case, "jit", preimport_dynamo=True)
        row["jit_first_call_dynamo_preimported_s"] = pre["first_call_s"]
        row["jit_first_call_dynamo_preimported_cpu_s"] = pre["first_call_cpu_s"]
        if with_torch_compile and case == "elementwise10 8x8":
            tc = fresh_process(case, "torch.compile")
            row["torch_compile_first_call_s"] = tc["first_call_s"]
            row["torch_compile_first_call_cpu_s"] = tc["first_call_cpu_s"]
            row["ratio_vs_torch_compile"] = row["jit_first_call_s"] / tc["first_call_s"]
        rows.append(row)
    return rows


def _print_cold(rows) -> None:
    print(f"\nfirst call in a fresh process (median of fresh processes; wall s, CPU s in brackets), "
          f"target {COLD_FIRST_CALL_TARGET_S} s")
    print(f"{'case':26} {'import compiler':>16} {'jit first call':>16} {'eager first call':>17} {'vs eager':>9} "
          f"{'vs target':>10} {'CPU vs target':>14}  target")
    for r in rows:
        print(f"{r['case']:26} {r['import_compiler_s']:7.3f} ({r['import_compiler_cpu_s']:5.3f}) "
              f"{r['jit_first_call_s']:7.3f} ({r['jit_first_call_cpu_s']:5.3f}) "
              f"{r['eager_first_call_s']:8.4f} ({r['eager_first_call_cpu_s']:6.4f}) {r['ratio_vs_eager']:8.0f}x "
              f"{r['ratio_vs_target']:9.2f}x {r['cpu_ratio_vs_target']:13.2f}x  {'ok' if r['ok'] else 'MISSED'}"
              f"{'' if not r['jit_imported_torch_dynamo'] else '  (imported torch._dynamo)'}")
    print(f"{'cache=symbolic values':26} {'':16} {'jit first call':>16}")
    for r in rows:
        print(f"{r['case']:26} {'':16} {r['symbolic_first_call_s']:7.3f} ({r['symbolic_first_call_cpu_s']:5.3f}) "
              f"{'':17} {r['symbolic_first_call_s'] / r['eager_first_call_s']:8.0f}x "
              f"{r['symbolic_first_call_s'] / COLD_FIRST_CALL_TARGET_S:9.2f}x "
              f"{r['symbolic_cpu_ratio_vs_target']:13.2f}x  "
              f"{'ok' if r['symbolic_first_call_s'] <= COLD_FIRST_CALL_TARGET_S else 'MISSED'}")
    for r in rows:
        print(f"{r['case']}: jit first call without compiler/meta/cache.py (same run) "
              f"{r['no_meta_cache_first_call_s']:.3f} s ({r['no_meta_cache_first_call_cpu_s']:.3f} s CPU); with it / "
              f"without: {r['jit_first_call_cpu_s'] / r['no_meta_cache_first_call_cpu_s']:.2f}x CPU")
    for r in rows:
        print(f"{r['case']}: modules the jit first call imported: {r['jit_first_call_modules_executed']:.0f}"
              f"{' (sympy among them)' if r['jit_first_call_executed_sympy'] else ' (not sympy)'}")
        print(f"{r['case']}: jit first call with torch._dynamo imported before the clock "
              f"{r['jit_first_call_dynamo_preimported_s']:.3f} s ({r['jit_first_call_dynamo_preimported_cpu_s']:.3f} s CPU)")
        if "torch_compile_first_call_s" in r:
            print(f"{r['case']}: torch.compile (inductor, empty cache dir) first call "
                  f"{r['torch_compile_first_call_s']:.2f} s wall, {r['torch_compile_first_call_cpu_s']:.2f} s CPU of its "
                  f"own process (inductor compiles C++ in worker processes; includes its import of torch._dynamo); jit / torch.compile = {r['ratio_vs_torch_compile']:.3f}")


def _verdict(ok) -> str:
    return "n/a" if ok is None else "ok" if ok else "MISSED"


def _print_symbolic(rows) -> None:
    print(f"\ncache-hit overhead, symbolic values vs constant values (target: within "
          f"{SYMBOLIC_OVERHEAD_RATIO_TARGET:g}x)")
    for r in rows:
        if not r["symbolic_available"]:
            print(f"{r['case']:24} constant values {r['constant_overhead_us']:7.2f} us/call; symbolic values: "
                  f"NOT AVAILABLE in this checkout (compiler.jit raised NotImplementedError: {r['not_available']})")
            continue
        ratio = "n/a (constant overhead within noise)" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['case']:24} constant values {r['constant_overhead_us']:7.2f} us/call, symbolic values "
              f"{r['symbolic_overhead_us']:7.2f} us/call: {ratio}  {_verdict(r['ok'])}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cold", action="store_true", help="(the default now; kept for old command lines)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process first calls")
    ap.add_argument("--cold-repeat", type=int, default=3, help="fresh processes per case and build")
    ap.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile's cold first call")
    opts = ap.parse_args(argv)
    torch.set_num_threads(1)  # small tensors: keep the comparison about Python overhead, not threading
    load = os.getloadavg()

    x, y = torch.randn(8, 8), torch.randn(8, 8)
    mlp = make_mlp()
    inp = torch.randn(8, 16)
    cases = [
        ("elementwise10 8x8", lambda: elementwise10, elementwise10, (x, y)),
        ("mlp 8x16 (3 Linear)", lambda: make_mlp(), mlp, (inp,)),
    ]
    results = []
    with torch.no_grad():
        for name, make_fn, eager_fn, args in cases:
            jfn = compiler.jit(eager_fn)
            jfn(*args)
            out_j, out_e = jfn(*args), eager_fn(*args)
            assert torch.allclose(out_j, out_e), f"{name}: jitted result differs from eager"
            eager, jitted = per_call_us(eager_fn, jfn, args, opts.number, opts.repeat)
            assert compiler.cache_misses(jfn) == 1, "benchmark calls must all be cache hits"
            first = first_call_s(make_fn, args, max(3, opts.repeat // 2))
            results.append({"case": name, "eager_us": eager, "jit_us": jitted, "overhead_us": jitted - eager,
                            "ratio": jitted / eager, "first_call_s": first,
                            "ok": jitted - eager <= OVERHEAD_TARGET_US and first < FIRST_CALL_TARGET_S})
        symbolic = symbolic_overheads(cases, x, y, opts.number, opts.repeat)
    # The fixed cost of a cache hit (guards + call) without op timings' noise: an identity function.
    ident = lambda a, b: a  # noqa: E731
    jident = compiler.jit(ident)
    e_id, j_id = per_call_us(ident, jident, (x, y), opts.number * 5, opts.repeat)
    fixed = {"case": "identity fn, 2 tensors", "eager_us": e_id, "jit_us": j_id, "overhead_us": j_id - e_id}
    frontends = frontend_costs(cases, max(3, opts.repeat // 2))
    cold = None
    if not opts.no_cold:
        cold = cold_rows([c[0] for c in cases] + ["gpt 2 layers, 2x12 tokens"], opts.cold_repeat,
                         not opts.no_torch_compile)
    load_after = os.getloadavg()
    ok = (all(r["ok"] for r in results) and all(r.get("ok") is not False for r in symbolic)
          and all(r["ok"] for r in cold or []))
    if opts.json:
        print(json.dumps({"cases": results, "fixed_overhead": fixed, "frontends": frontends, "symbolic": symbolic,
                          "cold": cold, "load_average": [load, load_after]}, indent=2))
    else:
        print(f"load average (1, 5, 15 min) before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
              f"{os.cpu_count()} CPUs")
        print(f"{'case':24} {'eager us':>9} {'jit us':>9} {'overhead us':>12} {'ratio':>6} {'first call s':>13}  target")
        for r in results:
            print(f"{r['case']:24} {r['eager_us']:9.2f} {r['jit_us']:9.2f} {r['overhead_us']:12.2f} {r['ratio']:6.2f} "
                  f"{r['first_call_s']:13.4f}  {'ok' if r['ok'] else 'MISSED'}")
        print(f"targets: overhead <= {OVERHEAD_TARGET_US} us/call, first call < {FIRST_CALL_TARGET_S} s")
        print(f"fixed cache-hit cost (identity function, 2 tensor inputs): {fixed['overhead_us']:.2f} us/call")
        _print_symbolic(symbolic)
        print(f"\n{'first call, front end':26} {'interpreted s':>14} {'native s':>9} {'ratio':>6}")
        for r in frontends:
            print(f"{r['case']:26} {r['interpreted_s']:14.4f} {r['native_s']:9.4f} {r['ratio']:6.2f}")
        if cold:
            _print_cold(cold)
        print(f"\nload average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

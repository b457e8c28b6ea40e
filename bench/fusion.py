"""Fusion on CPU: the inductor executor against eager and against torch.compile of the same function.

One process, one thread (torch.set_num_threads(1)), interleaved rounds: each round times every variant,
the reported time is the median over rounds, and ratios are against eager measured in the same run.

- block: an elementwise-heavy block (GELU-tanh, SiLU, layer-norm arithmetic, residual) on 256x4096 float32;
  compiler.jit(executors=("inductor", "torch")) vs eager vs torch.compile (inductor) of the same function,
  and compiler.jit with the default torch executor.
- gpt: one training step (forward, loss, backward) of the two-layer GPT of tests/compiler/test_gpt_model.py.
- first calls: the time of the first call of each compiled variant (tracing + torch.compile's compilation).

- "jit inductor (dynamo per region)": the same regions called through torch.compile's dynamo on every call
  (the executor's path before regions went to the backend directly), as the baseline of that change.
- GPT baselines: "(AOTAutograd, split)" is the executor before per-prim VJPs (regions split by matmuls,
  each differentiated by torch.compile's AOTAutograd); "(VJP, split)" adds the VJP backward only; "jit
  inductor" also takes matmuls into regions (three regions for the model).

    python3 bench/fusion.py [--rounds 7] [--skip-gpt] [--skip-block] [--skip-torch-compile] [--clock cpu]

On CUDA (`--device cuda`, bench/fusion_cuda.py): the block at 256x4096 and 8192x8192 in float32 and bfloat16, and
a GPT block forward+backward, each through compiler.jit(executors=("nvfuser", "torch")) vs eager vs
torch.compile, with achieved bandwidth against the device's copy bandwidth measured in the same run:

    python3 bench/fusion.py --device cuda [--rounds 7] [--skip-gpt] [--skip-block] [--skip-torch-compile]
    python3 bench/fusion.py --device cuda --first-call VARIANT   (one cold first call in this fresh process)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "compiler")))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import compiler  # noqa: E402
from compiler.executors.inductor import InductorExecutor  # noqa: E402

PER_CALL_DYNAMO = InductorExecutor(direct=False)
# the GPT step's baselines: regions split by matmuls, differentiated by torch.compile's AOTAutograd (the
# executor before per-prim VJPs), and VJPs without matmuls in regions
AOT_AUTOGRAD_SPLIT = InductorExecutor(vjp=False, fuse_matmul=False)
VJP_SPLIT = InductorExecutor(fuse_matmul=False)


def block(x, r, w, b):
    h = F.gelu(x, approximate="tanh") * F.silu(r)
    mu = h.mean(-1, keepdim=True)
    d = h - mu
    var = (d * d).mean(-1, keepdim=True)
    return d * torch.rsqrt(var + 1e-5) * w + b + x


def timed_first(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


CLOCK = [time.perf_counter]  # --clock cpu: time.process_time, this process's CPU time (steadier on a shared machine)


def per_call(fn, args, iters):
    clock = CLOCK[0]
    start = clock()
    for _ in range(iters):
        fn(*args)
    return (clock() - start) / iters


WARM_CALLS = 100  # calls of each variant before timing: its steady state (the inductor executor compiles a region
# called compiler.executors.inductor.TIER_UP_CALLS times again with inductor's C++ wrapper)


def compare(variants: dict, args, rounds: int, iters: int) -> dict:
    for fn in variants.values():
        for _ in range(WARM_CALLS):
            fn(*args)
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            times[name].append(per_call(fn, args, iters))
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(title, medians, first):
    eager = medians["eager"]
    print(f"\n{title}")
    for name, t in medians.items():
        line = f"  {name:28s} {t * 1e3:9.3f} ms   {eager / t:5.2f}x eager"
        if "torch.compile" in medians and name != "torch.compile":
            line += f"   {medians['torch.compile'] / t:5.2f}x torch.compile"
        if name in first:
            line += f"   first call {first[name]:.2f} s"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--skip-gpt", action="store_true")
    parser.add_argument("--skip-block", action="store_true")
    parser.add_argument("--skip-torch-compile", action="store_true")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--first-call", default=None, help="cuda: time one cold first call of this variant")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="cuda: the block's dtypes")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                        help="cpu: time each variant by this process's CPU time (other processes' load does not count)")
    opts = parser.parse_args()
    if opts.clock == "cpu":
        CLOCK[0] = time.process_time
    if opts.device == "cuda":
        import fusion_cuda

        fusion_cuda.main(opts, block)
        return
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    args = tuple(torch.randn(s, generator=gen) for s in ((256, 4096), (256, 4096), (4096,), (4096,)))

    if not opts.skip_block:
        run_block(opts, args)
    if not opts.skip_gpt:
        run_gpt(opts)


def run_block(opts, args) -> None:
    variants = {"eager": block}
    first = {}
    if not opts.skip_torch_compile:
        variants["torch.compile"] = torch.compile(block)
        first["torch.compile"] = timed_first(variants["torch.compile"], *args)
    variants["jit inductor"] = compiler.jit(block, executors=("inductor", "torch"))
    first["jit inductor"] = timed_first(variants["jit inductor"], *args)
    variants["jit inductor (dynamo per region)"] = compiler.jit(block, executors=(PER_CALL_DYNAMO, "torch"))
    first["jit inductor (dynamo per region)"] = timed_first(variants["jit inductor (dynamo per region)"], *args)
    variants["jit torch (default)"] = compiler.jit(block)
    first["jit torch (default)"] = timed_first(variants["jit torch (default)"], *args)
    expected = block(*args)
    for name, fn in variants.items():
        torch.testing.assert_close(fn(*args), expected, rtol=1e-4, atol=1e-4, msg=lambda m, name=name: f"{name}: {m}")
    report("block 256x4096 float32 (GELU-tanh, SiLU, layer norm, residual), 1 thread",
           compare(variants, args, opts.rounds, 20), first)
    fused = compiler.last_traces(variants["jit inductor"])[-1]
    print(f"  regions: {sum(1 for b in fused.bsyms if getattr(b.symbol, 'region', None) is not None)}")


def run_gpt(opts) -> None:
    import test_gpt_model as gpt

    model = gpt.make_model(torch.float32)
    idx = gpt.tokens()

    def step(run):
        def go(i):
            model.zero_grad(set_to_none=True)
            gpt.loss_of(run(i), i).backward()
        return go

    variants = {"eager": step(model)}
    first = {}
    candidates = [("torch.compile", lambda: torch.compile(model))] if not opts.skip_torch_compile else []
    candidates += [("jit inductor", lambda: compiler.jit(model, executors=("inductor", "torch"))),
                   ("jit inductor (AOTAutograd, split)", lambda: compiler.jit(model, executors=(AOT_AUTOGRAD_SPLIT, "torch"))),
                   ("jit inductor (VJP, split)", lambda: compiler.jit(model, executors=(VJP_SPLIT, "torch"))),
                   ("jit torch (default)", lambda: compiler.jit(model))]
    for name, make in candidates:
        run = make()
        variants[name] = step(run)
        first[name] = timed_first(variants[name], idx)
        if name == "jit inductor":
            jitted = run
    report("GPT step (2 layers, width 32, batch 2x12: forward, loss, backward), 1 thread",
           compare(variants, (idx,), opts.rounds, 10), first)
    print("\nfused trace of the GPT forward (inductor executor), first block:")
    text = str(compiler.last_traces(jitted)[-1])
    print("\n".join(text.splitlines()[:60]))


if __name__ == "__main__":
    main()

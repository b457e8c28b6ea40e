"""bench/fusion.py --device cuda: nvFuser (compiler.jit(executors=("nvfuser", "torch"))) vs eager vs torch.compile
(inductor, Triton) on one CUDA device, in one process.

- block: bench/fusion.py's elementwise block (GELU-tanh, SiLU, layer-norm arithmetic, residual) at 256x4096 and
  8192x8192, float32 and bfloat16, no grad. Achieved bandwidth counts the bytes the block must move at least
  (read x, r, w, b; write the result) over the time per call; the baseline is a device-to-device copy timed in
  the same run (bytes read + written).
- gpt: one GPT block (pre-norm attention through scaled_dot_product_attention + GELU MLP; batch 8, 1024 tokens,
  width 1024, 16 heads) forward + backward in bfloat16 and float32.
- first calls: each variant's first call in this process (tracing, nvFuser's or inductor's compile); with
  --first-call VARIANT the script times one cold first call in a fresh process and prints a JSON line.

Times are CUDA-event times per call, the median of interleaved rounds.
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import compiler

NVFUSER = ("nvfuser", "torch")
COPY_BANDWIDTH_NOTE = "device-to-device copy, bytes read + written"


MISMATCHES: list[str] = []


def check(name, got, want, tolerance) -> None:
    """A result of ours that differs from eager is a failure of the run (reported, counted), not a figure;
    torch.compile's differences are reported as facts."""
    try:
        torch.testing.assert_close(got, want, **tolerance)
    except AssertionError as e:
        if not name.startswith("torch.compile"):
            MISMATCHES.append(f"{name}: {str(e).splitlines()[0]}")
        print(f"  MISMATCH {name}: {' '.join(str(e).split())[:300]}")


def cuda_time(fn, args, iters: int) -> float:
    """Seconds per call, by CUDA events around `iters` calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn(*args)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def first_call(fn, args) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    return time.perf_counter() - t


def medians(variants: dict, args, rounds: int, iters: int) -> dict:
    times = {name: [] for name in variants}
    for _ in range(rounds):  # interleaved: every variant sees the same machine state
        for name, fn in variants.items():
            times[name].append(cuda_time(fn, args, iters))
    return {name: statistics.median(ts) for name, ts in times.items()}


def copy_bandwidth() -> float:
    """Bytes per second of a 1 GiB device-to-device copy (read + written)."""
    src = torch.empty(2**28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    t = statistics.median(cuda_time(lambda: dst.copy_(src), (), 10) for _ in range(5))
    return 2 * src.numel() * src.element_size() / t


def block_args(shape, dtype):
    gen = torch.Generator(device="cuda").manual_seed(0)
    n, m = shape
    return (torch.randn(n, m, generator=gen, device="cuda", dtype=dtype),
            torch.randn(n, m, generator=gen, device="cuda", dtype=dtype),
            torch.randn(m, generator=gen, device="cuda", dtype=dtype),
            torch.randn(m, generator=gen, device="cuda", dtype=dtype))


def block_bytes(args) -> int:
    x = args[0]
    return sum(a.numel() * a.element_size() for a in args) + x.numel() * x.element_size()  # inputs + output


def run_blocks(opts, block, copy_bw: float) -> list[dict]:
    rows = []
    tolerances = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}
    for dtype_name in opts.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for shape in ((256, 4096), (8192, 8192)):
            args = block_args(shape, dtype)
            variants = {"eager": block, "jit nvfuser": compiler.jit(block, executors=NVFUSER)}
            if not opts.skip_torch_compile:
                variants["torch.compile"] = torch.compile(block)
            first = {}
            with torch.no_grad():
                want = block(*args)
                for name, fn in variants.items():
                    first[name] = first_call(fn, args)
                    check(name, fn(*args), want, tolerances[dtype])
                regions = sum(b.symbol.name.startswith("nvfuser_fusion")
                              for b in compiler.last_traces(variants["jit nvfuser"])[-1].bsyms)
                iters = 50 if shape[0] * shape[1] < 2**24 else 10
                med = medians(variants, args, opts.rounds, iters)
            moved = block_bytes(args)
            title = f"block {shape[0]}x{shape[1]} {dtype_name} (nvFuser regions: {regions})"
            print(f"\n{title}")
            for name, t in med.items():
                bw = moved / t
                line = (f"  {name:14s} {t * 1e6:9.1f} us  {med['eager'] / t:5.2f}x eager  {bw / 1e12:5.2f} TB/s "
                        f"({bw / copy_bw:4.0%} of copy)  first call {first[name]:6.2f} s")
                if "torch.compile" in med and name != "torch.compile":
                    line += f"  {med['torch.compile'] / t:5.2f}x torch.compile"
                print(line)
            rows.append({"what": title, "seconds": med, "first_call": first, "bytes": moved})
            del args, variants
            torch.cuda.empty_cache()
    return rows


class GPTBlock(nn.Module):
    """One pre-norm transformer block, GPT-2 style."""

    def __init__(self, width: int = 1024, heads: int = 16):
        super().__init__()
        self.heads = heads
        self.ln_attn, self.ln_mlp = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.fc_out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_attn(x)).split(c, dim=-1)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_out(F.gelu(self.fc(self.ln_mlp(x)), approximate="tanh"))


def gpt_step(run, x):
    def go(x):
        run(x).float().square().mean().backward()
    return go


def run_gpt(opts) -> list[dict]:
    rows = []
    for dtype in (torch.bfloat16, torch.float32):
        torch.manual_seed(0)
        model = GPTBlock().to("cuda", dtype)
        x = torch.randn(8, 1024, 1024, device="cuda", dtype=dtype, requires_grad=True)
        makers = {"eager": lambda m=model: m, "jit nvfuser": lambda m=model: compiler.jit(m, executors=NVFUSER)}
        if not opts.skip_torch_compile:
            makers["torch.compile"] = lambda m=model: torch.compile(m)
        variants, first, grads = {}, {}, {}
        for name, make in makers.items():
            run = make()
            variants[name] = gpt_step(run, x)
            model.zero_grad(set_to_none=True)
            x.grad = None
            first[name] = first_call(variants[name], (x,))
            grads[name] = [p.grad.float().clone() for p in model.parameters()] + [x.grad.float().clone()]
            if name == "jit nvfuser":
                jitted = run
        tol = dict(rtol=5e-2, atol=5e-2) if dtype == torch.bfloat16 else dict(rtol=1e-3, atol=1e-3)
        for name, gs in grads.items():
            for g, want in zip(gs, grads["eager"]):
                check(f"{name} gradient", g, want, tol)
        med = medians(variants, (x,), opts.rounds, 5)
        regions = sum(b.symbol.name.startswith("nvfuser_fusion") for b in compiler.last_traces(jitted)[-1].bsyms)
        title = f"GPT block forward+backward, batch 8 x 1024 tokens, width 1024, {dtype} (nvFuser regions: {regions})"
        print(f"\n{title}")
        for name, t in med.items():
            line = f"  {name:14s} {t * 1e3:9.2f} ms  {med['eager'] / t:5.2f}x eager  first call {first[name]:6.2f} s"
            if "torch.compile" in med and name != "torch.compile":
                line += f"  {med['torch.compile'] / t:5.2f}x torch.compile"
            print(line)
        rows.append({"what": title, "seconds": med, "first_call": first})
        del model, x, variants
        torch.cuda.empty_cache()
    return rows


def cold_first_call(variant: str, block) -> None:
    """One first call in this (fresh) process: `block-nvfuser`, `block-compile`, `gpt-nvfuser`, `gpt-compile`."""
    what, how = variant.split("-")
    if what == "block":
        args = block_args((8192, 8192), torch.float32)
        fn = compiler.jit(block, executors=NVFUSER) if how == "nvfuser" else torch.compile(block)
        with torch.no_grad():
            seconds = first_call(fn, args)
    else:
        torch.manual_seed(0)
        model = GPTBlock().to("cuda", torch.bfloat16)
        x = torch.randn(8, 1024, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        run = compiler.jit(model, executors=NVFUSER) if how == "nvfuser" else torch.compile(model)
        seconds = first_call(gpt_step(run, x), (x,))
    print(json.dumps({"first_call": variant, "seconds": round(seconds, 3)}))


def main(opts, block) -> None:
    if not torch.cuda.is_available():
        sys.exit("bench/fusion.py --device cuda: no CUDA device")
    if opts.first_call:
        cold_first_call(opts.first_call, block)
        return
    copy_bw = copy_bandwidth()
    print(f"{torch.cuda.get_device_name(0)}: copy bandwidth {copy_bw / 1e12:.2f} TB/s ({COPY_BANDWIDTH_NOTE}); "
          f"torch {torch.__version__}")
    rows = []
    if not opts.skip_block:
        rows += run_blocks(opts, block, copy_bw)
    if not opts.skip_gpt:
        rows += run_gpt(opts)
    from compiler.executors import nvfuser

    print("\nnvFuser in this run:", json.dumps(nvfuser.statistics()))
    print("\nJSON " + json.dumps({"copy_bandwidth": copy_bw, "rows": rows, "mismatches": MISMATCHES}))
    if MISMATCHES:
        sys.exit(f"{len(MISMATCHES)} results differ from eager: " + "; ".join(MISMATCHES))

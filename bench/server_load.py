"""Bounded load on the HTTP service over loopback: C concurrent clients for D seconds, each posting a
typical ~300-line model file to /analyze, then a report of requests/s, p50/p99 latency, errors and lost
responses. It starts its own server (``python -m server``) and stops it.

    python bench/server_load.py                       # 32 clients, 30 s
    python bench/server_load.py --duration 5 --clients 8 --workers 2 --json out.json

Every response is checked against the library's own findings for the file, so a wrong answer counts
as an error, not as a fast request. Exit status 1 when there were errors or lost responses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def typical_model_source(target_lines: int = 300) -> str:
    """A plausible model file: a config, layers as nn.Modules, a few compiled helpers, some hazards."""
    head = '''\
"""A small transformer, the kind of file CI lints on every push."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

DROPOUT = 0.1
_step = 0


@dataclass
class Config:
    vocab: int = 32000
    dim: int = 512
    heads: int = 8
    layers: int = 6
    max_len: int = 2048


def bump():
    global _step
    _step += 1


@torch.compile
def rms_norm(x, weight, eps: float = 1e-6):
    flat = x.reshape(-1, x.shape[-1])
    flat.mul_(torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + eps))
    return x * weight


@torch.compile
def rotary(q, k, pos):
    half = q.shape[-1] // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=q.device) / half)
    angles = pos[:, None] * freqs[None, :]
    cos, sin = angles.cos(), angles.sin()
    q1, q2 = q[..., :half], q[..., half:]
    k1, k2 = k[..., :half], k[..., half:]
    q = torch.cat([q1 * cos - q2 * sin, q1 * sin + q2 * cos], dim=-1)
    k = torch.cat([k1 * cos - k2 * sin, k1 * sin + k2 * cos], dim=-1)
    if q.shape[1] > 1024:
        print("long sequence")
    return q, k


@torch.compile
def scaled_loss(logits, target, scale):
    loss = F.cross_entropy(logits.flatten(0, 1), target.flatten())
    if loss.item() > 10.0:
        loss = loss * DROPOUT
    return loss * scale
'''
    block = '''

class Block{i}(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.up = nn.Linear(cfg.dim, 4 * cfg.dim, bias=False)
        self.down = nn.Linear(4 * cfg.dim, cfg.dim, bias=False)
        self.norm1 = nn.Parameter(torch.ones(cfg.dim))
        self.norm2 = nn.Parameter(torch.ones(cfg.dim))

    def attention(self, x, pos):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, t, self.cfg.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.cfg.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.cfg.heads, -1).transpose(1, 2)
        q, k = rotary(q, k, pos)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, pos):
        x = x + self.attention(rms_norm(x, self.norm1), pos)
        h = F.gelu(self.up(rms_norm(x, self.norm2)))
        return x + self.down(h)
'''
    tail = '''

class Model(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList([Block0(cfg) for _ in range(cfg.layers)])
        self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device).float()
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, pos)
        return self.head(x)
'''
    parts = [head]
    i = 0
    while len("".join(parts + [tail]).splitlines()) < target_lines - 25:
        parts.append(block.format(i=i))
        i += 1
    return "".join(parts + [tail])


class Server:
    def __init__(self, workers: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("THUNDER_LINT_TOKEN", None)
        env.pop("THUNDER_LINT_TOKEN_FILE", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", "0", "--workers", str(workers),
             "--log-level", "warning"],
            cwd=REPO, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        self.url = None
        self.access_lines = 0
        ready = threading.Event()

        def read():
            for line in self.process.stderr:
                if '"event": "serving"' in line:
                    self.url = json.loads(line)["url"]
                    ready.set()
                elif line.startswith('{"event":"request"'):
                    self.access_lines += 1
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(120) or self.url is None:
            self.stop()
            raise SystemExit("the server did not start")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


async def _load(url: str, body: bytes, fmt: str, expected, clients: int, duration: float) -> dict:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sent = 0
    answered = 0
    deadline = time.perf_counter() + duration

    def error(kind: str) -> None:
        errors[kind] = errors.get(kind, 0) + 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:

        async def one_client():
            nonlocal sent, answered
            while time.perf_counter() < deadline:
                sent += 1
                started = time.perf_counter()
                try:
                    r = await client.post(
                        "/analyze", params={"format": fmt}, content=body, headers={"content-type": "application/json"}
                    )
                except httpx.HTTPError as e:
                    error(type(e).__name__)
                    continue
                answered += 1
                latencies.append(time.perf_counter() - started)
                if r.status_code != 200:
                    error(f"HTTP {r.status_code}")
                elif (r.json()["diagnostics"] if fmt == "json" else r.content) != expected:
                    error("wrong findings")

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "duration_s": round(elapsed, 2),
        "requests": sent,
        "responses": answered,
        "lost_responses": sent - answered,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "requests_per_s": round(answered / elapsed, 1),
        "latency_p50_ms": round(_percentile(latencies, 50) * 1000, 1),
        "latency_p99_ms": round(_percentile(latencies, 99) * 1000, 1),
        "latency_max_ms": round(max(latencies, default=float("nan")) * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=30.0, help="seconds of load (default 30)")
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    p.add_argument("--workers", type=int, default=None, help="server lint workers (default: the number of cores)")
    p.add_argument("--lines", type=int, default=300, help="lines in the posted model file (default 300)")
    p.add_argument("--format", choices=("json", "sarif", "github"), default="json", help="the ?format= asked for (default json)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = p.parse_args(argv)
    if args.duration <= 0 or args.clients < 1:
        p.error("--duration must be positive and --clients at least 1")

    from analyzer.report import render
    from analyzer.static import lint_source

    source = typical_model_source(args.lines)
    findings = sorted(lint_source(source, "model.py"), key=lambda d: d.sort_key())
    if args.format == "json":
        expected = [d.to_json() for d in findings]
    else:  # the exact bytes the CLI would print for this file
        expected = render(findings, args.format, root=os.getcwd()).encode()
    t = time.perf_counter()
    lint_source(source, "model.py")
    in_process_ms = (time.perf_counter() - t) * 1000
    body = json.dumps({"files": [{"path": "model.py", "content": source}]}).encode()
    workers = args.workers or len(os.sched_getaffinity(0))

    server = Server(workers)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:  # one warm-up request per worker
            for _ in range(workers):
                c.post("/analyze", content=body, headers={"content-type": "application/json"}).raise_for_status()
        figures = asyncio.run(_load(server.url, body, args.format, expected, args.clients, args.duration))
    finally:
        server.stop()
    figures.update(
        format=args.format, file_lines=len(source.splitlines()), file_bytes=len(source.encode()), findings_per_file=len(findings),
        server_workers=workers, cores=os.cpu_count(), lint_in_process_ms=round(in_process_ms, 1),
    )
    print(
        f"{figures['clients']} clients x {figures['duration_s']} s, format={args.format}, {figures['file_lines']}-line file "
        f"({figures['findings_per_file']} findings), {workers} workers on {figures['cores']} cores:\n"
        f"  {figures['requests_per_s']} requests/s, p50 {figures['latency_p50_ms']} ms, p99 {figures['latency_p99_ms']} ms, "
        f"max {figures['latency_max_ms']} ms\n"
        f"  {figures['requests']} requests, {figures['responses']} responses, {figures['errors']} errors "
        f"{figures['error_kinds'] or ''}, {figures['lost_responses']} lost\n"
        f"  (linting the file in-process takes {figures['lint_in_process_ms']} ms)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if figures["errors"] or figures["lost_responses"] else 0


if __name__ == "__main__":
    sys.exit(main())

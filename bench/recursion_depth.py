"""Deepest recursion a jitted function reaches, against eager in the same run (issue 11, item 9).

Prints eager's and the jitted function's maximum depth under the default recursion limit and their ratio,
then runs depth 20,000 with sys.setrecursionlimit(100000) in a subprocess: eager reaches it; the jitted
function must raise RecursionError (past what the interpreter holds), never crash.

    python3 bench/recursion_depth.py
"""
from __future__ import annotations

import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import compiler  # noqa: E402


def rec(x, n):
    return x if n == 0 else rec(x + 1, n - 1)


def max_depth(call, hi=3000) -> int:
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            call(torch.zeros(1), mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    return lo


_DEEP = """
import sys, torch, compiler
sys.setrecursionlimit(100000)
def rec(x, n):
    return x if n == 0 else rec(x + 1, n - 1)
call = rec if sys.argv[1] == "eager" else compiler.jit(rec)
try:
    print("reached", float(call(torch.zeros(1), 20000)))
except RecursionError:
    print("RecursionError")
"""


def deep(kind: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", _DEEP, kind], capture_output=True, text=True, env=env, timeout=600)
    return p.stdout.strip() if p.returncode == 0 else f"crashed (exit status {p.returncode})"


def main():
    eager = max_depth(rec)
    jitted = max_depth(lambda x, n: compiler.jit(rec, cache="no caching")(x, n))
    print(f"default recursion limit {sys.getrecursionlimit()}: eager depth {eager}, jitted depth {jitted}, "
          f"ratio {jitted / eager:.3f}")
    print(f"depth 20000 with setrecursionlimit(100000): eager {deep('eager')}, jitted {deep('jit')}")


if __name__ == "__main__":
    main()

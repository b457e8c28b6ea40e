#!/usr/bin/env python3
"""Interpretation cost per bytecode instruction, against running the same Python natively.

    python3 bench/interpreter_overhead.py [--repeat 5] [--json OUT]

For each workload (pure Python, no torch): the number of bytecode instructions CPython executes is counted
natively with `sys.settrace` + `f_trace_opcodes`; then the best-of-N wall time of a native call and of an
interpreted call (`compiler.interpreter.Interpreter`, stack check off, no observers) are measured in the
same run. It prints ns/instruction for both and the ratio interpreted / native. Workloads are small
(a few ms interpreted) and repeated many times, so that the best run is one the OS did not preempt on a
busy machine.
The interpreter imports no torch: this runs on 3.11, 3.12 and 3.13 (see tests/interpreter/conftest.py for
how the `compiler` package is bypassed when torch is missing).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
try:
    import compiler  # noqa: F401
except ImportError:  # no torch here: load only the torch-free interpreter subpackage
    sys.modules.pop("compiler", None)
    _package = types.ModuleType("compiler")
    _package.__path__ = [os.path.join(REPO, "compiler")]
    sys.modules["compiler"] = _package

from compiler.interpreter import Interpreter  # noqa: E402


# ----- workloads -----
def arith_loop(n=200):
    total = 0
    for i in range(n):
        total += (i * 3) % 7 - (i >> 1)
    return total


def _add(a, b):
    return a + b


def call_heavy(n=60):
    acc = 0
    for i in range(n):
        acc = _add(acc, i)
    return acc


class _Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y


def objects(n=30):
    return sum(_Point(i, i + 1).norm2() for i in range(n))


def comprehensions(n=60):
    squares = [i * i for i in range(n)]
    table = {i: s for i, s in enumerate(squares) if s % 3}
    return len(table), sum(squares)


def _gen(n):
    for i in range(n):
        yield i * 2


def generators(n=120):
    return sum(_gen(n))


def exceptions(n=45):
    caught = 0
    for i in range(n):
        try:
            if i % 3 == 0:
                raise ValueError(i)
        except ValueError:
            caught += 1
    return caught


WORKLOADS = [arith_loop, call_heavy, objects, comprehensions, generators, exceptions]


def count_instructions(fn) -> int:
    """Bytecode instructions CPython executes for fn() (sys.monitoring on 3.12+, opcode tracing on 3.11)."""
    if hasattr(sys, "monitoring"):
        mon = sys.monitoring
        counter = [0]

        def on_instruction(code, offset):
            counter[0] += 1

        tool = mon.PROFILER_ID
        mon.use_tool_id(tool, "interpreter_overhead")
        try:
            mon.register_callback(tool, mon.events.INSTRUCTION, on_instruction)
            mon.set_events(tool, mon.events.INSTRUCTION)
            try:
                fn()
            finally:
                mon.set_events(tool, 0)
                mon.register_callback(tool, mon.events.INSTRUCTION, None)
        finally:
            mon.free_tool_id(tool)
        return counter[0]

    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def best_time(call, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def measure(repeat: int) -> list[dict]:
    rows = []
    for fn in WORKLOADS:
        instructions = count_instructions(fn)
        interp = Interpreter()
        native_result = fn()
        interp_result = interp.call(None, fn, (), {}, [], {})[0]
        assert interp_result == native_result, (fn.__name__, interp_result, native_result)
        native = best_time(fn, repeat)
        interpreted = best_time(lambda: Interpreter().call(None, fn, (), {}, [], {}), repeat)
        rows.append({"workload": fn.__name__, "instructions": instructions,
                     "native_ns_per_instr": native / instructions * 1e9,
                     "interp_ns_per_instr": interpreted / instructions * 1e9,
                     "ratio": interpreted / native})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    rows = measure(args.repeat)
    print(f"Python {sys.version.split()[0]}  (best of {args.repeat})")
    print(f"{'workload':16} {'instrs':>8} {'native ns/ins':>14} {'interp ns/ins':>14} {'ratio':>8}")
    for r in rows:
        print(f"{r['workload']:16} {r['instructions']:8d} {r['native_ns_per_instr']:14.1f} "
              f"{r['interp_ns_per_instr']:14.1f} {r['ratio']:8.1f}x")
    total_instr = sum(r["instructions"] for r in rows)
    mean_interp = sum(r["interp_ns_per_instr"] * r["instructions"] for r in rows) / total_instr
    mean_native = sum(r["native_ns_per_instr"] * r["instructions"] for r in rows) / total_instr
    print(f"{'all (weighted)':16} {total_instr:8d} {mean_native:14.1f} {mean_interp:14.1f} "
          f"{mean_interp / mean_native:8.1f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

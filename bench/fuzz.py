"""Differential fuzzer: random programs (tests/compiler/fuzz_programs.py) jitted in each cache mode and compared
with eager over a sequence of calls (new values, new sizes, other layouts, the first inputs again).

    python3 bench/fuzz.py [--count N] [--start SEED] [--modes "constant values,symbolic values,no caching"]
                          [--executors inductor,torch] [--minimize] [--log FILE] [--timeout S]
                          [--show-refused TEXT]

Prints each program that is silently wrong or crashes (minimized with --minimize), then per mode: programs
run, ok, refused (counted by message, and how many where eager raised too), wrong, crash, and the time. Exit
status 1 if anything was wrong or crashed. tests/compiler/test_fuzz_shard.py runs a fixed-seed shard.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tests", "compiler")))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))
warnings.filterwarnings("ignore")  # (the op-sample tables warn while they are built)

import fuzz_programs as fp  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--modes", default=",".join(fp.MODES))
    parser.add_argument("--executors", default=None, help="comma-separated, e.g. inductor,torch")
    parser.add_argument("--minimize", action="store_true")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per program and mode (a hang is a crash)")
    parser.add_argument("--log", default=None, help="also append every line printed to this file")
    parser.add_argument("--every", type=int, default=500, help="print running counts every N programs")
    parser.add_argument("--show-refused", default=None, metavar="TEXT",
                        help="also print the seed of each refusal whose message contains TEXT")
    opts = parser.parse_args()
    modes = [m.strip() for m in opts.modes.split(",") if m.strip()]
    executors = tuple(opts.executors.split(",")) if opts.executors else None
    log = open(opts.log, "a") if opts.log else None

    def say(text: str) -> None:
        print(text, flush=True)
        if log is not None:
            log.write(text + "\n")
            log.flush()

    counts = {m: collections.Counter() for m in modes}
    refusals = {m: collections.Counter() for m in modes}
    raised_too = {m: collections.Counter() for m in modes}  # refusals where eager raised at that call too
    spent = collections.Counter()
    say(f"fuzz: seeds {opts.start}..{opts.start + opts.count - 1}, modes {modes}, executors {executors}")
    for i, seed in enumerate(range(opts.start, opts.start + opts.count)):
        program = fp.random_program(seed)
        for mode in modes:
            began = time.perf_counter()
            try:
                verdict = fp.check(program, mode, executors, timeout=opts.timeout)
            except Exception as e:  # noqa: BLE001 - a failure of the harness itself is reported, not hidden
                verdict = fp.Verdict("crash", f"harness: {type(e).__name__}: {e}", mode=mode)
            spent[mode] += time.perf_counter() - began
            counts[mode][verdict.status] += 1
            if verdict.status == "refused":
                refusals[mode][verdict.detail] += 1
                raised_too[mode][verdict.detail] += verdict.eager_raised
                if opts.show_refused is not None and opts.show_refused in verdict.detail:
                    say(f"refused seed {seed} [{mode}] {verdict.detail}")
            elif not verdict:
                shown = program
                if opts.minimize:
                    shown = fp.minimize(program, verdict, executors)
                say(f"\n{verdict.status.upper()} seed {seed} [{mode}] {verdict.detail}\n{fp.describe(shown)}")
        if (i + 1) % opts.every == 0:
            say(f"... {i + 1} programs: " + "; ".join(f"{m}: {dict(counts[m])}" for m in modes))
    bad = 0
    for mode in modes:
        c = counts[mode]
        bad += c["wrong"] + c["crash"]
        say(f"\n[{mode}] {sum(c.values())} programs: {c['ok']} ok, {c['refused']} refused, {c['wrong']} wrong, "
            f"{c['crash']} crash; {spent[mode]:.0f} s")
        if c["refused"]:
            say(f"  refused where eager raised too (at that call): {sum(raised_too[mode].values())} of {c['refused']}")
        for message, n in refusals[mode].most_common():
            also = raised_too[mode][message]
            say(f"  {n:6d}  {message}" + (f"  [eager raised too: {also}]" if also else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The programs ported from PyTorch's dynamo test suite (tests/compiler/dynamo_programs.py and
dynamo_programs_protocols.py) in each cache mode:
how many equal eager on every call, how many are refused (by message), wrong or crash.

    python3 bench/dynamo_port.py [--modes "constant values,symbolic values,no caching"] [--executors inductor,torch]

Exit status 1 if any case is wrong or crashes. tests/compiler/test_dynamo_programs.py runs them all.
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

import dynamo_programs as dp  # noqa: E402
import dynamo_programs_protocols as dpp  # noqa: E402


CASES = dp.CASES + dpp.CASES  # (dynamo_programs_protocols.py: context managers, defaults, lazy modules, Functions)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="constant values,symbolic values,no caching")
    parser.add_argument("--executors", default=None)
    opts = parser.parse_args()
    options = {"executors": tuple(opts.executors.split(","))} if opts.executors else {}
    bad = 0
    for mode in [m.strip() for m in opts.modes.split(",")]:
        counts, refusals, start = collections.Counter(), collections.Counter(), time.perf_counter()
        for case in CASES:
            try:
                outcome = dp.run_case(case, mode, **options)
            except Exception as e:  # noqa: BLE001 - a failure of the harness itself is reported
                outcome = dp.Outcome("crash", f"harness: {type(e).__name__}: {e}")
            counts[outcome.status] += 1
            if outcome.status == "refused":
                refusals[outcome.detail] += 1
            elif outcome.status != "ok":
                print(f"{outcome.status.upper()} {case.name} [{mode}]: {outcome.detail}")
        bad += counts["wrong"] + counts["crash"]
        print(f"[{mode}] {len(CASES)} cases: {counts['ok']} equal eager, {counts['refused']} refused, "
              f"{counts['wrong']} wrong, {counts['crash']} crash; {time.perf_counter() - start:.0f} s")
        for message, n in refusals.most_common():
            print(f"  {n:4d}  {message}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

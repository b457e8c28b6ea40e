"""The whole differential suite through the functional path: every op sample, random program and gradient
case of tests/compiler/test_differential.py compiled with executors=(EXECUTOR, "torch"), compared with eager
(values, inputs left behind, aliasing, gradients). tests/compiler/test_functional_path.py runs a shard.

    python3 bench/functional_sweep.py [--backend aot_eager|inductor] [--limit N] [--only SUBSTRING]

Prints one line per failure and a summary; exit status 1 if anything failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "compiler")))
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))

from compiler.executors.inductor import InductorExecutor  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", default=None)
    parser.add_argument("--kinds", default="ops,random,grads,random_grads")
    opts = parser.parse_args()
    import test_differential as td
    import test_functional_path as tf

    ex = InductorExecutor(backend=opts.backend)
    cases = tf.all_cases(ex, kinds=opts.kinds.split(","))
    if opts.only:
        cases = [c for c in cases if opts.only in c[0]]
    cases = cases[:opts.limit]
    failed, start = [], time.perf_counter()
    for name, run in cases:
        try:
            run()
        except Exception as e:  # noqa: BLE001 - report every failure, keep going
            failed.append(name)
            msg = str(e).splitlines()[0][:300] if str(e) else repr(e)
            print(f"FAIL {name}: {type(e).__name__}: {msg}")
            if os.environ.get("SWEEP_TRACEBACK"):
                traceback.print_exc()
    print(f"{len(cases) - len(failed)}/{len(cases)} passed through executors=({ex.name!r}, 'torch') in "
          f"{time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

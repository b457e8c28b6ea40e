"""Every fusion region of the differential op suite as an nvFuser FusionDefinition: built (and checked: one
input and output per region input and output, each prim through its translator) or refused with a reason.
Needs nvfuser_direct (Python 3.10/3.12, torch 2.10); no GPU: definitions build and print without one.

    PYTHONPATH=. /work/venvs/nvf312/bin/python bench/nvfuser_definitions.py
"""
from __future__ import annotations

import collections
import os
import sys

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "compiler")))

import torch  # noqa: E402

from compiler.executors.nvfuser import Refused  # noqa: E402
from opinfos import KNOWN_GAPS, SAMPLES  # noqa: E402
from test_nvfuser_executor import _check_definition, _regions  # noqa: E402


def main() -> None:
    built, refused, untraced = 0, collections.Counter(), []
    for s in SAMPLES:
        if s.id in KNOWN_GAPS or s.expect_error:
            continue
        torch.manual_seed(s.manual_seed or 0)
        try:
            regions = _regions(s.fn, *s.make_args())
        except Exception as e:  # noqa: BLE001 - reported: the sample does not trace/functionalize here
            untraced.append(f"{s.id}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        for r in regions:
            try:
                _check_definition(r)
                built += 1
            except Refused as e:
                refused[str(e)] += 1
    print(f"regions built {built}, refused {sum(refused.values())}; samples not traced here {len(untraced)}")
    for reason, n in refused.most_common():
        print(f"  refused x{n}: {reason}")
    for line in untraced:
        print(f"  not traced: {line}")


if __name__ == "__main__":
    main()

"""The programs of dynamo_programs_protocols.py (context managers and generators made outside the compiled function,
defaults, lazy modules, autograd.Functions, autocast and grad mode, from PyTorch's test/dynamo) in every cache mode:
each call equals eager's, or is refused where the case says so."""
from __future__ import annotations

import pytest

from dynamo_programs import run_case
from dynamo_programs_protocols import CASES
from eager_parity import CACHES


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_protocol_program_matches_eager(case, cache):
    outcome = run_case(case, cache)
    if case.refused is not None:
        assert outcome.status == "refused" and case.refused in outcome.detail, \
            f"expected a refusal ({case.refused}), got {outcome.status}: {outcome.detail}"
        return
    assert outcome.status == "ok", f"{outcome.status}: {outcome.detail}"

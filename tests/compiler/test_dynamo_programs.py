"""The programs ported from PyTorch's dynamo test suite (dynamo_programs.py), in every cache mode: each call
must equal eager's (results, exception types, arguments, the state the program exposes), or be refused where
the case says so (a refusal that starts to pass must be taken out of the table)."""
from __future__ import annotations

import pytest

from dynamo_programs import CASES, run_case
from eager_parity import CACHES


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dynamo_program_matches_eager(case, cache):
    outcome = run_case(case, cache)
    if case.refused is not None:
        assert outcome.status == "refused" and case.refused in outcome.detail, \
            f"expected a refusal ({case.refused}), got {outcome.status}: {outcome.detail}"
        return
    assert outcome.status == "ok", f"{outcome.status}: {outcome.detail}"

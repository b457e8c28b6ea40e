"""The observed rules' VALID/INVALID examples are programs: each runs under `thunder-lint run --observe --verify`
with real torch.compile, and must (INVALID) or must not (VALID) produce its code. Their docs pages work as the
static rules' do."""
from __future__ import annotations

import pytest

from rules import OBSERVED, RULES, render_docs
from test_observe import found, observe

CASES = [
    pytest.param(code, kind, i, src, id=f"{code}-{kind}-{i}")
    for code in sorted(OBSERVED)
    for kind, examples in (("valid", RULES[code].valid), ("invalid", RULES[code].invalid))
    for i, src in enumerate(examples)
]


@pytest.mark.parametrize("code, kind, i, src", CASES)
def test_examples_under_observe(tmp_path, code, kind, i, src):
    _, report, _ = observe(tmp_path, src, "--verify")
    codes = [d for d in found(report, code)]
    if kind == "invalid":
        assert codes, f"{code} example {i} should be observed; got {[d['code'] for d in report]}"
    else:
        assert not codes, f"{code} valid example {i} was reported: {codes}"


def test_every_observed_rule_has_examples_both_ways_and_a_docs_page(capsys):
    from analyzer.cli import main

    assert OBSERVED == {"TL401", "TL402", "TL403"}
    for code in OBSERVED:
        assert RULES[code].valid and RULES[code].invalid
        assert main(["rule", code]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"# {code} ({RULES[code].name})") and "## What it does" in out
        assert render_docs(code).splitlines()[0] == f"# {code} ({RULES[code].name})"

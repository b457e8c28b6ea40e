"""Every rule's VALID and INVALID examples are its tests; its docs page is generated from the same table."""

import pytest

from analyzer.static import lint_source
from rules import DOC_HEADINGS, OBSERVED, RULES, STATIC_CHECKS, render_docs

CASES = [
    pytest.param(code, kind, i, src, id=f"{code}-{kind}-{i}")
    for code, info in RULES.items()
    if code not in OBSERVED  # their examples are programs, run by tests/run/test_observe_rules.py
    for kind, examples in (("valid", info.valid), ("invalid", info.invalid))
    for i, src in enumerate(examples)
]


@pytest.mark.parametrize("code, kind, i, src", CASES)
def test_examples(code, kind, i, src):
    found = [d.code for d in lint_source(src, "example.py")]
    if kind == "invalid":
        assert code in found, f"{code} example {i} should be reported; got {found}"
    else:
        assert code not in found, f"{code} valid example {i} was reported"


@pytest.mark.parametrize("code", sorted(set(RULES) - OBSERVED))
def test_invalid_examples_are_reported_when_only_that_rule_is_selected(code):
    for src in RULES[code].invalid:
        found = {d.code for d in lint_source(src, select=[code])}
        assert found <= {code, "TL001", "TL002"}
        assert code in found


def test_table_is_in_code_order_and_complete():
    codes = list(RULES)
    assert codes == sorted(codes)
    assert {"TL001", "TL002", "TL003", "TL101", "TL102", "TL103", "TL201", "TL202", "TL203", "TL204", "TL301", "TL302"} <= set(codes)
    for code, info in RULES.items():
        assert info.code == code
        assert info.name and info.name == info.name.lower() and " " not in info.name
        assert info.severity in ("error", "warning")
        assert info.summary
    # every rule but the meta rules and the observed ones has a static check and examples both ways
    for code in set(RULES) - {"TL001", "TL002", "TL003"} - OBSERVED:
        assert code in STATIC_CHECKS
        assert RULES[code].valid and RULES[code].invalid


@pytest.mark.parametrize("code", list(RULES))
def test_docs_have_ruff_headings(code):
    page = render_docs(code)
    info = RULES[code]
    assert page.splitlines()[0] == f"# {code} ({info.name})"
    positions = [page.index(f"## {h}") for h in DOC_HEADINGS]
    assert positions == sorted(positions)
    for example in info.invalid[:1]:
        if len(example) < 2000:
            assert example.strip().splitlines()[0] in page


def test_render_docs_accepts_lowercase_and_rejects_unknown():
    assert render_docs("tl101").startswith("# TL101 (reshape-inplace)")
    with pytest.raises(KeyError):
        render_docs("TL999")


def test_fixable_flag_matches_fixes():
    assert RULES["TL101"].fixable
    d = [d for d in lint_source(RULES["TL101"].invalid[0]) if d.code == "TL101"][0]
    assert d.fixes


def test_rules_never_import_the_analyzer():
    """Imports point down the layers: analyzer -> rules, never back."""
    import ast
    from pathlib import Path

    for path in Path(__file__).resolve().parents[2].joinpath("rules").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n.split(".")[0] in ("analyzer", "server") for n in names), path.name


def test_a_syntax_error_cannot_be_suppressed():
    assert [d.code for d in lint_source("x = (  # noqa\n")] == ["TL001"]

"""A pathological file cannot produce an unbounded report: findings per file are capped, the rest
counted in one "and N more" finding at the first one left out."""

from __future__ import annotations

from analyzer.static import fix_source, lint_source
from analyzer.static.engine import MAX_FINDINGS_PER_FILE

BLOCK = "@torch.compile\ndef f{i}(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    print(x)\n    return x\n\n"


def _source(n_functions: int) -> str:
    return "import torch\n\n" + "".join(BLOCK.format(i=i) for i in range(n_functions))


def test_findings_are_capped_with_a_summary():
    ds = lint_source(_source(700), "p.py")  # 2 findings per function: 1400
    assert len(ds) == MAX_FINDINGS_PER_FILE + 1 == 1001
    shown, summary = ds[:-1], ds[-1]
    assert summary.message == f"... and 400 more findings in this file, from here on, not shown (at most {MAX_FINDINGS_PER_FILE} per file)"
    assert all((d.line, d.column) <= (summary.line, summary.column) for d in shown)
    assert summary.line == 3 + 7 * 500 + 3  # the first finding of the 501st function: its add_ line
    assert not summary.fixes


def test_under_the_cap_nothing_is_summarised():
    ds = lint_source(_source(400), "p.py")
    assert len(ds) == 800 and not any("more findings" in d.message for d in ds)


def test_fixing_a_capped_file_still_fixes_everything_in_rounds():
    out = fix_source(_source(700), "p.py", unsafe=True)
    assert out.text.count("x.view(-1)") == 700
    assert not any(d.code == "TL101" and d.fixes for d in out.remaining)
    assert len(out.remaining) == MAX_FINDINGS_PER_FILE + 1  # the report after fixing is capped too

"""The summary line counts errors and warnings apart; --statistics shows the findings' fix marker;
`# noqa` on the line a fix edits suppresses the finding."""

from __future__ import annotations

from cli_helpers import write

from analyzer.static import lint_source

RESHAPE = "import torch\n\n\ndef f(x):\n    y = x.reshape(-1){noqa}\n    y.add_(1)\n    return y\n"
PRINT = "import torch\n\n\n@torch.compile\ndef g(x):\n    print(x)\n    return x\n"


def test_summary_counts_errors_and_warnings_apart(cli, tmp_path):
    write(tmp_path / "a.py", RESHAPE.format(noqa=""))
    write(tmp_path / "b.py", PRINT)
    write(tmp_path / "c.py", PRINT)
    r = cli(".", "--format", "concise", "--no-cache")
    assert "Found 1 error and 2 warnings." in r.out.splitlines(), r.out


def test_summary_with_only_warnings(cli, tmp_path):
    write(tmp_path / "b.py", PRINT)
    r = cli(".", "--format", "concise", "--no-cache")
    assert "Found 1 warning." in r.out.splitlines(), r.out


def test_statistics_shows_the_same_fix_marker_as_the_findings(cli, tmp_path):
    write(tmp_path / "a.py", RESHAPE.format(noqa=""))
    findings = cli(".", "--format", "concise", "--no-cache").out
    assert "TL101 [-] " in findings  # an unsafe fix only
    stats = cli(".", "--statistics", "--no-cache").out
    assert "1\tTL101\t[-] reshape-inplace" in stats.splitlines(), stats


def test_noqa_on_the_reshape_line_suppresses_tl101():
    assert [d.code for d in lint_source(RESHAPE.format(noqa=""))] == ["TL101"]
    assert lint_source(RESHAPE.format(noqa="  # noqa: TL101")) == []
    assert [d.code for d in lint_source(RESHAPE.format(noqa="  # noqa: TL2"))] == ["TL101"]

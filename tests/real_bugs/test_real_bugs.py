"""The real-bug judge (issue 31): public bug reports about compiled PyTorch, each rewritten in its reporter's
code shape with its compile call, linted with defaults as one project and file by file. At least THRESHOLD
of them must be caught both ways (a finding of an expected code on a marked line), and no report may have
a finding that nobody marked (an extra is a false finding until it is read and marked `# also:`).

Each report is linted as a copy in a fresh folder: it is a reporter's program, and the project index reads any
path under a `tests/` folder as test code. The markers and the scoring are in _real_bugs_harness.py;
`python3 bench/real_bugs.py` prints the same table (and the run in place, for comparison).
"""

from __future__ import annotations

import re

import pytest

import _real_bugs_harness as harness
from rules import RULES

THRESHOLD = 0.9  # share of reports caught, each way
MIN_REPORTS = 30

REPORTS = [harness.read_report(p) for p in harness.report_paths()]


def test_the_set_is_large_enough():
    assert len(REPORTS) >= MIN_REPORTS, [r.name for r in REPORTS]


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: r.name)
def test_each_report_names_its_source_and_its_hazard(report):
    assert re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", report.url), report.url
    assert report.expected, "no `# expect: TLxxx` marker"
    text = report.path.read_text()
    assert "What went wrong:" in text.split("\nimport", 1)[0] and "shape:" in text.split("\nimport", 1)[0]
    # the program carries its compile call, and every marked code is a rule of the catalogue
    assert re.search(r"torch\.compile\b|\.compile\(|thunder\.jit\b", text)
    for _, code in report.expected | report.also:
        assert code in RULES or code == "TL205", code  # TL205 (module-state) is being written in part D


def test_no_two_reports_share_a_source():
    urls = [r.url for r in REPORTS]
    assert len(urls) == len(set(urls)), sorted(u for u in urls if urls.count(u) > 1)


def test_markers_are_read_from_comments_only(tmp_path):
    p = tmp_path / "one.py"
    p.write_text('# Report: https://github.com/o/r/issues/1\ns = "# expect: TL101"\nx.add_(1)  # expect: TL102  # also: TL103\n')
    r = harness.read_report(p)
    assert r.expected == {(3, "TL102")} and r.also == {(3, "TL103")} and r.url.endswith("/1")


def _check(outcomes, way):
    misses = [harness.describe(o) for o in outcomes if not o.caught]
    print(f"\n{way}: {sum(o.caught for o in outcomes)}/{len(outcomes)} caught")
    print("\n".join(misses))
    assert harness.rate(outcomes) >= THRESHOLD, f"{way}: {harness.rate(outcomes):.2f} < {THRESHOLD}; misses:\n" + "\n".join(misses)


def test_caught_when_linted_as_one_project():
    _check(harness.score_as_project(REPORTS), "as one project")


def test_caught_when_linted_file_by_file():
    _check(harness.score_file_by_file(REPORTS), "file by file")


def test_no_unmarked_findings():
    extras = {o.report.name: sorted(o.extras) for o in harness.score_as_project(REPORTS) if o.extras}
    extras |= {o.report.name: sorted(o.extras) for o in harness.score_file_by_file(REPORTS) if o.extras}
    assert not extras, extras

"""The real-bug set: read the reports' markers, lint the reports, score what was caught.

Each report is a small program in this folder (not `test_*`, not `_*`) rewritten from a public bug report,
with the report's URL in its header and markers on the lines where the hazard is:

    self.calls += 1  # expect: TL205
    if key not in _registry:  # also: TL201

`expect` names the finding(s) the report is about; a report is caught when the linter reports at least one
of them on its line. `also` names a true finding on that line that the report is not about, so that it is
not counted as an extra. Every other finding in a report is an extra: a false finding until someone reads
it and marks it. Shared by tests/real_bugs/test_real_bugs.py and bench/real_bugs.py.
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
_MARKER = re.compile(r"#\s*(expect|also):\s*(TL\d{3}(?:\s*,\s*TL\d{3})*)")
_URL = re.compile(r"https://github\.com/\S+")


@dataclass
class Report:
    path: Path
    url: str
    expected: set[tuple[int, str]] = field(default_factory=set)  # (line, code)
    also: set[tuple[int, str]] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class Outcome:
    report: Report
    found: set[tuple[int, str]]

    @property
    def caught(self) -> bool:
        return bool(self.report.expected & self.found)

    @property
    def extras(self) -> set[tuple[int, str]]:
        return self.found - self.report.expected - self.report.also


def report_paths(folder: Path = HERE) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith(("test_", "_")))


def read_report(path: Path) -> Report:
    text = path.read_text()
    header = "\n".join(line for line in text.splitlines()[:3] if line.startswith("#"))
    url = _URL.search(header)
    report = Report(path=path, url=url.group(0) if url else "")
    # markers are comments: tokenize, so that a `# expect:` inside a string is not one
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.COMMENT:
            continue
        for m in _MARKER.finditer(tok.string):  # `# expect: TL203  # also: TL201` is two markers
            kind, codes = m.groups()
            target = report.expected if kind == "expect" else report.also
            target.update((tok.start[0], c.strip()) for c in codes.split(","))
    return report


def _lint(paths: list[Path], *, in_place: bool = False):
    """Lint with defaults, as a new user runs it: an empty [tool.thunder-lint] table, no cache, one worker.

    Each report is a reporter's program, not a test of this repository: it is linted as a copy in a fresh
    folder named real_bugs_*, because the project index reads a path with a `tests/` folder as test code
    (its compile calls do not decide what the project compiles). `in_place` lints the files where they live.
    """
    from analyzer import lint_paths

    if in_place:
        return lint_paths([str(p) for p in paths], config={}, cache=False, jobs=1)
    with tempfile.TemporaryDirectory(prefix="real_bugs_") as tmp:
        copies = []
        for p in paths:
            shutil.copyfile(p, Path(tmp) / p.name)
            copies.append(str(Path(tmp) / p.name))
        return lint_paths(copies, config={}, cache=False, jobs=1)


def _by_file(diagnostics) -> dict[str, set[tuple[int, str]]]:
    out: dict[str, set[tuple[int, str]]] = {}
    for d in diagnostics:
        out.setdefault(Path(d.path).name, set()).add((d.line, d.code))
    return out


def score_as_project(reports: list[Report], *, in_place: bool = False) -> list[Outcome]:
    """All reports linted in one run: one project index over the whole folder."""
    found = _by_file(_lint([r.path for r in reports], in_place=in_place))
    return [Outcome(r, found.get(r.name, set())) for r in reports]


def score_file_by_file(reports: list[Report]) -> list[Outcome]:
    """Each report linted alone, as a one-file project."""
    return [Outcome(r, _by_file(_lint([r.path])).get(r.name, set())) for r in reports]


def rate(outcomes: list[Outcome]) -> float:
    return sum(o.caught for o in outcomes) / len(outcomes) if outcomes else 0.0


def describe(outcome: Outcome) -> str:
    def fmt(items):
        return ", ".join(f"{code}@{line}" for line, code in sorted(items)) or "-"

    r = outcome.report
    status = "caught" if outcome.caught else "MISSED"
    return f"{status:6}  {r.name:32} expected {fmt(r.expected):26} got {fmt(outcome.found)}"

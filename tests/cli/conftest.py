"""The ``cli`` fixture: run ``thunder-lint ARGS`` in-process with captured output."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # cli_helpers, whatever pytest's import mode

from cli_helpers import Result  # noqa: E402

from analyzer.cli import main  # noqa: E402


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    """Runs from ``tmp_path`` (or ``cwd=``), with the results cache kept inside tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THUNDER_LINT_CACHE_DIR", str(tmp_path / ".cache-under-test"))
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # a CI that forces colour must not change what tests read
    monkeypatch.delenv("THUNDER_LINT_OUTPUT_FORMAT", raising=False)

    def run(*args: str, stdin: str | bytes | None = None, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        if stdin is not None:
            data = stdin.encode() if isinstance(stdin, str) else stdin
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run

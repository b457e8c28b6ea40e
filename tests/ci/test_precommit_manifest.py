""".pre-commit-hooks.yaml as pre-commit reads it (its own manifest loader), on every run of the suite.

The hooks running through pre-commit are tests/ci/test_precommit_hooks.py (slow, behind a flag)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

clientlib = pytest.importorskip("pre_commit.clientlib", reason="pre-commit is not installed (it is in the dev extra)")


def test_manifest_is_valid_and_the_hooks_are_shaped_as_documented():
    hooks = {h["id"]: h for h in clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}
    assert list(hooks) == ["thunder-lint", "thunder-lint-fix"]
    for h in hooks.values():
        assert h["language"] == "python"  # installed from this repository's pyproject (without torch)
        # stubs and notebooks too, as ruff's hooks take them
        assert h["types_or"] == ["python", "pyi", "jupyter"] and h["types"] == ["file"]
        assert h["pass_filenames"] and h["require_serial"]
        argv = shlex.split(h["entry"])
        # pre-commit splits long file lists over several calls: each reads the whole project for the index
        assert argv[0] == "thunder-lint" and {"--force-exclude", "--index-whole-project"} <= set(argv)
    assert "--fix" not in shlex.split(hooks["thunder-lint"]["entry"])
    assert {"--fix", "--unsafe-fixes"} <= set(shlex.split(hooks["thunder-lint-fix"]["entry"]))


def test_the_hooks_entry_options_exist_in_the_cli():
    from analyzer.cli import build_parser

    known = {opt for action in build_parser()._actions for opt in action.option_strings}
    for h in clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml")):
        assert set(shlex.split(h["entry"])[1:]) <= known, h["entry"]

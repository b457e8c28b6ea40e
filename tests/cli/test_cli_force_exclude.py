"""--force-exclude: the config's `exclude` holds for files named on the command line too.

pre-commit names every staged file, so without it a project's excluded folders would be linted by the hook.
"""

from __future__ import annotations

from cli_helpers import TL101_SRC, write

CONFIG = '[tool.thunder-lint]\nexclude = ["vendored", "gen_*.py"]\n'


def _project(tmp_path):
    write(tmp_path / "pyproject.toml", CONFIG)
    for rel in ("vendored/sub/a.py", "gen_model.py", "pkg/main.py"):
        write(tmp_path / rel, TL101_SRC)
    return ["vendored/sub/a.py", "gen_model.py", "pkg/main.py"]


def _paths(out: str) -> set[str]:
    return {line.split(":", 1)[0] for line in out.splitlines() if ": TL101 " in line}


def test_named_files_are_linted_without_it(cli, tmp_path):
    r = cli("--format", "concise", *_project(tmp_path))
    assert r.code == 1
    assert _paths(r.out) == {"vendored/sub/a.py", "gen_model.py", "pkg/main.py"}


def test_force_exclude_skips_named_files_the_config_excludes(cli, tmp_path):
    r = cli("--format", "concise", "--force-exclude", *_project(tmp_path))
    assert r.code == 1
    assert _paths(r.out) == {"pkg/main.py"}  # excluded by a folder above it, and by its own name


def test_force_exclude_with_only_excluded_files_is_clean(cli, tmp_path):
    _project(tmp_path)
    r = cli("--force-exclude", "gen_model.py", "vendored/sub/a.py")
    assert r.code == 0, r.out + r.err


def test_force_exclude_matches_paths_relative_to_the_project_root(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nexclude = ["pkg/legacy/*"]\n')
    write(tmp_path / "pkg/legacy/old.py", TL101_SRC)
    write(tmp_path / "pkg/new.py", TL101_SRC)
    r = cli("--format", "concise", "--force-exclude", "pkg/legacy/old.py", "pkg/new.py")
    assert _paths(r.out) == {"pkg/new.py"}
    # the same files named from a subfolder: paths are taken against the project root, not the cwd
    r = cli("--format", "concise", "--force-exclude", "legacy/old.py", "new.py", cwd=tmp_path / "pkg")
    assert _paths(r.out) == {"new.py"}

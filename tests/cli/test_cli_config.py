"""[tool.thunder-lint] in pyproject.toml: found by walking up, merged under the command line."""

from __future__ import annotations

import json

import pytest

from analyzer.config import Config, ConfigError, discover, load_file
from cli_helpers import TL101_SRC, write

GLOBAL_SRC = "import torch\n\nscale = 2\n\n\n@my_jit\ndef f(x):\n    return x * scale\n"


def codes(r):
    return sorted((d["path"], d["code"]) for d in json.loads(r.out))


def pyproject(folder, body):
    return write(folder / "pyproject.toml", "[project]\nname = 'demo'\n\n[tool.thunder-lint]\n" + body)


def test_select_and_ignore_from_config(cli, tmp_path):
    write(tmp_path / "pkg" / "m.py", TL101_SRC)
    pyproject(tmp_path, 'ignore = ["TL101"]\n')
    assert cli("pkg", "--format", "json").code == 0
    # A rule selected on the command line is not switched off again by the config's ignore.
    assert codes(cli("pkg", "--format", "json", "--select", "TL101")) == [("pkg/m.py", "TL101")]
    pyproject(tmp_path, 'select = ["TL2"]\n')
    assert cli("pkg", "--format", "json").code == 0
    assert cli("pkg", "--format", "json", "--extend-select", "TL1").code == 1


def test_found_by_walking_up_from_the_linted_path(cli, tmp_path):
    project = tmp_path / "project"
    write(project / "src" / "deep" / "m.py", TL101_SRC)
    pyproject(project, 'ignore = ["TL1"]\n')
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = cli(str(project / "src" / "deep" / "m.py"), "--format", "json", cwd=other)
    assert r.code == 0, r.out


def test_a_pyproject_without_our_table_is_passed_over(tmp_path):
    pyproject(tmp_path, 'ignore = ["TL1"]\n')
    inner = tmp_path / "inner"
    write(inner / "pyproject.toml", "[project]\nname = 'inner'\n")
    write(inner / "m.py", TL101_SRC)
    cfg = discover([str(inner / "m.py")])
    assert cfg.source == str(tmp_path / "pyproject.toml") and cfg.ignore == ("TL1",)
    assert cfg.root == str(tmp_path)


def test_per_file_ignores(cli, tmp_path):
    write(tmp_path / "src" / "m.py", TL101_SRC)
    write(tmp_path / "tests" / "test_m.py", TL101_SRC)
    write(tmp_path / "scripts" / "gen.py", TL101_SRC)
    pyproject(tmp_path, '[tool.thunder-lint.per-file-ignores]\n"tests/*" = ["TL101"]\n"gen.py" = ["TL1"]\n')
    assert codes(cli(".", "--format", "json")) == [("src/m.py", "TL101")]
    # The globs are relative to the project root, wherever the run starts.
    r = cli("test_m.py", "../src/m.py", "--format", "json", cwd=tmp_path / "tests")
    assert codes(r) == [("../src/m.py", "TL101")]


def test_jit_decorators(cli, tmp_path):
    write(tmp_path / "m.py", GLOBAL_SRC)
    assert cli("m.py", "--format", "json").code == 0  # @my_jit means nothing by default
    pyproject(tmp_path, 'jit-decorators = ["my_jit"]\n')
    assert codes(cli("m.py", "--format", "json")) == [("m.py", "TL201")]


def test_explicit_config_option(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    write(tmp_path / "conf" / "strict.toml", '[tool.thunder-lint]\nignore = ["TL101"]\n')
    assert cli("m.py", "--config", "conf/strict.toml").code == 0
    r = cli("m.py", "--config", "conf/missing.toml")
    assert r.code == 2 and "cannot read" in r.err


@pytest.mark.parametrize(
    "body, message",
    [
        ('selct = ["TL1"]\n', "unknown key(s) in [tool.thunder-lint]: selct"),
        ('select = "TL1\n', "invalid TOML"),
        ("select = 3\n", "`select` must be a list of strings"),
        ('ignore = ["NOPE1"]\n', "unknown rule selector 'NOPE1'"),
        ('per-file-ignores = ["x"]\n', "`per-file-ignores` must be a table"),
        ('[tool.thunder-lint.per-file-ignores]\n"a.py" = ["ZZ"]\n', "unknown rule selector 'ZZ'"),
    ],
)
def test_bad_config_is_a_clear_usage_error(cli, tmp_path, body, message):
    write(tmp_path / "m.py", TL101_SRC)
    pyproject(tmp_path, body)
    r = cli("m.py")
    assert r.code == 2
    assert message in r.err and "Traceback" not in r.err


def test_load_file_defaults_and_ignored_for(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    cfg = load_file(tmp_path / "pyproject.toml")
    assert cfg.select is None and cfg.ignore == () and cfg.root == str(tmp_path)
    cfg = Config(per_file_ignores=(("tests/*", ("TL1",)), ("conftest.py", ("TL2",))), root=str(tmp_path))
    assert cfg.ignored_for(str(tmp_path / "tests" / "a" / "b.py")) == ("TL1",)
    assert cfg.ignored_for(str(tmp_path / "x" / "conftest.py")) == ("TL2",)
    assert cfg.ignored_for(str(tmp_path / "src" / "m.py")) == ()
    with pytest.raises(ConfigError):
        load_file(tmp_path / "absent.toml")


def test_exclude_globs(cli, tmp_path):
    write(tmp_path / "src" / "m.py", TL101_SRC)
    write(tmp_path / "src" / "generated" / "g.py", TL101_SRC)
    write(tmp_path / "legacy_x.py", TL101_SRC)
    write(tmp_path / "src" / "vendored" / "v.py", TL101_SRC)
    pyproject(tmp_path, 'exclude = ["generated", "legacy_*.py", "src/vendored"]\n')
    assert codes(cli(".", "--format", "json")) == [("src/m.py", "TL101")]
    # Globs with a folder are relative to the project root, wherever the walk starts.
    assert codes(cli(".", "--format", "json", cwd=tmp_path / "src")) == [("m.py", "TL101")]
    # A file named on the command line is linted even when a glob would exclude it from a walk.
    assert codes(cli("legacy_x.py", "--format", "json", cwd=tmp_path)) == [("legacy_x.py", "TL101")]

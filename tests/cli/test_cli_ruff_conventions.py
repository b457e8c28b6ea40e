"""The CLI and config behave as ruff users expect (issue 35): `--output-format` and its environment variable, a
standalone `thunder-lint.toml` and `--config FILE`/`--config KEY=VALUE`, .gitignore, `exclude`/`extend-exclude`/
`include` with ruff's globs, `fixable`/`unfixable`/`unsafe-fixes`, the cache at the project root, and the
`--show-settings`, `--show-files`, `--add-noqa`, `--fix-only`, `--exit-non-zero-on-fix` and `--watch` flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from cli_helpers import CLEAN_SRC, REPO, TL101_SRC, write

# a TL204 finding under a compile call in the same file
PRINTS = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"


def _codes(r) -> list[str]:
    return sorted(d["code"] for d in json.loads(r.out))


def test_output_format_flag_and_environment_variable(cli, tmp_path, monkeypatch):
    write(tmp_path / "m.py", TL101_SRC)
    r = cli("m.py", "--output-format", "json")
    assert r.code == 1 and json.loads(r.out)[0]["code"] == "TL101"
    monkeypatch.setenv("THUNDER_LINT_OUTPUT_FORMAT", "json-lines")
    r = cli("m.py")
    assert json.loads(r.out.splitlines()[0])["code"] == "TL101"
    assert cli("m.py", "--output-format", "concise").out.startswith("m.py:")  # the flag wins over the variable
    monkeypatch.setenv("THUNDER_LINT_OUTPUT_FORMAT", "xml")
    r = cli("m.py")
    assert r.code == 2 and "THUNDER_LINT_OUTPUT_FORMAT" in r.err


def test_output_format_in_the_config(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    write(tmp_path / "thunder-lint.toml", 'output-format = "json"\n')
    assert json.loads(cli("m.py").out)[0]["code"] == "TL101"


def test_standalone_config_reads_top_level_keys(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC + PRINTS.replace("import torch\n", ""))
    write(tmp_path / "pyproject.toml", "[tool.thunder-lint]\nselect = ['TL204']\n")
    # .thunder-lint.toml / thunder-lint.toml win over pyproject.toml in the same folder, as ruff.toml does
    write(tmp_path / "thunder-lint.toml", 'select = ["TL1"]\n')
    assert _codes(cli(".", "--output-format", "json")) == ["TL101"]
    # --config FILE: its top-level keys count (they were silently ignored)
    write(tmp_path / "conf" / "only204.toml", 'select = ["TL204"]\n')
    assert _codes(cli(".", "--config", "conf/only204.toml", "--output-format", "json")) == ["TL204"]
    # an unknown top-level key is an error, not silence
    write(tmp_path / "conf" / "typo.toml", 'selekt = ["TL204"]\n')
    r = cli(".", "--config", "conf/typo.toml")
    assert r.code == 2 and "selekt" in r.err


def test_config_key_value_overrides(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC + PRINTS.replace("import torch\n", ""))
    assert _codes(cli(".", "--config", 'select = ["TL204"]', "--output-format", "json")) == ["TL204"]
    r = cli(".", "--config", "select = [TL204")
    assert r.code == 2 and "--config" in r.err


def test_gitignore_is_respected_unless_turned_off(cli, tmp_path):
    write(tmp_path / ".gitignore", "generated/\n*_tmp.py\n!keep_tmp.py\n")
    (tmp_path / ".git").mkdir()
    write(tmp_path / "generated" / "m.py", TL101_SRC)
    write(tmp_path / "a_tmp.py", TL101_SRC)
    write(tmp_path / "keep_tmp.py", TL101_SRC)
    write(tmp_path / "sub" / ".gitignore", "local.py\n")
    write(tmp_path / "sub" / "local.py", TL101_SRC)
    write(tmp_path / "sub" / "kept.py", TL101_SRC)
    files = sorted(os.path.relpath(p, tmp_path) for p in cli("--show-files").out.split())
    assert files == ["keep_tmp.py", "sub/kept.py"], files
    files = sorted(os.path.relpath(p, tmp_path) for p in cli("--show-files", "--no-respect-gitignore").out.split())
    assert files == ["a_tmp.py", "generated/m.py", "keep_tmp.py", "sub/kept.py", "sub/local.py"]
    write(tmp_path / "pyproject.toml", "[tool.thunder-lint]\nrespect-gitignore = false\n")
    assert len(cli("--show-files").out.split()) == 5
    # a file named on the command line is linted even when ignored, unless --force-exclude (as in ruff)
    os.remove(tmp_path / "pyproject.toml")
    assert cli("a_tmp.py", "--output-format", "concise").code == 1
    assert cli("a_tmp.py", "--force-exclude").code == 0


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(cli, tmp_path):
    write(tmp_path / "build" / "gen.py", TL101_SRC)
    write(tmp_path / "scripts" / "one.py", TL101_SRC)
    write(tmp_path / "tools" / "two.py", TL101_SRC)
    write(tmp_path / "test_top.py", TL101_SRC)
    write(tmp_path / "pkg" / "test_deep.py", TL101_SRC)
    write(tmp_path / "pkg" / "model.py", TL101_SRC)

    def linted(*args):
        return sorted(os.path.relpath(p, tmp_path) for p in cli("--show-files", *args).out.split())

    assert "build/gen.py" not in linted()  # the default exclude
    # ruff's globs: `**/` matches no folder too, `{a,b}` alternates
    assert linted("--extend-exclude", "**/test_*.py,{scripts,tools}/*") == ["pkg/model.py"]
    # `exclude` replaces the default list: build/ is linted again
    assert "build/gen.py" in linted("--exclude", "scripts")
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nextend-exclude = ["pkg"]\ninclude = ["*.py", "*.pyw"]\n')
    write(tmp_path / "gui.pyw", TL101_SRC)
    got = linted()
    assert "gui.pyw" in got and not any(p.startswith("pkg/") for p in got) and "build/gen.py" not in got
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nexclude = ["[oops"]\n')
    r = cli("--show-files")
    assert r.code == 2 and "unclosed" in r.err


def test_per_file_ignores_with_ruff_globs(cli, tmp_path):
    write(tmp_path / "test_top.py", TL101_SRC)
    write(tmp_path / "a" / "test_deep.py", TL101_SRC)
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint.per-file-ignores]\n"**/test_*.py" = ["TL101"]\n')
    assert cli(".", "--output-format", "json").out.strip() == "[]"


def test_fixable_unfixable_and_unsafe_fixes_keys(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nunsafe-fixes = true\nunfixable = ["TL101"]\n')
    cli(".", "--fix")
    assert p.read_text() == TL101_SRC  # unfixable wins
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nunsafe-fixes = true\nfixable = ["TL1"]\n')
    cli(".", "--fix")
    assert "x.view(-1)" in p.read_text()  # unsafe-fixes from the config, no flag needed
    p.write_text(TL101_SRC)
    cli(".", "--fix", "--no-unsafe-fixes")
    assert p.read_text() == TL101_SRC  # the command line wins over the config


def test_no_python_files_found_warns(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "notes.txt", "hello\n")
    r = cli("empty")
    assert r.code == 0 and "No Python files found" in r.err


def test_show_settings(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nignore = ["TL204"]\n')
    r = cli("--show-settings")
    assert r.code == 0
    assert f"config file: {tmp_path / 'pyproject.toml'}" in r.out
    assert "ignore = ('TL204',)" in r.out and "TL204" not in r.out.split("enabled rules = ")[1]


def test_add_noqa_then_clean(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC.replace("y.add_(1)", "y.add_(1)  # noqa: E501"))
    r = cli(".", "--add-noqa")
    assert r.code == 0 and "Added 1 noqa directive" in r.err
    assert "y.add_(1)  # noqa: E501, TL101" in p.read_text()
    assert cli(".").code == 0
    assert cli(".", "--add-noqa").err.startswith("Added 0 noqa directives")


def test_fix_only_and_exit_non_zero_on_fix(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC + PRINTS.replace("import torch\n", ""))
    r = cli(".", "--fix-only", "--unsafe-fixes")
    assert r.code == 0 and r.out == "" and "Fixed 1 finding." in r.err  # the TL204 left is not reported
    assert "x.view(-1)" in p.read_text()
    p.write_text(TL101_SRC)
    r = cli(".", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix")
    assert r.code == 1  # nothing remains (the view fix leaves a TL102? then still 1), but a fix was applied
    write(tmp_path / "ok.py", CLEAN_SRC)
    p.write_text(TL101_SRC)
    r = cli("m.py", "--fix-only", "--unsafe-fixes", "--exit-non-zero-on-fix")
    assert r.code == 1


def test_cache_goes_to_the_project_root(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", "[project]\nname = 'p'\n")
    write(root / "src" / "m.py", CLEAN_SRC)
    env = {k: v for k, v in os.environ.items() if k != "THUNDER_LINT_CACHE_DIR"}
    env["PYTHONPATH"] = str(REPO)
    subprocess.run([sys.executable, "-m", "analyzer.cli", "m.py"], cwd=root / "src", env=env, check=True,
                   capture_output=True, timeout=120)
    assert (root / ".thunder-lint-cache").is_dir() and not (root / "src" / ".thunder-lint-cache").exists()


def test_watch_lints_again_after_a_change(tmp_path):
    p = write(tmp_path / "m.py", CLEAN_SRC)
    env = dict(os.environ, PYTHONPATH=str(REPO), THUNDER_LINT_WATCH_INTERVAL="0.1",
               THUNDER_LINT_CACHE_DIR=str(tmp_path / ".c"))
    proc = subprocess.Popen([sys.executable, "-m", "analyzer.cli", ".", "--watch", "--output-format", "concise"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        changed = False
        while time.monotonic() < deadline:
            out = "".join(lines)
            if "All checks passed!" in out and not changed:
                time.sleep(0.3)
                p.write_text(TL101_SRC)
                changed = True
            if "TL101" in out:
                break
            time.sleep(0.1)
        out = "".join(lines)
        assert "All checks passed!" in out and "TL101" in out, out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_each_file_takes_its_nearest_config(cli, tmp_path):
    # a monorepo: the root's config and a package with its own, as ruff resolves per file (the LSP does too)
    write(tmp_path / "pyproject.toml", "[tool.thunder-lint]\nselect = ['TL1']\n")
    write(tmp_path / "a.py", TL101_SRC + PRINTS.replace("import torch\n", ""))
    write(tmp_path / "pkgs" / "b" / "thunder-lint.toml", "select = ['TL204']\n")
    write(tmp_path / "pkgs" / "b" / "b.py", TL101_SRC + PRINTS.replace("import torch\n", ""))
    got = sorted((d["path"], d["code"]) for d in json.loads(cli(".", "--output-format", "json").out))
    assert got == [("a.py", "TL101"), ("pkgs/b/b.py", "TL204")], got
    # --config FILE holds for every file
    got = sorted((d["path"], d["code"]) for d in json.loads(cli(".", "--config", "pyproject.toml", "--output-format", "json").out))
    assert got == [("a.py", "TL101"), ("pkgs/b/b.py", "TL101")], got


def test_a_folder_named_on_the_command_line_is_linted_even_if_git_ignores_it(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "corpus/\n")
    write(tmp_path / "corpus" / "lib" / "m.py", TL101_SRC)
    write(tmp_path / "corpus" / ".gitignore", "skip.py\n")
    write(tmp_path / "corpus" / "skip.py", TL101_SRC)
    assert cli("--show-files").out == ""
    files = cli("--show-files", "corpus").out.split()
    assert [os.path.relpath(p, tmp_path) for p in files] == ["corpus/lib/m.py"]  # its own .gitignore still counts


def test_colour_follows_no_color_and_force_color(cli, tmp_path, monkeypatch):
    write(tmp_path / "m.py", TL101_SRC)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert "\x1b[" not in cli("m.py").out  # not a terminal: plain text
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = cli("m.py", "--output-format", "concise").out
    assert "\x1b[1mm.py:6:5:\x1b[0m \x1b[1m\x1b[31mTL101\x1b[0m" in out, repr(out)
    assert "\x1b[" not in cli("m.py", "--output-format", "json").out  # machine formats never
    cli("m.py", "-o", "report.txt")
    assert "\x1b[" not in (tmp_path / "report.txt").read_text()  # files never
    monkeypatch.setenv("FORCE_COLOR", "0")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in cli("m.py").out


def test_colour_on_a_terminal_unless_no_color():
    import io

    from analyzer.report.colour import wanted

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert wanted(Tty(), {}) and not wanted(Tty(), {"NO_COLOR": "1"}) and not wanted(io.StringIO(), {})
    assert wanted(io.StringIO(), {"FORCE_COLOR": "true"})

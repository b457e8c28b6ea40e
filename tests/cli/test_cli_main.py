"""The CLI contract of DESIGN.md, run for real on files in tmp_path."""

from __future__ import annotations

import json

from cli_helpers import CLEAN_SRC, SYNTAX_ERROR_SRC, TL101_SRC, run_process, write


def test_clean_file_exits_0(cli, tmp_path):
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli("ok.py")
    assert r.code == 0, r.err
    assert r.out == "All checks passed!\n"


def test_default_path_is_cwd_and_findings_exit_1(cli, tmp_path):
    write(tmp_path / "pkg" / "model.py", TL101_SRC)
    write(tmp_path / "pkg" / "ok.py", CLEAN_SRC)
    r = cli("--format", "concise")
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0].startswith("pkg/model.py:6:5: TL101 [-] in-place `add_`"), r.out
    assert lines[1:] == ["Found 1 error.", "[-] 1 hidden fix can be enabled with the `--unsafe-fixes` option."]


def test_full_format_shows_the_source_line(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    r = cli("model.py")
    assert r.code == 1
    assert "model.py:" in r.out and "TL101" in r.out
    assert "6 |     y.add_(1)" in r.out
    assert "  |     ^^^^^^^^^ TL101" in r.out
    assert "= help: Make the aliasing explicit" in r.out


def test_exit_zero(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    assert cli("model.py", "--exit-zero").code == 0


def test_syntax_error_is_tl001_and_the_run_goes_on(cli, tmp_path):
    write(tmp_path / "a_broken.py", SYNTAX_ERROR_SRC)
    write(tmp_path / "b_model.py", TL101_SRC)
    r = cli(".", "--format", "json")
    assert r.code == 1
    found = json.loads(r.out)
    assert {(d["path"], d["code"]) for d in found} >= {("a_broken.py", "TL001"), ("b_model.py", "TL101")}
    tl001 = next(d for d in found if d["code"] == "TL001")
    assert tl001["line"] == 1


def test_select_ignore_extend_select(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    assert cli("model.py", "--select", "TL2").code == 0  # TL101 not selected
    assert cli("model.py", "--select", "TL1").code == 1  # prefix
    assert cli("model.py", "--select", "ALL", "--ignore", "TL101").code == 0
    assert cli("model.py", "--select", "TL2", "--extend-select", "TL101").code == 1
    assert cli("model.py", "--select", "tl201,TL101").code == 1  # comma list, case-insensitive


def test_always_on_codes_survive_select(cli, tmp_path):
    write(tmp_path / "broken.py", SYNTAX_ERROR_SRC)
    r = cli("broken.py", "--select", "TL201", "--format", "json")
    assert r.code == 1 and [d["code"] for d in json.loads(r.out)] == ["TL001"]


def test_unknown_selector_is_a_usage_error(cli, tmp_path):
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli("ok.py", "--select", "XX9")
    assert r.code == 2
    assert "XX9" in r.err and "unknown" in r.err


def test_bad_options_exit_2(cli, tmp_path):
    assert cli("--format", "xml").code == 2
    assert cli("--jobs", "-3").code == 2
    assert cli("--no-such-option").code == 2


def test_version_and_help(cli):
    r = cli("--version")
    assert r.code == 0 and r.out.startswith("thunder-lint ")
    r = cli("--help")
    assert r.code == 0 and "--unsafe-fixes" in r.out and "--stdin-filename" in r.out


def test_json_and_json_lines_formats(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    found = json.loads(cli("model.py", "--format", "json").out)
    assert found and all(d["path"] == "model.py" and d["origin"] == "static" for d in found)
    assert set(found[0]) == {"code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "origin", "fixes"}
    lines = cli("model.py", "--format", "json-lines").out.splitlines()
    assert [json.loads(line) for line in lines] == found


def test_github_format(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    r = cli("model.py", "--format", "github")
    assert r.code == 1
    assert r.out.startswith("::error file=model.py,line=")
    assert ",title=TL101::" in r.out
    assert "Found" not in r.out  # machine formats carry no summary


def test_output_file(cli, tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    r = cli("model.py", "--format", "json", "--output-file", "report.json")
    assert r.code == 1 and r.out == ""
    assert json.loads((tmp_path / "report.json").read_text())[0]["code"] == "TL101"


def test_output_file_in_missing_folder_is_a_clear_error(cli, tmp_path):
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli("ok.py", "--output-file", str(tmp_path / "nope" / "out.txt"))
    assert r.code == 2
    assert "cannot write" in r.err and "Traceback" not in r.err


def test_statistics(cli, tmp_path):
    write(tmp_path / "a.py", TL101_SRC)
    write(tmp_path / "b.py", TL101_SRC)
    write(tmp_path / "c.py", SYNTAX_ERROR_SRC)
    r = cli(".", "--statistics")
    assert r.code == 1
    rows = [line.split("\t") for line in r.out.splitlines() if "\t" in line]
    assert rows[0][:2] == ["2", "TL101"] and rows[0][2].endswith("reshape-inplace")
    assert rows[1][:2] == ["1", "TL001"]
    as_json = json.loads(cli(".", "--statistics", "--format", "json").out)
    assert as_json == [
        {"code": "TL101", "name": "reshape-inplace", "count": 2, "fixable": True},
        {"code": "TL001", "name": "syntax-error", "count": 1, "fixable": False},
    ]


def test_stdin_filename(cli, tmp_path):
    r = cli("--stdin-filename", "pkg/model.py", "--format", "concise", stdin=TL101_SRC)
    assert r.code == 1
    assert r.out.startswith("pkg/model.py:") and "TL101" in r.out
    r = cli("-", "--format", "json", stdin=CLEAN_SRC)
    assert r.code == 0 and json.loads(r.out) == []


def test_stdin_cannot_mix_with_paths(cli, tmp_path):
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli("ok.py", "--stdin-filename", "x.py", stdin=CLEAN_SRC)
    assert r.code == 2


def test_rule_docs_and_rules_table(cli):
    from rules import RULES

    r = cli("rule", "TL101")
    assert r.code == 0
    assert r.out.startswith("# TL101") or "TL101 (reshape-inplace)" in r.out.splitlines()[0]
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead"):
        assert heading in r.out
    assert cli("rule", "reshape-inplace").out == r.out  # by name too
    bad = cli("rule", "TL999")
    assert bad.code == 2 and "unknown rule" in bad.err
    table = cli("rules")
    assert table.code == 0
    for code, info in RULES.items():
        assert any(line.startswith(code) and info.name in line for line in table.out.splitlines())
    rows = json.loads(cli("rules", "--format", "json").out)
    assert [row["code"] for row in rows] == list(RULES)


def test_console_script_process_exit_codes(tmp_path):
    write(tmp_path / "model.py", TL101_SRC)
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = run_process(["model.py", "--no-cache", "--format", "concise"], tmp_path)
    assert r.code == 1 and "TL101" in r.out
    r = run_process(["ok.py", "--no-cache"], tmp_path)
    assert r.code == 0, r.err
    r = run_process(["--stdin-filename", "m.py", "--no-cache", "--format", "json"], tmp_path, stdin=TL101_SRC.encode())
    assert r.code == 1 and json.loads(r.out)[0]["path"] == "m.py"
    assert not (tmp_path / ".thunder-lint-cache").exists()  # --no-cache writes nothing


def test_serve_subcommand_reaches_the_server_cli(cli):
    r = cli("serve", "--help")
    assert r.code == 0
    assert "--port" in r.out and "thunder-lint serve" in r.out


def test_summary_plurals(cli, tmp_path):
    write(tmp_path / "a.py", TL101_SRC)
    write(tmp_path / "b.py", TL101_SRC)
    r = cli(".", "--format", "concise")
    assert r.out.splitlines()[-2:] == ["Found 2 errors.", "[-] 2 hidden fixes can be enabled with the `--unsafe-fixes` option."]


def test_help_lists_every_subcommand(cli):
    import inspect
    import re

    from analyzer import cli as cli_module

    dispatched = set(re.findall(r'argv\[0\] == "(\w+)"', inspect.getsource(cli_module.main)))
    assert dispatched == {"rule", "rules", "serve", "run", "check", "lsp"}
    r = cli("--help")
    assert r.code == 0
    for name in dispatched:
        assert f"\n  thunder-lint {name}" in r.out, (name, r.out)

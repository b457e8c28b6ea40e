"""--fix, --unsafe-fixes, --diff and --show-fixes on real files (TL101's fixes are unsafe)."""

from __future__ import annotations

import json
import subprocess

from cli_helpers import CLEAN_SRC, TL101_SRC, write


def test_diff_shows_the_fix_and_writes_nothing(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    r = cli("m.py", "--diff", "--unsafe-fixes")
    assert r.code == 1
    assert r.out.startswith("--- a/m.py\n+++ b/m.py\n@@ ")
    assert "-    y = x.reshape(-1)\n+    y = x.view(-1)\n" in r.out
    assert "Would fix 1 error in 1 file." in r.err
    assert p.read_text() == TL101_SRC


def test_diff_applies_as_a_patch(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    diff = cli("m.py", "--diff", "--unsafe-fixes").out
    (tmp_path / "fix.patch").write_text(diff)
    subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, check=True, capture_output=True)
    assert "x.view(-1)" in p.read_text()
    assert cli("m.py", "--diff", "--unsafe-fixes").out == ""  # nothing left to fix


def test_diff_without_unsafe_fixes_has_nothing_to_show(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    r = cli("m.py", "--diff")
    assert r.code == 0 and r.out == ""
    assert "No fixes to apply." in r.err


def test_fix_applies_only_safe_fixes_by_default(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    r = cli("m.py", "--fix", "--format", "concise")
    assert r.code == 1
    assert p.read_text() == TL101_SRC
    assert "hidden fix can be enabled with the `--unsafe-fixes` option" in r.out


def test_fix_with_unsafe_fixes_rewrites_then_is_idempotent(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    other = write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli(".", "--fix", "--unsafe-fixes", "--show-fixes")
    assert r.code == 0, r.out + r.err
    assert "Fixed:\nm.py:\n    6:5 TL101 (reshape-inplace)\n" in r.out
    assert "(1 fixed, 0 remaining)" in r.out
    fixed = p.read_text()
    assert "y = x.view(-1)" in fixed and fixed.replace("x.view(-1)", "x.reshape(-1)") == TL101_SRC
    assert other.read_text() == CLEAN_SRC
    again = cli(".", "--fix", "--unsafe-fixes")
    assert again.code == 0 and p.read_text() == fixed
    assert again.out == "All checks passed!\n"


def test_fix_keeps_crlf_comments_and_declared_encoding(cli, tmp_path):
    src = "# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9\r\ndef f(x):\r\n    y = x.reshape(-1)  # keep me\r\n    y.add_(1)\r\n    return x\r\n"
    p = write(tmp_path / "m.py", src.encode("latin-1"))
    assert cli("m.py", "--fix", "--unsafe-fixes").code == 0
    data = p.read_bytes()
    assert data == src.replace("x.reshape(-1)", "x.view(-1)").encode("latin-1")


def test_fix_on_stdin_prints_the_fixed_source(cli):
    r = cli("--stdin-filename", "m.py", "--fix", "--unsafe-fixes", stdin=TL101_SRC)
    assert r.code == 0
    assert r.out == TL101_SRC.replace("x.reshape(-1)", "x.view(-1)")
    r = cli("--stdin-filename", "m.py", "--diff", "--unsafe-fixes", stdin=TL101_SRC)
    assert r.code == 1 and "+    y = x.view(-1)" in r.out


def test_show_fixes_lists_edits_in_check_mode(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    r = cli("m.py", "--show-fixes", "--format", "concise")
    assert "= help: Make the aliasing explicit" in r.out
    fixes = json.loads(cli("m.py", "--format", "json").out)[0]["fixes"]
    # y is never read after the write: the copy would drop it, so it is shown and never applied (issue 31)
    assert [f["applicability"] for f in fixes] == ["unsafe", "display"]
    for f in fixes:  # every edit of every fix is listed, with its position and replacement
        for e in f["edits"]:
            assert f"{f['title']}: {e['line']}:{e['column']}-{e['end_line']}:{e['end_column']} -> {e['content']!r}" in r.out


def test_fix_through_a_symlink_keeps_the_link(cli, tmp_path):
    real = write(tmp_path / "real" / "m.py", TL101_SRC)
    link = tmp_path / "m.py"
    link.symlink_to(real)
    assert cli("m.py", "--fix", "--unsafe-fixes").code == 0
    assert link.is_symlink() and "x.view(-1)" in real.read_text()


def test_fix_that_cannot_be_written_is_still_reported(cli, tmp_path, monkeypatch):
    import analyzer.cli as cli_mod

    p = write(tmp_path / "m.py", TL101_SRC)
    monkeypatch.setattr(cli_mod, "_write_fixed", lambda path, digest, fixed: f"{path}: not fixed: read-only file system")
    r = cli("m.py", "--fix", "--unsafe-fixes", "--format", "concise")
    assert r.code == 1
    assert "m.py: not fixed: read-only file system" in r.err
    assert "m.py:6:5: TL101" in r.out and p.read_text() == TL101_SRC


def test_fix_refuses_a_file_that_changed_meanwhile(tmp_path):
    from analyzer.cache import content_hash
    from analyzer.cli import _write_fixed

    p = write(tmp_path / "m.py", TL101_SRC)
    stale = content_hash(b"something else")
    assert "changed while it was being linted" in _write_fixed(str(p), stale, "x = 1\n")
    assert p.read_text() == TL101_SRC
    assert "would not parse" in _write_fixed(str(p), content_hash(TL101_SRC.encode()), "def f(:\n")
    assert p.read_text() == TL101_SRC
    assert _write_fixed(str(p), content_hash(TL101_SRC.encode()), "x = 1\n") is None
    assert p.read_text() == "x = 1\n"


def test_fix_on_stdin_gives_back_what_it_cannot_fix(capfdbinary, monkeypatch, tmp_path):
    # Editors replace their buffer with stdout: bytes that cannot be decoded must come back unchanged.
    import io
    import sys

    from analyzer.cli import main

    monkeypatch.chdir(tmp_path)
    blob = b"x = '\xff\xfe'\n\x00\x01"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(blob)))
    code = main(["--stdin-filename", "m.py", "--fix"])
    out, err = capfdbinary.readouterr()
    assert code == 1 and out == blob
    assert b"TL002" in err


def test_fix_on_stdin_survives_an_engine_error(cli, monkeypatch):
    from analyzer import static

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(static, "fix_source", broken)
    r = cli("--stdin-filename", "m.py", "--fix", "--unsafe-fixes", stdin=TL101_SRC)
    assert r.code == 2 and r.out == TL101_SRC
    assert "internal error while fixing: RuntimeError: boom" in r.err

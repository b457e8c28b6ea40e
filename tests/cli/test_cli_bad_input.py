"""Bad input: each case is a per-file finding or a clear message; the run goes on; nothing hangs."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from cli_helpers import CLEAN_SRC, SYNTAX_ERROR_SRC, run_process, write


def findings(r):
    return [(d["path"], d["code"], d["message"]) for d in json.loads(r.out)]


def codes_by_path(r):
    return {(p, c) for p, c, _ in findings(r)}


def test_non_utf8_bytes_are_tl002_with_position(cli, tmp_path):
    write(tmp_path / "latin.py", b"x = 1\ns = '\xe9t\xe9'\n")
    write(tmp_path / "ok.py", SYNTAX_ERROR_SRC)  # the other file is still linted
    r = cli(".", "--format", "json")
    assert r.code == 1
    found = json.loads(r.out)
    tl002 = next(d for d in found if d["path"] == "latin.py")
    assert tl002["code"] == "TL002" and "utf-8" in tl002["message"]
    assert (tl002["line"], tl002["column"]) == (2, 6)
    assert ("ok.py", "TL001") in codes_by_path(r)


def test_declared_encoding_and_bom_are_honoured(cli, tmp_path):
    write(tmp_path / "latin_declared.py", b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\n")
    write(tmp_path / "bom.py", b"\xef\xbb\xbfx = 1\n")
    r = cli(".", "--format", "json")
    assert r.code == 0 and json.loads(r.out) == []


def test_binary_file_is_tl002(cli, tmp_path):
    write(tmp_path / "blob.py", bytes(range(256)) * 4)
    r = cli(".", "--format", "json")
    assert r.code == 1
    [(path, code, message)] = findings(r)
    assert (path, code) == ("blob.py", "TL002") and "binary" in message


def test_empty_file_is_clean(cli, tmp_path):
    write(tmp_path / "empty.py", "")
    write(tmp_path / "blank.py", "\n\n   \n")
    r = cli(".", "--format", "json")
    assert r.code == 0 and json.loads(r.out) == []


def test_ten_megabyte_file(cli, tmp_path):
    # Embedded data (a 10 MB literal) with code around it; the syntax error at the very end proves the
    # whole file was read and parsed (over the default 4 MiB limit, so the limit is raised).
    row = "0123456789abcdef" * 8 + "\n"
    blob = row * (10 * 1024 * 1024 // len(row) + 1)
    big = write(tmp_path / "big.py", 'def f(x):\n    return x + 1\n\nDATA = """\n' + blob + '"""\n\ndef g(:\n    pass\n')
    assert big.stat().st_size >= 10 * 1024 * 1024
    write(tmp_path / "other.py", SYNTAX_ERROR_SRC)
    start = time.perf_counter()
    r = cli(".", "--format", "json", "--max-file-size", "11MiB")
    assert time.perf_counter() - start < 120
    found = json.loads(r.out)
    assert {(d["path"], d["code"]) for d in found} == {("big.py", "TL001"), ("other.py", "TL001")}
    last_line = big.read_text().count("\n") - 1
    assert next(d["line"] for d in found if d["path"] == "big.py") == last_line


@pytest.mark.parametrize("expr", ["(" * 1000 + "1" + ")" * 1000, "x = " + "-" * 1000 + "1", "y = " + "[" * 1000 + "]" * 1000, "z = " + "a+" * 5000 + "a"], ids=["parens", "unary", "lists", "binop-chain"])
def test_deeply_nested_expressions_do_not_crash(cli, tmp_path, expr):
    write(tmp_path / "deep.py", expr + "\n")
    write(tmp_path / "other.py", SYNTAX_ERROR_SRC)
    r = cli(".", "--format", "json")
    assert r.code == 1, r.err
    assert "internal error" not in r.err and "Traceback" not in r.err
    got = codes_by_path(r)
    assert ("other.py", "TL001") in got
    assert got <= {("other.py", "TL001"), ("deep.py", "TL001")}


def test_unreadable_file_simulated_permission_error(cli, tmp_path, monkeypatch):
    # Tests run as root, who can read a chmod 000 file; the read itself is made to fail the way it does
    # for other users. -j 1 keeps the work in this process, where the patch applies.
    import analyzer.file_reader as fr

    real_open = os.open

    def deny(path, flags, *a, **k):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(fr.os, "open", deny)
    write(tmp_path / "secret.py", CLEAN_SRC)
    write(tmp_path / "broken.py", SYNTAX_ERROR_SRC)
    r = cli(".", "--format", "json", "-j", "1")
    assert r.code == 1
    got = findings(r)
    assert ("secret.py", "TL002", "Cannot lint this file: permission denied") in got
    assert ("broken.py", "TL001") in codes_by_path(r)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads chmod 000 files")
def test_unreadable_file_real_chmod(cli, tmp_path):
    p = write(tmp_path / "secret.py", CLEAN_SRC)
    p.chmod(0)
    try:
        r = cli(".", "--format", "json")
    finally:
        p.chmod(0o644)
    assert ("secret.py", "TL002") in codes_by_path(r)


def test_symlink_loops_and_broken_links(cli, tmp_path):
    pkg = tmp_path / "pkg"
    write(pkg / "m.py", SYNTAX_ERROR_SRC)
    os.symlink(pkg, pkg / "again")  # a folder loop: pkg/again -> pkg
    os.symlink(tmp_path / "loop.py", tmp_path / "loop.py")  # a link to itself
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    r = cli(".", "--format", "json")
    assert r.code == 1
    got = findings(r)
    assert [c for p, c, _ in got if p == "pkg/m.py"] == ["TL001"]  # linted once, not once per loop
    assert not any(p.startswith("pkg/again") for p, _, _ in got)
    loop = [m for p, c, m in got if p == "loop.py"]
    assert loop and "loop" in loop[0]
    assert any(p == "dangling.py" and c == "TL002" for p, c, _ in got)


def test_named_symlink_loop(cli, tmp_path):
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")
    r = cli("self.py", "--format", "json")
    assert r.code == 1
    [(path, code, message)] = findings(r)
    assert code == "TL002" and "symbolic link loop" in message


def test_nonexistent_path_is_reported_and_others_are_linted(cli, tmp_path):
    write(tmp_path / "bad.py", SYNTAX_ERROR_SRC)
    r = cli("nope.py", "bad.py", "--format", "json")
    assert r.code == 1
    got = findings(r)
    assert ("nope.py", "TL002", "Cannot lint this file: no such file or directory") in got
    assert ("bad.py", "TL001") in codes_by_path(r)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_does_not_hang(cli, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = cli(".", "--format", "json")
    assert r.code == 1
    assert findings(r) == [("pipe.py", "TL002", "Cannot lint this file: not a regular file")]


def test_skips_vcs_caches_venvs_and_build_dirs(cli, tmp_path):
    for folder in (".git", "__pycache__", ".venv", "build", "dist", "node_modules", "x.egg-info"):
        write(tmp_path / folder / "bad.py", SYNTAX_ERROR_SRC)
    write(tmp_path / "myenv" / "pyvenv.cfg", "home = /usr\n")
    write(tmp_path / "myenv" / "lib" / "bad.py", SYNTAX_ERROR_SRC)
    write(tmp_path / "src" / "bad.py", SYNTAX_ERROR_SRC)
    write(tmp_path / "notes.txt", SYNTAX_ERROR_SRC)
    r = cli(".", "--format", "json")
    assert codes_by_path(r) == {("src/bad.py", "TL001")}
    # A file named explicitly is linted whatever its suffix or folder.
    r = cli("notes.txt", "build/bad.py", "--format", "json")
    assert codes_by_path(r) == {("notes.txt", "TL001"), ("build/bad.py", "TL001")}


def test_binary_on_stdin(cli):
    r = cli("--stdin-filename", "x.py", "--format", "json", stdin=b"\x00\x01\x02")
    assert r.code == 1 and findings(r)[0][:2] == ("x.py", "TL002")


def test_process_never_shows_a_traceback_on_bad_input(tmp_path):
    write(tmp_path / "a.py", b"\xff\xfe\x00garbage")
    write(tmp_path / "b.py", "(" * 1000 + ")" * 1000 + "\n")
    os.symlink(tmp_path / "c.py", tmp_path / "c.py")
    r = run_process([".", "--no-cache", "--format", "concise", "nonexistent_dir"], tmp_path)
    assert r.code == 1, r.err
    assert "Traceback" not in r.err + r.out
    assert "nonexistent_dir" in r.out and "a.py" in r.out and "c.py" in r.out


def test_oversized_file_is_tl002_not_a_memory_blowup(cli, tmp_path, monkeypatch):
    import analyzer.file_reader as fr

    monkeypatch.setattr(fr, "MAX_FILE_BYTES", 1024 * 1024)  # the real default is 4 MiB
    write(tmp_path / "huge.py", "x = 1\n" * 200_000)
    write(tmp_path / "bad.py", SYNTAX_ERROR_SRC)
    r = cli(".", "--format", "json", "-j", "1")
    got = findings(r)
    assert ("huge.py", "TL002", "Cannot lint this file: file too large (1.2 MB > limit 1.0 MB); raise --max-file-size to lint it") in got
    assert ("bad.py", "TL001") in codes_by_path(r)

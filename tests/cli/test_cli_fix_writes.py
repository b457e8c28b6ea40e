"""--fix writes files safely: no predictable temporary name, mode/owner kept, read-only refused, hard
links and symlinks updated in place of being broken, a changed file refused (analyzer/fix_writer.py)."""

from __future__ import annotations

import os
import stat

import pytest
from cli_helpers import TL101_SRC, write

FIXED_MARK = "x.view(-1)"


def _fix(cli, *paths: str):
    return cli(*paths, "--fix", "--unsafe-fixes", "--format", "concise", "--no-cache")


def test_a_planted_temporary_symlink_is_not_followed(cli, tmp_path):
    victim = write(tmp_path / "victim.txt", "precious\n")
    p = write(tmp_path / "m.py", TL101_SRC)
    (tmp_path / "m.py.thunder-lint-tmp").symlink_to(victim)  # the old, predictable temporary name
    _fix(cli, "m.py")
    assert victim.read_text() == "precious\n"
    assert FIXED_MARK in p.read_text()


def test_no_temporary_file_is_left_behind(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    _fix(cli, "m.py")
    assert [n for n in os.listdir(tmp_path) if n != ".cache-under-test"] == ["m.py"]


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_mode_is_kept(cli, tmp_path, mode):
    p = write(tmp_path / "m.py", TL101_SRC)
    p.chmod(mode)
    _fix(cli, "m.py")
    assert FIXED_MARK in p.read_text()
    assert stat.S_IMODE(p.stat().st_mode) == mode


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_owner_and_group_are_kept(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    os.chown(p, 4321, 8765)
    _fix(cli, "m.py")
    st = p.stat()
    assert FIXED_MARK in p.read_text()
    assert (st.st_uid, st.st_gid) == (4321, 8765)


def test_a_read_only_file_is_refused(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    p.chmod(0o444)
    r = _fix(cli, "m.py")
    assert p.read_text() == TL101_SRC
    assert stat.S_IMODE(p.stat().st_mode) == 0o444
    assert "m.py: not fixed: the file is read-only (mode 444)" in r.err
    assert "m.py:6:5: TL101" in r.out  # still reported


def test_hard_links_stay_one_file(cli, tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    other = tmp_path / "elsewhere" / "same.py"
    other.parent.mkdir()
    os.link(p, other)
    inode = p.stat().st_ino
    _fix(cli, "m.py")
    assert FIXED_MARK in p.read_text()
    assert other.read_text() == p.read_text()
    assert p.stat().st_ino == other.stat().st_ino == inode
    assert p.stat().st_nlink == 2


def test_a_symlinked_file_is_updated_through_its_link(cli, tmp_path):
    real = write(tmp_path / "real" / "m.py", TL101_SRC)
    real.chmod(0o640)
    link = tmp_path / "m.py"
    link.symlink_to(real)
    _fix(cli, "m.py")
    assert link.is_symlink() and FIXED_MARK in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


def test_a_symlink_to_a_read_only_file_is_refused(cli, tmp_path):
    real = write(tmp_path / "real" / "m.py", TL101_SRC)
    real.chmod(0o444)
    (tmp_path / "m.py").symlink_to(real)
    r = _fix(cli, "m.py")
    assert real.read_text() == TL101_SRC
    assert "read-only" in r.err


def test_changed_files_are_refused_on_both_write_paths(tmp_path):
    from analyzer.cache import content_hash
    from analyzer.fix_writer import write_fixed

    p = write(tmp_path / "m.py", TL101_SRC)
    stale = content_hash(b"what was linted")
    assert write_fixed(str(p), stale, b"x = 1\n") == "the file changed while it was being linted"
    os.link(p, tmp_path / "link.py")
    assert write_fixed(str(p), stale, b"x = 1\n") == "the file changed while it was being linted"
    assert p.read_text() == TL101_SRC
    assert write_fixed(str(p), content_hash(TL101_SRC.encode()), b"x = 1\n") is None
    assert (tmp_path / "link.py").read_text() == "x = 1\n"  # in place: shorter text is truncated


def test_not_a_regular_file_is_refused(tmp_path):
    from analyzer.fix_writer import write_fixed

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    assert write_fixed(str(fifo), None, b"x = 1\n") == "not a regular file"

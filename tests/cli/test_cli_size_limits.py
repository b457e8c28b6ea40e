"""Files over --max-file-size (default 4 MiB) are TL002 before they are parsed; the size is a CLI option."""

from __future__ import annotations

import json

import pytest
from cli_helpers import TL101_SRC, write

from analyzer.file_reader import MAX_FILE_BYTES, parse_size


def _codes(r) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for d in json.loads(r.out):
        out.setdefault(d["path"].split("/")[-1], []).append((d["code"], d["message"]))
    return out


def test_default_limit_is_4_mib():
    assert MAX_FILE_BYTES == 4 * 2**20


def test_big_file_is_tl002_with_its_size(cli, tmp_path):
    write(tmp_path / "big.py", TL101_SRC + "x = 1\n" * 800_000)  # 4.8 MB
    write(tmp_path / "small.py", TL101_SRC)
    r = cli(".", "--format", "json", "--no-cache", "-j", "1")
    got = _codes(r)
    assert got["big.py"] == [("TL002", "Cannot lint this file: file too large (4.8 MB > limit 4.2 MB); raise --max-file-size to lint it")]
    assert [c for c, _ in got["small.py"]] == ["TL101"]


def test_max_file_size_option(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC + "x = 1\n" * 20_000)  # 120 kB
    r = cli("m.py", "--format", "json", "--no-cache", "--max-file-size", "100kB")
    assert [c for c, _ in _codes(r)["m.py"]] == ["TL002"]
    assert "(0.1 MB > limit 0.1 MB)" in r.out
    r = cli("m.py", "--format", "json", "--no-cache", "--max-file-size", "1MiB")
    assert [c for c, _ in _codes(r)["m.py"]] == ["TL101"]
    r = cli("-", "--format", "json", "--max-file-size", "100kB", stdin=TL101_SRC + "x = 1\n" * 20_000)
    (d,) = json.loads(r.out)
    assert d["code"] == "TL002" and "file too large (0.1 MB > limit 0.1 MB)" in d["message"]


@pytest.mark.parametrize("text, size", [("4MiB", 4 * 2**20), ("10MB", 10**7), ("500k", 500_000), ("123", 123), ("1.5 MiB", 3 * 2**19)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-1", "4XB", "MiB"])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)

"""SARIF artifact URIs: file names that are not UTF-8 are percent-encoded byte for byte, and labels that
climb above the root keep their ``..`` (so ``../../x.py`` and ``x.py`` stay two files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from analyzer.diagnostics import Diagnostic, Severity
from analyzer.report.sarif import render_sarif

REPO = Path(__file__).resolve().parents[2]
TL101_SRC = "import torch\n\n\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n"


def _diag(path: str) -> Diagnostic:
    return Diagnostic(code="TL101", name="reshape-inplace", severity=Severity.ERROR, message="m", path=path,
                      line=1, column=1, end_line=1, end_column=2)


def _uris(sarif: str) -> list[str]:
    log = json.loads(sarif)
    return [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]


def test_paths_above_the_root_stay_distinct(monkeypatch):
    monkeypatch.chdir("/")  # as the service's workers: labels are relative to "/"
    paths = ["x.py", "../x.py", "../../x.py", "a/../x.py"]
    uris = _uris(render_sarif([_diag(p) for p in paths], root="/"))
    assert uris == ["x.py", "../x.py", "../../x.py", "x.py"]


def test_undecodable_file_name_is_percent_encoded():
    name = os.fsdecode(b"caf\xe9.py")
    assert _uris(render_sarif([_diag(name)], root=".")) == ["caf%E9.py"]
    assert _uris(render_sarif([_diag("/abs/" + name)], root="/elsewhere")) == ["file:///abs/caf%E9.py"]


def test_cli_sarif_with_a_non_utf8_file_name(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.py")).write_text(TL101_SRC)
    (tmp_path / "ok.py").write_text(TL101_SRC)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    for fmt in ("sarif", "json"):
        out = subprocess.run([sys.executable, "-m", "analyzer.cli", "--no-cache", "--format", fmt, "."],
                             cwd=tmp_path, capture_output=True, env=env, timeout=120)
        assert out.returncode == 1, out.stderr
        if fmt == "sarif":
            assert sorted(set(_uris(out.stdout.decode()))) == ["caf%E9.py", "ok.py"]
        else:  # a surrogate escape in JSON text: decodes back to the file's bytes
            assert b"caf\xe9.py" in {os.fsencode(os.path.basename(d["path"])) for d in json.loads(out.stdout)}

"""Shared by the CLI tests: sample sources and a way to run the CLI as a separate process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A real TL101 hazard: the in-place add_ may or may not reach `x` (reshape may return a view).
TL101_SRC = "import torch\n\n\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n"
CLEAN_SRC = "def f(x):\n    return x + 1\n"
SYNTAX_ERROR_SRC = "def f(:\n    pass\n"


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_process(args: list[str], cwd: Path, stdin: bytes | None = None, timeout: float = 120) -> Result:
    """The CLI as users run it: a fresh interpreter (`python3 -m analyzer.cli`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "THUNDER_LINT_OUTPUT_FORMAT")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer.cli", *args], cwd=cwd, input=stdin, capture_output=True, timeout=timeout, env=env
    )
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def findings(cli, *args):
    """(path, code, line, message) of each finding of a JSON run of ``cli`` (the conftest fixture) without cache."""
    r = cli(*args, "--format", "json", "--no-cache")
    assert r.code in (0, 1), r.err
    return [(d["path"], d["code"], d["line"], d["message"]) for d in json.loads(r.out)]


def where(got):
    """The (path, code, line) places of ``findings``' rows."""
    return {(p, c, line) for p, c, line, _ in got}

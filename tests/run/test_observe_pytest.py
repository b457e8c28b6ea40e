"""`pytest --thunder-lint-observe [--thunder-lint-verify]` on a small pytest project in a subprocess: the tests'
own torch.compile runs untouched; its graph breaks and recompiles are reported at the end of the session."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LIB = '''\
import torch

state = {"scale": 2.0}


@torch.compile(backend="aot_eager")
def step(x):
    y = x * state["scale"]  # <-SCALE
    if y.sum() > 0:  # <-BRANCH
        y = y + 1
    return y
'''

TESTS = '''\
import torch

from mylib import state, step


def test_step():
    assert step(torch.ones(2)).tolist() == [3.0, 3.0]


def test_step_after_a_change():
    state["scale"] = 3.0
    assert step(torch.ones(2)).tolist() == [4.0, 4.0]
'''


def _line(tag):
    return next(i for i, line in enumerate(LIB.splitlines(), 1) if line.endswith(f"# <-{tag}"))


@pytest.mark.timeout(900)
def test_observed_breaks_and_recompiles_at_session_end(tmp_path):
    (tmp_path / "mylib.py").write_text(LIB)
    (tmp_path / "test_mylib.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:thunder_lint",
                          "-p", "analyzer.pytest_plugin", "--thunder-lint-observe", "--thunder-lint-verify",
                          "--thunder-lint-format", "json", "--thunder-lint-output", "tl.json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 passed" in ran.stdout
    found = {(d["code"], d["line"]) for d in json.loads((tmp_path / "tl.json").read_text())}
    assert found == {("TL401", _line("BRANCH")), ("TL402", _line("SCALE"))}, found
    assert "compiled graph calls" in ran.stdout
    concise = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:thunder_lint",
                              "-p", "analyzer.pytest_plugin", "--thunder-lint-observe", "--thunder-lint-format",
                              "concise"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert f"mylib.py:{_line('BRANCH')}:" in concise.stdout and "TL401" in concise.stdout
    assert ("thunder-lint --observe: static rules vs torch.compile: 1 of 1 observed graph-break site predicted; "
            "1 of 1 observed recompile site predicted (recall)") in concise.stdout, concise.stdout

"""The pytest plugin on a small pytest project in a subprocess: the jit calls its tests make are checked,
the trace findings reported at the end of the session; --thunder-lint-strict fails the session."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LIB = '''\
import torch

scale = {"value": 3.0}


@torch.compile
def scaled(x):
    return x * scale["value"]  # <-TL201


def eager_only(x):
    return x + 1
'''

TESTS = '''\
import torch

from mylib import eager_only, scaled


def test_scaled():
    assert scaled(torch.ones(2)).tolist() == [3.0, 3.0]
    assert scaled(torch.ones(2)).tolist() == [3.0, 3.0]


def test_scaled_again():
    print("from the test")
    assert scaled(torch.ones(3)).sum().item() == 9.0


def test_eager():
    assert eager_only(torch.zeros(1)).item() == 1.0
'''


def _project(tmp_path):
    (tmp_path / "mylib.py").write_text(LIB)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mylib.py").write_text(TESTS)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return LIB.splitlines().index('    return x * scale["value"]  # <-TL201') + 1


def _pytest(tmp_path, *args, plugins=("-p", "no:thunder_lint", "-p", "analyzer.pytest_plugin"), env=None):
    env = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *plugins, *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(900)
def test_findings_at_session_end_in_json_and_strict_fails(tmp_path):
    line = _project(tmp_path)
    ran = _pytest(tmp_path, "--thunder-lint", "--thunder-lint-format", "json", "--thunder-lint-output", "tl.json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed" in ran.stdout and "1 trace finding written to tl.json" in ran.stdout
    found = json.loads((tmp_path / "tl.json").read_text())
    assert [(d["code"], d["path"], d["line"], d["origin"], d["calls"]) for d in found] == \
        [("TL201", "mylib.py", line, "trace", 3)]  # 3 calls of `scaled` over two tests (two shapes: two traces)

    strict = _pytest(tmp_path, "--thunder-lint", "--thunder-lint-strict", "--thunder-lint-format", "concise")
    assert strict.returncode == 1 and "3 passed" in strict.stdout  # the tests pass; the findings fail it
    assert f"mylib.py:{line}:" in strict.stdout and "TL201" in strict.stdout and "[trace, 3 calls]" in strict.stdout
    assert "--thunder-lint-strict: the session fails" in strict.stdout


@pytest.mark.timeout(900)  # three subprocesses; minutes when the machine is shared
def test_entry_point_loads_the_plugin_by_name_and_it_stays_off_unless_asked(tmp_path):
    """The metadata setuptools builds from pyproject.toml registers `thunder_lint` under pytest11: with it on
    the path, pytest loads the plugin by itself (off: nothing changes), and `-p thunder_lint` turns it on."""
    meta = tmp_path / "meta"
    meta.mkdir()
    build = subprocess.run([sys.executable, "-c", "import setuptools, sys; sys.argv = ['setup.py', '-q', 'egg_info', "
                            f"'--egg-base', {str(meta)!r}]; setuptools.setup()"], cwd=ROOT, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (entry_points,) = meta.glob("*.egg-info/entry_points.txt")
    assert "[pytest11]\nthunder_lint = analyzer.pytest_plugin\n" in entry_points.read_text()
    project = tmp_path / "project"
    project.mkdir()
    line = _project(project)
    env = {"PYTHONPATH": os.pathsep.join([str(meta), ROOT])}  # our metadata first, as an install would put it
    off = _pytest(project, plugins=(), env=env)
    assert off.returncode == 0 and "3 passed" in off.stdout and "thunder-lint" not in off.stdout
    on = _pytest(project, "--thunder-lint-format", "concise", plugins=("-p", "thunder_lint"), env=env)
    assert on.returncode == 0 and "3 passed" in on.stdout, on.stdout + on.stderr
    assert f"mylib.py:{line}:" in on.stdout and "[trace, 3 calls]" in on.stdout


@pytest.mark.timeout(900)
def test_xdist_workers_findings_are_collected_by_the_controller(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
    line = _project(tmp_path)
    ran = _pytest(tmp_path, "-n", "2", "--dist", "each", "--thunder-lint", "--thunder-lint-format", "json",
                  "--thunder-lint-output", "tl.json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "6 passed" in ran.stdout  # --dist each: every test in both workers
    found = json.loads((tmp_path / "tl.json").read_text())
    # one finding for the location, with the calls of both workers summed (3 each)
    assert [(d["code"], d["path"], d["line"], d["calls"]) for d in found] == [("TL201", "mylib.py", line, 6)]
    assert "6 jitted calls in 2 pytest-xdist workers" in ran.stdout, ran.stdout


@pytest.mark.timeout(900)
def test_a_crashed_xdist_worker_is_named_not_counted_as_zero(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
    _project(tmp_path)
    (tmp_path / "tests" / "test_crash.py").write_text(
        "import os\n\nimport torch\n\nfrom mylib import scaled\n\n\ndef test_dies():\n"
        "    scaled(torch.ones(2))\n    os._exit(3)\n")
    ran = _pytest(tmp_path, "-n", "1", "--thunder-lint", "--thunder-lint-format", "concise")
    assert "ended without sending their findings" in ran.stdout, ran.stdout + ran.stderr

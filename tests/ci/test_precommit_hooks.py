"""The hooks in .pre-commit-hooks.yaml, run by pre-commit itself (`pre-commit try-repo`) on a temporary git repo.

The hook repository is a committed copy of this checkout's package files (what pre-commit installs: it runs
`pip install .` in a fresh virtualenv, with this machine's pip configuration), made once for the module so
the environment is installed once. PYTHONPATH is removed from the hooks' environment, so they run the
installed copy, as a user's would.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What `pip install .` builds the package from, and the hook manifest.
PACKAGE_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml")
PACKAGE_DIRS = ("analyzer", "rules", "server", "compiler")

# Each test installs the hooks' environment once (pip, in a fresh virtualenv): about 90 s each measured with
# the 2-core machine under load 10, so they run when asked for; .ci/run asks.
FLAG = "THUNDER_LINT_TEST_PRECOMMIT"
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None,
                       reason="pre-commit is not installed (it is in the dev extra)"),
    pytest.mark.skipif(os.environ.get(FLAG) != "1",
                       reason=f"installs the hook environment with pip (1-3 min): set {FLAG}=1 (.ci/run does)"),
]

# A real TL101 hazard (the in-place mul_ may or may not reach `x`) and a clean file.
BAD = "import torch\n\n\ndef scale_(x):\n    y = x.reshape(-1)\n    y.mul_(2)\n    return x\n"
CLEAN = "def add(x, y):\n    return x + y\n"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": BAD.splitlines(keepends=True)}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("GIT_")}
    env.update(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", PIP_DISABLE_PIP_VERSION_CHECK="1",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return env


def _git(cwd: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args], cwd=cwd,
                   env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """(hook repository, env): the package files committed in a fresh repo, and pre-commit's store."""
    base = tmp_path_factory.mktemp("precommit")
    env = _env(base / "home")
    src = base / "hook-repo"
    src.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(REPO / name, src / name)
    for name in PACKAGE_DIRS:
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(src, "init", "-q", env=env)
    _git(src, "add", "-A", env=env)
    _git(src, "commit", "-q", "-m", "hooks under test", env=env)
    return src, env


@pytest.fixture
def project(tmp_path, hooks):
    """A user's repository with a file that has a finding, a clean one and a text file, all staged."""
    _, env = hooks
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "bad.py").write_text(BAD)
    (proj / "ok.py").write_text(CLEAN)
    (proj / "notes.txt").write_text(BAD)  # not Python: pre-commit must not hand it to the hook
    (proj / "nb.ipynb").write_text(NOTEBOOK)  # a notebook: `types_or: [..., jupyter]` hands it over
    (proj / "pyproject.toml").write_text('[tool.thunder-lint]\nexclude = ["vendored"]\n')
    (proj / "vendored").mkdir()
    (proj / "vendored" / "third_party.py").write_text(BAD)  # excluded by the config
    _git(proj, "init", "-q", env=env)
    _git(proj, "add", "-A", env=env)
    return proj


def pre_commit(hooks, proj: Path, *args: str) -> subprocess.CompletedProcess:
    _, env = hooks
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=900)


def test_try_repo_lint_hook_fails_on_the_finding_and_fix_hook_rewrites_it(hooks, project):
    """`pre-commit try-repo REPO` runs every hook of the manifest on the staged files, as a commit would."""
    src, _ = hooks
    r = pre_commit(hooks, project, "try-repo", str(src))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    lint, fix = out.split("thunder-lint (fix)")  # hooks run in id order: thunder-lint, then thunder-lint-fix
    assert "Failed" in lint and "exit code: 1" in lint
    assert "bad.py:6:5: TL101" in lint and "nb.ipynb:cell 1:6:5: TL101" in lint and "Found 2 errors." in lint
    assert "ok.py:" not in lint and "notes.txt:" not in lint
    assert "vendored" not in lint  # named by pre-commit, skipped by --force-exclude and the config
    assert "Failed" in fix and "files were modified by this hook" in fix
    # the fix listed first (the input is read again, so the code relies on aliasing): reshape -> view
    assert (project / "bad.py").read_text() == BAD.replace("x.reshape(-1)", "x.view(-1)")
    assert (project / "ok.py").read_text() == CLEAN
    assert (project / "vendored" / "third_party.py").read_text() == BAD  # excluded: never rewritten
    fixed_cell = json.loads((project / "nb.ipynb").read_text())["cells"][0]["source"]
    assert "".join(fixed_cell) == BAD.replace("x.reshape(-1)", "x.view(-1)")  # fixed in its cell


def test_hooks_from_a_pre_commit_config(hooks, project):
    """A user's .pre-commit-config.yaml naming the repository and its commit: one environment, both hooks."""
    src, env = hooks
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {src}\n  rev: {rev}\n  hooks:\n  - id: thunder-lint\n  - id: thunder-lint-fix\n"
        "    stages: [manual]\n"  # the opt-in hook: only when asked for
    )
    r = pre_commit(hooks, project, "run", "--files", "ok.py", "vendored/third_party.py", "notes.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "thunder-lint" in r.stdout and "Passed" in r.stdout and "(fix)" not in r.stdout

    r = pre_commit(hooks, project, "run", "--files", "notes.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(no files to check)Skipped" in r.stdout

    r = pre_commit(hooks, project, "run")  # the staged files: bad.py has the finding
    assert r.returncode == 1 and "bad.py:6:5: TL101" in r.stdout, r.stdout + r.stderr
    assert (project / "bad.py").read_text() == BAD  # the lint hook writes nothing

    r = pre_commit(hooks, project, "run", "--hook-stage", "manual", "thunder-lint-fix", "--files", "bad.py")
    assert r.returncode == 1 and "files were modified by this hook" in r.stdout, r.stdout + r.stderr
    assert (project / "bad.py").read_text() == BAD.replace("x.reshape(-1)", "x.view(-1)")
    r = pre_commit(hooks, project, "run", "--files", "bad.py")
    assert r.returncode == 0, r.stdout + r.stderr

    # The hooks' environment was installed without torch: the static linter never imports it.
    pythons = sorted(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, pythons  # one environment shared by both hooks
    probe = "import importlib.util as u; print(u.find_spec('torch') is None, u.find_spec('libcst') is not None)"
    got = subprocess.run([str(pythons[0]), "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert got.stdout.split() == ["True", "True"], got.stdout + got.stderr

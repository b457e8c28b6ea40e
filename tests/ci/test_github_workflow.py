"""docs/thunder-lint.yml, the documented GitHub Actions workflow: its `run:` steps run as scripts on a sample project.

What GitHub would do is reproduced for the steps that can run here: each job's `run:` steps in order, with
`bash -e` (GitHub's default shell) and the workflow's and step's `env`. Two kinds of step cannot run here
and are checked by reading instead: the `uses:` actions (checkout, setup-python, upload-sarif) and the pip
installs (no network): `thunder-lint` and `python` on PATH are this checkout's. Every SARIF file an upload
step names must then exist and be a valid SARIF 2.1.0 log with the sample's findings.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "docs" / "thunder-lint.yml"
SCHEMA_FILE = REPO / "tests" / "report" / "data" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "d9ae9a4394e29ad68cea57a3f7ec4ec0f283887edba0c8f8f2999c8903407636"
UPLOAD = "github/codeql-action/upload-sarif"

# The sample project: a real TL101 hazard in a library module, a clean module, and a compiled function
# reading a module global (TL201, which its tests exercise, so the trace checks see the read happen).
MODEL = "import torch\n\n\ndef scale_(x):\n    y = x.reshape(-1)\n    y.mul_(2)\n    return x\n"
CLEAN = "def add(x, y):\n    return x + y\n"
COMPILED = """\
import torch

gain = {"value": 2.0}


@torch.compile
def amplify(x):
    return x * gain["value"]
"""
COMPILED_READ_LINE = 8
TESTS = """\
import torch

from mylib.compiled import amplify


def test_amplify():
    assert amplify(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_amplify_again():
    assert amplify(torch.ones(2, 2)).sum().item() == 8.0
"""
PLUGIN = REPO / "analyzer" / "pytest_plugin.py"


def load_workflow() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as true
    return wf


def is_install(step: dict) -> bool:
    lines = [ln.strip() for ln in step.get("run", "").splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return bool(lines) and all(ln.startswith("python -m pip install ") for ln in lines)


def run_job(wf: dict, job: str, project: Path, shims: Path) -> list[str]:
    """Runs the job's runnable `run:` steps in order, as GitHub would; returns the names of those run."""
    ran = []
    for step in wf["jobs"][job]["steps"]:
        if "run" not in step or is_install(step):
            continue
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "THUNDER_LINT_CACHE_DIR")}
        env.update({k: str(v) for k, v in wf.get("env", {}).items()})
        env.update({k: str(v) for k, v in step.get("env", {}).items()})
        env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
        env["GITHUB_WORKSPACE"] = str(project)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-c", step["run"]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"step {step.get('name')!r} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        ran.append(step.get("name", step["run"]))
    return ran


def uploaded_files(wf: dict, job: str) -> list[str]:
    return [s["with"]["sarif_file"] for s in wf["jobs"][job]["steps"] if s.get("uses", "").startswith(UPLOAD + "@")]


@pytest.fixture(scope="module")
def validator():
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256
    return jsonschema.Draft4Validator(json.loads(raw))


@pytest.fixture
def shims(tmp_path):
    """`thunder-lint` and `python` as the workflow's steps call them, running this checkout."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, args in (("thunder-lint", '-m analyzer.cli "$@"'), ("python", '"$@"')):
        path = folder / name
        path.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" {args}\n')
        path.chmod(0o755)
    return folder


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "project"
    (proj / "mylib").mkdir(parents=True)
    (proj / "mylib" / "__init__.py").write_text("")
    (proj / "mylib" / "ops.py").write_text(MODEL)
    (proj / "mylib" / "util.py").write_text(CLEAN)
    (proj / "mylib" / "compiled.py").write_text(COMPILED)
    (proj / "tests").mkdir()
    (proj / "tests" / "test_compiled.py").write_text(TESTS)
    (proj / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return proj


def results(log: dict) -> list[tuple[str, str, int]]:
    return sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                   r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in log["runs"][0]["results"])


def check_sarif(path: Path, validator) -> dict:
    log = json.loads(path.read_text())
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, errors[0].message
    assert log["version"] == "2.1.0" and log["runs"]
    for run in log["runs"]:
        assert run["tool"]["driver"]["name"] == "thunder-lint"
        for result in run["results"]:
            assert result["ruleId"].startswith("TL") and result["message"]["text"]
            loc = result["locations"][0]["physicalLocation"]
            assert loc["artifactLocation"]["uri"] and loc["region"]["startLine"] >= 1
    return log


def test_workflow_is_shaped_for_code_scanning():
    wf = load_workflow()
    assert set(wf["on"]) == {"push", "pull_request"}
    assert wf["permissions"]["security-events"] == "write"
    categories = []
    for name, job in wf["jobs"].items():
        uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
        assert uses[:2] == ["actions/checkout", "actions/setup-python"], name
        for step in job["steps"]:
            if step.get("uses", "").startswith(UPLOAD + "@"):
                assert step["if"].startswith("always()")  # uploaded even when an earlier step failed
                categories.append(step["with"]["category"])
    assert len(categories) == len(set(categories)) == 2  # two uploads of one tool need two categories


def test_static_job_runs_and_writes_the_sarif_it_uploads(project, shims, validator):
    wf = load_workflow()
    ran = run_job(wf, "static", project, shims)
    assert ran == ["Lint the repository (SARIF)"]
    files = uploaded_files(wf, "static")
    assert files == ["thunder-lint.sarif"]
    log = check_sarif(project / files[0], validator)
    assert results(log) == [("TL101", "mylib/ops.py", 6), ("TL201", "mylib/compiled.py", COMPILED_READ_LINE)]


def test_static_job_fails_on_an_internal_error_but_not_on_findings(project, shims):
    """--exit-zero keeps findings from failing the job; exit 2 (here: an unreadable config) still fails it."""
    (project / "pyproject.toml").write_text("[tool.thunder-lint]\nselect = 3\n")  # not a list: a config error
    with pytest.raises(AssertionError, match=r"failed \(2\)"):
        run_job(load_workflow(), "static", project, shims)


@pytest.mark.skipif(not PLUGIN.exists(), reason="the pytest plugin (analyzer/pytest_plugin.py) is not in this checkout")
def test_tests_job_runs_pytest_with_the_trace_checks_and_writes_the_sarif_it_uploads(project, shims, validator,
                                                                                      monkeypatch):
    # pytest finds the plugin through the installed package's pytest11 entry point; here that install may be
    # another checkout's, so the entry point is blocked and this checkout's module is loaded by name.
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:thunder_lint -p analyzer.pytest_plugin -p no:cacheprovider")
    wf = load_workflow()
    ran = run_job(wf, "tests", project, shims)
    assert ran == ["Run the tests with the trace checks (SARIF)"]
    files = uploaded_files(wf, "tests")
    assert files == ["thunder-lint-trace.sarif"]
    log = check_sarif(project / files[0], validator)
    # the read the tests made happen, in the user's file and line (never in thunder-lint's or the test's)
    assert results(log) == [("TL201", "mylib/compiled.py", COMPILED_READ_LINE)]

"""POST /analyze lints the submitted files as one project, as the CLI lints the same files (issue 24): the
project index across files, the library default, `assume_compiled`/`target` in the request and a submitted
pyproject.toml read as the CLI reads it. Each case is compared with the CLI run on the same files on disk."""

from __future__ import annotations

import json
import subprocess
import sys

from server_helpers import REPO

MODEL = """\
import torch
from torch import nn

scale = [1.0]


class Block(nn.Module):
    def forward(self, x):
        print("block")
        return x * scale[0]


class Unused(nn.Module):
    def forward(self, x):
        return x.sum().item()
"""
TRAIN = "import torch\nfrom pkg.model import Block\n\nmodel = torch.compile(Block())\n"
PACKAGE = [("pkg/__init__.py", ""), ("pkg/model.py", MODEL), ("train.py", TRAIN)]


def _post(api, files, **options):
    return api.post("/analyze", json={"files": [{"path": p, "content": c} for p, c in files], **options})


def _cli(tmp_path, files, *args):
    for name, text in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "analyzer.cli", "--format", "json", "--no-cache", "--exit-zero", *args, "."],
        cwd=tmp_path, capture_output=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_compile_call_in_another_file_gives_the_cli_findings(api, tmp_path):
    body = _post(api, PACKAGE).json()
    got = body["diagnostics"]
    assert got == _cli(tmp_path, PACKAGE)
    # Block.forward is compiled by train.py: its print and its global read; Unused is not compiled
    assert {(d["path"], d["code"], d["line"]) for d in got} == {("pkg/model.py", "TL204", 9), ("pkg/model.py", "TL201", 10)}
    assert all("compiled by `torch.compile(Block())` at train.py:4" in d["message"] for d in got)
    assert "notes" not in body["summary"]


def test_the_library_default_and_its_note(api, tmp_path):
    files = PACKAGE[:2]
    body = _post(api, files).json()
    assert body["diagnostics"] == _cli(tmp_path, files)
    assert {d["line"] for d in body["diagnostics"]} == {9, 10, 15}
    assert body["summary"]["notes"] == ["no compile call found: every nn.Module forward is treated as compiled; "
                                        "set `assume-compiled` to choose"]


def test_assume_compiled_and_target_in_the_request(api, tmp_path):
    files = PACKAGE[:2]
    off = _post(api, files, assume_compiled=[]).json()
    assert off["diagnostics"] == [] == _cli(tmp_path, files, "--assume-compiled", "")
    one = _post(api, files, assume_compiled=["pkg.model.Unused.forward"], target="torch.compile").json()
    assert one["diagnostics"] == _cli(tmp_path, files, "--assume-compiled", "pkg.model.Unused.forward",
                                      "--target", "torch.compile")
    assert [(d["line"], d["severity"]) for d in one["diagnostics"]] == [(15, "warning")]
    assert one["diagnostics"][0]["message"].split("\n")[2].startswith("torch.compile ")
    assert off["summary"]["settings_hash"] != one["summary"]["settings_hash"]


def test_a_submitted_pyproject_is_read_as_the_cli_reads_it(api, tmp_path):
    config = ("pyproject.toml", '[tool.thunder-lint]\nignore = ["TL201"]\nassume-compiled = ["pkg.model.Unused.forward"]\n')
    files = [*PACKAGE[:2], config]
    body = _post(api, files).json()
    assert body["diagnostics"] == _cli(tmp_path, files)
    assert [d["line"] for d in body["diagnostics"]] == [15]
    # the config file is no Python: a result without an error, no findings
    assert body["files"][2] == {"path": "pyproject.toml", "sha256": body["files"][2]["sha256"]}
    # the request's fields win, as the command line does
    both = _post(api, files, select=["TL201"], assume_compiled=["pkg.model.Block.forward"]).json()
    assert {(d["code"], d["line"]) for d in both["diagnostics"]} == {("TL201", 10)}


def test_a_bad_submitted_pyproject_is_a_clear_422(api):
    r = _post(api, [("a.py", "x = 1\n"), ("pyproject.toml", "[tool.thunder-lint]\nselect = [\n")])
    assert r.status_code == 422 and r.json()["code"] == "invalid_config"
    assert "pyproject.toml: invalid TOML" in r.json()["detail"]
    r = _post(api, [("a.py", "x = 1\n"), ("pyproject.toml", '[tool.thunder-lint]\ntarget = "jax"\n')])
    assert r.status_code == 422 and "`target` must be one of" in r.json()["detail"]
    r = _post(api, [("a.py", "x = 1\n"), ("pyproject.toml", '[tool.thunder-lint]\nselect = ["TL999"]\n')])
    assert r.status_code == 422 and "TL999" in r.json()["detail"]


FIXABLE = """\
import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        flat = x.reshape(-1)
        flat.add_(1)
        print("step")
        return x
"""


def test_fix_keeps_the_project_findings_and_equals_the_cli(api, tmp_path):
    # Fix mode used to lint each file alone: the library default and what other files compile were lost, so the
    # fixes offered and the findings left differed from the CLI's `--fix` (issue 31).
    for files in ([("pkg/__init__.py", ""), ("pkg/blocks.py", FIXABLE)],  # the library default
                  [("models.py", FIXABLE), ("train.py", "import torch\nfrom models import Block\n\nm = torch.compile(Block())\n")]):
        body = _post(api, files, fix=True, unsafe_fixes=True).json()
        fixed = {f["path"]: f.get("fixed_content") for f in body["files"]}
        target = files[-1][0] if files[-1][0] != "train.py" else "models.py"
        assert "x.view(-1)" in fixed[target], body
        left = sorted((d["path"], d["code"], d["line"]) for d in body["diagnostics"])
        assert ("TL204" in {c for _, c, _ in left}) and "TL101" not in {c for _, c, _ in left}, left
        # the CLI on the fixed files finds what the request says remains
        out = tmp_path / target.replace("/", "_").replace(".py", "")
        on_disk = [(p, fixed.get(p) or c) for p, c in files]
        assert left == sorted((d["path"], d["code"], d["line"]) for d in _cli(out, on_disk))

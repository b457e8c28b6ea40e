"""What was assumed reaches every format (issue 31): a project with no resolvable compile call gets the library
default, and the run says so in the human formats' summary, on stderr for the machine formats (stdout stays the
format's own, valid JSON/SARIF), and in the service's `summary.notes`."""

from __future__ import annotations

import json

import pytest
from cli_helpers import write

NOTE = "no compile call found: every nn.Module forward is treated as compiled; set `assume-compiled` to choose"
NET = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        print('x')\n        return x\n"


@pytest.mark.parametrize("fmt", ["json", "json-lines", "sarif", "github"])
def test_machine_formats_say_the_library_default_on_stderr(cli, tmp_path, fmt):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "net.py", NET)
    r = cli(".", "--no-cache", "--format", fmt)
    assert r.code == 1
    assert f"thunder-lint: note: {NOTE}" in r.err, r.err
    assert NOTE not in r.out
    if fmt in ("json", "sarif"):
        json.loads(r.out)  # stdout is still the format alone


def test_no_note_where_a_compile_call_decides(cli, tmp_path):
    write(tmp_path / "net.py", NET)
    write(tmp_path / "train.py", "import torch\nfrom net import Net\n\nm = torch.compile(Net())\n")
    r = cli(".", "--no-cache", "--format", "json")
    assert "note" not in r.err and len(json.loads(r.out)) == 1


def test_an_unresolved_compile_call_is_named_with_what_was_assumed(cli, tmp_path):
    # issue 31: "when a compile call cannot be resolved, the summary names it (file:line) and says what was assumed"
    write(tmp_path / "net.py", NET)
    write(tmp_path / "train.py", "import torch\nfrom net import Net\n\nm = torch.compile(Net())\nf = torch.compile(load_fn())\n")
    r = cli(".", "--no-cache", "--output-format", "concise")
    assert "note: compile call at train.py:5 (`torch.compile(load_fn())`) not resolved" in r.out, r.out
    assert "linted as not compiled" in r.out
    r = cli(".", "--no-cache", "--output-format", "json")
    assert "train.py:5" in r.err and len(json.loads(r.out)) == 1  # stdout stays JSON
    # a cached run says it too
    cli(".")
    assert "train.py:5" in cli(".").out


def test_the_library_default_names_the_calls_it_could_not_follow(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "net.py", NET)
    write(tmp_path / "pkg" / "fast.py", "import torch\n\n\ndef speed_up(m):\n    return torch.compile(m.module_getter())\n")
    r = cli(".", "--no-cache", "--output-format", "concise")
    assert "not resolved" in r.out and "pkg/fast.py:5" in r.out and "no compile call found" not in r.out, r.out


def test_an_assume_compiled_pattern_that_matches_nothing_is_said(cli, tmp_path):
    # issue 35: `--assume-compiled` with a typo was silent
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "net.py", NET)
    r = cli(".", "--no-cache", "--assume-compiled", "pkg.nett.*.forward", "--assume-compiled", "pkg.net.Net.forward")
    assert "the `assume-compiled` pattern `pkg.nett.*.forward` matches no function" in r.out, r.out
    assert "pkg.net.Net.forward` matches" not in r.out and "TL204" in r.out
    r = cli(".", "--no-cache", "--output-format", "json", "--assume-compiled", "nothing.here")
    assert "`nothing.here` matches no function" in r.err and json.loads(r.out) == []

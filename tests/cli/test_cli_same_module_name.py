"""Two scripts of one module name (tools/train.py, scripts/train.py: neither folder a package) are two modules
of the project index, never one: the compile call of either is found, whichever sorts first."""

from __future__ import annotations

import json

import pytest
from cli_helpers import write

MODEL = '''\
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        print("net", x.shape)
        return x


class Other(nn.Module):
    def forward(self, x):
        print("other", x.shape)
        return x
'''


@pytest.mark.parametrize("compiling", ["tools", "scripts"])
def test_two_scripts_named_train_are_two_modules(cli, tmp_path, compiling):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    quiet = "scripts" if compiling == "tools" else "tools"
    write(tmp_path / compiling / "train.py", "import torch\nfrom pkg.model import Net\n\nmodel = torch.compile(Net())\n")
    write(tmp_path / quiet / "train.py", "def main():\n    return 0\n")
    r = cli(".", "--format", "json", "--no-cache")
    got = [(d["path"], d["code"], d["line"], d["message"]) for d in json.loads(r.out)]
    # Net is compiled by the script that compiles it; Other by nothing (no library default: a compile call exists)
    assert [(p, c, line) for p, c, line, _ in got] == [("pkg/model.py", "TL204", 6)], got
    assert f"{compiling}/train.py:4" in got[0][3], got

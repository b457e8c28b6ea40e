"""What is tensor data, in a project linted end to end (issue 31: false class 5, misses 3 and 7).

A model another file compiles takes a jagged-tensor container (whose methods return Python bools and lists of
strings: no tensor data), reads its BatchNorm-like buffer as a number, reads the environment, loops over a size,
and calls a helper of another module that converts to NumPy. Each true hazard is reported once, in the file that
holds it, with torch.compile's behaviour; the container's lines stay quiet.
"""

from __future__ import annotations

import json

from cli_helpers import write

MODEL = """\
import os

import torch
from torch import nn
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

from pkg.ops import to_numpy


class Tower(nn.Module):
    def __init__(self, names: list[str]):
        super().__init__()
        self.names = names
        self.register_buffer("num_batches_tracked", torch.tensor(0))

    def forward(self, features: KeyedJaggedTensor, x: torch.Tensor):
        if features.variable_stride_per_key():
            return x
        if self.names != features.keys():
            x = x * 2
        self.num_batches_tracked.add_(1)
        factor = 1.0 / float(self.num_batches_tracked)
        if os.getenv("TOWER_DEBUG"):
            x = x + 1
        for b in range(x.shape[0]):
            x[b] = x[b] * factor
        return x, to_numpy(x)
"""

OPS = """\
def to_numpy(x):
    return x.detach().cpu().numpy()
"""


def test_tensor_data_in_a_compiled_project(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "ops.py", OPS)
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import Tower\n\nmodel = torch.compile(Tower(['a']))\n")
    r = cli(".", "--format", "json", "--no-cache")
    assert r.code == 1, r.err
    got = {(d["path"], d["code"], d["line"]): d for d in json.loads(r.out)}
    assert set(got) == {
        ("pkg/model.py", "TL302", 22),  # float() of a registered buffer
        ("pkg/model.py", "TL204", 23),  # os.getenv: baked in without a guard
        ("pkg/model.py", "TL301", 25),  # range() over a size: a recompile per new size (automatic dynamic)
        ("pkg/ops.py", "TL302", 2),  # .numpy() in a helper the compiled forward calls
    }, sorted(got)
    for d in got.values():
        assert d["severity"] == "warning" and "torch.compile" in d["message"]
    assert "pytorch #189027" in got[("pkg/model.py", "TL204", 23)]["message"]
    assert "recompile limit" in got[("pkg/model.py", "TL301", 25)]["message"]

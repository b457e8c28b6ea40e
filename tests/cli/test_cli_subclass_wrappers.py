"""A constructor that compiles its argument (``self.model = torch.compile(model)``) compiles what its subclasses'
callers pass: a subclass that inherits the constructor, or passes its own parameter on through
``super().__init__(model)`` / ``Base.__init__(self, model)`` (part A's left-over: these were not followed, and the
library default took every module for compiled)."""

from __future__ import annotations

import json

from cli_helpers import write

NETS = '''\
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        print("net", x.shape)
        return x


class Other(nn.Module):
    def forward(self, x):
        print("other", x.shape)
        return x


class Third(nn.Module):
    def forward(self, x):
        print("third", x.shape)
        return x


class Unused(nn.Module):
    def forward(self, x):
        print("unused", x.shape)
        return x
'''

RUNNERS = '''\
import torch


class Compiled:
    def __init__(self, model):
        self.model = torch.compile(model)


class Runner(Compiled):
    def __init__(self, steps, model):
        super().__init__(model)
        self.steps = steps


class Explicit(Compiled):
    def __init__(self, net, name="x"):
        Compiled.__init__(self, model=net)
        self.name = name


class Plain(Compiled):
    pass
'''

TRAIN = '''\
from pkg.nets import Net, Other, Third
from pkg.runners import Explicit, Plain, Runner

r = Runner(3, Net())
e = Explicit(Other())
p = Plain(Third())
'''


def test_subclass_constructors_pass_the_model_on(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "nets.py", NETS)
    write(tmp_path / "pkg" / "runners.py", RUNNERS)
    write(tmp_path / "train.py", TRAIN)
    r = cli(".", "--format", "json", "--no-cache")
    got = {(d["path"], d["code"], d["line"]): d["message"] for d in json.loads(r.out)}
    # Net, Other and Third are compiled through the three subclasses; Unused by nothing (no library default)
    assert set(got) == {("pkg/nets.py", "TL204", line) for line in (6, 12, 18)}, got
    assert "`Runner(Net())` at train.py:4" in got[("pkg/nets.py", "TL204", 6)], got
    assert "`Explicit(Other())` at train.py:5" in got[("pkg/nets.py", "TL204", 12)], got
    assert "`Plain(Third())` at train.py:6" in got[("pkg/nets.py", "TL204", 18)], got

"""Compile sites behind containers and wrappers (issue 24): what real code puts between `torch.compile` and the
forward it compiles. Each project compiles a module somewhere (so the library default is off) and puts one
hazard in a forward that only that compile site reaches, plus the same hazard in a module nothing compiles.
"""

from __future__ import annotations

import json

from cli_helpers import write

BLOCK = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x, input_pos=None):
        if input_pos is not None and input_pos.max().item() > 10:
            x = x * 2
        return self.lin(x)


class Unrelated(nn.Module):
    def forward(self, x):
        return x.sum().item()


"""
BLOCK_LINE = 11  # the `.item()` only a compile site that reaches Block reports


def compiled_lines(cli, tmp_path, model: str, train: str) -> dict[int, str]:
    write(tmp_path / "lit" / "__init__.py", "")
    write(tmp_path / "lit" / "model.py", BLOCK + model)
    write(tmp_path / "train.py", train)
    r = cli(".", "--format", "json", "--no-cache")
    assert r.code in (0, 1), r.err
    got = json.loads(r.out)
    assert all(d["path"] == "lit/model.py" for d in got), got
    return {d["line"]: d["message"] for d in got}


def test_litgpt_module_dict_of_a_module_list_and_a_classmethod_factory_behind_a_setup_wrapper(cli, tmp_path):
    model = """\
class GPT(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(4, 4), h=nn.ModuleList(Block(4) for _ in range(n))))

    def forward(self, idx):
        x = self.transformer.wte(idx)
        for block in self.transformer.h:
            x = block(x)
        return x

    @classmethod
    def from_name(cls, name):
        return cls(2)
"""
    train = """\
import torch
from lit.model import GPT


def setup(model, compile=True):
    if compile:
        model = torch.compile(model)
    return model


def main():
    model = GPT.from_name("x")
    model = setup(model)
"""
    got = compiled_lines(cli, tmp_path, model, train)
    assert set(got) == {BLOCK_LINE}, got
    assert "compiled by `setup(model)` at train.py:13 (through `torch.compile(model)`)" in got[BLOCK_LINE]


def test_sequential_over_a_list_filled_by_append_and_a_factory_function(cli, tmp_path):
    model = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        for _ in range(3):
            layers.append(Block(4))
        self.features = nn.Sequential(*layers)

    def forward(self, x):
        return self.features(x)


def build():
    net = Net()
    return net
"""
    train = "import torch\nfrom lit import model\n\nm = torch.compile(model.build())\n"
    assert set(compiled_lines(cli, tmp_path, model, train)) == {BLOCK_LINE}


def test_module_list_grown_by_append_plain_lists_and_compile_of_forward(cli, tmp_path):
    model = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([])
        self.layers.append(nn.ModuleList([Block(4), nn.Identity()]))

    def forward(self, x):
        for block, _ in self.layers:
            x = block(x)
        return x


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = [Net(), Net()]

    def forward(self, x):
        return self.parts[0](x) + self.parts[1](x)
"""
    train = "import torch\nfrom lit.model import Pair\n\np = Pair()\nf = torch.compile(p.forward)\n"
    assert set(compiled_lines(cli, tmp_path, model, train)) == {BLOCK_LINE}


def test_compile_wrapper_called_with_an_instance_and_functools_partial(cli, tmp_path):
    model = "\n\ndef step(x, scale):\n    return x * scale.item()\n"
    train = """\
import functools

import torch
import thunder

from lit.model import Block, step


def compile_model(module):
    return thunder.jit(module)


fast = compile_model(Block(4))
g = torch.compile(functools.partial(step, scale=2))
"""
    got = compiled_lines(cli, tmp_path, model, train)
    assert set(got) == {BLOCK_LINE, 24}, got
    assert "compiled by `compile_model(Block(4))` at train.py:13" in got[BLOCK_LINE]


def test_a_wrapper_of_a_wrapper_and_a_keyword_argument(cli, tmp_path):
    train = """\
import torch

from lit.model import Block


def compile_it(*, model):
    return torch.compile(model)


def prepare(m):
    return compile_it(model=m)


prepared = prepare(Block(4))
"""
    assert set(compiled_lines(cli, tmp_path, "", train)) == {BLOCK_LINE}


def test_a_wrapper_nobody_calls_with_a_module_compiles_nothing(cli, tmp_path):
    # a compile call whose module is unknown (a library API such as `compile_model(model)`): the library
    # default applies, every forward is linted as compiled
    train = "import torch\n\n\ndef compile_model(model):\n    return torch.compile(model)\n"
    got = compiled_lines(cli, tmp_path, "", train)
    assert set(got) == {BLOCK_LINE, 18}, got
    assert got[18].startswith("if `Unrelated` is compiled, ")


def test_a_nested_function_a_factory_returns_in_a_tuple_is_compiled_at_its_place(cli, tmp_path):
    # pytorch #197896's shape: `step, state = make_counted_step()` then `torch.compile(step)`. The factory returns
    # (step, other): only the function at the unpacked place is compiled, and its print is reported there.
    write(tmp_path / "run.py", """\
import torch


def make_counted_step():
    state = {"n": 0}

    def step(x):
        print("step")
        return x + 1

    def other(x):
        print("other")
        return x

    return step, other, state


step, other, state = make_counted_step()
compiled = torch.compile(step)
""")
    r = cli(".", "--format", "json", "--no-cache", "--select", "TL204")
    got = json.loads(r.out)
    assert [(d["path"], d["line"]) for d in got] == [("run.py", 8)], got
    assert "not resolved" not in r.err, r.err

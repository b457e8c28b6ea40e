"""Which functions count as jitted, and with which options."""

import ast

import pytest

from analyzer.static.jitted import find_jitted
from analyzer.static.module_index import build_module_index


def jitted(src, extra=()):
    index = build_module_index(ast.parse(src))
    return sorted((t.info.qualname, t.symbolic) for t in find_jitted(src, index, extra))


@pytest.mark.parametrize(
    "src, expected",
    [
        ("import thunder\n@thunder.jit\ndef f(x): pass\n", [("f", False)]),
        ("import thunder as th\n@th.jit\ndef f(x): pass\n", [("f", False)]),
        ("from thunder import jit\n@jit\ndef f(x): pass\n", [("f", False)]),
        ("import torch\n@torch.compile\ndef f(x): pass\n", [("f", False)]),
        ("import torch\n@torch.compile(dynamic=True)\ndef f(x): pass\n", [("f", True)]),
        ("import torch\n@torch.compile(dynamic=False)\ndef f(x): pass\n", [("f", False)]),
        ("import thunder\nfrom functools import partial\n@partial(thunder.jit, cache='symbolic values')\ndef f(x): pass\n",
         [("f", True)]),
        ("import thunder\ndef f(x): pass\ng = thunder.jit(f, cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES)\n", [("f", True)]),
        ("import thunder\ndef f(x): pass\ng = thunder.jit(f, cache='constant values')\n", [("f", False)]),
        ("import compiler\ndef f(x): pass\ng = compiler.jit(f)\n", [("f", False)]),
        ("import analyzer\n@analyzer.jit(sharp_edges='warn')\ndef f(x): pass\n", [("f", False)]),
        ("import torch\ndef f(x): pass\ng = torch.compile(dynamic=True)(f)\n", [("f", True)]),
        # forward of a module class compiled in the same file
        ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x): pass\n    def other(self): pass\n"
         "m = torch.compile(M())\n", [("M.forward", False)]),
        ("import thunder, torch\nclass M(torch.nn.Module):\n    def forward(self, x): pass\n"
         "def main():\n    model = M()\n    jm = thunder.jit(model)\n", [("M.forward", False)]),
        ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x): pass\nm = M()\nm.compile(dynamic=True)\n",
         [("M.forward", True)]),
        ("import torch\nclass G:\n    def __init__(self):\n        self.fast = torch.compile(self.step, fullgraph=True)\n"
         "    def step(self, x): pass\n    def other(self): pass\n", [("G.step", False)]),
        ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x): pass\n"
         "model = M().to('cuda').eval()\nfast = torch.compile(model)\n", [("M.forward", False)]),
        ("import thunder\nclass M:\n    def forward(self, x): pass\nfast = thunder.jit(M().cuda())\n",
         [("M.forward", False)]),
        # not jitted: TorchScript, re.compile, a plain call
        ("import torch\n@torch.jit.script\ndef f(x): pass\n", []),
        ("import re\ndef f(x): pass\np = re.compile('x')\n", []),
        ("def f(x): pass\ng = f(1)\n", []),
        # a local function passed to jit inside another function
        ("import thunder\ndef outer():\n    def inner(): pass\n    return thunder.jit(inner)\n", [("outer.inner", False)]),
    ],
)
def test_jit_forms(src, expected):
    assert jitted(src) == expected


def test_configured_decorators_dotted_and_bare():
    src = "import mylib\nfrom mylib import fast\n@mylib.compile_me\ndef f(x): pass\n@fast\ndef g(x): pass\n"
    assert jitted(src) == []
    assert jitted(src, ("mylib.compile_me", "fast")) == [("f", False), ("g", False)]


def test_submodules_of_a_compiled_module_are_jitted_too():
    src = (
        "import torch\nclass Attn(torch.nn.Module):\n    def forward(self, x): pass\n"
        "class Block(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.attn = Attn()\n"
        "    def forward(self, x): return self.attn(x)\n"
        "class Unused(torch.nn.Module):\n    def forward(self, x): pass\n"
        "m = torch.compile(Block(), dynamic=True)\n"
    )
    # (the submodule's forward gets its scalar arguments from Block's code: only the sizes it reads are symbolic)
    assert jitted(src) == [("Attn.forward", "sizes"), ("Block.forward", True)]

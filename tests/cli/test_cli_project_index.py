"""Compiled code where real projects put it: small multi-file projects linted end to end.

Each kind of project from issue 8 has a positive case (the hazard is in code another file compiles) and
a negative one (the same hazard in code nothing compiles stays quiet).
"""

from __future__ import annotations

import json

from cli_helpers import write

MODEL = """\
import torch
from torch import nn

counter = [0]


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        print("block", x.shape)
        return self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(4) for _ in range(2)])

    def scale(self, x):
        return x * counter[0]

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.scale(x)


class Unused(nn.Module):
    def forward(self, x):
        print("never compiled")
        return x
"""


def findings(cli, *args):
    r = cli(*args, "--format", "json", "--no-cache")
    assert r.code in (0, 1), r.err
    return [(d["path"], d["code"], d["line"], d["message"], d["severity"]) for d in json.loads(r.out)]


def test_module_compiled_in_another_file(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import Net\n\nmodel = torch.compile(Net())\n")
    got = findings(cli, ".")
    where = {(p, c, line) for p, c, line, _, _ in got}
    # forward's submodules (ModuleList of Block) and the method it calls on self are compiled too
    assert where == {("pkg/model.py", "TL204", 13), ("pkg/model.py", "TL201", 23)}, got
    for _, _, _, message, severity in got:
        assert "compiled by `torch.compile(Net())` at train.py:4" in message
        assert severity == "warning"  # torch.compile: a performance cost, not a wrong result
        assert "torch.compile guards" in message or "graph break" in message


def test_a_module_nothing_compiles_in_a_project_that_compiles_stays_quiet(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import Net, Block\n\nmodel = Net()\nb = torch.compile(Block(4))\n")
    # the project compiles its modules itself (Block): Net, which it never compiles, is quiet
    assert {(p, c, line) for p, c, line, *_ in findings(cli, ".")} == {("pkg/model.py", "TL204", 13)}


def test_variable_holding_an_instance_and_inherited_forward(cli, tmp_path):
    write(tmp_path / "src" / "proj" / "__init__.py", "")
    write(tmp_path / "src" / "proj" / "base.py", MODEL)
    write(tmp_path / "src" / "proj" / "sub.py", "from .base import Net\n\n\nclass Wide(Net):\n    pass\n")
    write(tmp_path / "main.py", "import thunder\nimport proj.sub as s\n\nm = s.Wide()\njm = thunder.jit(m)\n")
    got = findings(cli, ".")
    assert {(p, c) for p, c, *_ in got} == {("src/proj/base.py", "TL204"), ("src/proj/base.py", "TL201")}, got
    assert all("thunder.jit(m)" in m and "torch.compile" not in m.replace("torch.compile(", "") for *_, m, _ in got), got


OPS = """\
import random

import torch


def fused_step(x):
    return x * random.random()


def eager_step(x):
    return x * random.random()
"""


def test_imported_function_passed_to_thunder_jit(cli, tmp_path):
    write(tmp_path / "ops.py", OPS)
    write(tmp_path / "main.py", "import thunder\nimport ops\n\nstep = thunder.jit(ops.fused_step)\n")
    got = findings(cli, ".")
    assert [(p, c, line) for p, c, line, *_ in got] == [("ops.py", "TL204", 7)], got
    assert "compiled by `thunder.jit(ops.fused_step)` at main.py:4" in got[0][3]


def test_from_import_function_and_a_helper_it_calls_across_modules(cli, tmp_path):
    write(tmp_path / "ops.py", OPS)
    write(tmp_path / "steps.py", "from ops import fused_step\n\n\ndef step(x):\n    return fused_step(x) + 1\n")
    write(tmp_path / "main.py", "import torch\nfrom steps import step as s\n\njs = torch.compile(s, dynamic=True)\n")
    got = findings(cli, ".")
    assert [(p, c, line) for p, c, line, *_ in got] == [("ops.py", "TL204", 7)], got


def test_imported_function_not_compiled(cli, tmp_path):
    write(tmp_path / "ops.py", OPS)
    write(tmp_path / "main.py", "import ops\n\nstep = ops.fused_step\n")
    assert findings(cli, ".") == []


def test_module_compile_method(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "from .model import Net\n")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "run.py", "from pkg import Net\n\n\ndef main():\n    net = Net().to('cpu')\n    net.compile()\n")
    got = findings(cli, ".")
    assert {(p, c) for p, c, *_ in got} == {("pkg/model.py", "TL204"), ("pkg/model.py", "TL201")}, got
    assert all("net.compile()" in m for *_, m, _ in got)


def test_module_compile_of_another_object_is_not_a_jit(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "from .model import Net\n")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "run.py", "import re\nfrom pkg import Net\n\nnet = Net()\npat = re.compile('x')\n")
    # no compile call at all: the library default lints every module's forward, saying so in each finding
    got = findings(cli, ".", "--assume-compiled", "")
    assert got == []


def test_assume_compiled_in_config_and_on_the_command_line(cli, tmp_path):
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "models" / "__init__.py", "")
    write(tmp_path / "mypkg" / "models" / "net.py", MODEL)
    # nothing in the linted files compiles: a framework does; `assume-compiled` chooses what
    got = findings(cli, ".", "--assume-compiled", "mypkg.models.*.Unused.forward")
    assert [(p, c, line) for p, c, line, *_ in got] == [("mypkg/models/net.py", "TL204", 33)], got
    # unknown compiler: the notes say what thunder and torch.compile each do
    assert "runs only while tracing" in got[0][3] and "\ntorch.compile runs it on every call" in got[0][3]
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nassume-compiled = ["mypkg.models.*.forward"]\n')
    got = findings(cli, ".")
    assert {line for _, _, line, *_ in got} == {13, 23, 33}, got


def test_target_overrides_the_compiler(cli, tmp_path):
    write(tmp_path / "ops.py", OPS)
    write(tmp_path / "main.py", "import thunder\nimport ops\n\nstep = thunder.jit(ops.fused_step)\n")
    (thunder,) = findings(cli, ".")
    (torch_compile,) = findings(cli, ".", "--target", "torch.compile")
    assert "runs only while tracing" in thunder[3] and "graph break" not in thunder[3]
    assert "graph break" in torch_compile[3] and "runs only while tracing" not in torch_compile[3]
    (as_thunder,) = findings(cli, ".", "--target", "thunder")
    assert as_thunder == thunder


def test_cached_run_follows_a_change_in_another_file(cli, tmp_path):
    write(tmp_path / "ops.py", OPS)
    main = write(tmp_path / "main.py", "import ops\n\nstep = ops.fused_step\n")
    r = cli(".", "--format", "concise")
    assert r.code == 0, r.out + r.err
    write(main, "import thunder\nimport ops\n\nstep = thunder.jit(ops.fused_step)\n")
    r = cli(".", "--format", "concise")
    assert r.code == 1 and "ops.py:7" in r.out, r.out + r.err
    write(main, "import ops\n\nstep = ops.fused_step\n")
    r = cli(".", "--format", "concise")
    assert r.code == 0, r.out + r.err


def test_library_default_lints_every_module_forward_and_says_so(cli, tmp_path):
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "net.py", MODEL)
    got = findings(cli, ".")
    # every nn.Module's forward and what it reaches (Net.scale), Unused included: users compile them
    assert {(p, c, line) for p, c, line, *_ in got} == {("mypkg/net.py", "TL204", 13), ("mypkg/net.py", "TL201", 23),
                                                        ("mypkg/net.py", "TL204", 33)}, got
    by_line = {line: message for _, _, line, message, _ in got}
    assert by_line[33].startswith("if `Unused` is compiled, `print()` inside `forward`"), by_line
    assert by_line[23].startswith("if `Net` is compiled, `scale` reads the module global `counter`"), by_line
    r = cli(".", "--no-cache", "--format", "concise")
    assert r.out.splitlines()[-1] == ("no compile call found: every nn.Module forward is treated as compiled; "
                                      "set `assume-compiled` to choose"), r.out
    # `assume-compiled = []` turns the library default off
    write(tmp_path / "pyproject.toml", "[tool.thunder-lint]\nassume-compiled = []\n")
    assert findings(cli, ".") == []
    r = cli(".", "--no-cache")
    assert "treated as compiled" not in r.out and r.code == 0


def test_library_default_skips_autograd_functions_and_plain_classes(cli, tmp_path):
    write(tmp_path / "lib.py", "import torch\n\n\nclass Scale(torch.autograd.Function):\n    @staticmethod\n"
          "    def forward(ctx, x):\n        print('fwd')\n        return x * 2\n\n\nclass Plain:\n"
          "    def forward(self, x):\n        print('plain')\n        return x\n\n\n"
          "class FromOtherLib(timm_layers.Mlp):\n    def forward(self, x):\n        print('mlp')\n        return x\n")
    write(tmp_path / "backends.py", "import torch\nfrom vllm.attention import AttentionImpl\nfrom lightning import LightningModule\n\n\n"
          "class FlashImpl(AttentionImpl):\n    def forward(self, layer, q):\n        print('impl')\n        return q\n\n\n"
          "class Held(AttentionImpl):\n    def __init__(self):\n        self.proj = torch.nn.Linear(2, 2)\n\n"
          "    def forward(self, x):\n        print('held')\n        return x\n\n\n"
          "class Lit(LightningModule):\n    def forward(self, x):\n        print('lit')\n        return x\n")
    got = findings(cli, ".")
    # a base from another library is a module only where something says so: its name (LightningModule) or
    # the class itself (it holds a torch.nn layer); timm's Mlp and vllm's AttentionImpl say nothing here
    assert sorted((p, c, line) for p, c, line, *_ in got) == [("backends.py", "TL204", 17), ("backends.py", "TL204", 23)], got


def test_a_function_compile_call_leaves_the_library_default_on(cli, tmp_path):
    # x-transformers: one `@torch.compile` helper; the modules are still compiled by the library's users
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "net.py", MODEL + "\n\n@torch.compile\ndef helper(x):\n    return x + 1\n")
    got = findings(cli, ".")
    assert {line for _, _, line, *_ in got} == {13, 23, 33}, got
    assert "no nn.Module compile call found: every nn.Module forward" in cli(".", "--no-cache").out


def test_the_tests_compiling_toy_models_leave_the_library_default_on(cli, tmp_path):
    # torchao: its tests compile toy models; its own modules are compiled by its users
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "net.py", MODEL)
    write(tmp_path / "tests" / "test_net.py", "import torch\nfrom mypkg.net import Block\n\n"
          "def test_block():\n    torch.compile(Block(4))\n")
    got = findings(cli, ".")
    assert {line for _, _, line, *_ in got} == {13, 23, 33}, got
    block = [m for _, _, line, m, _ in got if line == 13]
    assert "compiled by `torch.compile(Block(4))` at tests/test_net.py:5" in block[0], block


def test_a_run_answered_from_the_cache_still_says_the_library_default(cli, tmp_path):
    write(tmp_path / "mypkg" / "__init__.py", "")
    write(tmp_path / "mypkg" / "net.py", MODEL)
    note = "no compile call found: every nn.Module forward is treated as compiled; set `assume-compiled` to choose"
    cold = cli(".", "--format", "concise")
    warm = cli(".", "--format", "concise")
    assert cold.out.splitlines()[-1] == note and warm.out == cold.out, (cold.out, warm.out)


CHECKS = '''\
_ENABLED = True


def disable():
    """Turn the checks off.

    Example:
        >>> disable()
    """
    global _ENABLED
    _ENABLED = False


def check(cond):
    """Raise where `cond` is false.

    Checks can be turned off with `disable()`; `print(...)` them while debugging.
    """
    if not cond:
        raise ValueError("check failed")
'''


def test_a_call_written_in_a_docstring_reaches_nothing(cli, tmp_path):
    # kornia's KORNIA_CHECK* docstrings say "disabled ... using `disable_checks()`": read as a call, it marked
    # disable_checks as compiled (a TL203 on its global write) and, through its own docstring, more functions
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "checks.py", CHECKS)
    write(tmp_path / "pkg" / "model.py", "import torch\nfrom pkg.checks import check\n\n\nclass M(torch.nn.Module):\n"
          "    def forward(self, x):\n        check(x.ndim == 2)\n        return x * 2\n")
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import M\n\nmodel = torch.compile(M())\n")
    assert findings(cli, ".") == []
    # a call after the docstring is still read
    write(tmp_path / "pkg" / "checks.py", CHECKS.replace('        raise ValueError("check failed")',
                                                         '        raise ValueError("check failed")\n    disable()'))
    assert {(p, c, line) for p, c, line, *_ in findings(cli, ".")} == {("pkg/checks.py", "TL203", 11)}


def test_a_reached_function_branching_on_its_scalar_argument_is_not_symbolic(cli, tmp_path):
    # kornia: torch.compile(model, dynamic=True) reaches spatial_gradient(x, self.mode, self.order), whose
    # `if mode == "sobel" and order == 1:` compares module attributes, constants to torch.compile (the entry's
    # own scalar arguments are symbolic under dynamic=True; a reached function's come from its callers). A size
    # the reached function reads itself is still symbolic.
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops.py", "def gradient(x, order: int):\n    if order == 1:\n        return x.diff(dim=-1)\n"
          "    return x.diff(dim=-1).diff(dim=-1)\n\n\ndef pad(x, n: int):\n    if x.shape[-1] < n:\n"
          "        return x.new_zeros(n)\n    return x\n")
    write(tmp_path / "pkg" / "model.py", "import torch\nfrom pkg.ops import gradient, pad\n\n\nclass M(torch.nn.Module):\n"
          "    def __init__(self, order=1):\n        super().__init__()\n        self.order = order\n\n"
          "    def forward(self, x, n: int):\n        if n > 2:\n            x = x * 2\n"
          "        return pad(gradient(x, self.order), 8)\n")
    write(tmp_path / "train.py", "import torch\nfrom pkg.model import M\n\nmodel = torch.compile(M(), dynamic=True)\n")
    assert {(p, c, line) for p, c, line, *_ in findings(cli, ".")} == {("pkg/model.py", "TL301", 11),
                                                                        ("pkg/ops.py", "TL301", 8)}

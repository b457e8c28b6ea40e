"""Round 3's unresolved compile sites (torchtitan, nequip): the shapes, each beside the code that must stay quiet.

- torchtitan's `apply_compile(model: nn.Module)`: `for layer_id, block in model.layers.named_children():
  block.compile(...)` (also `.named_modules()`, `.children()`, `.modules()`, a ModuleDict's `.values()`/`.items()`,
  `enumerate(...)`), called as `apply_compile(model)` from `parallelize(model: Llama)`: the blocks Llama holds;
- torchtitan's loss: `self.fn = torch.compile(self.fn)` in a base class whose subclasses store a function in
  `self.fn` in their `__init__`;
- a compile call still unresolved beside resolved ones: the library default still applies to the modules no
  resolved call compiles, and the summary names the call.
"""

from __future__ import annotations


import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from cli_helpers import findings, where, write


MODEL = '''\
import torch
from torch import nn


class TransformerBlock(nn.Module):
    def forward(self, x):
        print("block", x.shape)
        return x * 2


class Head(nn.Module):
    def forward(self, x):
        print("head", x.shape)
        return x


class Llama(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = nn.ModuleDict()
        for i in range(n):
            self.layers[str(i)] = TransformerBlock()
        self.head = Head()

    def forward(self, x):
        for layer in self.layers.values():
            x = layer(x)
        return self.head(x)
'''

PARALLELIZE = '''\
from pkg.compile import apply_compile
from pkg.model import Llama


def parallelize(model: Llama, enabled: bool):
    if enabled:
        apply_compile(model, backend="inductor")
    return model
'''


def _titan(tmp_path, loop: str, parallelize: str = PARALLELIZE):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "compile.py", "import torch\nfrom torch import nn\n\n\n"
          f"def apply_compile(model: nn.Module, backend='inductor'):\n    {loop}\n"
          "        block.compile(backend=backend, fullgraph=True)\n")
    write(tmp_path / "pkg" / "parallelize.py", parallelize)


@pytest.mark.parametrize("loop", [
    "for layer_id, block in model.layers.named_children():",
    "for name, block in model.layers.named_modules():",
    "for block in model.layers.children():",
    "for block in model.layers.modules():",
    "for block in model.layers.values():",
    "for key, block in model.layers.items():",
    "for block in model.layers:",
    "for i, block in enumerate(model.layers):",
])
def test_blocks_compiled_in_a_loop_over_a_parameters_container(cli, tmp_path, loop):
    _titan(tmp_path, loop)
    got = findings(cli, ".")
    # the blocks are compiled; the head, which no call compiles, is not linted as compiled
    assert where(got) == {("pkg/model.py", "TL204", 7)}, got
    assert "compiled by `apply_compile(model)` at pkg/parallelize.py:7" in got[0][3]
    assert "block.compile(" in got[0][3]
    assert "not resolved" not in cli(".", "--no-cache").out


def test_an_instance_passed_to_the_wrapper(cli, tmp_path):
    _titan(tmp_path, "for layer_id, block in model.layers.named_children():",
           "from pkg.compile import apply_compile\nfrom pkg.model import Llama\n\nm = Llama(2)\napply_compile(m)\n")
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 7)}


def test_a_loop_over_something_else_stays_unresolved_and_named(cli, tmp_path):
    # `model.layers` of a caller that passes nothing the index knows: the summary names the call, and the
    # library default lints every module (the head too), saying so
    _titan(tmp_path, "for layer_id, block in model.layers.named_children():",
           "from pkg.compile import apply_compile\n\n\ndef parallelize(model, enabled):\n    apply_compile(model)\n")
    got = findings(cli, ".")
    assert where(got) == {("pkg/model.py", "TL204", 7), ("pkg/model.py", "TL204", 13)}, got
    out = cli(".", "--no-cache").out
    assert "1 compile call not resolved to the project's code (pkg/compile.py:7 `block.compile(" in out, out


LOSS = '''\
from typing import Callable

import torch

LossFunction = Callable[..., torch.Tensor]


def cross_entropy_loss(pred, labels):
    print("loss", pred.shape)
    return torch.nn.functional.cross_entropy(pred, labels)


def mse_loss(pred, labels):
    if pred.sum() > 0:
        return torch.nn.functional.mse_loss(pred, labels)
    return pred.sum() * 0


def unused_loss(pred, labels):
    print("never compiled")
    return pred


class BaseLoss:
    fn: LossFunction

    def _maybe_compile(self, enabled):
        if enabled:
            self.fn = torch.compile(self.fn)

    def __call__(self, pred, labels):
        return self.fn(pred, labels)


class CrossEntropyLoss(BaseLoss):
    def __init__(self, compile_enabled=False):
        self.fn: LossFunction = cross_entropy_loss
        self._maybe_compile(compile_enabled)


class MSELoss(BaseLoss):
    def __init__(self, compile_enabled=False):
        self.fn = mse_loss
        self._maybe_compile(compile_enabled)


class Other:
    def __init__(self):
        self.fn = unused_loss


class Passed(BaseLoss):
    def __init__(self, unused_loss):
        self.fn = unused_loss  # the parameter, not the module's function of that name
        self._maybe_compile(True)
'''


def test_torch_compile_of_self_fn_stored_by_subclasses(cli, tmp_path):
    write(tmp_path / "loss.py", LOSS)
    got = findings(cli, ".")
    # the functions the subclasses store in self.fn; not the one an unrelated class stores
    assert where(got) == {("loss.py", "TL204", 9), ("loss.py", "TL302", 14)}, got
    assert all("compiled by `torch.compile(self.fn)` at loss.py:29" in m for *_, m in got)
    assert "not resolved" not in cli(".", "--no-cache").out


def test_an_unresolved_module_compile_keeps_the_library_default_for_the_rest(cli, tmp_path):
    # one resolved module compile (Resolved), one call the index cannot follow: the modules no resolved call
    # compiles are still linted as possibly compiled, and the summary names the call
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "train.py", "import torch\nfrom pkg.model import Head\n\n\n"
          "def build(registry, name):\n    m = registry[name]()\n    m.compile()\n    return m\n\n\n"
          "head = torch.compile(Head())\n")
    got = findings(cli, ".")
    assert where(got) == {("pkg/model.py", "TL204", 7), ("pkg/model.py", "TL204", 13)}, got
    block = next(m for p, c, line, m in got if line == 7)
    assert "if `TransformerBlock` is compiled" in block
    head = next(m for p, c, line, m in got if line == 13)
    assert "compiled by `torch.compile(Head())`" in head
    out = cli(".", "--no-cache").out
    assert "1 compile call not resolved to the project's code (pkg/train.py:7 `m.compile()`)" in out, out


def test_the_library_default_beside_an_unresolved_module_compile_stays_near_it(cli, tmp_path):
    # sglang's shape (round 4): a server package compiles a model it names (resolved), and a pipeline of another
    # subpackage compiles components it cannot name (`component.compile()`): the default covers the modules near
    # that pipeline (under its folder's parent), not the server's other models, and the summary says where
    block = "import torch\nfrom torch import nn\n\n\nclass {}(nn.Module):\n    def forward(self, x):\n" \
            "        print(x.shape)\n        return x\n"
    for package in ("pkg", "pkg/gen", "pkg/gen/models", "pkg/gen/pipelines", "pkg/srt", "pkg/srt/models"):
        write(tmp_path / package / "__init__.py", "")
    write(tmp_path / "pkg" / "gen" / "models" / "dit.py", block.format("DiT"))
    write(tmp_path / "pkg" / "gen" / "pipelines" / "pipe.py",
          "import torch\n\n\ndef load(components):\n    for component in components:\n        component.compile()\n")
    write(tmp_path / "pkg" / "srt" / "models" / "llm.py", block.format("Llm"))
    write(tmp_path / "pkg" / "srt" / "models" / "vision.py", block.format("VisionTower"))
    write(tmp_path / "pkg" / "srt" / "server.py", "import torch\nfrom pkg.srt.models.llm import Llm\n\n"
          "model = torch.compile(Llm())\n")
    got = findings(cli, ".")
    assert where(got) == {("pkg/gen/models/dit.py", "TL204", 7), ("pkg/srt/models/llm.py", "TL204", 7)}, got
    assert "if `DiT` is compiled" in next(m for p, c, line, m in got if p.endswith("dit.py"))
    out = cli(".", "--no-cache").out
    assert "(pkg/gen/pipelines/pipe.py:6 `component.compile()`)" in out, out
    assert "the modules under pkg/gen/ only (where a module compile is left unresolved)" in out, out


def test_torch_compile_of_a_make_fx_graph_runs_none_of_the_models_python():
    # nequip's `torch.compile(fx_model)` of a make_fx graph: torch.compile sees the traced aten graph; the model's
    # Python ran once, while make_fx traced it (a print there is not run again, a Python value read is baked in, a
    # branch on data refuses to trace). The index leaves such a call unresolved, naming it in the summary, rather
    # than lint the model's Python as code torch.compile traces.
    seen = []
    state = {"scale": 2.0}

    class M(torch.nn.Module):
        def forward(self, x):
            seen.append(1)
            return x * state["scale"]

    gm = make_fx(M())(torch.ones(3))
    assert seen == [1]
    torch._dynamo.reset()
    compiled = torch.compile(gm, backend="eager")
    state["scale"] = 3.0
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 2.0))  # baked by make_fx (eager: 3.0)
    assert seen == [1]  # the model's Python did not run again

    class Branch(torch.nn.Module):
        def forward(self, x):
            return x + 1 if x.sum() > 0 else x - 1

    with pytest.raises(RuntimeError, match="data-dependent"):
        make_fx(Branch())(torch.ones(3))


def test_an_annotated_callers_own_callers_are_followed_too(cli, tmp_path):
    # parallelize(model: Llama) says Llama's blocks; its caller passes a subclass whose blocks are other blocks
    _titan(tmp_path, "for layer_id, block in model.layers.named_children():")
    write(tmp_path / "pkg" / "big.py", '''\
from torch import nn
from pkg.model import Llama
from pkg.parallelize import parallelize


class BigBlock(nn.Module):
    def forward(self, x):
        print("big", x.shape)
        return x


class BigLlama(Llama):
    def __init__(self, n):
        super().__init__(n)
        self.layers = nn.ModuleList([BigBlock() for _ in range(n)])


parallelize(BigLlama(2), True)
''')
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 7), ("pkg/big.py", "TL204", 8)}


@pytest.mark.parametrize("loop", [
    "for block in model.modules():\n        if isinstance(block, TransformerBlock):",
    "for name, block in model.named_modules():\n        if isinstance(block, TransformerBlock) and name:",
])
def test_a_loop_over_every_module_narrowed_by_isinstance(cli, tmp_path, loop):
    # every module of the model, the blocks picked by isinstance: the blocks (not the model, not the head)
    _titan(tmp_path, "pass")
    write(tmp_path / "pkg" / "compile.py", "from pkg.model import TransformerBlock\n\n\n"
          f"def apply_compile(model, backend='inductor'):\n    {loop}\n            block.compile(backend=backend)\n")
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 7)}


def test_a_loop_over_a_models_own_children_is_not_taken_for_the_model(cli, tmp_path):
    # `model.children()` yields what model holds, not model: left unresolved (and named), never Llama.forward
    _titan(tmp_path, "pass")
    write(tmp_path / "pkg" / "compile.py", "import torch\nfrom pkg.model import Llama\n\n"
          "def apply_compile(model: Llama, backend='inductor'):\n    for block in model.children():\n"
          "        block.compile(backend=backend)\n")
    out = cli(".", "--no-cache").out
    assert "not resolved" in out and "pkg/compile.py:6" in out, out
    assert "compiled by" not in out  # the library default's "if `Llama` is compiled", no compile call's

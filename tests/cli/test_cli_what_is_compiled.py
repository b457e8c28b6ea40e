"""Issue 31, what is compiled: multi-file projects shaped like the real code where the index was wrong.

Each test has the false (or missed) shape and, beside it, the shape that must still be found, so that a
test cannot pass by reporting nothing.
"""

from __future__ import annotations

import json

from cli_helpers import findings, where, write


def project(tmp_path, model: str, train: str = "import torch\nfrom pkg.model import Net\n\nmodel = torch.compile(Net())\n"):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", model)
    write(tmp_path / "train.py", train)


# --- false class 1: what a function calls comes from its syntax tree --------------------------------
def test_comments_strings_and_docstrings_name_no_call(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn


def debug_stats(x):
    print("stats", x.mean())


def used(x):
    print("used", x.shape)
    return x


class Net(nn.Module):
    def set_regular_matcher(self, m):
        print("matcher set")
        self.m = m

    def forward(self, x):
        """Call debug_stats(x) by hand when debugging."""
        # debug_stats(x)
        if x is None:
            raise ValueError("call self.set_regular_matcher(*) first")
        return used(x)
''')
    # only `used` is called: the comment, the string and the docstring name no call
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 10)}


# --- false class 2: torch.compiler.disable ends compiled code ------------------------------------------
DISABLED = '''\
import torch
from torch import nn

from .utils import no_compile

disable_compiler = torch.compiler.disable


@torch.compiler.disable
def log_a(x):
    print("a", x.shape)


@torch._dynamo.disable(reason="logging")
def log_b(x):
    print("b", x.shape)
    inner_b(x)


def inner_b(x):
    print("inner b", x.shape)


@disable_compiler
def log_c(x):
    print("c", x.shape)


@no_compile
def log_d(x):
    print("d", x.shape)


@torch.compiler.disable(recursive=False)
def frame_only(x):
    print("frame", x.shape)
    return traced(x)


def traced(x):
    print("traced", x.shape)
    return x


class Net(nn.Module):
    @torch.compiler.disable
    def report(self, x):
        print("report", x.shape)

    def forward(self, x):
        log_a(x)
        log_b(x)
        log_c(x)
        log_d(x)
        self.report(x)
        return frame_only(x)
'''


def test_disable_as_decorator_call_alias_and_recursive_false(cli, tmp_path):
    project(tmp_path, DISABLED)
    write(tmp_path / "pkg" / "utils.py", "import torch\n\nno_compile = torch._dynamo.disable\n")
    # recursive=False skips only its own frame: `traced`, which it calls, is compiled again
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 41)}


def test_a_disabled_forward_is_not_compiled(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn


class Net(nn.Module):
    @torch.compiler.disable
    def forward(self, x):
        print("eager", x.shape)
        return x


class Other(nn.Module):
    def forward(self, x):
        print("compiled", x.shape)
        return x
''', "import torch\nfrom pkg.model import Net, Other\n\nmodel = torch.compile(Net())\nother = torch.compile(Other())\n")
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 14)}


# --- false class 6: code that runs only eagerly ------------------------------------------------------------
def test_is_compiling_branches_reach_nothing(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn


def log_stats(x):
    print("stats", x.shape)


def scripted_only(x):
    print("scripting", x.shape)


def compiled_path(x):
    print("compiled", x.shape)


class Net(nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
            log_stats(x)
        if torch.jit.is_scripting():
            scripted_only(x)
        if torch._dynamo.is_compiling():
            compiled_path(x)
        else:
            log_stats(x)
        return x
''')
    # `is_scripting()` is false under torch.compile: its branch is never traced either way, so only the
    # `is_compiling()` branch is compiled code
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 14)}


def test_is_scripting_is_false_and_is_compiling_true_under_torch_compile():
    """The facts the eager-only branches rest on, from the real torch.compile (CPU, eager backend)."""
    import torch

    def scripting(x):
        return x + 1 if torch.jit.is_scripting() else x - 1

    def compiling(x):
        return x + 1 if torch.compiler.is_compiling() else x - 1

    torch._dynamo.reset()
    assert torch.compile(scripting, backend="eager")(torch.zeros(1)).item() == -1.0
    assert torch.compile(compiling, backend="eager")(torch.zeros(1)).item() == 1.0


# --- miss 2: reachability through typed attributes and annotated parameters -------------------------------
def test_typed_attributes_isinstance_and_annotated_parameters_reach(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn
from typing import Optional


class KVCache(nn.Module):
    def update(self, k):
        n = int(self.pos.item())
        return k[:n]


class RotaryCache:
    def get(self, x):
        return x[: int(x.sum().item())]


class Norm(nn.Module):
    def forward(self, x):
        print("norm", x.shape)
        return x


class GPT(nn.Module):
    rope: Optional[RotaryCache]

    def __init__(self):
        super().__init__()
        self.kv_cache: KVCache | None = None
        self.norm = None
        self.rope = None

    def setup_caches(self):
        self.kv_cache = KVCache()

    def forward(self, x):
        if isinstance(self.norm, Norm):
            x = self.norm(x)
        if self.kv_cache is not None:
            x = self.kv_cache.update(x)
        return self.rope.get(x)


def next_token(model: GPT, x):
    return model(x)
''', "import torch\nfrom pkg.model import next_token\n\nstep = torch.compile(next_token)\n")
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL302", 8), ("pkg/model.py", "TL302", 14),
                                         ("pkg/model.py", "TL204", 19)}


# --- false class 8: a compile call names the function its scope sees -------------------------------------
def test_compile_target_resolved_in_its_scope_not_by_name(cli, tmp_path):
    write(tmp_path / "ops.py", "def scan_fn(x):\n    return x.cumsum(0)\n")
    write(tmp_path / "layers.py", '''\
import torch
from ops import scan_fn


class Scanner:
    def run(self, x):
        return torch.compile(scan_fn)(x)


class Other:
    def build(self):
        def scan_fn(x):
            print("eager scan", x.shape)
            return x

        return scan_fn


class Local:
    def build(self):
        def scan_fn(x):
            print("compiled scan", x.shape)
            return x

        return torch.compile(scan_fn)
''')
    # Scanner compiles ops.scan_fn; only Local's own nested scan_fn is the one its call names
    assert where(findings(cli, ".")) == {("layers.py", "TL204", 22)}


# --- miss 1: compile sites behind attribute chains, module lists, loops, self, factories, other methods ----
SITES_MODEL = '''\
import torch
from torch import nn


class UNet(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Pipeline:
    def __init__(self):
        self.unet = UNet()


class Wrapper:
    def __init__(self):
        self.pipeline = Pipeline()


class Block(nn.Module):
    def forward(self, x):
        print("block", x.shape)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(2)])

    def train_step(self, x):
        return x.max().item()


class Scan(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(self.scan)

    def scan(self, x):
        return x.cumsum(0).tolist()


def make_op(scale):
    def op(x):
        return x * scale.item()

    return op


class Unused(nn.Module):
    def forward(self, x):
        return x.sum().item()
'''


def test_compile_sites_through_chains_lists_loops_self_factories_and_methods(cli, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", SITES_MODEL)
    write(tmp_path / "train.py", '''\
import torch
from pkg.model import Wrapper, Model, make_op

pipe = Wrapper()
pipe.pipeline.unet = torch.compile(pipe.pipeline.unet)


def main():
    model = Model()
    for block in model.layers:
        block.compile()
    step = torch.compile(model.train_step)
    op = make_op(torch.ones(1))
    fast_op = torch.compile(op)
''')
    got = findings(cli, ".")
    assert where(got) == {("pkg/model.py", code, line) for code, line in
                          [("TL302", 7), ("TL204", 22), ("TL302", 32), ("TL302", 41), ("TL202", 46), ("TL302", 46)]}, got
    messages = {line: m for _, _, line, m in got}
    assert "compiled by `torch.compile(pipe.pipeline.unet)` at train.py:5" in messages[7]
    assert "compiled by `block.compile()` at train.py:11" in messages[22]


def test_an_unresolved_compile_site_is_named_not_called_missing(tmp_path):
    from analyzer.project.index import ProjectIndex, summarize
    from analyzer.static.module_index import build_module_index
    import ast

    text = "import torch\nfrom diffusers import load\n\npipe = load()\npipe.unet = torch.compile(pipe.unet)\n" \
           "fast = torch.compile(torch.nn.functional.gelu)\n\n\nclass Net(torch.nn.Module):\n" \
           "    def forward(self, x):\n        return x\n"
    tree = ast.parse(text)
    s = summarize(text, tree, build_module_index(tree), str(tmp_path / "run.py"), "run")
    index = ProjectIndex([s], root=str(tmp_path))
    # the call on a library object it cannot follow is named; compiling torch's own function is not project code
    assert index.unresolved == [("run.py", 5, "torch.compile(pipe.unet)")]
    assert index.library_default and "no compile call found" not in index.library_default
    assert "run.py:5" in index.library_default


# --- false classes 3 and 4: what the library default takes for a model -------------------------------------
def test_library_default_leaves_out_data_transforms_by_evidence(cli, tmp_path):
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "transforms" / "__init__.py", "")
    write(tmp_path / "lib" / "transforms" / "spatial.py", '''\
import random
from torch import nn


class Flip(nn.Module):
    def forward(self, img):
        if random.random() < 0.5:
            return img.flip(-1)
        return img
''')
    write(tmp_path / "lib" / "aug.py", '''\
import random
import numpy as np
from torch import nn
from torchvision.transforms import Compose


class Jitter(nn.Module):
    def forward(self, img):
        return img * np.random.uniform(0.9, 1.1)


class RandomCrop(nn.Module):
    def forward(self, img):
        i = random.randint(0, 4)
        return img[..., i:]


PIPELINE = Compose([Jitter()])
''')
    write(tmp_path / "lib" / "net.py", '''\
import random
from torch import nn


class LayerDrop(nn.Module):
    def forward(self, x):
        if random.random() < 0.1:
            return x
        return x * 2
''')
    write(tmp_path / "lib" / "losses.py", '''\
from torch import nn


class CachedMixin:
    def forward_cached(self, feats, labels):
        return self.calculate(feats, labels, with_backward=True)

    def calculate(self, feats, labels, with_backward=False):
        raise NotImplementedError


class CachedLoss(CachedMixin, nn.Module):
    def forward(self, feats, labels):
        return self.forward_cached(feats, labels)

    def calculate(self, feats, labels, with_backward=False):
        loss = (feats * labels).sum() / labels.sum().item()
        if with_backward:
            loss.backward()
        return loss.detach().requires_grad_()
''')
    got = findings(cli, ".")
    # a model's layer drop is linted; the transforms are data-loader code: a data folder, a Compose, a name;
    # a loss that runs backward inside (gradient caching) is training machinery
    assert where(got) == {("lib/net.py", "TL204", 7)}, got
    out = cli(".", "--no-cache").out
    assert ("4 modules (`Jitter`, `RandomCrop`, `CachedLoss`, ...) taken for data transforms or training machinery"
            " and left out") in out, out


# --- results that do not depend on how it is run ----------------------------------------------------------
PACKAGE = {
    "__init__.py": "",
    "blocks.py": '''\
import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, x):
        print("attn", x.shape)
        return x


class Mlp(nn.Module):
    def forward(self, x):
        return x * x.sum().item()
''',
    "nets/__init__.py": "",
    "nets/vit.py": '''\
from torch import nn
from mylib.blocks import Attention, Mlp


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.mlp = Mlp()

    def forward(self, x):
        return self.mlp(self.attn(x))
''',
    "nets/detr.py": '''\
from torch import nn
from mylib.blocks import Attention


class Detr(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x):
        return self.attn(x)
''',
    "train.py": '''\
import torch
from mylib.nets.vit import ViT
from mylib.nets.detr import Detr

vit = torch.compile(ViT())
detr = torch.compile(Detr())
''',
}


def lay_out(folder):
    for name, text in PACKAGE.items():
        write(folder / name, text)


def test_the_folder_name_does_not_change_the_findings(cli, tmp_path):
    """A package linted as the folder itself (`thunder-lint mylib/`), unzipped under its own name or copied
    under another, and under a parent folder named `tests`: the same findings at the same places."""
    runs = {}
    for name in ("mylib", "mylib_copy", "tests/mylib"):
        lay_out(tmp_path / name)
        got = findings(cli, name)
        runs[name] = sorted((p.split(name + "/", 1)[1], c, line, m.replace(name + "/", "")) for p, c, line, m in got)
    assert runs["mylib"] == runs["mylib_copy"] == runs["tests/mylib"]
    assert {(p, c, line) for p, c, line, _ in runs["mylib"]} == {("blocks.py", "TL204", 7), ("blocks.py", "TL302", 13)}


def test_output_is_deterministic_across_hash_seeds_and_names_the_root_that_reaches(tmp_path):
    """Fresh processes with other hash seeds give byte-identical JSON; `Attention` is reached from two compiled
    roots and the finding names one of them, the same each time (the first compile call in train.py)."""
    import os
    import subprocess
    import sys

    from cli_helpers import REPO

    lay_out(tmp_path / "mylib")
    outs = []
    for seed in ("0", "1", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-m", "analyzer.cli", "mylib", "--format", "json", "--no-cache"],
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 1, proc.stderr
        outs.append(proc.stdout)
    assert len(set(outs)) == 1, outs
    attn = [d for d in json.loads(outs[0]) if d["line"] == 7]
    assert "compiled by `torch.compile(ViT())` at mylib/train.py:5" in attn[0]["message"], attn


def test_hidden_inputs_read_only_eagerly_are_not_reported(cli, tmp_path):
    write(tmp_path / "step.py", '''\
import torch

calls = []
scale = 2.0


@torch.compile
def step(x):
    if not torch.compiler.is_compiling():
        calls.append(scale)
    return x * scale
''')
    # the read in the eager-only branch is not one; the one in compiled code still is
    assert [(c, line) for _, c, line, _ in findings(cli, ".")] == [("TL201", 11)]


def test_the_second_pass_reports_unresolved_calls_and_transforms_also_from_the_cache(cli, tmp_path, monkeypatch):
    """What the CLI's summary can say beyond the library default: apply_project_index fills ``report``, the
    same on a run answered from the index's cache."""
    import analyzer.project_pass as project_pass

    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "transforms.py", "import random\nfrom torch import nn\n\n\nclass Flip(nn.Module):\n"
          "    def forward(self, x):\n        return x.flip(-1) if random.random() < 0.5 else x\n")
    write(tmp_path / "lib" / "net.py", "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
          "        return x.sum().item()\n")
    write(tmp_path / "run.py", "import torch\nfrom hub import load\n\npipe = load()\npipe.unet = torch.compile(pipe.unet)\n")
    reports = []
    original = project_pass.apply_project_index

    def spy(*args, **kwargs):
        report = kwargs.pop("report", None)
        report = {} if report is None else report
        got = original(*args, report=report, **kwargs)
        reports.append(report)
        return got

    monkeypatch.setattr(project_pass, "apply_project_index", spy)
    for _ in range(2):
        r = cli(".", "--format", "json")
        assert r.code == 1, r.err
    expected = {"unresolved": [["run.py", 5, "torch.compile(pipe.unet)"]],
                "pipelines": [["lib/transforms.py", "Flip", "draws Python's random in a data module"]],
                "unmatched": []}
    assert reports == [expected, expected]


def test_a_constructor_that_compiles_its_argument_is_a_wrapper(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Other(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Detector:
    def __init__(self, model, compile_model=True):
        self.model = torch.compile(model, dynamic=True) if compile_model else model
''', "from pkg.model import Detector, Net, Other\n\ndet = Detector(Net())\nplain = Other()\n")
    got = findings(cli, ".")
    assert where(got) == {("pkg/model.py", "TL302", 7)}, got
    assert "compiled by `Detector(Net())` at train.py:3" in got[0][3]


def test_disable_called_on_a_method_ends_reachability(cli, tmp_path):
    project(tmp_path, '''\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = torch.compiler.disable(self.log)

    def log(self, x):
        print("log", x.shape)

    def report(self, x):
        print("report", x.shape)

    def stats(self, x):
        print("stats", x.shape)

    def forward(self, x):
        self.log(x)
        torch.compiler.disable(self.report)(x)
        self.stats(x)
        return x
''')
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL204", 17)}


def test_a_wrapper_argument_is_resolved_in_the_callers_scope(cli, tmp_path):
    """accelerate: `compile_regions(model)` in one method must not take the `model = Engine(...)` of another."""
    project(tmp_path, '''\
import torch
from torch import nn


class Engine(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Net(nn.Module):
    def forward(self, x):
        return x * x.max().item()


def compile_regions(model):
    return torch.compile(model)


class Accelerator:
    def prepare_engine(self):
        model = Engine()
        return model

    def prepare_model(self, model: nn.Module):
        return compile_regions(model)


def main():
    model = Net()
    model = compile_regions(model)
''', "import pkg.model\n")
    assert where(findings(cli, ".")) == {("pkg/model.py", "TL302", 12)}


def test_a_compiled_nested_function_reaches_what_it_calls_not_what_its_builder_calls(cli, tmp_path):
    """unsloth: `verify()` builds `reference` and compiles it; `verify`'s own calls are not compiled code."""
    write(tmp_path / "check.py", '''\
import torch


def helper(x):
    print("helper", x.shape)
    return x


def verify_outputs(a, b):
    return bool(torch.equal(a, b))


def verify(x):
    def reference(y):
        return helper(y) * 2

    compiled = torch.compile(reference)
    return verify_outputs(compiled(x), reference(x))
''')
    assert where(findings(cli, ".")) == {("check.py", "TL204", 5)}


def test_a_wrapper_no_caller_here_passes_a_module_to_is_named_unresolved(tmp_path):
    """A training framework: `prepare_model(model)` compiles what its users pass (after wrapping it)."""
    import ast

    from analyzer.project.index import ProjectIndex, summarize
    from analyzer.static.module_index import build_module_index

    text = '''\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Accelerator:
    def prepare_model(self, model, compile=False):
        model = model.to("cuda")
        model = DDP(model)
        if compile:
            model = torch.compile(model)
        return model


class Helper(torch.nn.Module):
    def forward(self, x):
        return x
'''
    tree = ast.parse(text)
    s = summarize(text, tree, build_module_index(tree), str(tmp_path / "acc.py"), "acc")
    assert s["entries"][0][0] == ["wrapper", "Accelerator.prepare_model", 0, "model"]
    index = ProjectIndex([s], root=str(tmp_path))
    assert index.unresolved == [("acc.py", 10, "torch.compile(model)")]


def test_a_compile_of_another_librarys_model_is_not_called_no_compile_call(cli, tmp_path):
    write(tmp_path / "net.py", "from torch import nn\n\n\nclass Head(nn.Module):\n    def forward(self, x):\n"
          "        return x.sum().item()\n")
    write(tmp_path / "run.py", "import torch\nfrom transformers import AutoModel\n\n"
          "model = torch.compile(AutoModel.from_pretrained('x'))\n")
    out = cli(".", "--no-cache").out
    assert "no compile call found" not in out, out
    assert "1 compile call found, of other libraries' code only (run.py:4 `torch.compile(AutoModel.from_pretrained('x'))`)" in out


def test_code_after_an_is_compiling_early_return_is_not_reached(cli, tmp_path):
    # issue 31 false class 6 (unsloth's custom-op dispatch): `if is_compiling(): ... return` then eager code
    write(tmp_path / "m.py", '''\
import torch
from torch import nn

_budget = {}


def _eager(x):
    _budget.pop("k", None)
    return x


def dispatch(x):
    if torch.compiler.is_compiling():
        if x is None:
            return x
        return x * 2
    return _eager(x)


def dispatch_both(x):
    if torch.compiler.is_compiling():
        y = x * 2  # no return: what follows runs compiled too
    return _eager(x)


class Lin(nn.Module):
    def forward(self, x):
        return dispatch(x)


class Both(nn.Module):
    def forward(self, x):
        return dispatch_both(x)
''')
    got = findings(cli, ".")
    assert {(c, line) for _, c, line, _ in got} == {("TL201", 8), ("TL203", 8)}, got
    assert all("`Both`" in m for *_, m in got), got  # reached from Both, never from Lin

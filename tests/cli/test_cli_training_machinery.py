"""Issue 31, false class 3 (round 2): training machinery the library default took for a model.

Shapes from sentence-transformers 6.3 and accelerate 1.16 (bench/precision_new_projects.md): a gradient-caching
loss that calls backward on a value of a stated class, a model's forward reaching the batch-slicing helpers of the
training loop's module, a training engine whose forward steps an optimizer. Each test keeps beside the false
shape the one that must still be found.
"""

from __future__ import annotations

import json

from cli_helpers import write


def where(cli, *args):
    r = cli(*args, "--format", "json", "--no-cache")
    assert r.code in (0, 1), r.err
    return {(d["path"], d["code"], d["line"]) for d in json.loads(r.out)}


def test_backward_on_an_annotated_tensor_is_a_training_step(cli, tmp_path):
    # CachedGISTEmbedLoss: `loss_mbatch: torch.Tensor = ...; loss_mbatch.backward()` two self calls deep
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "losses.py", '''\
import torch
from torch import nn


class CachedLoss(nn.Module):
    def forward(self, feats, labels):
        return self.cache_gradients(feats, labels)

    def cache_gradients(self, feats, labels):
        return self.calculate(feats, labels, with_backward=True)

    def calculate(self, feats, labels, with_backward=False):
        n = labels.sum().item()
        loss_mb: torch.Tensor = (feats * labels).sum() / n
        if with_backward:
            loss_mb.backward()
        return loss_mb.detach()


class PlainLoss(nn.Module):
    def forward(self, feats, labels):
        n = labels.sum().item()
        return (feats * labels).sum() / n
''')
    # the plain loss may be compiled (its .item() is reported); the caching one runs backward: not a model
    assert where(cli, ".") == {("lib/losses.py", "TL302", 22)}


def test_helpers_of_the_training_loops_module_are_not_the_models(cli, tmp_path):
    # gradcache.py slices batches for the loop and runs backward in its hook; a loss's forward in another module
    # calls its _create_minibatch: that helper is the loop's, not the model's
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "gradcache.py", '''\
def create_minibatch(feats, begin, end):
    stop = feats["offsets"][end].item()
    return {k: v[begin:stop] for k, v in feats.items()}


def replay(loss_obj, feats, grads):
    for mb, g in zip(feats, grads):
        out = loss_obj.model(mb)
        out.backward(g)
''')
    write(tmp_path / "lib" / "ops.py", '''\
def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().item()
''')
    write(tmp_path / "lib" / "loss.py", '''\
from torch import nn

from lib.gradcache import create_minibatch
from lib.ops import masked_mean


class ChunkedLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, feats, mask):
        out = self.model(create_minibatch(feats, 0, 2))
        return masked_mean(out, mask) + local_norm(out)


def local_norm(x):
    return x.norm().item()
''')
    got = where(cli, ".")
    # ops.py has no training loop: its helper is the model's; the loss's own module is followed as before
    assert ("lib/ops.py", "TL302", 2) in got, got
    assert ("lib/loss.py", "TL302", 18) in got, got
    assert not any(p == "lib/gradcache.py" for p, _, _ in got), got


def test_a_model_file_with_its_training_loop_keeps_its_helpers(cli, tmp_path):
    # single-file projects put train() beside the model: the model's own module is never cut
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "net.py", '''\
from torch import nn


def scale(x):
    return x / x.max().item()


class Net(nn.Module):
    def forward(self, x):
        return scale(x)


def train(model, opt, x):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
''')
    assert where(cli, ".") == {("lib/net.py", "TL302", 5)}


def test_an_engine_whose_forward_steps_its_optimizer_is_not_a_model(cli, tmp_path):
    # accelerate's MegatronEngine(accelerator, model, optimizer, scheduler): forward runs an external train_step
    # with self.optimizer and logs its loss scale; the models it wraps are linted as before
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "engine.py", '''\
from torch import nn
from megatron.training import train_step


class Engine(nn.Module):
    def __init__(self, model, optimizer):
        super().__init__()
        self.module = model
        self.optimizer = optimizer

    def forward(self, **batch):
        loss = train_step(model=self.module, optimizer=self.optimizer, batch=batch)
        print("loss scale", self.optimizer.get_loss_scale().item())
        return loss


class Head(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.module = model

    def forward(self, x):
        print("head", x.shape)
        return self.module(x)
''')
    assert where(cli, ".") == {("lib/engine.py", "TL204", 23)}


def test_an_interface_that_compiles_the_modules_it_holds_is_not_compiled_itself(cli, tmp_path):
    # speechbrain's Pretrained._compile: torch.compile(self.mods[name]) for the keys asked for; its subclasses'
    # forward runs a text front-end around those parts. The parts (unknown here) stay linted as models.
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "interfaces.py", '''\
import torch
from torch import nn


class Pretrained(nn.Module):
    def __init__(self, modules, compile_keys=()):
        super().__init__()
        self.mods = nn.ModuleDict(modules)
        for name in compile_keys:
            self.mods[name] = torch.compile(self.mods[name])
''')
    write(tmp_path / "lib" / "tts.py", '''\
from torch import nn

from lib.interfaces import Pretrained


class TextToSpeech(Pretrained):
    def __init__(self, modules, compile_keys=()):
        super().__init__(modules, compile_keys)
        self.vocab = {}

    def forward(self, tokens):
        ids = tokens.nonzero().reshape(-1).tolist()
        return self.mods.decoder(ids)


class Decoder(nn.Module):
    def forward(self, x):
        return x / x.max().item()
''')
    assert where(cli, ".") == {("lib/tts.py", "TL302", 18)}
    out = cli(".", "--no-cache").out
    assert "1 module (`TextToSpeech`) taken for data transforms or training machinery and left out" in out, out


def test_a_module_that_compiles_what_it_runs_is_not_compiled_itself(cli, tmp_path):
    # round 3, class [15] (nequip's CompileGraphModel): forward builds an fx graph of the model it holds,
    # torch.compile's it in a method of its own, checks it against eager and runs it. That forward is the runner
    # (torch.compile is never called from compiled code); the model it wraps stays linted as a model.
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "compile.py", '''\
import os

import torch
from torch import nn

from lib.fx import make_fx_model


class GraphModel(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, data):
        return self.model(data)


class CompileGraphModel(GraphModel):
    def __init__(self, model):
        super().__init__(model)
        self._cache = {}

    def _compile_variant(self, data, key):
        fx_model = make_fx_model(self.model, data)
        compiled = torch.compile(fx_model, dynamic=True)
        ref = self.model(data)
        err = (compiled(data) - ref).abs().max().item()
        print(f"compiled {key}: max error {err}")
        self._cache[key] = compiled

    def forward(self, data):
        key = (tuple(data.shape), os.environ.get("RANK"))
        if key not in self._cache:
            self._compile_variant(data, key)
        return self._cache[key](data)


class Scatter(nn.Module):
    def forward(self, x, index):
        return x.new_zeros(int(index.max()) + 1).index_add(0, index, x)
''')
    write(tmp_path / "lib" / "fx.py", '''\
from torch.fx.experimental.proxy_tensor import make_fx


def make_fx_model(model, data):
    return make_fx(model)(data)
''')
    assert where(cli, ".") == {("lib/compile.py", "TL302", 40)}
    out = cli(".", "--no-cache").out
    assert "(`CompileGraphModel`) taken for data transforms or training machinery and left out" in out, out


def test_a_kernel_module_whose_autograd_function_runs_backward_is_the_models(cli, tmp_path):
    # liger's ops/tiled_mlp.py: an autograd.Function whose backward recomputes through torch.autograd.backward,
    # and unsloth's kernels with a test_* beside them that calls .backward(): kernels, not the training loop
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "ops.py", '''\
import torch


class Tiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        torch.autograd.backward(grad)
        return grad


def apply_tiled(x):
    n = x.sum().item()
    return Tiled.apply(x) / n


def test_tiled():
    x = torch.ones(2, requires_grad=True)
    apply_tiled(x).sum().backward()
''')
    write(tmp_path / "lib" / "mlp.py", '''\
from torch import nn

from lib.ops import apply_tiled


class TiledMLP(nn.Module):
    def forward(self, x):
        return apply_tiled(x)
''')
    assert where(cli, ".") == {("lib/ops.py", "TL302", 16)}


def test_a_module_calling_its_autograd_function_is_a_model(cli, tmp_path):
    # the module's forward reaches the Function's backward (recomputing through torch.autograd.backward):
    # that backward runs in the backward pass of whoever trains the model, the module is still a model
    write(tmp_path / "lib" / "__init__.py", "")
    write(tmp_path / "lib" / "mlp.py", '''\
import torch
from torch import nn


class Recompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        torch.autograd.backward(grad)
        return grad


class RecomputeMLP(nn.Module):
    def forward(self, x):
        print("mlp", x.shape)
        return Recompute.apply(x)
''')
    assert where(cli, ".") == {("lib/mlp.py", "TL204", 18)}

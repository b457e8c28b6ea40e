"""nn.Module support: parameters and buffers are inputs fetched on every call."""
import torch
import torch.nn as nn

import compiler


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)
        self.register_buffer("scale", torch.full((8,), 0.5))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.steps += 1  # buffer update: a side effect the caller sees
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x)))) * self.scale


def test_module_matches_eager_including_buffer_updates():
    torch.manual_seed(0)
    m = Block()
    ref = Block()
    ref.load_state_dict(m.state_dict())
    jm = compiler.jit(m)
    x = torch.randn(4, 8)
    for _ in range(3):
        torch.testing.assert_close(jm(x), ref(x))
    assert int(m.steps) == int(ref.steps) == 3
    assert compiler.cache_misses(jm) == 1 and compiler.cache_hits(jm) == 2


def test_parameters_are_inputs_not_constants():
    m = nn.Linear(3, 2)
    jm = compiler.jit(m)
    x = torch.randn(5, 3)
    jm(x)
    with torch.no_grad():
        m.weight.mul_(2)
        m.bias.fill_(1.0)
    torch.testing.assert_close(jm(x), m(x))
    assert compiler.cache_misses(jm) == 1  # values changed, metadata did not
    comp = compiler.last_traces(jm)[-1]
    assert len(comp.args) == 3  # x, weight, bias


def test_replaced_parameter_with_new_shape_recompiles():
    m = nn.Linear(3, 2)
    jm = compiler.jit(m)
    x = torch.randn(5, 3)
    jm(x)
    m.weight = nn.Parameter(torch.randn(4, 3))
    m.bias = nn.Parameter(torch.randn(4))
    torch.testing.assert_close(jm(x), m(x))
    assert compiler.cache_misses(jm) == 2


def test_tied_weights_are_one_input():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, idx):
            return self.head(self.emb(idx))

    m = Tied()
    jm = compiler.jit(m)
    idx = torch.tensor([[1, 2, 3]])
    torch.testing.assert_close(jm(idx), m(idx))
    assert len(compiler.last_traces(jm)[-1].args) == 2


def test_jitted_module_keeps_the_parameters_and_modes():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.3))
    jm = compiler.jit(m)
    assert {id(p) for p in jm.parameters()} == {id(p) for p in m.parameters()}
    jm.eval()
    assert not m.training
    x = torch.randn(3, 2)
    torch.testing.assert_close(jm(x), m(x))


def test_forward_hooks_run_as_in_eager():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, inp, out: out * 10)
    jm = compiler.jit(m)
    x = torch.randn(1, 2)
    torch.testing.assert_close(jm(x), m(x))

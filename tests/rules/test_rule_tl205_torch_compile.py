"""TL205's claims about torch.compile, checked on CPU with a backend that counts the graphs dynamo compiles.

Each program is linted (TL205 reported or not) and run: eagerly and under torch.compile, with the same
results; what differs is how many graphs torch.compile makes, call by call. The reported shapes recompile
when the attribute changes; the quiet ones (configuration, a buffer updated in place) compile once.
"""

from __future__ import annotations

import pytest
import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend

COUNTER = """\
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.counter = 0
    def forward(self, x):
        self.counter += 1
        return x + self.counter
def step(model, i):
    pass
model = Net()
compiled = torch.compile(model)
"""

SWITCH = """\
import torch
from torch import nn
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.switch = False
    def set_switch(self, on):
        self.switch = on
    def forward(self, x):
        if self.switch:
            return x + 1
        return x - 1
def step(model, i):
    model.set_switch(i % 2 == 0)
model = Gate()
compiled = torch.compile(model)
"""

TRAINING_LOOP = """\
import torch
from torch import nn
class Sched(nn.Module):
    def __init__(self):
        super().__init__()
        self.epoch = 0
    def forward(self, x):
        return x * min(1.0, self.epoch / 10)
def step(model, i):
    model.epoch = i // 2
model = Sched()
compiled = torch.compile(model)
"""

HELD_CACHE = """\
import torch
from torch import nn
class KVCache:
    def __init__(self, n):
        self.k = torch.zeros(n, 3)
        self.pos = 0
    def append(self, k):
        self.k[self.pos] = k
        self.pos += 1
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = KVCache(16)
    def forward(self, k):
        self.cache.append(k)
        return self.cache.k.sum(0)
def step(model, i):
    pass
model = Decoder()
compiled = torch.compile(model)
"""

CONFIG = """\
import torch
from torch import nn
class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = 3
        self.causal = True
        self.scale = 0.5
    def forward(self, x):
        if self.causal:
            x = x * self.scale
        return x.reshape(self.heads, -1).sum(0)
def step(model, i):
    pass
model = Attn()
compiled = torch.compile(model)
"""

BUFFER = """\
import torch
from torch import nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
    def forward(self, x):
        self.steps += 1
        return x * self.steps
def step(model, i):
    pass
model = Norm()
compiled = torch.compile(model)
"""

# botorch's MVNXPB solver (round 3, class [14]): forward builds the object and steps it; its int `step` lives for
# one call, so nothing is guarded between calls
PER_CALL_SOLVER = """\
import torch
from torch import nn
class Solver:
    def __init__(self, x):
        self.x = x
        self.step = 0
    def advance(self):
        self.x = self.x * 2 + self.step
        self.step += 1
    def solve(self, n):
        while self.step < n:
            self.advance()
        return self.x
class Net(nn.Module):
    def forward(self, x):
        solver = Solver(x)
        return solver.solve(3)
def step(model, i):
    pass
model = Net()
compiled = torch.compile(model)
"""

# diffusers' LoRA slot (pytorch #120958): None after construction, filled by a setter the script calls
SLOT = """\
import torch
from torch import nn
class Lin(nn.Linear):
    def __init__(self):
        super().__init__(3, 3)
        self.lora = None
    def set_lora(self, layer):
        self.lora = layer
    def forward(self, x):
        if self.lora is None:
            return super().forward(x)
        return super().forward(x) + self.lora(x)
def step(model, i):
    if i == 2:
        model.set_lora(nn.Linear(3, 3))
torch.manual_seed(0)
model = Lin()
compiled = torch.compile(model)
"""


def _run(source: str, use_compiled: bool, calls: int = 6):
    """Per call: the result and the number of graphs dynamo compiled during it."""
    backend = CountingBackend()
    real_compile = torch.compile
    ns: dict = {}
    torch.compile = lambda m, **kw: real_compile(m, backend=backend, **kw)
    try:
        exec(compile(source, "<tl205>", "exec"), ns)
    finally:
        torch.compile = real_compile
    fn = ns["compiled"] if use_compiled else ns["model"]
    out = []
    for i in range(calls):
        ns["step"](ns["model"], i)
        before = len(backend.graphs)
        result = fn(torch.arange(3.0))
        out.append((result.tolist(), len(backend.graphs) - before))
    return out


def _reported(source: str) -> bool:
    return "TL205" in {d.code for d in lint_source(source, "m.py")}


@pytest.mark.parametrize(
    "source, graphs",
    [
        # a counter in forward: torch.compile treats the module's int as a constant, so every call recompiles
        (COUNTER, [1, 1, 1, 1, 1, 1]),
        # a flag a method toggles: one graph per value, then both are cached
        (SWITCH, [1, 1, 0, 0, 0, 0]),
        # an int the training loop sets: a graph per new value
        (TRAINING_LOOP, [1, 0, 1, 0, 1, 0]),
        # a plain object's int position advanced inside forward: a recompile on every call
        (HELD_CACHE, [1, 1, 1, 1, 1, 1]),
        # a None slot a setter fills between calls: the `is None` branch is guarded, one recompile when it is filled
        (SLOT, [1, 0, 1, 0, 0, 0]),
    ],
    ids=["counter", "switch", "training-loop", "held-cache", "none-slot"],
)
def test_reported_shapes_recompile_when_the_attribute_changes(source, graphs):
    assert _reported(source)
    eager = _run(source, use_compiled=False)
    torch._dynamo.reset()
    compiled = _run(source, use_compiled=True)
    assert [r for r, _ in compiled] == [r for r, _ in eager]  # same results: the cost is compiling
    assert [n for _, n in compiled] == graphs


@pytest.mark.parametrize("source", [CONFIG, BUFFER, PER_CALL_SOLVER], ids=["config", "buffer", "per-call-solver"])
def test_quiet_shapes_compile_once(source):
    assert not _reported(source)
    eager = _run(source, use_compiled=False)
    torch._dynamo.reset()
    compiled = _run(source, use_compiled=True)
    assert [r for r, _ in compiled] == [r for r, _ in eager]
    assert [n for _, n in compiled] == [1, 0, 0, 0, 0, 0]


def test_a_counter_falls_back_to_eager_past_the_recompile_limit():
    limit = torch._dynamo.config.recompile_limit
    got = _run(COUNTER, use_compiled=True, calls=limit + 3)
    assert [n for _, n in got] == [1] * limit + [0] * 3  # past the limit dynamo stops compiling: eager
    assert [r for r, _ in got][-1] == [limit + 3.0, limit + 4.0, limit + 5.0]


REBOUND_BUFFER = """\
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", None, persistent=False)
        self.register_buffer("count", torch.tensor([1.0]))
    def forward(self, x):
        if self.buf is None:
            self.buf = torch.ones(3) * 3
        self.count = self.count + 1
        return x + self.buf + self.count
def step(model, i):
    pass
model = Net()
compiled = torch.compile(model)
"""


def test_a_rebound_buffer_is_stored_like_eager_under_torch_compile_and_not_reported_there():
    # thunder drops or fails on the rebinding (lightning-thunder #646, #1951): reported for thunder, while
    # torch.compile stores the new tensors on the module after the graph, as eager does
    thunder_src = REBOUND_BUFFER.replace("torch.compile(model)", "thunder.jit(model)").replace(
        "import torch\n", "import torch\nimport thunder\n", 1)
    assert [d.code for d in lint_source(thunder_src, "m.py")].count("TL205") == 2
    assert not _reported(REBOUND_BUFFER)
    eager = _run(REBOUND_BUFFER, use_compiled=False)
    torch._dynamo.reset()
    compiled = _run(REBOUND_BUFFER, use_compiled=True)
    assert [r for r, _ in compiled] == [r for r, _ in eager]
    assert sum(n for _, n in compiled) <= 2  # the None buffer filled: at most one recompile


RESET_TENSOR = """\
import torch
class PositionCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = torch.tensor([0, 0])
    def forward(self, x, pos):
        self.slots[pos] = x
        return self.slots
model = PositionCache()
compiled = torch.compile(model)
"""


def test_a_tensor_attribute_the_script_replaces_is_read_fresh_under_torch_compile_and_not_reported():
    # pytorch's report behind tests/real_bugs/cache_tensor_reset.py: `model.slots = torch.tensor([0, 0])` between
    # calls of a compiled forward that writes into self.slots. torch 2.13 lifts the plain tensor attribute as a
    # graph input: eager's results, one graph, so TL205 (whose torch.compile messages are about recompiles and
    # stale values) stays quiet there.
    assert not _reported(RESET_TENSOR)
    backend = CountingBackend()
    ns: dict = {"backend": backend}
    exec(compile(RESET_TENSOR.replace("torch.compile(model)", "torch.compile(model, backend=backend)"), "<tl205>",
                 "exec"), ns)
    model, compiled = ns["model"], ns["compiled"]
    assert compiled(torch.tensor([2]), torch.tensor([0])).tolist() == [2, 0]
    model.slots = torch.tensor([0, 0])
    assert compiled(torch.tensor([1]), torch.tensor([1])).tolist() == [0, 1]  # eager's answer; the report saw [2, 1]
    assert len(backend.graphs) == 1


OPTIMIZER = """\
import torch
class Opt(torch.optim.Optimizer):
    def __init__(self, params, backend):
        super().__init__(params, {'lr': 0.1})
        self._update = torch.compile(self._update_param, backend=backend)
    def _update_param(self, p, group):
        state = self.state[p]
        p.add_(p.grad, alpha=-group['lr'])
        state['step'] += 1
    def step(self):
        for g in self.param_groups:
            for p in g['params']:
                if len(self.state[p]) == 0:
                    self.state[p]['step'] = START
                self._update(p, g)
"""


@pytest.mark.parametrize("start, reported", [("0", True), ("torch.zeros(())", False)])
def test_a_step_count_in_the_optimizer_state_recompiles_when_it_is_a_python_number(start, reported):
    # Koratahiu/Advanced_Optimizers #6: `state['step'] += 1` inside the compiled per-parameter update. A Python int
    # there is guarded (`state[...]['step'] == 0`): the second step compiles again. A tensor step is data in the graph.
    source = OPTIMIZER.replace("START", start)
    found = [d for d in lint_source(source, "opt.py") if d.code == "TL205"]
    assert bool(found) is reported, [d.message for d in found]
    ns = {}
    exec(compile(source, "<opt>", "exec"), ns)
    backend = CountingBackend()
    w = torch.nn.Parameter(torch.ones(3))
    w.grad = torch.ones(3)
    opt = ns["Opt"]([w], backend)
    counts = []
    for _ in range(4):
        with torch.no_grad():
            opt.step()
        counts.append(len(backend.graphs))
    assert int(opt.state[w]["step"]) == 4
    assert torch.allclose(w.detach(), torch.full((3,), 1 - 0.4))
    assert (counts[1] > counts[0]) is reported, counts

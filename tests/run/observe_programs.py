"""Programs for tests/run/test_observe*.py: each compiles with its own torch.compile; `# <-TAG` marks the line
a finding must name."""

BREAKS = '''\
import torch
torch._dynamo.config.recompile_limit = 3


def helper(y):
    print("helper")  # <-PRINT
    return y


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 0

    def forward(self, x):
        y = x * self.k  # <-K
        if y.sum() >= 0:  # <-BRANCH
            y = y * 2
        return helper(y) + 1


step = Step()
compiled = torch.compile(step, backend="aot_eager")
x = torch.ones(4)
for i in range(6):
    step.k = i
    compiled(x)
'''

# One op changed by a user-registered backend: --verify must name that line.
CUSTOM_BACKEND = '''\
import torch
from torch._dynamo import register_backend


@register_backend
def tanh_is_sigmoid(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.tanh:
            node.target = torch.sigmoid
    gm.recompile()
    return gm.forward


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        h = self.lin(x)
        h = self.norm(h)
        h = torch.tanh(h)  # <-TANH
        return h.relu().sum(-1)


torch.manual_seed(0)
net = Net()
model = torch.compile(net, backend="tanh_is_sigmoid")
for _ in range(4):
    model(torch.randn(3, 8))
'''

# Correct programs under inductor: no TL403 (in-place buffer writes, dropout, a training step).
CORRECT = '''\
import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm1d(8)
        self.drop = torch.nn.Dropout(0.2)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        h = F.gelu(self.bn(self.conv(x)))
        h = self.drop(h).mean(-1)
        return self.head(h)


torch.manual_seed(0)
net = Net()
model = torch.compile(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


@torch.compile
def update(x, buf):
    buf.mul_(0.9).add_(x.mean(0))  # in place on an input
    return torch.softmax(x @ x.T, dim=-1)


buf = torch.zeros(5)
for step in range(3):
    loss = model(torch.randn(6, 4, 10)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    update(torch.randn(5, 5), buf)
net.eval()
model(torch.randn(2, 4, 10))
'''

# A backend that takes options: torch.compile's options reach it unchanged under --observe.
OPTIONS = '''\
import torch
seen = []


def scaled(gm, example_inputs, **options):
    seen.append(options)
    return gm.forward


@torch.compile(backend=scaled, options={"answer": 42})
def f(x):
    return x.sin() + 1


f(torch.randn(3))
assert seen == [{"options": {"answer": 42}}], seen
print("options", seen[0]["options"]["answer"])
'''

# A backend that draws its own random numbers (it advances the generator first) and accepts only graphs with one
# output, so the probe (every intermediate as an output) cannot be compiled: its calls are "not verified".
OWN_RANDOM_NO_PROBE = '''\
import torch
import torch.nn.functional as F


def one_output_only(gm, example_inputs):
    out = next(n for n in gm.graph.nodes if n.op == "output")
    assert len(out.args[0]) == 1, "one output only"

    def run(*args):
        torch.randn(3)  # its own draw first: dropout's mask differs from eager's under the same start state
        return gm.forward(*args)
    return run


@torch.compile(backend=one_output_only)
def f(x):
    return F.dropout(x, 0.5, training=True) * 2


for _ in range(3):
    f(torch.ones(8))
'''

# A graph break inside a loop: dynamo gives up on the whole frame (no graph, no GraphCompileReason).
LOOP = '''\
import torch


@torch.compile(backend="eager")
def f(x):
    for _ in range(3):
        x = x + 1
        if x.sum() > 0:  # <-LOOP_BRANCH
            x = x * 2
    return x


for _ in range(3):
    f(torch.ones(3))
'''

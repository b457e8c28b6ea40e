"""Demo for docs/observe.md: a model whose torch.compile breaks the graph and recompiles."""
import torch
import torch.nn as nn

torch._dynamo.config.recompile_limit = 4
temperature = 1.0


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x):
        h = self.lin(x) / temperature
        if h.mean() > 0:  # a branch on tensor data
            h = h.relu()
        self.calls += 1
        return h.softmax(-1) * self.calls


torch.manual_seed(0)
model = torch.compile(Gate())
for step in range(6):
    temperature = 1.0 + step / 10
    out = model(torch.randn(8, 16))
print("done", tuple(out.shape))

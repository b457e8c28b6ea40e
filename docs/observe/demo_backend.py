"""Demo for docs/observe.md: a user-registered backend that lowers one op wrongly (`--verify` finds the line)."""
import torch
from torch._dynamo import register_backend


@register_backend
def fast_gelu(gm, example_inputs):
    # "optimizes" exact GELU into the tanh approximation: a different function
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.nn.functional.gelu:
            node.kwargs = {**node.kwargs, "approximate": "tanh"}
    gm.recompile()
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 128)
        self.down = torch.nn.Linear(128, 32)

    def forward(self, x):
        h = self.up(x)
        h = torch.nn.functional.gelu(h)
        return self.down(h) + x


torch.manual_seed(0)
mlp = torch.compile(MLP(), backend="fast_gelu")
for _ in range(3):
    y = mlp(torch.randn(4, 32) * 3)
print("done", tuple(y.shape))

# Report: https://github.com/pytorch/pytorch/issues/101154
# What went wrong: hf_Reformer's forward drew a new seed and stored it on the module
# (`self.attention_seed = int(torch.seed() % sys.maxsize)`, then `torch.manual_seed(self.attention_seed)`) on every
# call: the compiled forward broke the graph there. Reporter's shape: MyModel with a Linear and a Dropout;
# forward calls self._init_attention_seed() then returns self.dropout(self.linear(x)); torch.compile(MyModel()).
# torch 2.13 on CPU (this file run): still one graph break (explain counts 1).
import sys

import torch
from torch import nn


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 5)
        self.dropout = nn.Dropout()

    def _init_attention_seed(self):
        self.attention_seed = int(torch.seed() % sys.maxsize)  # expect: TL205
        torch.manual_seed(self.attention_seed)

    def forward(self, x):
        self._init_attention_seed()  # also: TL205
        return self.dropout(self.linear(x))


if __name__ == "__main__":
    model = torch.compile(MyModel(), backend="eager")
    print(model(torch.randn(2, 5)).shape)
    print(torch._dynamo.explain(MyModel())(torch.randn(2, 5)).graph_break_count, "graph break(s)")

# Report: https://github.com/pytorch/pytorch/issues/151480
# What went wrong: choosing a kernel by a shape test (`x.shape[0] > 50`) on an input marked dynamic: the test
# through statically_known_true broke the graph under fullgraph=True instead of falling back quietly.
# Reporter's shape: @torch.compile(fullgraph=True) def f(x): if statically_known_true(x.shape[0] > 50):
# return x + 1; else: return x + 2; x = torch.zeros(51); torch._dynamo.mark_dynamic(x, 0); f(x).
# torch 2.13 on CPU (this file run): compiles and takes the general branch (x + 2), no graph break (fixed since).
import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true


@torch.compile(fullgraph=True)
def pick_kernel(x):
    if statically_known_true(x.shape[0] > 50):  # expect: TL301
        return x + 1
    else:
        return x + 2


if __name__ == "__main__":
    x = torch.zeros(51)
    torch._dynamo.mark_dynamic(x, 0)
    try:
        print(pick_kernel(x)[:3])
    except Exception as e:  # the reported graph break under fullgraph=True
        print(type(e).__name__, str(e).splitlines()[0])

# Report: https://github.com/pytorch/pytorch/issues/196198
# What went wrong: `x.sum().item()` in a compiled function is a graph break (data read back to Python);
# with capture_scalar_outputs=False and fullgraph=True it was silently put into the graph instead of
# raising, unlike the documented behaviour.
# Reporter's shape: fn computing `scale = x.sum().item()`; torch.compile(fn, backend=counting_backend, fullgraph=True).
import torch

compiles = 0


def counting_backend(gm, example_inputs):
    global compiles
    compiles += 1
    return gm.forward


def rescale(x):
    scale = x.sum().item()  # expect: TL302
    return x * scale + 1


if __name__ == "__main__":
    torch._dynamo.config.capture_scalar_outputs = False
    compiled = torch.compile(rescale, backend=counting_backend, fullgraph=True)
    compiled(torch.tensor([1.0, 2.0, 4.0], requires_grad=True))

# Report: https://github.com/pytorch/pytorch/issues/171488
# What went wrong: a module-level dict filled lazily inside the compiled function (einops' backend
# cache pattern) is a side effect: the second call recompiles (set_stance("fail_on_recompile") fails).
# Reporter's shape: `d = {}` global; `if key not in d: d[key] = 1` in fn; @torch.compile(fullgraph=True).
import torch

_registry = {}


@torch.compile(backend="eager", fullgraph=True)
def apply(x, key):
    if key not in _registry:  # also: TL201
        _registry[key] = 1  # expect: TL203  # also: TL201
    return x.sin()


if __name__ == "__main__":
    x = torch.randn(2)
    apply(x, "torch")
    with torch.compiler.set_stance("fail_on_recompile"):
        apply(x, "torch")

# Report: https://github.com/pytorch/pytorch/issues/104463
# What went wrong: an in-place add through `a.diagonal()`, a view of the compiled function's input, was
# functionalized into a write-back that a custom backend's dead-code elimination dropped: the input came back
# unchanged, unlike eager. Reporter's shape: foo(a): f = a.diagonal(); f.add_(1.0); return a;
# torch.compile(foo, dynamic=True, backend=custom_backend) whose backend runs gm.graph.eliminate_dead_code().
# torch 2.13 on CPU (this file run): still differs from eager (prints `same as eager: False`).
import torch


def dce_backend(gm, example_inputs):
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm.forward


def bump_diagonal(a):
    d = a.diagonal()
    d.add_(1.0)  # expect: TL102
    return a


if __name__ == "__main__":
    a = torch.randn(2, 4)
    ref = bump_diagonal(a.clone())
    out = torch.compile(bump_diagonal, dynamic=True, backend=dce_backend)(a.clone())
    print("same as eager:", torch.equal(ref, out))

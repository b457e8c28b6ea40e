# Report: https://github.com/pytorch/pytorch/issues/145445
# What went wrong: a `random.Random` object passed to a compiled function gave the traced draw again on the
# second and later calls, and its state diverged from eager's: dynamo replays the RNG state it saw while tracing.
# Reporter's shape: fn(x, rng): return x + rng.randint(1, 100); torch.compile(fn, backend="eager",
# fullgraph=True) called with random.Random(0), compared with eager on an equally seeded generator.
# torch 2.13 on CPU (this file run): still wrong (compiled draws 50, 50, 50; eager 50, 98, 54; RNG states differ).
import random

import torch


def jitter(x, rng):
    return x + rng.randint(1, 100)  # expect: TL204


if __name__ == "__main__":
    compiled = torch.compile(jitter, backend="eager", fullgraph=True)
    rng_eager, rng_compiled = random.Random(0), random.Random(0)
    x = torch.zeros(3)
    for _ in range(3):
        print(jitter(x, rng_eager)[0].item(), compiled(x, rng_compiled)[0].item())
    print("same RNG state:", rng_eager.getstate() == rng_compiled.getstate())

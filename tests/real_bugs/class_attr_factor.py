# Report: https://github.com/pytorch/pytorch/issues/176851
# What went wrong: a class attribute of a module-level class, changed between calls, was not guarded:
# the compiled function kept returning x * 1.0 after the factor became 10.0 (eager 40, compiled 4).
# Reporter's shape: `class GlobalState: factor = 1.0`; fn reads `GlobalState.factor`; torch.compile(fn).
import torch


class Settings:
    scale = 1.0


def scaled(x):
    return x * Settings.scale  # expect: TL201


if __name__ == "__main__":
    compiled_scaled = torch.compile(scaled)
    x = torch.tensor([4.0])
    Settings.scale = 1.0
    compiled_scaled(x)
    Settings.scale = 10.0
    assert torch.allclose(scaled(x), compiled_scaled(x))

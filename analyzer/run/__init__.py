"""`thunder-lint run` and `pytest --thunder-lint`: a real program runs with its jit entry points replaced by
the compiler with the trace checks attached; the trace findings are reported when it ends.

    collector.py  the findings of one run: every replaced jit, counts per location, refusals as notes
    intercept.py  which entry points are replaced (torch.compile, nn.Module.compile, compiler.jit,
                  analyzer.jit, thunder.jit through an import hook) and how
    program.py    running a script or module as `python` would
    report.py     trace findings -> the linter's Diagnostics, filtered by the config and merged with static ones
    command.py    the `thunder-lint run` subcommand
    observe/      `run --observe [--verify]`: the program's own torch.compile watched instead of replaced
"""
from __future__ import annotations

from .collector import Collector, StopRun
from .intercept import intercepting

__all__ = ["Collector", "StopRun", "intercepting"]

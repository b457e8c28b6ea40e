"""Trace passes. The pass manager runs them in order and keeps every intermediate trace (last_traces)."""
from __future__ import annotations

from ..core.trace import Trace
from .cse import cse
from .dce import dce, eager_dce

DEFAULT_PASSES = (eager_dce, cse)


def run_passes(trace: Trace, passes=DEFAULT_PASSES) -> list[Trace]:
    """Returns [trace, after pass 1, after pass 2, ...]; each pass is `Trace -> Trace` and sets a header."""
    traces = [trace]
    for p in passes:
        trace = p(trace)
        traces.append(trace)
    return traces


__all__ = ["dce", "eager_dce", "cse", "run_passes", "DEFAULT_PASSES"]

"""analyzer.jit and analyzer.check: the compiler with the trace checks attached.

    jit(fn, *, sharp_edges="allow" | "warn" | "error", rules=None, **compiler_options)
    check(fn, *args, **kwargs) -> list[Diagnostic]

Levels: TL102, TL103, TL201-TL204, TL301 (with cache="symbolic values") and TL302 follow ``sharp_edges`` ("allow" reports nothing); TL101 is an error whatever
``sharp_edges`` says; ``rules={"TL101": "warning", "TL204": "off", ...}`` overrides any of them
("warn" and "allow" are accepted as "warning" and "off"). Only trace checks exist for codes in TRACE_CODES.
"""
from __future__ import annotations

import warnings

import compiler
from rules import RULES

from ..diagnostics import Diagnostic
from .errors import SharpEdgeWarning
from .frontend import interpreting_frontend
from .session import LEVELS, TraceSession
from .sharp_edges import TRACE_CODES

SHARP_EDGES = ("allow", "warn", "error")
_CAPTURE_CODES = ("TL102", "TL103", "TL201", "TL202", "TL203", "TL204", "TL301", "TL302")  # follow sharp_edges
_ALIASES = {"warn": "warning", "allow": "off", "ignore": "off"}


def _levels(sharp_edges: str, rules: dict | None) -> dict[str, str]:
    if sharp_edges not in SHARP_EDGES:
        raise ValueError(f"sharp_edges must be one of {SHARP_EDGES}, not {sharp_edges!r}")
    edge_level = {"allow": "off", "warn": "warning", "error": "error"}[sharp_edges]
    levels = {code: edge_level for code in _CAPTURE_CODES}
    levels["TL101"] = "error"
    if rules is None:
        return levels
    if not isinstance(rules, dict):
        raise TypeError(f"rules must be a dict of code -> level, not {type(rules).__name__}")
    for code, level in rules.items():
        key = code.strip().upper() if isinstance(code, str) else code
        if key not in RULES:
            raise ValueError(f"unknown rule code {code!r} in rules=")
        if key not in TRACE_CODES:
            raise ValueError(f"{key} has no trace check (trace checks: {', '.join(TRACE_CODES)}); "
                             "use the static linter for it")
        level = _ALIASES.get(level, level) if isinstance(level, str) else level
        if level not in LEVELS:
            raise ValueError(f"rules[{code!r}] must be one of {LEVELS} (or 'warn'/'allow'), not {level!r}")
        levels[key] = level
    return levels


class _WarnOnce:
    """One warnings.warn per (code, file, line) for the life of a jitted function: re-traces (new shapes,
    changed globals) find the same hazards again, and cached calls find none."""

    def __init__(self):
        self.seen: set[tuple] = set()

    def __call__(self, diagnostics: list[Diagnostic]) -> None:
        for d in diagnostics:
            key = (d.code, d.path, d.line)
            if d.severity.value != "warning" or key in self.seen:
                continue
            self.seen.add(key)
            # Attributed to the user's line, so warning filters and `-W error::...:module` work as usual.
            warnings.warn_explicit(f"{d.code} [{d.name}] {d.message}", SharpEdgeWarning, d.path, d.line)


def jit(fn, *, sharp_edges: str = "allow", rules: dict | None = None, **compiler_options):
    """compiler.jit(fn, **compiler_options) with the user's function interpreted and the trace checks on.

    Findings come while tracing (first call, every re-trace): "error" ones raise analyzer.SharpEdgeError
    before the call returns anything (interpreted code cannot catch it); "warning" ones warn once per
    location. Returns what compiler.jit returns (a function or, for an nn.Module, a module), so
    compiler.last_traces and friends work on it."""
    if "frontend" in compiler_options:
        raise TypeError("analyzer.jit brings its own front end (the interpreter); frontend= cannot be given")
    levels = _levels(sharp_edges, rules)
    warn_once = _WarnOnce()
    frontend = interpreting_frontend(lambda: TraceSession(levels, enforce=True, on_finish=warn_once))
    return compiler.jit(fn, frontend=frontend, **compiler_options)


def check(fn, /, *args, **kwargs) -> list[Diagnostic]:
    """Run ``fn(*args, **kwargs)`` once under the compiler with every trace check on; return the findings
    (severity: each rule's default), sorted by place. Raises no SharpEdgeError and warns nothing.

    Exceptions from the call itself propagate unchanged, with a note naming the findings made before it:
    the user's own exceptions (eager Python raises them too) and the compiler's refusals (CompilerError,
    InterpreterError: it could not run the function faithfully, so no list would be complete)."""
    levels = {code: RULES[code].severity for code in TRACE_CODES}
    sessions: list[TraceSession] = []

    def new_session():
        sessions.append(TraceSession(levels, enforce=False))
        return sessions[-1]

    # Symbolic values: every decision on a number is seen (TL301); a trace that falls back to constant
    # values (a read of tensor data) is a second session with the same other findings.
    jitted = compiler.jit(fn, cache="symbolic values", frontend=interpreting_frontend(new_session))
    try:
        jitted(*args, **kwargs)
    except BaseException as exc:
        found = [d for s in sessions for d in s.diagnostics]
        if found and isinstance(exc, Exception):
            exc.add_note("thunder-lint findings before the error:\n" + "\n".join(
                f"  {d.path}:{d.line}: {d.code} {d.message}" for d in found))
        raise
    unique = {(d.code, d.path, d.line, d.column): d for s in sessions for d in s.diagnostics}
    return sorted(unique.values(), key=Diagnostic.sort_key)

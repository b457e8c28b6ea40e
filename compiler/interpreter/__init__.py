"""A CPython 3.11-3.13 bytecode interpreter with provenance (compiler front end; imports no torch).

    result = interpret(fn, *args, observers=(), lookasides=None, **kwargs)
    traced = run(fn, args, kwargs, observers=..., lookasides=..., check_stack=False)
    traced.value, traced.provenance            # provenance: where the returned value came from

Python functions reached from `fn` are interpreted recursively; native callables are called as they
are ("opaque") unless a lookaside (callable -> replacement) handles them. Observers receive Events
(global/closure reads, global/nonlocal writes and deletes, opaque and side-effect calls) with the
user's file:line. Unsupported constructs raise InterpreterError, never a different result.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import events, provenance
from . import lookasides as _lookasides  # noqa: F401  (registers the interpreter's own lookasides)
from . import opcodes_calls, opcodes_control, opcodes_data  # noqa: F401  (register the opcode handlers)
from .errors import InterpreterError
from .events import Event, Location
from .interpreter import Interpreter, Tracked, with_provenance
from .provenance import Provenance



def _check_stack_default() -> bool:
    # Tests and CI turn the per-instruction dis.stack_effect check on for every run (read at call time).
    return os.environ.get("THUNDER_LINT_CHECK_STACK", "") not in ("", "0")


@dataclass
class Traced:
    value: object
    provenance: Provenance
    events: list = field(default_factory=list)
    frames: int = 0  # how many Python frames were interpreted


def run(fn, args=(), kwargs=None, *, observers=(), lookasides=None, check_stack: bool | None = None) -> Traced:
    """Interpret `fn(*args, **kwargs)`; returns the value, its provenance and the events emitted."""
    kwargs = dict(kwargs or {})
    recorded: list = []
    interp = Interpreter((recorded.append, *observers), lookasides,
                         check_stack=_check_stack_default() if check_stack is None else check_stack)
    provs = [provenance.Argument(f"args[{i}]") for i in range(len(args))]
    kwprovs = {k: provenance.Argument(f"kwargs[{k!r}]") for k in kwargs}
    value, prov = interp.call(None, fn, tuple(args), kwargs, provs, kwprovs)
    return Traced(value, prov, recorded, interp.frames)


def interpret(fn, *args, observers=(), lookasides=None, **kwargs):
    """Run `fn(*args, **kwargs)` under the interpreter and return its result."""
    return run(fn, args, kwargs, observers=observers, lookasides=lookasides).value


__all__ = ["interpret", "run", "Traced", "Interpreter", "InterpreterError", "Event", "Location", "Tracked",
           "with_provenance", "events", "provenance", "Provenance"]

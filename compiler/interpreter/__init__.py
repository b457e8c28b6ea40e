"""A CPython 3.11-3.13 bytecode interpreter with provenance (the compiler's front end; imports no torch).

    result = interpret(fn, *args, observers=(), lookasides=None, **kwargs)
    traced = run(fn, args, kwargs, observers=(), lookasides=None, check_stack=None, native_paths=())
    traced.value, traced.provenance, traced.events, traced.frames

What runs how:
- Python functions reached from `fn` are interpreted recursively, with their generators (send/throw/close,
  yield from), the special methods written in Python (operators, __getitem__, __iter__, __len__,
  properties, __new__/__init__/metaclass __call__ when constructing) and nn.Module.__call__ with hooks.
- Native callables run as they are ("opaque"); observers get an opaque_call or side_effect_call event.
- `lookasides` maps a callable (function, builtin, method descriptor such as `torch.Tensor.add`, property or
  getset descriptor such as `torch.Tensor.shape`, `operator.add` for `a + b`, `operator.getitem` for
  `a[k]`) to a replacement called with the same arguments. A replacement marked `@with_provenance`
  receives `Tracked(value, provenance)` arguments and may return a Tracked.
- Provenance (compiler.interpreter.provenance): Argument (`args[0].weight`), Global, Builtin, Closure,
  Constant, Default, OpaqueResult, Attribute/Item chains, Computed (with the access paths it depends on);
  `p.roots()` lists those access paths.
- Events (compiler.interpreter.events): global_read, closure_read (details["internal"]: the cell was
  created inside the run), global_write, global_delete, nonlocal_write, nonlocal_delete, opaque_call,
  side_effect_call; each with the user's Location(filename, lineno, function).
- InterpreterError for what is not supported (async code, except*): it names the construct and the user's
  file:line, and interpreted code cannot catch it. Never a silently different result.
- check_stack: after every instruction compare the stack change with dis.stack_effect (None: on when the
  environment variable THUNDER_LINT_CHECK_STACK is set, as the tests do).
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


def run(fn, args=(), kwargs=None, *, observers=(), lookasides=None, check_stack: bool | None = None,
        native_paths=(), track_fresh: bool = False) -> Traced:
    """Interpret `fn(*args, **kwargs)`; returns the value, its provenance and the events emitted.

    native_paths: source path prefixes (e.g. the compiler's own package) whose Python code runs natively
    without events, as trusted machinery. track_fresh: changes to objects made during the run are not
    reported (Interpreter.fresh)."""
    kwargs = dict(kwargs or {})
    recorded: list = []
    interp = Interpreter((recorded.append, *observers), lookasides,
                         check_stack=_check_stack_default() if check_stack is None else check_stack,
                         native_paths=native_paths)
    if track_fresh:
        interp.fresh = {}
    provs = [provenance.Argument(f"args[{i}]") for i in range(len(args))]
    kwprovs = {k: provenance.Argument(f"kwargs[{k!r}]") for k in kwargs}
    value, prov = interp.call(None, fn, tuple(args), kwargs, provs, kwprovs)
    return Traced(value, prov, recorded, interp.frames)


def interpret(fn, *args, observers=(), lookasides=None, **kwargs):
    """Run `fn(*args, **kwargs)` under the interpreter and return its result."""
    return run(fn, args, kwargs, observers=observers, lookasides=lookasides).value


__all__ = ["interpret", "run", "Traced", "Interpreter", "InterpreterError", "Event", "Location", "Tracked",
           "with_provenance", "events", "provenance", "Provenance"]

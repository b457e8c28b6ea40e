"""The tracing context: which tracing state is active in this thread, and the notes that code running under
it makes on that state. It imports nothing of the compiler: every layer may ask `current_state()`.

The state itself (`compiler.torchlang.recording.TracingState`) is pushed by the front end with `tracing(state)`;
code below it reads its attributes and calls `state.record(symbol, args, kwargs)` (what a Symbol call does).
"""
from __future__ import annotations

import threading

_LOCAL = threading.local()  # one tracing stack per thread: two threads may trace at once


def current_state():
    """The TracingState of the innermost trace being made in this thread, or None."""
    stack = getattr(_LOCAL, "stack", None)
    return stack[-1] if stack else None


class tracing:
    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if not hasattr(_LOCAL, "stack"):
            _LOCAL.stack = []
        _LOCAL.stack.append(self.state)
        return self.state

    def __exit__(self, *exc):
        _LOCAL.stack.pop()


# ---------------------------------------------------------------- where Python state is written
# (the epilogue, compiler/frontend/epilogue.py, places its stores at these marks)

MISSING = object()  # no value: a name deleted, or a slot that holds nothing


def contents(container):
    """A copy of a module-held list's or dict's contents."""
    return list(container) if type(container) is list else dict(container)


def mark_write(holder, key, value=MISSING) -> None:
    """While tracing: `holder[key]` (a module's attribute dicts, globals, a cell) is written now, with
    `value` when known; its stores go to these points of the trace, so an op that raises later in a cached
    call finds them done, as in eager."""
    state = current_state()
    if state is not None:
        state.write_marks.setdefault((id(holder), key), []).append((len(state.trace.bsyms), value))


def mark_module_attribute(module, name, value=MISSING) -> None:
    for d in (vars(module), module._buffers, module._parameters):  # (Module.__setattr__ picks one)
        mark_write(d, name, value)


def mark_container_write(container) -> None:
    """While tracing: a module-held list/dict changed in place (an interpreter CONTAINER_WRITE event; the
    interpreting front end watches these containers): its contents store goes here, with its contents now."""
    state = current_state()
    if state is not None and id(container) in state.tracked_containers:
        mark_write(container, None, contents(container))

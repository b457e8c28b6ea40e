"""Run a small program natively and under the interpreter; compare result, output, exceptions, globals.

A program is source text defining `main()`. Each run gets a fresh module namespace, so side effects on
globals are compared too (the final values of plain-data globals)."""
from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap
import types
from dataclasses import dataclass

from compiler.interpreter import Interpreter

_PLAIN = (int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset)


@dataclass
class Observed:
    result: object
    output: str
    exception: tuple | None  # (type, message, context type, cause type)
    globals_after: dict
    frames: int = 0


def _exception_facts(exc):
    if exc is None:
        return None
    def name(e):  # classes are compared by name: each run defines the program's classes afresh
        return None if e is None else f"{type(e).__module__}.{type(e).__qualname__}"
    return (name(exc), _no_addresses(str(exc)), name(exc.__context__), name(exc.__cause__))


def _no_addresses(text: str) -> str:
    # object reprs in messages carry memory addresses, which differ between any two runs
    return re.sub(r"0x[0-9a-fA-F]+", "0x…", text)


def _snapshot(ns):
    return {k: repr(v) for k, v in ns.items() if not k.startswith("__") and isinstance(v, _PLAIN)}


def _namespace(source, name):
    # A real module in sys.modules: dataclasses, pickle & co. look the defining module up by name.
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), module.__dict__)
    return module.__dict__


def observe(source: str, interpreted: bool, name: str = "prog", **interpreter_options) -> Observed:
    ns = _namespace(source, name)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            result, exc, frames = _call_main(ns, interpreted, interpreter_options)
    finally:
        sys.modules.pop(name, None)
    return Observed(result, out.getvalue(), _exception_facts(exc), _snapshot(ns), frames)


def _call_main(ns, interpreted, interpreter_options):
    result = exc = None
    interp = Interpreter(check_stack=True, **interpreter_options)
    try:
        if interpreted:
            result, _ = interp.call(None, ns["main"], (), {}, [], {})
        else:
            result = ns["main"]()
    except Exception as e:  # noqa: BLE001 - the exception itself is what we compare
        exc = e
    return result, exc, interp.frames


def check_program(source: str, name: str = "prog", **interpreter_options):
    native = observe(source, interpreted=False, name=name)
    mine = observe(source, interpreted=True, name=name, **interpreter_options)
    assert mine.frames >= 1, "the program was not interpreted"
    assert mine.exception == native.exception, f"exception differs:\n native={native.exception}\n interp={mine.exception}"
    assert type(mine.result) is type(native.result)
    assert _no_addresses(repr(mine.result)) == _no_addresses(repr(native.result)), \
        f"result differs: {native.result!r} vs {mine.result!r}"
    assert mine.output == native.output, f"output differs:\n{native.output!r}\n{mine.output!r}"
    assert mine.globals_after == native.globals_after

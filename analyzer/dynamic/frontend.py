"""An interpreting front end for compiler.jit, built on its `frontend=` seam.

The compiler's native front end calls the user's function over proxies inside its tracing context; here
that call goes through the bytecode interpreter instead, so every global/closure read and write, every
side-effect call and every compiler event gets the user's file:line. The analysis is a `TraceSession`
(session.py) created per trace; this module only wires it in.
"""
from __future__ import annotations

import os

from compiler.frontend import native_frontend
from compiler.interpreter import Interpreter, provenance

from .user_code import compiler_trusted_paths


class InterpretedCall:
    """The user's function as the native front end sees it: calling it interprets it."""

    def __init__(self, fn, session):
        self.fn = fn
        self.__wrapped__ = fn  # the compiler looks through this for the user's code objects and globals
        self.session = session

    def __call__(self, *args, **kwargs):
        check_stack = os.environ.get("THUNDER_LINT_CHECK_STACK", "") not in ("", "0")
        interp = Interpreter((self.session.on_interpreter_event,), None, check_stack=check_stack,
                             native_paths=compiler_trusted_paths())
        self.session.interpreter = interp
        provs = [provenance.Argument(f"args[{i}]") for i in range(len(args))]
        kwprovs = {k: provenance.Argument(f"kwargs[{k!r}]") for k in kwargs}
        try:
            value, _ = interp.call(None, self.fn, tuple(args), dict(kwargs), provs, kwprovs)
        finally:
            self.session.interpreter = None
        return value


def interpreting_frontend(new_session):
    """A front end (the signature of compiler.frontend.native_frontend) that interprets the user's function,
    with a fresh session from ``new_session()`` per trace; the session sees the compiler's events too and
    decides, once tracing is over, whether the trace may be used (``session.finish(error)``)."""

    def frontend(fn, args, kwargs, *, observers=(), **options):
        session = new_session()
        try:
            result = native_frontend(InterpretedCall(fn, session), args, kwargs,
                                     observers=(*observers, session.on_compiler_event), **options)
        except BaseException as exc:  # noqa: BLE001  (re-raised by finish, or replaced by a SharpEdgeError)
            session.finish(exc)
            raise
        session.finish(None)
        return result

    return frontend

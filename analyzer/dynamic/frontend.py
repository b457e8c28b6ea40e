"""The analysis layer's front end for compiler.jit: the compiler's own interpreting front end
(compiler.frontend.interpreted_frontend), with a fresh TraceSession (session.py) per trace listening to both the
interpreter's and the compiler's events. The session decides, once tracing is over, whether the trace may
be used (``session.finish(error)``)."""
from __future__ import annotations

from compiler.frontend import interpreted_frontend


def interpreting_frontend(new_session):
    """A front end (the signature of compiler.frontend.native_frontend) with a session from
    ``new_session()`` per trace."""

    def frontend(fn, args, kwargs, *, observers=(), **options):
        session = new_session()

        def on_interpreter(interp):
            session.interpreter = interp

        try:
            result = interpreted_frontend(fn, args, kwargs, observers=(*observers, session.on_compiler_event),
                                          interpreter_observers=(session.on_interpreter_event,),
                                          on_interpreter=on_interpreter, **options)
        except BaseException as exc:  # noqa: BLE001  (re-raised by finish, or replaced by a SharpEdgeError)
            session.finish(exc)
            raise
        session.finish(None)
        return result

    return frontend

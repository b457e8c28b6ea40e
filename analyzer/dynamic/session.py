"""One trace's analysis: receives interpreter and compiler events, keeps the Diagnostics, enforces levels."""
from __future__ import annotations

from dataclasses import replace

from ..diagnostics import Severity
from .errors import SharpEdgeError, StopTracing
from .sharp_edges import check_compiler_event, check_interpreter_event
from .user_code import is_user_file, line_span

LEVELS = ("error", "warning", "off")


class TraceSession:
    """``levels`` maps a code to "error", "warning" or "off" (missing: off). With ``enforce``, an error-level
    finding stops the user's code at once (interpreter events) or when tracing ends (compiler events) with a
    SharpEdgeError; without it (check()), nothing is raised. ``on_finish(diagnostics)`` runs after every trace,
    successful or not, before any SharpEdgeError."""

    def __init__(self, levels: dict[str, str], *, enforce: bool, on_finish=None):
        self.levels = levels
        self.enforce = enforce
        self.on_finish = on_finish
        self.interpreter = None  # set by the front end while the user's function runs
        self.found: dict[tuple, object] = {}

    @property
    def diagnostics(self) -> list:
        return list(self.found.values())

    def on_interpreter_event(self, event) -> None:
        where = event.location
        if where is None or where.lineno is None or not is_user_file(where.filename):
            return
        frame = self._frame_at(where)
        span = line_span(where.filename, where.lineno, frame.instr.positions if frame is not None else None)
        code = frame.code if frame is not None else None
        self._add(check_interpreter_event(event, span, code), stop_now=True)

    def on_compiler_event(self, event) -> None:
        frame = self._innermost_user_frame()
        if frame is not None:
            where = frame.location()
            span = line_span(where.filename, where.lineno, frame.instr.positions if frame.instr else None)
        elif event.location is not None and is_user_file(event.location.filename):
            where = event.location
            span = line_span(where.filename, where.lineno)
        else:
            return
        if event.kind == "data_dependent_read":
            # Announced before the segment before it runs (from a value read, where the interpreter lets no
            # user `try` catch StopTracing): an error-level TL302 stops here, before anything runs for real.
            if self.enforce and self.levels.get("TL302") == "error":
                self._add(check_compiler_event(event, where.filename, span), stop_now=True)
            return
        # Never raise here: a compiler event is emitted inside a torch call of the user's code, where an
        # exception could be caught by the user's try/except. finish() raises instead.
        self._add(check_compiler_event(event, where.filename, span), stop_now=False)

    def finish(self, error: BaseException | None) -> None:
        """Tracing ended (``error``: how it failed). Raises the SharpEdgeError when there are error findings."""
        if self.on_finish is not None:
            self.on_finish(self.diagnostics)
        if not self.enforce:
            return
        errors = [d for d in self.found.values() if d.severity is Severity.ERROR]
        if errors:
            raise SharpEdgeError(errors) from (None if isinstance(error, StopTracing) else error)
        if isinstance(error, StopTracing):  # cannot happen without an error finding; never leak it
            raise RuntimeError("internal error: tracing stopped without a finding") from error

    # ----- helpers -----
    def _add(self, diagnostic, *, stop_now: bool) -> None:
        if diagnostic is None:
            return
        level = self.levels.get(diagnostic.code, "off")
        if level == "off":
            return
        diagnostic = replace(diagnostic, severity=Severity.ERROR if level == "error" else Severity.WARNING)
        key = (diagnostic.code, diagnostic.path, diagnostic.line, diagnostic.column)
        if key in self.found:
            return
        self.found[key] = diagnostic
        if self.enforce and level == "error" and stop_now:
            raise StopTracing(f"{diagnostic.code} at {diagnostic.path}:{diagnostic.line}",
                              filename=diagnostic.path, lineno=diagnostic.line, construct=diagnostic.code)

    def _frame_at(self, where):
        """The interpreted frame that emitted an event at ``where`` (normally the innermost one)."""
        for frame in reversed(self._active()):
            if frame.code.co_filename == where.filename and frame.instr is not None \
                    and frame.code.co_qualname == where.function and frame.location().lineno == where.lineno:
                return frame
        return None

    def _innermost_user_frame(self):
        for frame in reversed(self._active()):
            if is_user_file(frame.code.co_filename):
                return frame
        return None

    def _active(self) -> list:
        return list(self.interpreter.active) if self.interpreter is not None else []

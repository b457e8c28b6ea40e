"""The one error the interpreter raises on its own behalf."""
from __future__ import annotations


class InterpreterError(RuntimeError):
    """A construct the interpreter does not support (it refuses rather than compute something different).

    The message names the bytecode or construct and the user's file:line.
    """

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 construct: str | None = None):
        where = f"{filename}:{lineno}: " if filename is not None else ""
        super().__init__(where + message)
        self.filename = filename
        self.lineno = lineno
        self.construct = construct

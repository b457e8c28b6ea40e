"""Errors the compiler raises. Every one names what went wrong and, where known, the user's source line."""


class CompilerError(RuntimeError):
    """Base class: the compiler refused to produce a result rather than risk a different one."""

    location = None  # compiler.core.source.SourceLocation of the user's line, when known


class UnsupportedOpError(CompilerError, NotImplementedError):
    """A torch call (function, method or operator) that the compiler has no symbol for."""


class UnsupportedInputError(CompilerError, TypeError):
    """An argument of the jitted function whose Python type the compiler cannot guard or pass through."""


class DataDependentError(CompilerError):
    """The program needs a tensor's *values* at trace time (`.item()`, `bool(t)`, a boolean mask...)."""


class DeviceMismatchError(CompilerError):
    """Tensors on different devices meet in one op (eager PyTorch raises too; we say where)."""


class ExecutorError(CompilerError):
    """No executor in the priority list can run a symbol (nor its decomposition)."""


class Fallback(BaseException):
    """Symbolic tracing (cache="symbolic values", compiler/symbolic) met something it cannot keep sound: trace
    this call again with constant values. A BaseException, so that the user's `except Exception` in the
    traced code does not catch it."""

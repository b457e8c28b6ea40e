"""The findings of one run, gathered from every function the program jitted.

Each replaced jit is a compiler JittedFunction whose class is swapped for RunJitted (so compiler.last_traces
and friends still work on it). A call:
- traces under the analysis front end (TraceSession, not enforcing: the program computes what eager does and
  no SharpEdgeError or warning reaches it); its findings are remembered for the cache entry the call used, so
  later cache hits count as calls that hit the same locations;
- buffers what the call prints while it runs: when the compiler refuses the function (CompilerError,
  InterpreterError) the buffer is dropped and the call runs eagerly instead (and every later call too), so a
  print inside prints once per call, as in eager; the refusal is reported as a TL003 note.
"""
from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
import types
from dataclasses import dataclass, field, replace

from compiler.runtime.cache import JittedFunction
from compiler.core.errors import CompilerError
from compiler.interpreter import InterpreterError
from compiler.core.context import current_state

from ..diagnostics import Diagnostic, Severity
from ..dynamic.api import _levels
from ..dynamic.frontend import interpreting_frontend
from ..dynamic.session import TraceSession
from ..dynamic.user_code import is_user_file, line_span


_AT_LINE = re.compile(r" at (\S.*?):(\d+) \(in ")


class StopRun(BaseException):
    """Raised inside the program when --max-calls or --max-seconds is reached (a BaseException, so the
    program's own `except Exception` does not swallow it)."""


@dataclass
class _Found:
    diagnostic: Diagnostic
    calls: int = 0


@dataclass
class Collector:
    max_calls: int | None = None
    levels: dict = field(default_factory=lambda: _levels("warn", None))
    found: dict = field(default_factory=dict)  # (code, path, line, column) -> _Found
    calls: int = 0  # calls of jitted functions (each counted once, however many traces it took)
    functions: list = field(default_factory=list)  # RunJitted objects made in this run
    source_files: set = field(default_factory=set)  # user files holding a jitted function
    stopped: str | None = None  # why the run was stopped early, if it was
    trace_seconds: dict = field(default_factory=dict)  # function name -> seconds its first call took

    def __post_init__(self):
        self._lock = threading.Lock()
        self._local = threading.local()

    # --- making jitted functions ---------------------------------------------------------------------
    def jit(self, fn_or_module, **compiler_options):
        """compiler.jit with the trace checks on, counted by this collector. Returns what compiler.jit returns
        (a JittedFunction, or a JittedModule for an nn.Module)."""
        import compiler

        jitted = compiler.jit(fn_or_module, frontend=interpreting_frontend(self._new_session), **compiler_options)
        inner = compiler._jitted(jitted)
        inner.__class__ = RunJitted
        inner._tl_setup(self, _user_caller())
        self.functions.append(inner)
        path = _source_file(fn_or_module)
        if path is not None and is_user_file(path):
            self.source_files.add(path)
        return jitted

    def _new_session(self):
        session = TraceSession(self.levels, enforce=False)
        sessions = getattr(self._local, "sessions", None)
        if sessions is not None:
            sessions.append(session)
        return session

    # --- a call --------------------------------------------------------------------------------------
    def _begin(self) -> list:
        with self._lock:
            if self.max_calls is not None and self.calls >= self.max_calls:
                self.stopped = f"--max-calls {self.max_calls} reached"
                raise StopRun(self.stopped)
            self.calls += 1
        outer = getattr(self._local, "sessions", None)
        self._local.sessions = []
        return outer

    def _end(self, outer, keys: set) -> None:
        self._local.sessions = outer
        with self._lock:
            for key in keys:
                self.found[key].calls += 1

    def _record(self, sessions) -> set:
        keys = set()
        with self._lock:
            for s in sessions:
                for d in s.diagnostics:
                    key = (d.code, d.path, d.line, d.column)
                    self.found.setdefault(key, _Found(d))
                    keys.add(key)
        return keys

    def refused(self, function, error: BaseException) -> set:
        """A TL003 note at the jitted function's definition (or the refused line, when the error names it)."""
        where = getattr(error, "location", None)
        path, line = (where.filename, where.lineno) if where is not None and where.lineno else (None, None)
        if path is None:  # the refusal message names the user's line: "... at FILE:LINE (in NAME: ..."
            m = _AT_LINE.search(str(error))
            if m and os.path.isfile(m.group(1)):
                path, line = m.group(1), int(m.group(2))
        if path is None or not is_user_file(path):
            path, line = _definition(function.fn)
        from rules import RULES

        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        reason = f"why: {type(error).__name__}: {first}"
        name = getattr(function, "__name__", "the function")
        if path is None:
            # Code outside the project (a library's or torch's function): nothing of it was checked. One line
            # for the function, where the program compiled it, naming where the function lives.
            lives = _anywhere(function.fn)
            path, line = function._tl_jitted_at or (lives if lives[0] else (None, None))
            if path is None:
                return set()
            message = (f"the compiler refused `{name}` ({lives[0] or 'no Python source'}"
                       f"{':' + str(lives[1]) if lives[1] else ''}, outside the project): it ran uncompiled and "
                       f"unchecked\n{reason}")
        else:
            message = (f"the compiler refused `{name}` ({type(error).__name__}): it ran eagerly from then on, so its "
                       f"trace checks are incomplete\n{reason}")
        d = Diagnostic(code="TL003", name=RULES["TL003"].name, severity=Severity.INFO, message=message,
                       path=path, line=line, column=1, end_line=line, end_column=1, origin="trace")
        d = replace(d, **dict(zip(("line", "column", "end_line", "end_column"), line_span(path, line))))
        key = (d.code, d.path, d.line, d.column)
        with self._lock:
            self.found.setdefault(key, _Found(d))
        return {key}

    def diagnostics(self) -> list[Diagnostic]:
        """The trace findings, one per location, each with the number of calls that hit it."""
        with self._lock:
            return [replace(f.diagnostic, calls=f.calls) for f in self.found.values()]


class RunJitted(JittedFunction):
    """A JittedFunction counted by a Collector, falling back to eager when the compiler refuses it."""

    def _tl_setup(self, collector: Collector, jitted_at=None) -> None:
        self._tl_collector = collector
        self._tl_jitted_at = jitted_at  # (file, line) of the program's jit call, when the program made it
        self._tl_eager = False
        self._tl_entry_keys: dict = {}  # id(entry.computation) -> (computation, keys of its findings)

    def __get__(self, obj, objtype=None):  # @torch.compile on a method: bound like the function it replaces
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if current_state() is not None:  # called from a function being traced: the compiler inlines it
            return super().__call__(*args, **kwargs)
        col = self._tl_collector
        outer = col._begin()
        keys: set = set()
        try:
            if self._tl_eager:
                return self.fn(*args, **kwargs)
            first = self.hits + self.misses == 0
            start = time.perf_counter()
            out = _Buffered()
            try:
                with out:
                    result = super().__call__(*args, **kwargs)
            except (CompilerError, InterpreterError) as e:
                if getattr(e, "thunder_effects_kept", False):
                    out.flush()
                    raise
                # Refused: nothing it printed while tracing is shown; the call runs eagerly instead.
                self._tl_eager = True
                keys = self._collect(ok=False) | col.refused(self, e)
                return self.fn(*args, **kwargs)
            except BaseException:
                out.flush()
                keys = self._collect(ok=False)
                raise
            out.flush()
            keys = self._collect(ok=True)
            if first:
                col.trace_seconds[self.__name__] = col.trace_seconds.get(self.__name__, 0.0) + \
                    time.perf_counter() - start
            return result
        finally:
            col._end(outer, keys)

    def _collect(self, *, ok: bool) -> set:
        keys = self._tl_collector._record(self._tl_collector._local.sessions)
        entry = self.last_entry if ok else None
        if entry is None:
            return keys
        held = self._tl_entry_keys.get(id(entry.computation))
        if held is None or held[0] is not entry.computation:
            held = (entry.computation, set())
            if any(e.computation is entry.computation for e in self.entries):  # cached: later hits use it
                self._tl_entry_keys[id(entry.computation)] = held
        held[1].update(keys)
        return keys | held[1]


class _Buffered:
    """What sys.stdout and sys.stderr receive while the block runs, written out by flush()."""

    def __enter__(self):
        self.saved = sys.stdout, sys.stderr
        self.parts: list[tuple[int, str]] = []
        sys.stdout, sys.stderr = _Tee(self.parts, 0, self.saved[0]), _Tee(self.parts, 1, self.saved[1])
        return self

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self.saved
        return False

    def flush(self) -> None:
        for which, text in self.parts:
            self.saved[which].write(text)
        self.parts.clear()


class _Tee(io.TextIOBase):
    def __init__(self, parts, which, real):
        self._parts, self._which, self._real = parts, which, real

    def write(self, text):
        self._parts.append((self._which, text))
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return self._real.isatty()

    @property
    def encoding(self):
        return getattr(self._real, "encoding", "utf-8")

    def fileno(self):
        return self._real.fileno()


def _code_of(obj):
    import torch

    owner = getattr(obj, "__self__", None)
    if isinstance(owner, torch.nn.Module):  # model.forward, or model._call_impl from Module.compile
        obj = owner
    if isinstance(obj, torch.nn.Module):
        obj = type(obj).forward
    obj = getattr(obj, "__func__", obj)
    obj = getattr(obj, "__wrapped__", obj)
    return getattr(obj, "__code__", None)


def _source_file(obj) -> str | None:
    code = _code_of(obj)
    return code.co_filename if code is not None else None


def _user_caller() -> tuple[str, int] | None:
    """(file, line) of the innermost frame of the user's code on the stack: where the program called the jit."""
    frame = sys._getframe(1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename) and os.path.isfile(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _anywhere(obj) -> tuple[str | None, int | None]:
    """Where a function's code lives, inside the project or not (None for builtins without Python source)."""
    code = _code_of(obj)
    if code is None:
        return None, None
    path = code.co_filename
    try:
        import torch

        root = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
        if os.path.abspath(path).startswith(root + os.sep):
            path = os.path.relpath(path, root)  # site-packages/torch/... shown from the package on
    except Exception:
        pass
    return path, code.co_firstlineno


def _definition(obj) -> tuple[str | None, int | None]:
    code = _code_of(obj)
    if code is None or not is_user_file(code.co_filename):
        return None, None
    return code.co_filename, code.co_firstlineno

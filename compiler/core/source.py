"""Where in the *user's* code a traced op was called: the first frame outside the compiler and torch."""
from __future__ import annotations

import linecache
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import torch

_COMPILER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # compiler/, not core/
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


@dataclass(frozen=True)
class SourceLocation:
    filename: str
    lineno: int
    function: str

    @property
    def line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    def describe(self) -> str:
        text = self.line
        return f"{self} (in {self.function}: `{text}`)" if text else f"{self} (in {self.function})"


def _is_internal(filename: str) -> bool:
    # torch.nn.Module.__call__ and F.* wrappers live in torch: skip them so the user's line is reported.
    return filename.startswith(_COMPILER_DIR) or filename.startswith(_TORCH_DIR)


_INTERPRETER_DIR = os.path.join(_COMPILER_DIR, "interpreter") + os.sep
INTERPRETERS: list = []  # bytecode interpreters running the user's code now, innermost last (read across layers)


@contextmanager
def interpreting(interp):
    """While the user's code runs under ``interp``, its frames are the user's frames: they are not on
    Python's own stack, where only the interpreter's machinery is."""
    INTERPRETERS.append(interp)
    try:
        yield
    finally:
        INTERPRETERS.remove(interp)


def user_location(skip: int = 1) -> SourceLocation | None:
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<") or not _is_internal(os.path.abspath(filename)):
            return SourceLocation(filename, frame.f_lineno, frame.f_code.co_name)
        if INTERPRETERS and filename.startswith(_INTERPRETER_DIR):
            for interpreted in reversed(INTERPRETERS[-1].active):
                where = interpreted.location()
                if where.filename.startswith("<") or not _is_internal(os.path.abspath(where.filename)):
                    return SourceLocation(where.filename, where.lineno, interpreted.code.co_name)
        frame = frame.f_back
    return None

"""Which source files are the user's, and where on a line an event happened.

Trace checks report only hazards in the user's own code: a global read inside torch.nn.Module.__call__
(its hook dicts) or inside the standard library is real, but not the user's to fix, and the compiler's and
the analyzer's own code is machinery. Everything else (scripts, tests, `<string>` code) is the user's.
"""
from __future__ import annotations

import functools
import linecache
import os
import sysconfig

import torch

import compiler

_HERE = os.path.dirname(os.path.abspath(__file__))
_ANALYZER_DIR = os.path.dirname(_HERE) + os.sep
_COMPILER_DIR = os.path.dirname(os.path.abspath(compiler.__file__)) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_LIBRARY_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                              if (p := sysconfig.get_paths().get(key))}))
_NOT_USER = (_ANALYZER_DIR, _COMPILER_DIR, _TORCH_DIR) + _LIBRARY_DIRS


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return bool(filename)  # exec'd / notebook code is the user's
    path = os.path.abspath(filename)
    # The analyzer's own tests live outside these folders, so they count as user code, as they should.
    return not path.startswith(_NOT_USER)


def line_span(filename: str, lineno: int, positions=None) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column), 1-based with an exclusive end column, in characters.

    ``positions`` is an instruction's dis.Positions (0-based UTF-8 byte columns); without usable positions
    the span is the line's text without its indentation."""
    text = linecache.getline(filename, lineno).rstrip("\r\n")
    if positions is not None and positions.lineno == lineno and positions.col_offset is not None \
            and positions.end_col_offset is not None and text:
        encoded = text.encode("utf-8")
        column = len(encoded[:positions.col_offset].decode("utf-8", "replace")) + 1
        if positions.end_lineno == lineno:
            end_column = len(encoded[:positions.end_col_offset].decode("utf-8", "replace")) + 1
            return lineno, column, lineno, max(end_column, column)
        end_text = linecache.getline(filename, positions.end_lineno or lineno).rstrip("\r\n")
        end_column = len(end_text.encode("utf-8")[:positions.end_col_offset].decode("utf-8", "replace")) + 1
        return lineno, column, positions.end_lineno or lineno, end_column
    if not text.strip():
        return lineno, 1, lineno, 1
    column = len(text) - len(text.lstrip()) + 1
    return lineno, column, lineno, len(text.rstrip()) + 1

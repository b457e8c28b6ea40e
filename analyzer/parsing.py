"""Parsing and compiling source text without ever touching the file system.

When a parse fails, CPython builds the error text by re-reading the *file name* it was given (and
linecache/traceback do the same later). A submitted path is only a label, so every parse and compile of
text here runs under one pseudo file name holding a lone surrogate: it cannot be encoded as an OS path,
so CPython gives up before any ``open`` or ``stat`` (checked by an audit-hook test), and the error line
always comes from the text itself. Positions in the errors are those of the text; callers attach the
real path to the Diagnostic.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
from contextlib import contextmanager

from .compile_check import may_fail_to_compile

# "<...>" also keeps linecache from looking the name up; "\ud800" cannot be encoded, even with
# surrogateescape (which would turn "\udcff" into the byte 0xff and open that).
PSEUDO_FILENAME = "<thunder-lint:\ud800>"

PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


@contextmanager
def gc_paused():
    """The cyclic garbage collector off for the block (restored only by the one that turned it off).

    A parse allocates one object per node and no cycles, yet every allocation burst triggers collections
    that rescan the growing tree: on an 8 MB file that made the parse 2-5x slower (superlinear in size).
    The same holds while rules run with the tree alive: each full collection rescans every node (a
    quarter of the CPU time of linting a 1 MB file). Reference counting still frees everything acyclic.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse(text: str) -> ast.Module:
    """``ast.parse`` under the pseudo file name, with the cyclic garbage collector paused."""
    with gc_paused():
        return ast.parse(text, filename=PSEUDO_FILENAME)


def parses(text: str) -> bool:
    try:
        compile(text, PSEUDO_FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except PARSE_ERRORS:
        return False


def compile_error(tree: ast.Module, text: str | None = None, *, top_level_await: bool = False) -> SyntaxError | None:
    """The error CPython raises only when compiling a tree that parsed (``return`` outside a function,
    ``nonlocal`` at module level, ``await`` outside async, duplicate arguments...), else None.

    With ``text`` (what ``tree`` was parsed from), ``may_fail_to_compile`` first proves most files cannot
    fail (a walk over statements and a few text scans, far cheaper than the compile); the others are
    compiled, which gives the exact error. Compiling from the tree skips a second parse; a tree too deep or
    too big to compile here is not reported: the rules report depth themselves. ``top_level_await``:
    ``await`` outside a function is allowed (IPython runs a notebook's cells so).
    """
    if text is not None and not may_fail_to_compile(tree, text):
        return None
    try:
        with gc_paused():
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
            compile(tree, PSEUDO_FILENAME, "exec", flags, dont_inherit=True)
    except SyntaxError as e:
        return e
    except (ValueError, RecursionError, MemoryError, TypeError):
        return None
    return None


# Syntax this Python's grammar lacks, recognisable on the line the parser stopped at.
_NEWER_SYNTAX = (
    ((3, 12), "PEP 695 type statement", re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*(\[.*\])?\s*=")),
    ((3, 12), "PEP 695 type parameters", re.compile(r"^\s*(async\s+)?def\s+[A-Za-z_]\w*\s*\[")),
    ((3, 12), "PEP 695 type parameters", re.compile(r"^\s*class\s+[A-Za-z_]\w*\s*\[")),
)


def newer_syntax(text: str, exc: SyntaxError) -> str | None:
    """A note naming the Python a file needs when its syntax error is syntax of a newer Python than the
    one running (PEP 695 on 3.11, PEP 701 f-strings), else None."""
    lineno = getattr(exc, "lineno", None) or 0
    lines = text.splitlines()
    line = lines[lineno - 1] if 1 <= lineno <= len(lines) else ""
    for version, what, pattern in _NEWER_SYNTAX:
        if sys.version_info < version and pattern.match(line):
            return _note(version, what)
    msg = getattr(exc, "msg", "") or ""
    if sys.version_info < (3, 12) and msg.startswith("f-string") and _f_string_parses_on_312(line):
        return _note((3, 12), "PEP 701 f-string")
    return None


def _f_string_parses_on_312(line: str) -> bool:
    """Heuristic for PEP 701: an f-string that reuses its own quote, a backslash or a comment inside
    ``{}`` is an error before 3.12 only."""
    return bool(_PEP_701.search(line))


# An f-string whose replacement field holds a whole string in the f-string's own quote, a backslash, or
# a comment: ``f'{'a'}'``, ``f"{'\n'.join(x)}"``.
_PEP_701 = re.compile(r"""[fF][rRbB]?(['"])[^\n]*?\{[^{}]*?(\1[^{}]*?\1|\\|\#)[^{}]*?\}""")


def _note(version: tuple[int, int], what: str) -> str:
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"this is {what} syntax, which needs Python {version[0]}.{version[1]}+; thunder-lint runs on Python {running} and parses with its grammar"

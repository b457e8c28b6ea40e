"""Decode a code object once: instructions, offset -> index, exception table, fast-local layout."""
from __future__ import annotations

import dis
import sys

from .errors import InterpreterError
from .exception_table import ExceptionTableError, find_handler, parse_exception_table

VERSION = sys.version_info[:2]
SUPPORTED_VERSIONS = ((3, 11), (3, 12), (3, 13))

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ITERABLE_COROUTINE = 0x100
CO_ASYNC_GENERATOR = 0x200


class CodeInfo:
    __slots__ = ("code", "instructions", "index_of", "handlers", "names", "nlocals_plus", "first_free",
                 "nargs", "qualname", "const_provs", "plain_positional",
                 "own", "interpretable", "catches")

    def __init__(self, code):
        self.code = code
        self.qualname = code.co_qualname
        self.own = code.co_filename.startswith(_OWN_DIR)  # the interpreter's own helpers always run natively
        # async code runs natively (opaque); everything else is interpreted
        self.interpretable = not self.own and not code.co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE |
                                                                     CO_ASYNC_GENERATOR)
        self.const_provs: dict = {}  # LOAD_CONST index -> its Constant provenance (made once per code object)
        self.catches: dict = {}  # instruction offset -> whether an except clause guards it (Interpreter)
        self.instructions = list(dis.get_instructions(code))
        self.index_of = {ins.offset: i for i, ins in enumerate(self.instructions)}
        try:
            self.handlers = parse_exception_table(code.co_exceptiontable)
        except ExceptionTableError as exc:
            raise InterpreterError(f"cannot parse the exception table of {code.co_qualname}: {exc}",
                                   filename=code.co_filename, lineno=code.co_firstlineno) from None
        # 3.11+ "localsplus": plain locals (args first), then cells that are not arguments, then free vars.
        varnames = code.co_varnames
        cells = tuple(c for c in code.co_cellvars if c not in varnames)
        self.names = varnames + cells + code.co_freevars
        self.nlocals_plus = len(self.names)
        self.first_free = self.nlocals_plus - len(code.co_freevars)
        # Functions whose parameters are all plain positional: a call with exactly that many positional
        # arguments binds without the native binder (-1: never).
        simple = not code.co_kwonlyargcount and not code.co_flags & (CO_VARARGS | CO_VARKEYWORDS)
        self.plain_positional = code.co_argcount if simple else -1
        self.nargs = (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS)
                      + bool(code.co_flags & CO_VARKEYWORDS))

    def handler_for(self, offset: int):
        return find_handler(self.handlers, offset)

    def target_index(self, instr) -> int:
        return self.index_of[instr.argval]


_INFOS: dict = {}  # id(code) -> (code, CodeInfo); keyed by identity (hashing a code object hashes its bytes)
_OWN_DIR = __file__.rsplit("/", 1)[0] + "/"


def code_info(code) -> CodeInfo:
    hit = _INFOS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    if VERSION not in SUPPORTED_VERSIONS:
        raise InterpreterError(f"Python {VERSION[0]}.{VERSION[1]} bytecode is not supported "
                               f"(supported: 3.11, 3.12, 3.13)", construct="python version")
    if len(_INFOS) > 20000:
        _INFOS.clear()
    info = CodeInfo(code)
    _INFOS[id(code)] = (code, info)
    return info

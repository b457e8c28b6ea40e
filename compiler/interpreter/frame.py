"""One activation of an interpreted code object: value stack and fast locals, each with a parallel
list of provenances (values stay plain Python objects so native code can use them unchanged)."""
from __future__ import annotations

from .decode import CodeInfo
from .events import Location


class _Null:
    """CPython's NULL stack slot (pushed before/after callables so CALL knows if `self` is present)."""

    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = _Null()


class Frame:
    __slots__ = ("fn", "code", "info", "globals", "builtins", "fast", "pfast", "stack", "pstack", "ip", "instr",
                 "kw_names", "delegate", "delegate_send", "call_debt", "locals_dict")

    def __init__(self, fn, info: CodeInfo, fast: list, pfast: list):
        self.fn = fn
        self.code = info.code
        self.info = info
        self.globals = fn.__globals__
        builtins = fn.__builtins__
        self.builtins = builtins if type(builtins) is dict else builtins.__dict__
        self.fast = fast
        self.pfast = pfast
        self.stack: list = []
        self.pstack: list = []
        self.ip = 0
        self.instr = None
        self.kw_names = ()  # 3.11/3.12 KW_NAMES, consumed by the next CALL
        self.delegate = None  # sub-iterator of a `yield from` the frame is suspended in
        self.delegate_send = None  # ...and its SEND instruction
        self.call_debt = 0  # 3.11: PRECALL's stack effect is booked on the following CALL
        self.locals_dict = None  # 3.11/3.12: locals() returns one dict per frame, refreshed on each call

    def push(self, value, prov):
        self.stack.append(value)
        self.pstack.append(prov)

    def pop(self):
        self.pstack.pop()
        return self.stack.pop()

    def popp(self):
        return self.stack.pop(), self.pstack.pop()

    def popn(self, n: int):
        if n == 0:
            return [], []
        values, provs = self.stack[-n:], self.pstack[-n:]
        del self.stack[-n:], self.pstack[-n:]
        return values, provs

    def location(self, instr=None) -> Location:
        instr = instr or self.instr
        line = instr.positions.lineno if instr is not None and instr.positions else self.code.co_firstlineno
        return Location(self.code.co_filename, line, self.code.co_qualname)

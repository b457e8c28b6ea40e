"""Opcode handlers, registered with the Python versions they apply to.

A handler is `handler(interp, frame, instr)`; it returns None to continue, or an Outcome to leave the
frame (return or yield)."""
from __future__ import annotations

import dis

from .decode import SUPPORTED_VERSIONS, VERSION

HANDLERS: dict[str, object] = {}
REGISTERED: list[tuple[str, tuple]] = []  # (opname, versions) for every registration, all versions


def handles(*opnames: str, since=(3, 11), until=(3, 13)):
    versions = tuple(v for v in SUPPORTED_VERSIONS if since <= v <= until)

    def register(fn):
        for name in opnames:
            REGISTERED.append((name, versions))
            if VERSION in versions:
                if name not in dis.opmap:
                    raise AssertionError(f"handler {fn.__name__} registered for {name}, not an opcode in "
                                         f"{VERSION[0]}.{VERSION[1]}")
                HANDLERS[name] = fn
        return fn

    return register


class Outcome:
    __slots__ = ("kind", "value", "prov")
    RETURN = "return"
    YIELD = "yield"

    def __init__(self, kind, value, prov):
        self.kind = kind
        self.value = value
        self.prov = prov

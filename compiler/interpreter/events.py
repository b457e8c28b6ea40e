"""Events the interpreter sends to observers, each with the user's source location.

An observer is any callable taking one Event; it runs synchronously while the program is interpreted.
Kinds are strings so observers need not import this module.

Details: reads and writes of globals and cells carry ``holder`` (the globals dict or the cell); writes and
deletes also carry ``previous`` (the value before, or opcodes_data.ABSENT), so an observer can guard what
was read or put back what was written; opaque and side-effect calls carry ``callee``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

GLOBAL_READ = "global_read"
CLOSURE_READ = "closure_read"  # a free variable read (details["internal"]: the cell was created inside the run)
GLOBAL_WRITE = "global_write"
GLOBAL_DELETE = "global_delete"
NONLOCAL_WRITE = "nonlocal_write"
NONLOCAL_DELETE = "nonlocal_delete"
OPAQUE_CALL = "opaque_call"  # native code the interpreter cannot look into; its result is an OpaqueResult
SIDE_EFFECT_CALL = "side_effect_call"  # print/open/input/random.*/time.*/globals/locals/vars
# a list/dict/set/deque not made during the run changed in place (item store/delete, append, update, +=...):
# value is the container, details["watched"] whether it is in `Interpreter.watched_containers`
CONTAINER_WRITE = "container_write"
# an attribute of an object not made during the run is about to be set or deleted (obj.x = ..., setattr, del
# obj.x): value is the object
ATTRIBUTE_WRITE = "attribute_write"
# an interpreted call bound a parameter to its default (`__defaults__`/`__kwdefaults__`, which can be replaced
# between calls): value is the function, name its qualified name
DEFAULT_READ = "default_read"

KINDS = (GLOBAL_READ, CLOSURE_READ, GLOBAL_WRITE, GLOBAL_DELETE, NONLOCAL_WRITE, NONLOCAL_DELETE, OPAQUE_CALL,
         SIDE_EFFECT_CALL, CONTAINER_WRITE, ATTRIBUTE_WRITE, DEFAULT_READ)


@dataclass(frozen=True)
class Location:
    filename: str
    lineno: int | None
    function: str

    def __str__(self):
        return f"{self.filename}:{self.lineno}"


@dataclass
class Event:
    kind: str
    name: str  # the variable or callee
    location: Location
    value: object = None
    provenance: object = None  # of the value read or written, or of an opaque call's result
    details: dict = field(default_factory=dict)

    @property
    def message(self) -> str:
        return f"{self.kind.replace('_', ' ')} of {self.name!r}"

    def __str__(self):
        return f"{self.location}: [{self.kind}] {self.name}"

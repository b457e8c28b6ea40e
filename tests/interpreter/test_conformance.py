"""Every conformance program runs natively and under the interpreter with identical results, printed
output, exceptions (type, message, context and cause types) and effects on globals."""
import operator

import pytest
from interp_harness import check_program

from compiler.interpreter import Tracked, with_provenance

import interp_programs_basics

_MODULES = [interp_programs_basics]
for _name in ("functions", "exceptions", "generators", "classes", "match", "seeds", "stdlib", "dunders"):
    try:
        _MODULES.append(__import__(f"interp_programs_{_name}"))
    except ModuleNotFoundError:
        pass
CASES = [(f"{m.__name__.removeprefix('interp_programs_')}/{name}", src) for m in _MODULES
         for name, src in m.PROGRAMS.items()]


@pytest.mark.parametrize("source", [src for _, src in CASES], ids=[name for name, _ in CASES])
def test_program_matches_native(source):
    check_program(source)


@with_provenance
def _tracked_isinstance(obj, cls):
    assert isinstance(obj, Tracked) and isinstance(cls, Tracked)
    return Tracked(isinstance(obj.value, cls.value), obj.provenance)


# Lookasides that change nothing: the lookaside paths (operators, subscripts, Tracked arguments) and an
# observer must leave every program's behaviour identical to native.
TRANSPARENT = {operator.add: operator.add, operator.mul: operator.mul, operator.sub: operator.sub,
               operator.lt: operator.lt, operator.eq: operator.eq, operator.getitem: operator.getitem,
               operator.setitem: operator.setitem, isinstance: _tracked_isinstance, len: len}


@pytest.mark.parametrize("source", [src for _, src in CASES], ids=[name for name, _ in CASES])
def test_program_matches_native_with_transparent_lookasides(source):
    seen = []
    check_program(source, lookasides=TRANSPARENT, observers=(seen.append,))

"""Every conformance program runs natively and under the interpreter with identical results, printed
output, exceptions (type, message, context and cause types) and effects on globals."""
import pytest
from interp_harness import check_program

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

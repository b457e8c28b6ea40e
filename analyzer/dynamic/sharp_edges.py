"""The trace checks: interpreter and compiler events -> Diagnostics (origin "trace").

    global_read                        -> TL201 global-capture   (data, not modules/functions/classes/constants)
    closure_read (cell from outside)   -> TL202 closure-capture
    global_write/delete,
    nonlocal_write/delete (outside)    -> TL203 captured-write
    side_effect_call                   -> TL204 side-effect-call
    compiler inplace_on_may_view       -> TL101 reshape-inplace
    compiler write_reaches_input       -> TL102 view-inplace-input   (functionalization: through a view that is
                                          not a may-view result, which is TL101's finding)
    compiler input_read_after_write    -> TL103 inplace-alias-hazard (functionalization: eager's order of the
                                          writes and reads, reported at the first write)
    compiler data_dependent            -> TL302 data-dependent-control-flow (the trace splits there)
    compiler symbolic_constraint       -> TL301 symbolic-control-flow (cache="symbolic values": a decision on a
                                          symbolic number changed the computation; check-and-raise is not one)

"Outside" comes from the interpreter: a cell created while the jitted call runs (``details["internal"]``)
belongs to the computation, so closures over the jitted function's own variables and nonlocal writes or
deletes of them are not hazards (seed 132). Callers decide which files are the user's (user_code).
"""
from __future__ import annotations

import ast
import dis
import functools
import linecache
import re
import types

import torch

from rules import RULES
from rules.compilers import BEHAVIOUR

from ..diagnostics import Diagnostic, Severity

TRACE_CODES = ("TL101", "TL102", "TL103", "TL201", "TL202", "TL203", "TL204", "TL301", "TL302")


def make_diagnostic(code: str, message: str, path: str, span: tuple[int, int, int, int]) -> Diagnostic:
    info = RULES[code]
    line, column, end_line, end_column = span
    return Diagnostic(code=code, name=info.name, severity=Severity(info.severity), message=message, path=path,
                      line=line, column=column, end_line=end_line, end_column=end_column, origin="trace")


def is_code_not_data(value) -> bool:
    """Modules, classes and callables (functions, builtins, partials, jitted functions) are program structure;
    an nn.Module is callable but holds parameters and state, so it is data."""
    if isinstance(value, (types.ModuleType, type)):
        return True
    return callable(value) and not isinstance(value, torch.nn.Module)


@functools.lru_cache(maxsize=256)
def _module_index(filename: str, source: str):
    from ..static.module_index import build_module_index

    try:
        return build_module_index(ast.parse(source, filename))
    except (SyntaxError, ValueError):
        return None


def is_never_rebound_constant(filename: str, name: str) -> bool:
    """The static linter's verdict for module global ``name`` of the module in ``filename``: an UPPER_CASE
    constant bound once and never declared `global` anywhere (the same rule TL201's static check applies)."""
    source = "".join(linecache.getlines(filename))
    if not source:
        return False  # no source (exec'd code): only the runtime value can tell, and it says data
    index = _module_index(filename, source)
    return index is not None and index.module_name_kind(name) == "static"


@functools.lru_cache(maxsize=1024)
def _globals_written_by(code) -> frozenset:
    return frozenset(i.argval for i in dis.get_instructions(code) if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"))


def check_interpreter_event(event, span, code=None) -> Diagnostic | None:
    """TL201-TL204 for one compiler.interpreter Event at the user's ``span``; None when it is no hazard.

    ``code``: the code object that emitted it, when known (a global the function itself declares `global`
    and writes is reported once, as TL203, as the static check does)."""
    kind, name, where = event.kind, event.name, event.location
    function = where.function
    if kind == "global_read":
        if is_code_not_data(event.value) or is_never_rebound_constant(where.filename, name):
            return None
        if code is not None and name in _globals_written_by(code):
            return None
        return make_diagnostic("TL201", f"`{function}` reads the module global `{name}` ({_type_of(event.value)}), "
                               f"a hidden input: pass it in as an argument, or make it a constant", where.filename, span)
    if kind == "closure_read":
        if event.details.get("internal") or is_code_not_data(event.value):
            return None
        return make_diagnostic("TL202", f"`{function}` reads `{name}` ({_type_of(event.value)}), captured from "
                               f"outside the jitted call, a hidden input: pass it in as an argument", where.filename, span)
    if kind in ("global_write", "global_delete"):
        verb = "assigns" if kind == "global_write" else "deletes"
        return make_diagnostic("TL203", f"`{function}` {verb} the module global `{name}` inside the jitted call: "
                               f"return the new value and assign it outside\n{_effect_notes('TL203')}",
                               where.filename, span)
    if kind in ("nonlocal_write", "nonlocal_delete"):
        if event.details.get("internal"):
            return None  # the variable lives inside the jitted call: part of the computation
        verb = "assigns" if kind == "nonlocal_write" else "deletes"
        return make_diagnostic("TL203", f"`{function}` {verb} `{name}`, a variable that lives outside the jitted "
                               f"call: return the new value and assign it outside\n{_effect_notes('TL203')}",
                               where.filename, span)
    if kind == "side_effect_call":
        return make_diagnostic("TL204", f"`{name}` called inside the jitted call is a Python side effect: move it out "
                               f"of the compiled function\n{_effect_notes('TL204')}", where.filename, span)
    return None


def check_compiler_event(event, path: str, span) -> Diagnostic | None:
    """TL101 from the compiler's inplace_on_may_view event, at the user's line of the in-place op; TL302 from
    its data_dependent events (data_dependent_read: the same read before its value is known)."""
    if event.kind in ("data_dependent", "data_dependent_read"):
        d = event.details
        value = f" (read {_shown(d['value'], d['kind'])})" if "value" in d else ""
        return make_diagnostic("TL302", f"{d.get('what', 'a read of tensor values')} needs a tensor's value{value}: "
                               "keep it a tensor, or read it outside the compiled function\n"
                               "the compiled program splits here, runs the part before it, reads the value and "
                               + ("continues with one trace for every value read, re-traced only where a decision "
                                  "on it differs" if d.get("symbolic") else
                                  "continues with a trace cached per value read"), path, span)
    if event.kind == "symbolic_constraint":
        return _symbolic_constraint(event, path, span)
    if event.kind == "write_reaches_input":
        d = event.details
        if not d.get("through_view") or d.get("may_view"):
            return None  # a direct write is the caller's own business; a may-view result is TL101's
        return make_diagnostic("TL102", f"in-place `{event.op}` writes into the input `{d['input']}` through a view "
                               f"({', '.join(f'`{v}`' for v in d['view_ops'][:3])}): return the new value instead, or "
                               "write to a clone\nthe caller's tensor changes, and a compiler that functionalizes must "
                               "scatter the new values into the input and copy them back after the computation",
                               path, span)
    if event.kind == "input_read_after_write":
        d = event.details
        steps = ", ".join(f"{what} by `{op}`" + (f" at line {loc.lineno}" if loc is not None else "")
                          for what, op, loc in d["order"][:6]) + (", ..." if len(d["order"]) > 6 else "")
        return make_diagnostic("TL103", f"the input `{d['input']}` is written in place and used again: use the "
                               f"out-of-place op and its result\neager order: {steps}\neach later use must see the "
                               "written values, so a compiler that functionalizes must pass them on and copy them "
                               "back into the input once, after the last use (`thunder-lint rule TL103`)", path, span)
    if event.kind != "inplace_on_may_view":
        return None
    details = event.details
    op, view_op = event.op or "an in-place op", details.get("view_op", "a reshape-like op")
    reached = f"the input `{details['input_name']}`" if details.get("input_name") else "the original tensor"
    got = f"a view (the write reaches {reached})" if details.get("returned_view") else \
        f"a copy (the write does not reach {reached})"
    return make_diagnostic("TL101", f"in-place `{op}` on the result of `{view_op}`, a view or a copy by layout: make it "
                           f"explicit (`view` or `.clone()`)\nwith these inputs it returned {got}, and other layouts "
                           "change that", path, span)


def _type_of(value) -> str:
    """The user's name for a value's type: a traced tensor is a Tensor, a traced number an int or float."""
    from compiler.core.proxies import FloatProxy, IntegerProxy, Proxy, TensorProxy

    if isinstance(value, TensorProxy):
        return "Tensor"
    if isinstance(value, IntegerProxy):
        return "int"
    if isinstance(value, FloatProxy):
        return "float"
    if isinstance(value, Proxy):
        return "object"
    return type(value).__name__


def _effect_notes(code: str) -> str:
    """What each compiler does with a Python effect, as the rule's BEHAVIOUR states it (tests check each)."""
    b = BEHAVIOUR[code]
    return f"compiler.jit (which ran here) {b.ours}\nunder thunder, {b.thunder}\ntorch.compile {b.torch_compile}"


# A size is never negative: a constraint a size always meets (`x_shape0 >= 0`, from slicing) changes nothing.
_SIZE_NOT_NEGATIVE = re.compile(r"^\s*(?:\w+_shape\d+\s*(?:>=\s*0|>\s*-1|!=\s*-1)|(?:0\s*<=|-1\s*<)\s*\w+_shape\d+)\s*$")
_COMPARISON = re.compile(r"^\s*(.+?)\s*(<=|>=|==|<|>|!=)\s*(.+?)\s*$")


def _always_met(constraint: str) -> bool:
    """Constraints every input meets (`x_shape0 >= 0`, `x_shape0 <= x_shape0` from `x[:, :k]`): no finding."""
    if _SIZE_NOT_NEGATIVE.match(constraint):
        return True
    m = _COMPARISON.match(constraint)
    return bool(m) and m.group(1) == m.group(3) and m.group(2) in ("<=", ">=", "==")


def _symbolic_constraint(event, path: str, span) -> Diagnostic | None:
    from compiler.symbolic.values import check_only, negate

    d = event.details
    if d["kind"] == "check" or check_only(d.get("decided_at")):
        return None  # `assert n > 0`, `if n < 0: raise`: a check, the values computed stay the same
    if d.get("after_read") is not None:
        return None  # it names a number read from a tensor: TL302 reports that read (a data-dependent value)
    constraint = d["constraint"]
    if _always_met(constraint):
        return None
    line = linecache.getline(path, span[0]).strip()
    line = line if len(line) <= 60 else line[:57] + "..."
    if d["kind"] == "specialize":
        name = constraint.split(" == ")[0]
        other = f"calls with another value of `{name}` trace again"
        return make_diagnostic("TL301", f"`{line}` specializes the trace on `{constraint}` ({d['reason']}): {other}",
                               path, span)
    return make_diagnostic("TL301", f"`{line}` specializes the trace on `{constraint}`: calls with "
                           f"`{negate(constraint)}` trace again", path, span)


def _shown(value, kind) -> str:
    text = repr(tuple(value) if kind == "shape" else value)
    return text if len(text) <= 60 else text[:57] + "..."

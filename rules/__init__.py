"""The rule table: code -> rule. One module per rule beside this file.

``RULES`` maps each code (in code order) to its ``RuleInfo``; ``STATIC_CHECKS`` maps the codes that have
a static check to it. TL001-TL003 are meta rules: the engine (TL001), the CLI (TL002) and `thunder-lint run` (TL003) emit them.
TL401-TL403 (``OBSERVED``) are reported by `thunder-lint run --observe` from the real torch.compile.
"""

from __future__ import annotations

from . import (
    tl001_syntax_error,
    tl002_unreadable_file,
    tl003_jit_refused,
    tl101_reshape_inplace,
    tl102_view_inplace_input,
    tl103_inplace_alias_hazard,
    tl201_global_capture,
    tl202_closure_capture,
    tl203_captured_write,
    tl204_side_effect_call,
    tl205_module_state,
    tl301_symbolic_control_flow,
    tl302_data_dependent_control_flow,
    tl401_graph_break,
    tl402_recompile,
    tl403_differs_from_eager,
)
from .compilers import render_behaviour
from .base import DOC_HEADINGS, Finding, FixRequest, RuleInfo

_MODULES = (
    tl001_syntax_error,
    tl002_unreadable_file,
    tl003_jit_refused,
    tl101_reshape_inplace,
    tl102_view_inplace_input,
    tl103_inplace_alias_hazard,
    tl201_global_capture,
    tl202_closure_capture,
    tl203_captured_write,
    tl204_side_effect_call,
    tl205_module_state,
    tl301_symbolic_control_flow,
    tl302_data_dependent_control_flow,
    tl401_graph_break,
    tl402_recompile,
    tl403_differs_from_eager,
)

RULES: dict[str, RuleInfo] = {m.INFO.code: m.INFO for m in sorted(_MODULES, key=lambda m: m.INFO.code)}
STATIC_CHECKS = {m.INFO.code: m.check for m in _MODULES if hasattr(m, "check")}
# The rules whose checks only look at jitted functions (the engine skips them when a file has none).
JIT_ONLY = frozenset({"TL102", "TL103", "TL201", "TL202", "TL203", "TL204", "TL205", "TL301", "TL302"})
# The rules `thunder-lint run --observe` reports from the real torch.compile: no static check; their examples are
# programs, run under --observe by tests/run/test_observe_rules.py.
OBSERVED = frozenset({"TL401", "TL402", "TL403"})


def render_docs(code: str) -> str:
    """The markdown docs page of a rule: a title line, its docs, and its examples. Unknown code -> KeyError."""
    info = RULES[code.strip().upper()] if isinstance(code, str) else RULES[code]
    parts = [f"# {info.code} ({info.name})", "", f"{info.summary}", "", f"Severity: {info.severity}. "
             f"Fix: {'available (see Fix safety)' if info.fixable else 'none'}.", "", info.docs.rstrip(), ""]
    behaviour = render_behaviour(info.code)
    if behaviour:
        parts += [behaviour, ""]
    if info.invalid:
        parts += ["## Examples that are reported", ""]
        for ex in info.invalid:
            parts += ["```python", ex.rstrip("\n") if len(ex) < 2000 else ex[:200] + "...", "```", ""]
    if info.valid:
        parts += ["## Examples that are not reported", ""]
        for ex in info.valid:
            parts += ["```python", ex.rstrip("\n"), "```", ""]
    return "\n".join(parts)


__all__ = ["RULES", "STATIC_CHECKS", "JIT_ONLY", "OBSERVED", "render_docs", "RuleInfo", "Finding", "FixRequest", "DOC_HEADINGS"]

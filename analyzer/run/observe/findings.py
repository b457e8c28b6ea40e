"""An observed run -> TL401/TL402/TL403 Diagnostics (origin "trace"), the static rules' predictions, the summary.

One finding per site (file, line): a graph-break site counts the calls that reached the break (the calls of the
graph that ended there; a break after an empty graph reaches no backend and counts its compiles), a recompile
site the recompiles whose failed guard read that line, a divergence site the verified calls that differed.
Each says which static finding at the same line predicted it; ``compare_static`` is the static linter's
precision and recall against what torch.compile did, over the functions dynamo traced.
"""
from __future__ import annotations

import ast
import functools
import os
from dataclasses import dataclass, field

from ...diagnostics import Diagnostic, Severity
from ...dynamic.user_code import is_user_file, line_span
from .where import torch_file, break_reason_line, guard_in_words, innermost_user_frame, split_recompile_reason

# Which static rules predict which observed event at their line.
PREDICTS = {
    "TL401": frozenset({"TL204", "TL302", "TL301", "TL203", "TL205"}),
    "TL402": frozenset({"TL201", "TL202", "TL205", "TL301"}),
    "TL403": frozenset({"TL101", "TL102", "TL103"}),
}
_RECOMPILE_LIMIT = "Dynamo recompile limit exceeded"


@dataclass
class Site:
    code: str
    path: str
    line: int
    what: str  # the reason / guard / op, one line
    calls: int = 0
    events: int = 0  # compiles that broke there, recompiles, or differing calls
    notes: list = field(default_factory=list)
    limit_hit: bool = False
    skipped: str = ""  # TL401: the function dynamo gave up on (it then runs uncompiled), when it did


def _site(sites: dict, code: str, where, what: str) -> Site:
    key = (code, where[0], where[1])
    if key not in sites:
        sites[key] = Site(code, where[0], where[1], what)
    return sites[key]


def observed_sites(observer) -> list[Site]:
    sites: dict = {}
    graphs_of = {}
    for g in observer.graphs:
        if g.reason is not None and getattr(g.reason, "graph_break", False):
            graphs_of.setdefault(id(g.reason), []).append(g)
    for r in observer.break_reasons:
        where = innermost_user_frame(r.user_stack)
        if where is None:
            continue
        s = _site(sites, "TL401", where, break_reason_line(r.reason))
        s.events += 1
        s.calls += sum(g.calls for g in graphs_of.get(id(r), []))
    for s in sites.values():  # only breaks after empty graphs, which reach no backend: count their compiles
        s.calls = s.calls or s.events
    for m in observer.metrics:
        limit = (m.fail_reason or "").startswith(_RECOMPILE_LIMIT)
        where = (m.fail_user_frame_filename, m.fail_user_frame_lineno)
        if m.fail_type and not limit and where[0] and where[1] and not torch_file(where[0]):
            # dynamo gave up on the whole frame (a break inside a loop, an error while tracing): no graph, no
            # GraphCompileReason; the compile's metrics name the failing user line
            s = _site(sites, "TL401", where, break_reason_line(m.fail_reason or m.fail_type))
            s.events += 1
            s.calls = max(s.calls, 1)
            s.skipped = m.co_name or "the function"
        if not m.recompile_reason:
            continue
        guard, where = split_recompile_reason(m.recompile_reason)
        if where is None:
            where = _guard_comment_line(m.recompile_reason, m.co_filename) or _definition(m)
        if where is None or torch_file(where[0]):
            continue
        s = _site(sites, "TL402", where, guard)
        s.what = guard  # the last guard that failed there
        if limit:
            s.limit_hit = True
        else:
            s.events += 1
    for g in observer.graphs:
        n = observer.differing_calls.get(id(g), 0)
        d = g.divergence
        if not n or d is None:
            continue
        where = (d.path, d.line) if d.path else None
        if where is None:
            continue
        s = _site(sites, "TL403", where, d.op)
        s.events += n
        s.calls += g.calls
        s.notes.append(f"{d.op} computed by the backend differs from eager PyTorch ({d.detail}) in {n} of {g.calls} "
                       f"call{'s' if g.calls != 1 else ''} of graph {g.compile_id}")
    return sorted(sites.values(), key=lambda s: (s.path, s.line, s.code))


def _guard_comment_line(reason: str, co_filename: str | None):
    """A symbolic-shape guard names no user stack, only a comment `# <code>  # <path tail>:<line> in <fn>` whose
    path torch shortens: it is the compiled function's file when that file ends with the tail."""
    import re

    m = re.search(r"#\s.*?#\s(\S+):(\d+) in \S+", reason.splitlines()[0])
    if m and co_filename and co_filename.endswith(m.group(1)):
        return co_filename, int(m.group(2))
    return None


def _definition(m):
    if m.co_filename and m.co_firstlineno:
        return m.co_filename, m.co_firstlineno
    return None


_HINTS = {
    "data-dependent": "compute it without Python control flow on tensor values (torch.where, torch.cond)",
    "print": "move the call out of the compiled function, or guard it with torch.compiler.is_compiling()",
}


def _break_hint(reason: str) -> str:
    low = reason.lower()
    if low.startswith("data-dependent"):
        return _HINTS["data-dependent"]
    if "`print`" in reason or "builtin operator" in low or "skip" in low:
        return _HINTS["print"]
    if "item" in low or "tolist" in low or "data-dependent" in low:
        return "keep the value a tensor, or set torch._dynamo.config.capture_scalar_outputs = True"
    return "move the unsupported code out of the compiled function"


def diagnostics(sites: list[Site], static: list[Diagnostic]) -> list[Diagnostic]:
    from rules import RULES

    by_line: dict = {}
    for d in static:
        by_line.setdefault((os.path.abspath(d.path), d.line), set()).add(d.code)
    out = []
    for s in sites:
        predicted = sorted(by_line.get((os.path.abspath(s.path), s.line), set()) & PREDICTS[s.code])
        if s.code == "TL401" and s.skipped:
            first = f"torch.compile gave up on `{s.skipped}` here ({_short(s.what)}): {_break_hint(s.what)}"
            notes = [f"observed: dynamo could not compile the frame ({s.events} attempt{'s' if s.events != 1 else ''}, "
                     "a graph break inside a loop or an error while tracing): it runs uncompiled on every call"]
        elif s.code == "TL401":
            first = f"torch.compile broke the graph here ({_short(s.what)}): {_break_hint(s.what)}"
            notes = [f"observed: {s.calls} call{'s' if s.calls != 1 else ''} broke the graph here "
                     f"({s.events} compile{'s' if s.events != 1 else ''}); the code after it runs as a new graph"]
        elif s.code == "TL402":
            if s.what.startswith("BACKEND_MATCH"):
                fix = "compile each function with one backend"
            elif s.what.startswith("GLOBAL_STATE"):
                fix = "expected once per mode (grad, autocast); more means the mode flips between calls"
            else:
                fix = "pass it as a tensor argument, or make it constant"
            first = f"torch.compile recompiled for the value read here ({_short(guard_in_words(s.what))}): {fix}"
            notes = [f"observed: {s.events} recompile{'s' if s.events != 1 else ''}; last failed guard: `{_short(s.what, 200)}`"]
            if s.limit_hit:
                notes.append("the recompile limit (torch._dynamo.config.recompile_limit) was hit: the function "
                             "ran eagerly from then on")
        else:
            first = f"the compiled value differs from eager at {_short(s.what)}: check the backend's lowering of it"
            notes = list(s.notes)
        if not is_user_file(s.path):
            notes.append("in library code: the program's use of it decides what to change")
        notes.append(f"{', '.join(predicted)} predicted this at this line" if predicted
                     else "no static rule predicted this")
        line, col, end_line, end_col = line_span(s.path, s.line)
        out.append(Diagnostic(code=s.code, name=RULES[s.code].name, severity=Severity(RULES[s.code].severity),
                              message="\n".join([first, *notes]), path=s.path, line=line, column=col,
                              end_line=end_line, end_column=end_col, origin="trace",
                              calls=s.calls if s.code != "TL402" else s.events))
    return out


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --- the static linter against the real compiler --------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _function_spans(path: str) -> tuple:
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((start, node.end_lineno or node.lineno))
    return tuple(spans)


def traced_line(path: str, line: int, traced: set) -> bool:
    """Whether ``line`` lies in a function dynamo traced (its code, an inlined call, or a resume function)."""
    path = os.path.abspath(path)
    spans = [s for s in _function_spans(path) if s[0] <= line <= s[1]]
    if not spans:
        return False
    start, end = min(spans, key=lambda s: s[1] - s[0])
    return any(os.path.abspath(f) == path and start <= first <= end for f, first in traced)


@dataclass
class Comparison:
    observed: dict  # code -> observed sites
    predicted: dict  # code -> observed sites a static finding predicted
    static_traced: int  # static findings of predicting rules on lines in traced functions
    static_happened: int  # of those, at a line where the predicted event was observed

    def line(self) -> str:
        parts = []
        for code, what in (("TL401", "graph-break"), ("TL402", "recompile")):
            n, p = self.observed.get(code, 0), self.predicted.get(code, 0)
            parts.append(f"{p} of {n} observed {what} site{'s' if n != 1 else ''} predicted")
        missed = self.static_traced - self.static_happened
        return (f"static rules vs torch.compile: {'; '.join(parts)} (recall); {self.static_happened} of "
                f"{self.static_traced} static finding{'s' if self.static_traced != 1 else ''} in traced code "
                f"happened, {missed} did not (precision)")


def traced_points(observer) -> set:
    """(file, line) points inside every function dynamo traced: the traced code objects' first lines, every
    compiled frame's, and the frames of each graph break's user stack."""
    points = set(observer.traced)
    points |= {(m.co_filename, m.co_firstlineno) for m in observer.metrics if m.co_filename and m.co_firstlineno}
    for r in observer.break_reasons:
        points |= {(fs.filename, fs.lineno) for fs in r.user_stack or () if fs.lineno}
    return points


def compare_static(sites: list[Site], static: list[Diagnostic], traced: set) -> Comparison:
    observed_at: dict = {}
    for s in sites:
        observed_at.setdefault((os.path.abspath(s.path), s.line), set()).add(s.code)
    observed, predicted = {}, {}
    for s in sites:
        if s.code == "TL403":
            continue
        observed[s.code] = observed.get(s.code, 0) + 1
        here = {d.code for d in static if os.path.abspath(d.path) == os.path.abspath(s.path) and d.line == s.line}
        if here & PREDICTS[s.code]:
            predicted[s.code] = predicted.get(s.code, 0) + 1
    relevant = PREDICTS["TL401"] | PREDICTS["TL402"]
    in_traced = happened = 0
    for d in static:
        if d.code not in relevant or not traced_line(d.path, d.line, traced):
            continue
        in_traced += 1
        codes = observed_at.get((os.path.abspath(d.path), d.line), set())
        if any(d.code in PREDICTS[c] for c in codes):
            happened += 1
    return Comparison(observed, predicted, in_traced, happened)


def verify_line(observer) -> str:
    nv = sum(observer.not_verified.values())
    differ = sum(observer.differing_calls.values())
    text = (f"--verify: {observer.verified_calls} compiled graph call{'s' if observer.verified_calls != 1 else ''} "
            f"compared with eager, {differ} differed ({observer.random_checked} with the backend's own random "
            f"draws given to eager); {nv} not verified")
    if observer.not_verified:
        text += " (" + "; ".join(f"{n}: {why}" for why, n in observer.not_verified.items()) + ")"
    return text


def user_files(observer) -> set:
    files = {f for f, _ in observer.traced if os.path.isfile(f) and is_user_file(f)}
    for g in observer.graphs:
        if g.divergence is not None and g.divergence.path and is_user_file(g.divergence.path):
            files.add(g.divergence.path)
    return files


__all__ = ["observed_sites", "diagnostics", "compare_static", "traced_points", "verify_line", "user_files"]

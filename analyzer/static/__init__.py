"""The static linter: source text in, Diagnostics (and fixed source) out. Nothing is executed.

    lint_source(text, path="<string>", *, select=None, ignore=None, extend_select=None,
                jit_decorators=(), with_fixes=True) -> list[Diagnostic]
    fix_source(text, path="<string>", *, select=None, ignore=None, extend_select=None,
               jit_decorators=(), unsafe=False, project=None, fixable=None, unfixable=()) -> FixOutcome
    prepare_source(text, path, *, jit_decorators=(), project=None) -> FileContext | list[Diagnostic]
    check_prepared(ctx, *, select=None, ignore=None, extend_select=None, with_fixes=True, project=None)
        -> list[Diagnostic]: lint_source in two halves, for linting a project's files once its index is built
"""

from __future__ import annotations

from collections.abc import Iterable

from ..diagnostics import Diagnostic
from ..fixes import FixOutcome, apply_fixes
from .context import FileContext
from .engine import check, enabled_codes, lint, prepare

# Fixing is repeated until nothing changes; a fix that produces a new fixable finding gets a few rounds.
_MAX_FIX_ROUNDS = 8


def lint_source(
    text: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    jit_decorators: Iterable[str] = (),
    with_fixes: bool = True,
    project=None,
) -> list[Diagnostic]:
    """Lint one file's text. Sorted by (line, column, code); honours ``# noqa``.

    ``project`` (an ``analyzer.project.index.ProjectFile``) says which of its functions other files compile,
    and receives the file's summary for the project index.

    Never raises on any text: unparsable input becomes one TL001 finding. An unknown rule selector
    raises ``analyzer.selection.SelectionError`` (a usage error, not an input error).
    """
    enabled = enabled_codes(select, ignore, extend_select)
    return lint(text, path, enabled=enabled, jit_decorators=_names(jit_decorators), with_fixes=with_fixes, project=project)


def prepare_source(text: str, path: str = "<string>", *, jit_decorators: Iterable[str] = (), project=None
                   ) -> FileContext | list[Diagnostic]:
    """The first half of ``lint_source``: parse, compile-check and summarize (into ``project``). Returns the file's
    context for ``check_prepared``, or its findings when it does not parse or compile. The caller keeps the cyclic
    garbage collector paused while prepared files are alive (``analyzer.parsing.gc_paused``)."""
    return prepare(text, path, jit_decorators=_names(jit_decorators), project=project)


def check_prepared(
    ctx: FileContext,
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    with_fixes: bool = True,
    project=None,
) -> list[Diagnostic]:
    """The second half of ``lint_source``: the rules on a prepared file, with the facts ``project`` holds then.
    ``prepare_source`` and ``check_prepared`` together give exactly ``lint_source``'s findings."""
    return check(ctx, enabled=enabled_codes(select, ignore, extend_select), with_fixes=with_fixes, project=project)


def fix_source(
    text: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    jit_decorators: Iterable[str] = (),
    unsafe: bool = False,
    project=None,
    fixable: Iterable[str] | None = None,
    unfixable: Iterable[str] = (),
) -> FixOutcome:
    """Apply every applicable fix (unsafe ones only with ``unsafe=True``), re-lint, and report both.

    ``project`` (a ProjectFile with its facts) says which functions other files compile, as in lint_source.
    ``fixable``/``unfixable`` (codes or prefixes, as ruff's keys): only the fixes of these rules are applied."""
    enabled = enabled_codes(select, ignore, extend_select)
    may_fix = enabled_codes(fixable, unfixable, ()) if fixable is not None or unfixable else None
    decorators = _names(jit_decorators)
    current = text
    applied: list[Diagnostic] = []
    for _ in range(_MAX_FIX_ROUNDS):
        diagnostics = lint(current, path, enabled=enabled, jit_decorators=decorators, with_fixes=True, capped=False,
                           project=project)
        if may_fix is not None:
            diagnostics = [d for d in diagnostics if d.code in may_fix]
        new, fixed = apply_fixes(current, diagnostics, unsafe)
        if not fixed or new == current:
            break
        applied.extend(fixed)
        current = new
    remaining = lint(current, path, enabled=enabled, jit_decorators=decorators, with_fixes=True, project=project)
    return FixOutcome(current, applied, remaining)


def _names(names: Iterable[str] | str) -> tuple[str, ...]:
    """A single decorator name given as a string is one name, not its characters."""
    return (names,) if isinstance(names, str) else tuple(names)


__all__ = ["lint_source", "fix_source", "prepare_source", "check_prepared", "FixOutcome", "Diagnostic"]

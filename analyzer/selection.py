"""Rule selection after ruff's conventions: codes, prefixes ("TL1", "TL"), and "ALL"."""

from __future__ import annotations

from collections.abc import Iterable

# Codes that are always reported: the file could not be read or parsed (TL001, TL002), or a jitted function
# was refused and ran unchecked (TL003, `thunder-lint run`): nothing else was checked there.
ALWAYS_ON = frozenset({"TL001", "TL002", "TL003"})


class SelectionError(ValueError):
    pass


def _expand(selector: str, known: Iterable[str]) -> set[str]:
    selector = selector.strip().upper()
    if not selector:
        return set()
    if selector == "ALL":
        return set(known)
    matched = {c for c in known if c.startswith(selector)}
    if not matched:
        raise SelectionError(f"unknown rule selector {selector!r}")
    return matched


def resolve(
    known: Iterable[str],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
) -> frozenset[str]:
    """The set of enabled codes. ``select=None`` means every rule."""
    known = list(known)
    enabled: set[str] = set(known) if select is None else set()
    for s in select or ():
        enabled |= _expand(s, known)
    for s in extend_select or ():
        enabled |= _expand(s, known)
    for s in ignore or ():
        enabled -= _expand(s, known)
    return frozenset(enabled | (ALWAYS_ON & set(known)))

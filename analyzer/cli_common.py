"""What the lint command (`thunder-lint [PATHS]`) and `thunder-lint run` share: the effective config from the
command line and pyproject, the selection check, the summary lines and the sources for code frames."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from . import config as config_mod
from .diagnostics import Applicability, Diagnostic


class UsageError(Exception):
    pass


def codes(values: list[str] | None) -> tuple[str, ...] | None:
    """``--select A,B --select C`` -> ("A", "B", "C"); None when the option was not given."""
    if values is None:
        return None
    return tuple(c.strip() for v in values for c in v.split(",") if c.strip())


def config_file_given(args: argparse.Namespace) -> bool:
    """Whether --config names a file (then it holds for every linted file, as in ruff)."""
    return bool(_config_args(args)[0])


def _config_args(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """--config's values: (the files it names, the `key = value` pairs)."""
    given = args.config if isinstance(args.config, list) else [args.config] if args.config else []
    files = [c for c in given if os.path.isfile(c) or not _looks_like_pair(c)]
    return files, [c for c in given if c not in files]


def effective_config(args: argparse.Namespace, paths: Sequence[str], found: str | None | bool = False) -> config_mod.Config:
    """The config (found from ``paths``, or the file ``found`` names: None for none) with the command line on
    top (the command line wins)."""
    files, pairs = _config_args(args)
    if len(files) > 1:
        raise UsageError(f"--config names more than one file ({', '.join(files)}): give one file, plus `key = value` pairs")
    if files:
        cfg = config_mod.load_file(files[0])
    elif found is not False:
        cfg = config_mod.load_file(found) if found else config_mod.Config(root=os.getcwd())
    else:
        cfg = config_mod.discover(list(paths))
    if pairs:
        cfg = config_mod.with_overrides(cfg, pairs)
    select = codes(args.select)
    ignore = codes(args.ignore) or ()
    extend = codes(args.extend_select) or ()
    if select is not None:
        # As in ruff, a rule named on the command line is not switched off again by the config's ignore.
        cfg_ignore: tuple[str, ...] = ()
    else:
        select, cfg_ignore = cfg.select, cfg.ignore
    exclude = getattr(args, "exclude", None)
    excludes = _split(exclude or ())
    extend_excludes = _split(getattr(args, "extend_exclude", None) or ())
    respect = getattr(args, "respect_gitignore", None)
    from .globs import GlobError, validate

    try:
        validate(excludes, "--exclude")
        validate(extend_excludes, "--extend-exclude")
    except GlobError as e:
        raise UsageError(str(e)) from None
    return dataclasses.replace(
        cfg,
        select=select,
        ignore=cfg_ignore + ignore,
        extend_select=cfg.extend_select + extend,
        exclude=tuple(excludes) if exclude is not None else cfg.exclude,
        extend_exclude=cfg.extend_exclude + tuple(extend_excludes),
        respect_gitignore=cfg.respect_gitignore if respect is None else respect,
        assume_compiled=assume_compiled(cfg.assume_compiled, getattr(args, "assume_compiled", None)),
        target=getattr(args, "target", None) or cfg.target,
    )


def _looks_like_pair(text: str) -> bool:
    """`--config "key = value"` (ruff's inline override) rather than a file name."""
    return "=" in text and not text.endswith((".toml", "/"))


def _split(values) -> list[str]:
    """`--exclude a,b --exclude c` -> [a, b, c] (commas separate, as ruff's list options; not inside `{a,b}`)."""
    out = []
    for value in values:
        depth, start = 0, 0
        for i, c in enumerate(value + ","):
            if c == "{":
                depth += 1
            elif c == "}" and depth:
                depth -= 1
            elif c == "," and depth == 0:
                if value[start:i].strip():
                    out.append(value[start:i].strip())
                start = i + 1
    return out


def assume_compiled(configured: tuple[str, ...] | None, given: list[str] | None) -> tuple[str, ...] | None:
    """The config's patterns plus the command line's; None when neither sets any (the library default may
    apply). `--assume-compiled ''` sets the option with no pattern: the library default is off."""
    if configured is None and given is None:
        return None
    return tuple(configured or ()) + tuple(p.strip() for p in given or () if p.strip())


def validate_selection(cfg: config_mod.Config) -> None:
    """Unknown codes are a usage error, reported before any file is read."""
    if cfg.select is None and not (cfg.ignore or cfg.extend_select or cfg.per_file_ignores):
        return  # nothing to check: do not load the rule table just for this
    from rules import RULES

    from .selection import resolve

    known = list(RULES)
    resolve(known, cfg.select, cfg.ignore, cfg.extend_select)
    for _, codes in cfg.per_file_ignores:
        resolve(known, (), codes, ())


def sources_for(diagnostics: list[Diagnostic], known: dict[str, str]) -> dict[str, str]:
    """The text of each file that has findings (for the code frames of the full format)."""
    from .file_reader import Unreadable, decode, read_bytes

    sources = dict(known)
    for path in {d.path for d in diagnostics if d.code != "TL002"} - set(sources):
        try:
            sources[path] = decode(read_bytes(path, sys.maxsize))
        except Unreadable:
            continue
        if any(d.cell is not None for d in diagnostics if d.path == path):  # a notebook: a source per cell
            from .notebook import NotANotebook, Notebook  # (only then: it loads json and difflib)

            try:
                sources.update({(path, n): text for n, text in Notebook(sources[path]).cell_sources().items()})
            except NotANotebook:
                pass
    return sources


def plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("x", "s", "ch", "sh")) else f"{n} {word}s"


def _by_severity(diagnostics: list[Diagnostic]) -> str:
    """"3 errors and 19 warnings": a torch.compile performance warning is not counted as an error."""
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.severity.value] = counts.get(d.severity.value, 0) + 1
    parts = [plural(counts[s], {"info": "note"}.get(s, s)) for s in ("error", "warning", "info") if counts.get(s)]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


def summary_lines(diagnostics: list[Diagnostic], *, fixed: int | None, unsafe_fixes: bool) -> list[str]:
    lines = []
    n = len(diagnostics)
    if fixed:
        rest = f": {_by_severity(diagnostics)}" if n else ""
        lines.append(f"Found {plural(n + fixed, 'finding')} ({fixed} fixed, {n} remaining{rest}).")
    elif n:
        lines.append(f"Found {_by_severity(diagnostics)}.")
    else:
        lines.append("All checks passed!")
    safe = sum(1 for d in diagnostics if any(f.applicability is Applicability.SAFE for f in d.fixes))
    unsafe = sum(
        1 for d in diagnostics if d.fixes and all(f.applicability is not Applicability.SAFE for f in d.fixes) and any(f.applicability is Applicability.UNSAFE for f in d.fixes)
    )
    if unsafe_fixes:
        if safe + unsafe:
            lines.append(f"[*] {plural(safe + unsafe, 'fixable finding')} with `--fix --unsafe-fixes`.")
    else:
        if safe:
            lines.append(f"[*] {plural(safe, 'fixable finding')} with the `--fix` option.")
        if unsafe:
            lines.append(f"[-] {plural(unsafe, 'hidden fix')} can be enabled with the `--unsafe-fixes` option.")
    return lines

"""``[tool.thunder-lint]`` in pyproject.toml.

Keys (after ruff's spelling): ``select``, ``ignore``, ``extend-select``, ``per-file-ignores``
(glob -> codes), ``jit-decorators`` (extra decorator names that mark a function as compiled) and
``exclude`` (extra directory/file globs to skip), ``assume-compiled`` (globs over qualified names
``package.module.Class.method`` of code compiled outside the linted files; when it is not set and no file
compiles anything, every ``nn.Module`` forward is linted as compiled, and ``[]`` turns that off) and ``target`` (the compiler
messages speak of: ``thunder``, ``torch.compile``, or ``any``, each function's own entry point). The file is found by walking up from the linted
paths; the first pyproject.toml that has the table wins, and its folder is the project root
(per-file-ignores globs are relative to it).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

TABLE = "thunder-lint"
KNOWN_KEYS = ("select", "ignore", "extend-select", "per-file-ignores", "jit-decorators", "exclude", "assume-compiled", "target")
TARGETS = ("any", "thunder", "torch.compile")


class ConfigError(ValueError):
    """The configuration cannot be used; the CLI reports it and exits 2."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    jit_decorators: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # None: not set; then, when no compile call is found, every nn.Module forward is linted as compiled (the
    # library default). `assume-compiled = []` turns that off.
    assume_compiled: tuple[str, ...] | None = None
    target: str = "any"
    root: str = field(default_factory=os.getcwd)  # folder of the pyproject.toml (or the cwd)
    source: str | None = None  # the pyproject.toml it came from

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Codes that per-file-ignores switch off for ``path``."""
        if not self.per_file_ignores:
            return ()
        rel = relative_posix(path, self.root)
        name = rel.rsplit("/", 1)[-1]
        codes: list[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            # A pattern without "/" also matches the bare file name anywhere, as in ruff.
            if fnmatch.fnmatchcase(rel, pattern) or ("/" not in pattern and fnmatch.fnmatchcase(name, pattern)):
                codes.extend(pattern_codes)
        return tuple(codes)


def relative_posix(path: str, root: str) -> str:
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        return Path(absolute).as_posix()
    return Path(rel).as_posix()


def _str_list(value: object, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(v.strip() for v in value if v.strip())


def _target(value: object, where: str) -> str:
    if value not in TARGETS:
        raise ConfigError(f"{where}: `target` must be one of {', '.join(map(repr, TARGETS))}, got {value!r}")
    return value


def parse_table(table: dict, *, root: str, source: str | None) -> Config:
    where = source or "[tool.thunder-lint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.{TABLE}] must be a table")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [tool.{TABLE}]: {', '.join(unknown)} (known: {', '.join(KNOWN_KEYS)})")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    return Config(
        select=_str_list(table["select"], "select", where) if "select" in table else None,
        ignore=_str_list(table.get("ignore", []), "ignore", where),
        extend_select=_str_list(table.get("extend-select", []), "extend-select", where),
        per_file_ignores=tuple((str(glob), _str_list(codes, f"per-file-ignores.{glob}", where)) for glob, codes in pfi.items()),
        jit_decorators=_str_list(table.get("jit-decorators", []), "jit-decorators", where),
        exclude=_str_list(table.get("exclude", []), "exclude", where),
        assume_compiled=_str_list(table["assume-compiled"], "assume-compiled", where) if "assume-compiled" in table else None,
        target=_target(table.get("target", "any"), where),
        root=root,
        source=source,
    )


def load_file(pyproject: str | os.PathLike) -> Config:
    """Read ``[tool.thunder-lint]`` from one pyproject.toml (a missing table gives the defaults)."""
    import tomllib  # here: most runs find no pyproject.toml to read

    pyproject = os.path.abspath(pyproject)
    try:
        with open(pyproject, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {pyproject}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject}: invalid TOML: {e}") from None
    table = data.get("tool", {}).get(TABLE, {}) if isinstance(data.get("tool"), dict) else {}
    return parse_table(table, root=os.path.dirname(pyproject), source=pyproject)


def find_pyproject(start: str | os.PathLike) -> str | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.thunder-lint] table."""
    here = Path(os.path.abspath(start))
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            if not _may_hold_table(candidate):
                continue
            import tomllib

            try:
                with open(candidate, "rb") as f:
                    data = tomllib.load(f)
            except (OSError, tomllib.TOMLDecodeError):
                # A broken pyproject.toml that is not ours must not stop the run; one that is ours is
                # reported by load_file when it is named or is the match.
                if _mentions_table(candidate):
                    return str(candidate)
                continue
            tool = data.get("tool")
            if isinstance(tool, dict) and TABLE in tool:
                return str(candidate)
    return None


def _may_hold_table(candidate: Path) -> bool:
    """False only when the file cannot hold our table: its name is nowhere in it, and no escape (TOML's ``\\u``
    and ``\\U`` in a quoted key) could spell it. Then tomllib, ~5 ms to import and parse, is not needed."""
    try:
        data = candidate.read_bytes()
    except OSError:
        return True  # tomllib's open reports it as before
    return TABLE.encode() in data or b"\\u" in data or b"\\U" in data


def _mentions_table(candidate: Path) -> bool:
    try:
        return f"[tool.{TABLE}" in candidate.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def discover(paths: list[str] | tuple[str, ...], cwd: str | None = None) -> Config:
    """The config for a run over ``paths``: found from their common folder, else defaults rooted at cwd."""
    cwd = cwd or os.getcwd()
    existing = [os.path.abspath(p) for p in paths if os.path.exists(p)]
    try:
        start = os.path.commonpath(existing) if existing else cwd
    except ValueError:  # paths on different drives
        start = cwd
    found = find_pyproject(start)
    if found is None:
        return Config(root=cwd)
    return load_file(found)

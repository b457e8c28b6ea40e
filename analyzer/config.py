"""The configuration: ``[tool.thunder-lint]`` in pyproject.toml, or a ``thunder-lint.toml`` / ``.thunder-lint.toml``
holding the same keys at its top level (as ruff reads ``[tool.ruff]`` or ``ruff.toml``).

Keys (after ruff's spelling): ``select``, ``ignore``, ``extend-select``, ``per-file-ignores`` (glob -> codes),
``fixable``, ``unfixable``, ``unsafe-fixes``, ``jit-decorators`` (extra decorator names that mark a function as
compiled), ``exclude`` (replaces the default folders skipped), ``extend-exclude`` (adds to them), ``include`` /
``extend-include`` (which files a folder walk lints), ``respect-gitignore``, ``cache-dir``, ``output-format``,
``assume-compiled`` (globs over qualified names ``package.module.Class.method`` of code compiled outside the
linted files; when it is not set and no file compiles anything, every ``nn.Module`` forward is linted as
compiled, and ``[]`` turns that off) and ``target`` (the compiler messages speak of: ``thunder``,
``torch.compile``, or ``any``, each function's own entry point). The file is found by walking up from the linted
paths; in each folder ``.thunder-lint.toml``, then ``thunder-lint.toml``, then a pyproject.toml that has the
table; the first found wins, and its folder is the project root (globs are relative to it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

TABLE = "thunder-lint"
CONFIG_NAMES = (".thunder-lint.toml", "thunder-lint.toml")  # standalone files, before pyproject.toml
KNOWN_KEYS = ("select", "ignore", "extend-select", "per-file-ignores", "fixable", "unfixable", "unsafe-fixes",
              "jit-decorators", "exclude", "extend-exclude", "include", "extend-include", "respect-gitignore",
              "cache-dir", "output-format", "assume-compiled", "target")
TARGETS = ("any", "thunder", "torch.compile")
OUTPUT_FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github")


class ConfigError(ValueError):
    """The configuration cannot be used; the CLI reports it and exits 2."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    jit_decorators: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the default folders skipped (discovery.DEFAULT_EXCLUDE)
    extend_exclude: tuple[str, ...] = ()
    include: tuple[str, ...] | None = None  # None: discovery.DEFAULT_INCLUDE
    extend_include: tuple[str, ...] = ()
    respect_gitignore: bool = True
    fixable: tuple[str, ...] | None = None  # None: every rule's fixes may be applied
    unfixable: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None  # None: not set (the command line decides; off by default)
    cache_dir: str | None = None
    output_format: str | None = None
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
        from .globs import GlobSet

        rel = relative_posix(path, self.root)
        codes: list[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            # A pattern without "/" matches the file's (or a folder's) name anywhere, as in ruff.
            if GlobSet((pattern,)).matches(rel):
                codes.extend(pattern_codes)
        return tuple(codes)

    def file_rules(self):
        """What a folder walk takes (discovery.FileRules) under this config."""
        from .discovery import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, FileRules

        return FileRules(
            exclude=DEFAULT_EXCLUDE if self.exclude is None else self.exclude,
            extend_exclude=self.extend_exclude,
            include=DEFAULT_INCLUDE if self.include is None else self.include,
            extend_include=self.extend_include,
            respect_gitignore=self.respect_gitignore,
        )


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


def _bool(value: object, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be true or false, got {value!r}")
    return value


def _globs(value: object, key: str, where: str) -> tuple[str, ...]:
    from .globs import GlobError, validate

    got = _str_list(value, key, where)
    try:
        validate(got, f"{where}: `{key}`")
    except GlobError as e:
        raise ConfigError(str(e)) from None
    return got


def _choice(value: object, key: str, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise ConfigError(f"{where}: `{key}` must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _target(value: object, where: str) -> str:
    if value not in TARGETS:
        raise ConfigError(f"{where}: `target` must be one of {', '.join(map(repr, TARGETS))}, got {value!r}")
    return value


def parse_table(table: dict, *, root: str, source: str | None, top_level: bool = False) -> Config:
    """The config in ``table`` ([tool.thunder-lint] of a pyproject.toml, or a standalone file's top level)."""
    where = source or "[tool.thunder-lint]"
    name = "the top level" if top_level else f"[tool.{TABLE}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.{TABLE}] must be a table")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in {name}: {', '.join(unknown)} (known: {', '.join(KNOWN_KEYS)})")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    for glob in pfi:
        _globs([glob], "per-file-ignores", where)
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{where}: `cache-dir` must be a string, got {cache_dir!r}")
    return Config(
        select=_str_list(table["select"], "select", where) if "select" in table else None,
        ignore=_str_list(table.get("ignore", []), "ignore", where),
        extend_select=_str_list(table.get("extend-select", []), "extend-select", where),
        per_file_ignores=tuple((str(glob), _str_list(codes, f"per-file-ignores.{glob}", where)) for glob, codes in pfi.items()),
        jit_decorators=_str_list(table.get("jit-decorators", []), "jit-decorators", where),
        exclude=_globs(table["exclude"], "exclude", where) if "exclude" in table else None,
        extend_exclude=_globs(table.get("extend-exclude", []), "extend-exclude", where),
        include=_globs(table["include"], "include", where) if "include" in table else None,
        extend_include=_globs(table.get("extend-include", []), "extend-include", where),
        respect_gitignore=_bool(table.get("respect-gitignore", True), "respect-gitignore", where),
        fixable=_str_list(table["fixable"], "fixable", where) if "fixable" in table else None,
        unfixable=_str_list(table.get("unfixable", []), "unfixable", where),
        unsafe_fixes=_bool(table["unsafe-fixes"], "unsafe-fixes", where) if "unsafe-fixes" in table else None,
        cache_dir=os.path.join(root, os.path.expanduser(cache_dir)) if cache_dir else None,
        output_format=_choice(table["output-format"], "output-format", OUTPUT_FORMATS, where) if "output-format" in table else None,
        assume_compiled=_str_list(table["assume-compiled"], "assume-compiled", where) if "assume-compiled" in table else None,
        target=_target(table.get("target", "any"), where),
        root=root,
        source=source,
    )


def is_standalone(path: str | os.PathLike) -> bool:
    """A file that holds the keys at its top level (anything not named pyproject.toml, as in ruff)."""
    return os.path.basename(str(path)) != "pyproject.toml"


def load_file(path: str | os.PathLike) -> Config:
    """Read the config from a pyproject.toml's [tool.thunder-lint] (a missing table gives the defaults) or from a
    standalone file's top level."""
    import tomllib  # here: most runs find no config file to read

    path = os.path.abspath(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    return from_toml(data, path)


def from_toml(data: dict, path: str) -> Config:
    """The config in a config file's parsed TOML (``path`` names the file: its root, its kind)."""
    if is_standalone(path):
        tool = data.get("tool")
        if set(data) == {"tool"} and isinstance(tool, dict) and TABLE in tool:
            data = tool[TABLE]  # a [tool.thunder-lint] table in a file of another name reads as in a pyproject.toml
        return parse_table(data, root=os.path.dirname(path), source=path, top_level=True)
    table = data.get("tool", {}).get(TABLE, {}) if isinstance(data.get("tool"), dict) else {}
    return parse_table(table, root=os.path.dirname(path), source=path)


def with_overrides(cfg: Config, pairs: list[str]) -> Config:
    """``--config "KEY = VALUE"`` (ruff's inline form): each TOML pair overrides the config's key."""
    import dataclasses
    import tomllib

    table: dict = {}
    for pair in pairs:
        try:
            table.update(tomllib.loads(pair))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"--config {pair!r}: neither a config file nor a TOML `key = value` pair ({e})") from None
    given = parse_table(table, root=cfg.root, source="--config", top_level=True)
    changes = {}
    for f in dataclasses.fields(Config):
        key = f.name.replace("_", "-")
        if key in table:
            changes[f.name] = getattr(given, f.name)
    return dataclasses.replace(cfg, **changes)


def find_pyproject(start: str | os.PathLike, memo: dict[str, str | None] | None = None) -> str | None:
    """The nearest config at or above ``start``: in each folder ``.thunder-lint.toml``, ``thunder-lint.toml``, then
    a pyproject.toml that has a [tool.thunder-lint] table. ``memo`` (folder -> answer), shared by the calls of one
    run, answers a folder that an earlier call walked through (a big tree's hundreds of folders share parents)."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    walked, found = [], None
    while True:
        if memo is not None and folder in memo:
            found = memo[folder]
            break
        walked.append(folder)
        found = _config_in(folder)
        parent = os.path.dirname(folder)
        if found is not None or parent == folder:
            break
        folder = parent
    if memo is not None:
        for f in walked:
            memo[f] = found
    return found


def _config_in(folder: str) -> str | None:
    for name in CONFIG_NAMES:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    candidate = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(candidate) and _holds_table(Path(candidate)):
        return candidate
    return None


find_config = find_pyproject


# pyproject.toml -> (its stat stamp, whether it is ours): a run asks once per folder of its files, and each of a
# big tree's hundreds of folders finds the same file above it (parsing it each time cost a second on transformers)
_OURS: dict[str, tuple[tuple, bool]] = {}


def _holds_table(candidate: Path) -> bool:
    try:
        st = candidate.stat()
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    except OSError:
        stamp = None
    key = str(candidate)
    got = _OURS.get(key)
    if stamp is not None and got is not None and got[0] == stamp:
        return got[1]
    ours = _parse_for_table(candidate)
    if stamp is not None:
        _OURS[key] = (stamp, ours)
    return ours


def _parse_for_table(candidate: Path) -> bool:
    if not _may_hold_table(candidate):
        return False
    import tomllib

    try:
        with open(candidate, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        # A broken pyproject.toml that is not ours must not stop the run; one that is ours is
        # reported by load_file when it is named or is the match.
        return _mentions_table(candidate)
    tool = data.get("tool")
    return isinstance(tool, dict) and TABLE in tool


find_config = find_pyproject


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

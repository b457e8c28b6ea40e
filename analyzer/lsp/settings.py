"""The editor's settings (``initializationOptions`` and ``workspace/didChangeConfiguration``), and how they
combine with the project's ``[tool.thunder-lint]`` table.

They play the part of the command line: ``select`` replaces the config's select and ignore, ``ignore``,
``extendSelect`` and ``assumeCompiled`` add to it, ``target`` overrides it. A value that cannot be used is
left out with a message naming it; the rest still apply.

Keys are matched without regard to case, ``-`` and ``_`` (``assumeCompiled``, ``assume-compiled`` and
``assume_compiled`` are one key); the settings may also come nested under ``thunder-lint``/``thunderLint``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config import TARGETS, Config
from ..file_pass import Settings

SECTION = "thunder-lint"  # the section pulled with workspace/configuration, and nested keys accepted
_NESTED = ("thunder-lint", "thunderlint", "thunder_lint")
DEFAULT_DEBOUNCE_MS = 50  # long enough to coalesce a burst of keystrokes, short enough for the 300 ms budget
_MAX_DEBOUNCE_MS = 10_000


@dataclass(frozen=True)
class EditorSettings:
    select: tuple[str, ...] | None = None  # None: the config's
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    assume_compiled: tuple[str, ...] | None = None  # None: not set here; () sets it to nothing (library default off)
    target: str | None = None  # None: the config's
    # apply unsafe fixes in "fix all" (source.fixAll) too; None: the config's `unsafe-fixes`, else off, as ruff does.
    # Unsafe fixes are always offered one by one as quick fixes, marked "(unsafe fix)" and never preferred.
    unsafe_fixes: bool | None = None
    debounce_ms: int = DEFAULT_DEBOUNCE_MS  # quiet time after a change before the document is linted
    rule_docs_url: str | None = None  # e.g. "http://localhost:8000/rules/{code}"; None: a local markdown file


def _key(name: str) -> str:
    return name.replace("-", "").replace("_", "").lower()


def _codes(value, key: str, problems: list[str]) -> tuple[str, ...] | None:
    """A list of strings, or one comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"`{key}` must be a list of strings, got {value!r}")
        return None
    return tuple(v.strip() for v in value if v.strip())


def _known_selection(codes: tuple[str, ...], key: str, problems: list[str]) -> bool:
    from rules import RULES

    from ..selection import SelectionError, resolve

    try:
        resolve(list(RULES), codes, (), ())
    except SelectionError as e:
        problems.append(f"`{key}`: {e}")
        return False
    return True


def parse_settings(raw, base: EditorSettings | None = None) -> tuple[EditorSettings, list[str]]:
    """Settings from the client's JSON (``None`` or ``{}``: the defaults), and what was left out and why."""
    settings = EditorSettings() if base is None else base
    problems: list[str] = []
    if raw is None:
        return settings, problems
    if not isinstance(raw, dict):
        return settings, [f"settings must be an object, got {type(raw).__name__}"]
    for name, value in raw.items():  # nested under the section name
        if isinstance(name, str) and _key(name) in _NESTED and isinstance(value, dict):
            raw = value
            break
    changes: dict = {}
    for name, value in raw.items():
        key = _key(str(name))
        if key in ("select", "ignore", "extendselect", "assumecompiled"):
            if value is None:
                changes[{"extendselect": "extend_select", "assumecompiled": "assume_compiled"}.get(key, key)] = (
                    None if key in ("select", "assumecompiled") else ())
                continue
            codes = _codes(value, name, problems)
            if codes is None:
                continue
            if key != "assumecompiled" and not _known_selection(codes, name, problems):
                continue
            changes[{"extendselect": "extend_select", "assumecompiled": "assume_compiled"}.get(key, key)] = codes
        elif key == "target":
            if value is None or value in TARGETS:
                changes["target"] = value
            else:
                problems.append(f"`{name}` must be one of {', '.join(TARGETS)}, got {value!r}")
        elif key == "unsafefixes":
            if isinstance(value, bool):
                changes["unsafe_fixes"] = value
            else:
                problems.append(f"`{name}` must be true or false, got {value!r}")
        elif key == "debouncems":
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= _MAX_DEBOUNCE_MS:
                changes["debounce_ms"] = int(value)
            else:
                problems.append(f"`{name}` must be a number of milliseconds from 0 to {_MAX_DEBOUNCE_MS}, got {value!r}")
        elif key == "ruledocsurl":
            if value is None or (isinstance(value, str) and value.strip()):
                changes["rule_docs_url"] = value.strip() if isinstance(value, str) else None
            else:
                problems.append(f"`{name}` must be a URL template such as 'https://example.org/rules/{{code}}', got {value!r}")
        else:
            problems.append(f"unknown setting `{name}`")
    return replace(settings, **changes), problems


def combined_assume_compiled(configured, editor) -> tuple[str, ...] | None:
    """The config's patterns plus the editor's, as the CLI adds its option's; None when neither sets any (the
    library default may apply), () when one sets it to nothing (the library default is off)."""
    if configured is None and editor is None:
        return None
    return tuple(configured or ()) + tuple(editor or ())


def effective_settings(config: Config, editor: EditorSettings) -> Settings:
    """The lint settings of one project: its config with the editor's settings on top (as the CLI's
    command line goes on top of the config)."""
    if editor.select is not None:
        select, config_ignore = editor.select, ()  # a rule selected by name is not switched off by the config
    else:
        select, config_ignore = config.select, config.ignore
    return Settings(
        select=select,
        ignore=config_ignore + editor.ignore,
        extend_select=config.extend_select + editor.extend_select,
        per_file_ignores=config.per_file_ignores,
        jit_decorators=config.jit_decorators,
        root=config.root,
        assume_compiled=combined_assume_compiled(config.assume_compiled, editor.assume_compiled),
        target=editor.target or config.target,
    )

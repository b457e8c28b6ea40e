"""thunder-lint's analysis layer: the Python API.

    lint_source(text, path="<string>", *, select=None, ignore=None, ...) -> list[Diagnostic]
    lint_paths(paths, *, select=None, ignore=None, extend_select=None, config=None, jobs=None, cache=True)
    fix_source(text, path="<string>", *, select=None, ignore=None, unsafe_fixes=False) -> str
    jit(fn, *, sharp_edges="allow" | "warn" | "error", rules=None, **compiler_options)   (needs torch)
    check(fn, *args, **kwargs) -> list[Diagnostic]                                      (needs torch)
    SharpEdgeError, SharpEdgeWarning
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .diagnostics import Applicability, Diagnostic, Edit, Fix, Severity
from .version import __version__


def __getattr__(name: str):
    # lint_source is the static engine's; imported on first use so that `import analyzer.report`
    # (the server, the reporters) does not load the engine.
    if name == "lint_source":
        from .static import lint_source

        return lint_source
    # The dynamic analysis (jit/check) needs torch and the compiler: loaded on first use only, so the
    # server and the reporters never import torch.
    if name in ("jit", "check", "SharpEdgeError", "SharpEdgeWarning"):
        from . import dynamic

        return getattr(dynamic, name)
    raise AttributeError(f"module 'analyzer' has no attribute {name!r}")


def _config_for(paths: list[str], config) -> "object":
    from . import config as config_mod

    if config is None:
        return config_mod.discover(paths)
    if isinstance(config, config_mod.Config):
        return config
    if isinstance(config, (str, os.PathLike)):
        return config_mod.load_file(config)
    if isinstance(config, dict):  # the [tool.thunder-lint] table itself
        return config_mod.parse_table(config, root=os.getcwd(), source=None)
    raise TypeError(f"config must be None, a Config, a pyproject.toml path or a dict, not {type(config).__name__}")


def lint_paths(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    config=None,
    jobs: int | None = None,
    cache: bool = True,
) -> list[Diagnostic]:
    """Lint files and folders as the CLI does (config, per-file-ignores, cache, workers).

    Paths that cannot be linted come back as TL002 findings; internal errors raise RuntimeError after
    the whole run, naming every file that failed.
    """
    from dataclasses import replace

    from .cache import CACHE_DIR_NAME, ResultCache, settings_key
    from .discovery import discover
    from .file_reader import unreadable_diagnostic
    from .runner import Settings, run

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    cfg = _config_for(paths, config)
    if select is not None:
        cfg = replace(cfg, select=tuple(select), ignore=())
    cfg = replace(cfg, ignore=cfg.ignore + tuple(ignore or ()), extend_select=cfg.extend_select + tuple(extend_select or ()))
    settings = Settings.from_config(cfg)
    found = discover(paths, root=cfg.root, rules=cfg.file_rules())
    results_cache = None
    if cache:
        results_cache = ResultCache(os.path.join(cfg.root, CACHE_DIR_NAME), settings_key(__version__, settings)).load()
    result = run(found.files, settings, jobs=jobs, cache=results_cache)
    if results_cache is not None:
        results_cache.save()
    if result.errors:
        raise RuntimeError("internal errors while linting:\n" + "\n".join(result.errors))
    diagnostics = result.diagnostics + [unreadable_diagnostic(p, why) for p, why in found.problems]
    return sorted(diagnostics, key=Diagnostic.sort_key)


def fix_source(
    text: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
) -> str:
    """The source with every applicable fix applied (safe ones; unsafe ones too with ``unsafe_fixes``)."""
    from . import static

    return static.fix_source(text, path, select=select, ignore=ignore, unsafe=unsafe_fixes).text


__all__ = [
    "Applicability",
    "Diagnostic",
    "Edit",
    "Fix",
    "Severity",
    "SharpEdgeError",
    "SharpEdgeWarning",
    "__version__",
    "check",
    "fix_source",
    "jit",
    "lint_paths",
    "lint_source",
]

"""One file's lint: the settings that decide its findings, its result, and the worker that reads, hashes and
lints it (in this process or in a pool's worker). The runner (first pass) and the project pass (re-lint
after the project index) both hand files to it; it knows neither of them."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .cache import content_hash, trusted_signature
from .config import Config
from .diagnostics import Diagnostic
from .file_reader import Unreadable, decode, read_with_stat, unreadable_diagnostic

SERIAL_BELOW = 24  # fewer files than this: a pool costs more than it saves
NOTEBOOK_SUFFIX = ".ipynb"  # (notebook.SUFFIX: that module, with json and difflib, loads only for notebooks)


@dataclass(frozen=True)
class Settings:
    """Everything that changes what a file's findings are (it is part of the cache key)."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    jit_decorators: tuple[str, ...] = ()
    root: str = "."
    fix: str | None = None  # None: lint only; "safe" or "unsafe": compute fixed text too
    assume_compiled: tuple[str, ...] | None = None  # globs over package.module.Class.method; None: not set
    target: str = "any"  # the compiler messages assume: "thunder", "torch.compile", or "any" (each entry point's)
    max_file_bytes: int | None = None  # larger files are TL002 unread; None: file_reader.MAX_FILE_BYTES
    fixable: tuple[str, ...] | None = None  # fix mode: only these rules' fixes (None: all) ...
    unfixable: tuple[str, ...] = ()  # ... and never these

    @classmethod
    def from_config(cls, config: Config, *, fix: str | None = None, max_file_bytes: int | None = None) -> "Settings":
        return cls(
            select=config.select,
            ignore=config.ignore,
            extend_select=config.extend_select,
            per_file_ignores=config.per_file_ignores,
            jit_decorators=config.jit_decorators,
            root=config.root,
            fix=fix,
            assume_compiled=config.assume_compiled,
            target=config.target,
            fixable=config.fixable,
            unfixable=config.unfixable,
            max_file_bytes=max_file_bytes,
        )

    def ignore_for(self, path: str) -> tuple[str, ...]:
        if not self.per_file_ignores:
            return self.ignore
        extra = Config(per_file_ignores=self.per_file_ignores, root=self.root).ignored_for(path)
        return self.ignore + extra


@dataclass
class FileResult:
    path: str
    digest: bytes | None = None  # None when the file could not be read
    signature: tuple | None = None  # stat signature taken when it was read (None: recently modified)
    diagnostics: list[Diagnostic] | None = None  # None: a cache hit, the parent fills it in
    original: str | None = None  # fix mode, when the fixed text differs
    fixed: str | None = None
    applied: list[Diagnostic] = field(default_factory=list)  # fix mode: what was fixed
    error: str | None = None  # an internal error while linting this file
    summary: dict | None = None  # the file's part of the project index (None: a cache hit, or unparsable)
    contribution: str | None = None  # the digest of ``summary`` the index compares (made where it was summarized)
    facts: tuple | None = None  # what the project index said about the file when it was linted
    # a file summarized but not yet linted (process_file's hold): (context, ProjectFile) here, REPARSE when its
    # parsed tree was not kept (past the memory budget: read and parsed again to lint), or the forked helper
    # process that holds it (helper_processes.Helper)
    held: object = None
    cells: object = None  # a notebook's notebook.CellMap: its findings are placed in cells (None: a Python file)


def source_of(path: str, data: bytes):
    """notebook.source_of: (the text to lint, its Notebook or None); a Python file's only decoded."""
    if not path.lower().endswith(NOTEBOOK_SUFFIX):
        return decode(data), None
    from .notebook import source_of as notebook_source

    return notebook_source(path, data)


def engine():
    # Imported on first use: a run answered wholly from the cache never loads the engine and its rules.
    from . import static

    return static


def lint_text(text: str, path: str, settings: Settings, project=None) -> list[Diagnostic]:
    return engine().lint_source(
        text,
        path,
        select=settings.select,
        ignore=settings.ignore_for(path),
        extend_select=settings.extend_select,
        jit_decorators=settings.jit_decorators,
        with_fixes=True,
        project=project,
    )


def process_file(path: str, settings: Settings, known: dict[str, bytes], facts: tuple | None = None,
                 first_digest: bytes | None = None, hold: bool = False) -> FileResult:
    """Read, hash and lint one file (fix mode lints first too, then fix_with_facts fixes); never raises. ``facts``: what the project index knows about it
    (None on the first pass, before the index exists); ``first_digest``: the content hash the first pass
    linted (the same content was compile-checked there). ``hold``: only parse, compile-check and summarize it,
    keeping the parsed file in ``result.held`` for ``lint_held`` once the index's facts are known."""
    result = FileResult(path)
    try:
        data, st = read_with_stat(path, settings.max_file_bytes)
        result.digest = content_hash(data)
        result.signature = trusted_signature(st)
        if known.get(os.path.abspath(path)) == result.digest:
            return result  # hit: the parent has the findings
        text, notebook = source_of(path, data)
        result.cells = notebook and notebook.cell_map
    except Unreadable as problem:
        result.diagnostics = [unreadable_diagnostic(path, problem)]
        return result
    try:
        from .project.incremental import contribution
        from .project.index import project_file

        project = project_file(path, settings, facts)
        project.compile_checked = facts is not None and first_digest == result.digest
        if hold:
            ctx = engine().prepare_source(text, path, jit_decorators=settings.jit_decorators, project=project)
            if isinstance(ctx, list):  # does not parse or compile: that is its finding
                result.diagnostics, result.facts = _placed(result, ctx), ()
            else:
                result.held, result.summary = (ctx, project), project.summary
                result.contribution = contribution(project.summary)
            return result
        result.diagnostics = _placed(result, lint_text(text, path, settings, project))
        result.summary, result.facts = project.summary, project.used
        if result.facts is None:  # unparsable: linted, with nothing for the index
            result.facts = ()
    except BaseException as e:  # the engine promises not to raise; if it does, this file is reported, the run goes on
        _internal_error(result, e)
    return result


def _placed(result: FileResult, diagnostics) -> list[Diagnostic]:
    """A notebook's findings at their cells (lines counted in the cell); a Python file's as they are."""
    if result.cells is None:
        return list(diagnostics)
    return result.cells.place_all(diagnostics)


def _take_fix(result: FileResult, outcome, text: str, notebook) -> None:
    """A fix outcome into ``result``: a notebook's fixed text goes back into its JSON, cell by cell (refused,
    and the findings kept, when it cannot be written back safely)."""
    remaining, applied, fixed = list(outcome.remaining), list(outcome.applied), outcome.text
    if notebook is not None and fixed != text:
        from .notebook import NotANotebook

        try:
            original, fixed = notebook.text, notebook.with_source(fixed)
        except NotANotebook as e:
            result.error = f"{result.path}: not fixed: {e}"
            remaining, applied, original, fixed = sorted(remaining + applied, key=Diagnostic.sort_key), [], text, text
        text = original
    result.diagnostics = _placed(result, remaining)
    result.applied = _placed(result, applied)
    if fixed != text:
        result.original, result.fixed = text, fixed


def fix_with_facts(result: FileResult, settings: Settings) -> None:
    """Fix mode after a plain run: apply ``result``'s fixes with the facts the project index gave the file (so
    fixes and remaining findings are those of a plain run: the library default, what other files compile).
    The file is read again and left alone when it changed since the run read it; never raises."""
    try:
        data, _st = read_with_stat(result.path, settings.max_file_bytes)
        if content_hash(data) != result.digest:
            result.error = f"{result.path}: not fixed: the file changed while it was being linted"
            return
        text, notebook = source_of(result.path, data)
        result.cells = notebook and notebook.cell_map
        from .project.index import project_file

        project = project_file(result.path, settings, result.facts)
        project.compile_checked = True  # the plain run compile-checked this same content
        outcome = engine().fix_source(
            text,
            result.path,
            select=settings.select,
            ignore=settings.ignore_for(result.path),
            extend_select=settings.extend_select,
            jit_decorators=settings.jit_decorators,
            unsafe=settings.fix == "unsafe",
            project=project,
            fixable=settings.fixable,
            unfixable=settings.unfixable,
        )
    except Unreadable as problem:
        result.error = f"{result.path}: not fixed: {problem}"
        return
    except BaseException as e:
        _internal_error(result, e)
        return
    _take_fix(result, outcome, text, notebook)


# Trees linted and kept alive until the process ends (None: freed after each file). Freeing a parsed tree node by
# node costs about a fifth of its parse (0.75 s CPU on the transformers sources); a process that ends without
# the interpreter's teardown (the CLI's lint, a forked helper: os._exit) never needs them freed.
_kept_trees: list | None = None


def keep_linted_trees(keep: bool = True) -> None:
    """From now on, trees ``lint_held`` has linted stay alive until the process exits (call this only in a
    process that ends with ``os._exit`` after one lint: the memory is never given back before); False: freed."""
    global _kept_trees
    if not keep:
        _kept_trees = None
    elif _kept_trees is None:
        _kept_trees = []


def keeps_linted_trees() -> bool:
    return _kept_trees is not None


REPARSE = "reparse"  # FileResult.held of a file summarized whose tree was let go: lint_held reads it again


def hold_share(paths: list[str], settings: Settings, known: dict[str, bytes], budget: int | None,
               progress=None) -> list[FileResult]:
    """Summarize ``paths`` (process_file's hold), keeping parsed trees for at most ``budget`` bytes of sources
    (None: all of them; a tree takes about 30 times its file's size): the rest are let go (``REPARSE``) and
    parsed again when linted, so a large project is held within bounded memory and still linted once."""
    results, kept = [], 0
    for i, p in enumerate(paths, 1):
        # (process_file through the module's name: tests replace it there)
        r = process_file(p, settings, known, hold=True)
        if r.held is not None and budget is not None:
            size = _source_size(p)
            if kept + size > budget:
                r.held = REPARSE  # its tree goes now, by reference counting (a parse makes no cycles)
            else:
                kept += size
        results.append(r)
        if progress:
            progress(i)
    return results


def _source_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def lint_held(result: FileResult, settings: Settings, facts: tuple) -> None:
    """Lint a file ``process_file`` held, with the project index's ``facts``; never raises."""
    if result.held == REPARSE:  # its tree was let go: read, parse (the compile check is done) and lint it now
        result.held = None
        new = process_file(result.path, settings, {}, facts, result.digest)
        result.diagnostics, result.error, result.facts = new.diagnostics, new.error, new.facts
        return
    ctx, project = result.held
    result.held = None
    if _kept_trees is not None:
        _kept_trees.append(ctx)
    project.facts = facts
    try:
        result.diagnostics = _placed(result, engine().check_prepared(
            ctx,
            select=settings.select,
            ignore=settings.ignore_for(result.path),
            extend_select=settings.extend_select,
            with_fixes=True,
            project=project,
        ))
        result.facts = project.used
    except BaseException as e:
        _internal_error(result, e)


def _internal_error(result: FileResult, e: BaseException) -> None:
    if isinstance(e, KeyboardInterrupt):
        raise e
    result.diagnostics = []
    result.error = f"{result.path}: internal error while linting: {type(e).__name__}: {e}".rstrip()
    if os.environ.get("THUNDER_LINT_DEBUG"):
        import traceback

        result.error += "\n" + traceback.format_exc()


# --- worker side -------------------------------------------------------------------------------------
_worker_settings: Settings | None = None
_worker_known: dict[str, bytes] = {}


def init_worker(settings: Settings, known: dict[str, bytes]) -> None:
    import signal

    global _worker_settings, _worker_known
    _worker_settings, _worker_known = settings, known
    # Ctrl-C reaches the whole process group: the parent alone handles it (and stops the workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def worker_settings() -> Settings | None:
    """The settings this pool worker was started with (None outside a worker)."""
    return _worker_settings


def run_chunk(paths: list[str], facts: dict[str, tuple] | None = None) -> list[FileResult]:
    """Lint ``paths`` in a pool's worker (with the project index's ``facts`` per path, when given)."""
    assert _worker_settings is not None
    return [process_file(p, _worker_settings, _worker_known, None if facts is None else facts[p]) for p in paths]


def pool_context():
    # fork: workers start in milliseconds with the engine already imported. Only on Linux (macOS system
    # libraries are not fork-safe) and only while this process has a single thread (a fork copies
    # locks held by other threads). Imported here: a run in one process never loads multiprocessing.
    import multiprocessing
    import threading

    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")

"""What a lint worker process does: take a job (files + settings), lint, return plain results; or
render a merged report (``RenderJob``).

This module is imported in the worker processes, so it imports only the analyzer (never FastAPI, never
torch). ``analyze_job`` is a pure function of its job, usable in-process too; ``worker_main`` is the
process loop around it. Submitted text is parsed, never executed, and never written or read as a path:
file paths are labels only.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import traceback
from dataclasses import dataclass, field, replace

from analyzer import static
from analyzer.diagnostics import Diagnostic
from analyzer.file_reader import Unreadable, decode, unreadable_diagnostic
from analyzer.notebook import NotANotebook, text_source
from analyzer.report import render

from . import fs_audit

# The per-file "error" comes from these: the file could not be read or parsed, so nothing was checked.
_FILE_ERROR_CODES = ("TL001", "TL002")


@dataclass(frozen=True)
class SubmittedFile:
    path: str  # a label, never opened
    text: str | None = None  # the content as text ...
    data: bytes | None = None  # ... or as bytes, decoded the way the CLI decodes a file


@dataclass(frozen=True)
class Job:
    files: tuple[SubmittedFile, ...]
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fix: str | None = None  # None, "safe" or "unsafe"
    fmt: str = "json"  # "json", "sarif" or "github": the latter two are rendered here, as the CLI does
    with_fixes: bool = True  # build each finding's fix edits (libcst: most of the time); github shows none
    # What a submitted pyproject.toml (or the request) configures, as the CLI's Settings:
    per_file_ignores: tuple = ()
    config_root: str = ""  # the folder (a label) of the pyproject.toml that per-file-ignores are relative to
    jit_decorators: tuple[str, ...] = ()
    assume_compiled: tuple[str, ...] | None = None
    target: str = "any"
    # The project index: each file's module name (None: no index) and, on the second pass (and in fix mode),
    # what the joined index says about it (None: the first pass, knowing only the file itself).
    modules: tuple[str, ...] | None = None
    facts: tuple | None = None


@dataclass(frozen=True)
class IndexJob:
    """Join the files' summaries into the project index: each file's facts (the CLI's second pass)."""

    summaries: tuple[dict, ...]
    files: tuple[SubmittedFile, ...]  # the files the summaries came from: the index reads functions' text
    assume_compiled: tuple[str, ...] | None = None
    target: str = "any"


@dataclass(frozen=True)
class RenderJob:
    """Render already-found diagnostics (Diagnostic.to_json() dicts) as the CLI would: for requests whose
    files were linted in several workers. Done here because the report's URIs depend on the cwd."""

    diagnostics: tuple[dict, ...]
    fmt: str


@dataclass
class FileOutcome:
    path: str
    sha256: str
    error: str | None = None
    fixed_content: str | None = None
    applied: int = 0


@dataclass
class JobResult:
    files: list[FileOutcome]
    diagnostics: list[dict] = field(default_factory=list)  # Diagnostic.to_json(), sorted as the CLI sorts
    rendered: str | None = None  # the sarif/github report, byte for byte what the CLI prints
    summaries: list = field(default_factory=list)  # per file (with Job.modules): its part of the project index
    used_facts: list = field(default_factory=list)  # per file: the facts it was linted with
    library_default: str = ""  # with one file: why the one-file index linted every module forward as compiled


def _source_text(f: SubmittedFile) -> tuple[bytes, str]:
    """(the bytes that are hashed, the text to lint); raises Unreadable as the CLI's reader would. A notebook's
    text to lint is its code cells joined (analyzer/notebook.py)."""
    data, text, _ = _source(f)
    return data, text


def _source(f: SubmittedFile):
    """(the hashed bytes, the text to lint, the Notebook or None)."""
    if f.data is not None:
        data, text = f.data, decode(f.data)
    else:
        data = f.text.encode("utf-8")
        text = f.text
        if "\0" in text:
            decode(data)  # NUL near the start: the CLI calls this a binary file (TL002); further on, TL001
        if text.startswith("\ufeff"):
            text = text[1:]  # a BOM, as Python's own decoding drops it
    text, notebook = text_source(f.path, text)
    return data, text, notebook


def _ignore_for(job: Job, path: str) -> tuple[str, ...]:
    if not job.per_file_ignores:
        return job.ignore
    from analyzer.config import Config

    return job.ignore + Config(per_file_ignores=job.per_file_ignores, root=os.path.abspath(job.config_root)).ignored_for(path)


def _project_file(job: Job, i: int):
    if job.modules is None:
        return None
    from analyzer.project.index import ProjectFile, normalize_facts

    facts = None if job.facts is None or job.facts[i] is None else normalize_facts(job.facts[i])
    # (a second pass lints the submitted text the first pass compile-checked)
    return ProjectFile(job.files[i].path, job.modules[i], facts, job.assume_compiled, job.target,
                       want_summary=facts is None, root="", compile_checked=facts is not None)


def _analyze_file(f: SubmittedFile, job: Job, project=None) -> tuple[FileOutcome, list[Diagnostic]]:
    try:
        data, text, notebook = _source(f)
    except Unreadable as problem:
        digest = hashlib.sha256(f.data if f.data is not None else f.text.encode("utf-8")).hexdigest()
        d = unreadable_diagnostic(f.path, problem)
        return FileOutcome(f.path, digest, error=d.message), [d]
    outcome = FileOutcome(f.path, hashlib.sha256(data).hexdigest())
    try:
        if job.fix is None:
            diagnostics = static.lint_source(
                text, f.path, select=job.select, ignore=_ignore_for(job, f.path), extend_select=job.extend_select,
                jit_decorators=job.jit_decorators, with_fixes=job.with_fixes, project=project,
            )
        else:
            fixed = static.fix_source(
                text, f.path, select=job.select, ignore=_ignore_for(job, f.path), extend_select=job.extend_select,
                jit_decorators=job.jit_decorators, unsafe=job.fix == "unsafe", project=project,
            )
            diagnostics = list(fixed.remaining)
            outcome.fixed_content = fixed.text
            outcome.applied = len(fixed.applied)
            if notebook is not None:  # the notebook's JSON back, the fixes in their cells
                try:
                    outcome.fixed_content = notebook.with_source(fixed.text)
                except NotANotebook:
                    outcome.fixed_content, outcome.applied = notebook.text, 0
                    diagnostics = sorted(diagnostics + list(fixed.applied), key=Diagnostic.sort_key)
        if notebook is not None:
            diagnostics = notebook.cell_map.place_all(diagnostics)
    except Exception as e:  # the engine promises not to raise; if it does, this file says so, the rest go on
        outcome.error = f"internal error while linting: {type(e).__name__}: {e}".rstrip()
        return outcome, []
    for d in diagnostics:
        if d.code in _FILE_ERROR_CODES:
            outcome.error = d.message
            break
    return outcome, diagnostics


def analyze_job(job: Job) -> JobResult:
    outcomes: list[FileOutcome] = []
    diagnostics: list[Diagnostic] = []
    summaries, used, library_default = [], [], ""
    for i, f in enumerate(job.files):
        project = _project_file(job, i)
        outcome, found = _analyze_file(f, job, project)
        outcomes.append(outcome)
        diagnostics.extend(found)
        summaries.append(project.summary if project is not None else None)
        used.append(project.used if project is not None else None)
        library_default = library_default or (project.library_default if project is not None else "")
    diagnostics.sort(key=Diagnostic.sort_key)
    result = JobResult(outcomes, summaries=summaries, used_facts=used, library_default=library_default)
    if job.fmt == "json":
        result.diagnostics = [d.to_json() for d in diagnostics]
    else:
        # root: the worker's cwd ("/"), as the CLI uses its cwd, so relative labels give the same URIs
        # and nothing about the server's own folders can appear in a report.
        result.rendered = render(diagnostics, job.fmt, root=os.getcwd())
    return result


def render_job(job: RenderJob) -> str:
    diagnostics = sorted((Diagnostic.from_json(d) for d in job.diagnostics), key=Diagnostic.sort_key)
    return render(diagnostics, job.fmt, root=os.getcwd())


def index_job(job: IndexJob) -> tuple[dict, str]:
    from analyzer.project.index import index_facts

    texts = {}
    for f in job.files:
        try:
            texts[f.path] = _source_text(f)[1]
        except Unreadable:
            texts[f.path] = ""  # (it has no summary either: it was not parsed)
    return index_facts(list(job.summaries), texts, job.assume_compiled, job.target)


def run_any(job: Job | RenderJob | IndexJob):
    if isinstance(job, RenderJob):
        return render_job(job)
    if isinstance(job, IndexJob):
        return index_job(job)
    return analyze_job(job)


_WARM_UP = """\
import torch

@torch.compile
def f(x, n):
    y = x.reshape(-1)
    y.add_(1)
    z = torch.reshape(x, (2, -1))  # a fix only libcst builds (the one above is built on the text): it loads libcst
    z.mul_(2)
    if n > 2:
        print(SCALE)
    return y
"""


def _limit_memory(memory_mb: int) -> None:
    """Cap the worker's address space: a file that makes the engine balloon fails alone (MemoryError),
    instead of pushing the whole host into swap or the OOM killer."""
    if memory_mb > 0:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _close_codec_set() -> None:
    """Import every codec now and then stop the ``encodings`` package from searching its folder.

    A coding cookie names a codec and Python imports it on first use, so a request could otherwise make
    a worker stat and open files (and an unknown name stats the folder on every request). About 80 ms and
    4 MB once per worker; an unknown encoding still fails with the usual "unknown encoding" result."""
    import encodings
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(encodings.__path__):
        try:
            importlib.import_module(f"encodings.{module.name}")
        except Exception:  # mbcs, oem: Windows only
            pass
    encodings.__path__ = []


def worker_main(conn, memory_mb: int = 0) -> None:
    """Serve jobs from ``conn`` until it closes (or a None job): ("ok", JobResult) or ("error", text).
    After a MemoryError the worker replies and exits; the pool starts a fresh one."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle; it stops us
    _limit_memory(memory_mb)
    # Make the import path independent of the cwd before leaving it: lazy imports must still work.
    sys.path[:] = [os.path.abspath(p) for p in sys.path]
    # Load the engine, the rules and libcst now, so that the first request pays no import cost.
    static.fix_source(_WARM_UP, "warm_up.py", unsafe=True)
    # ... and the project index (its modules load on first use, which would read files on a request)
    warm = Job((SubmittedFile("pkg/warm_up.py", _WARM_UP), SubmittedFile("pkg/__init__.py", "")), modules=("pkg.warm_up", "pkg"))
    first = analyze_job(warm)
    facts, _ = index_job(IndexJob(tuple(first.summaries), warm.files))
    analyze_job(replace(warm, facts=tuple(facts[f.path] for f in warm.files)))
    _close_codec_set()
    os.chdir("/")
    fs_audit.arm_if_enabled()  # from here on is the request path: it must touch no file (tests check)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return  # the server went away
        if job is None:
            return
        exhausted = False
        try:
            reply = ("ok", run_any(job))
        except BaseException as e:  # report, never die silently on a job: MemoryError, RecursionError, ...
            exhausted = isinstance(e, MemoryError)
            detail = f"{type(e).__name__}: {e}".rstrip()
            if exhausted:
                detail = f"MemoryError: the files need more than the worker memory limit ({memory_mb} MiB)"
            elif os.environ.get("THUNDER_LINT_DEBUG"):
                detail += "\n" + traceback.format_exc()
            reply = ("error", detail)
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return
        if exhausted:
            return  # a heap that hit its limit is not worth trusting with the next job

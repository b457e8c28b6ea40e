"""One request's files as one project, linted as the CLI lints a folder of them (issue 24).

The CLI reads ``[tool.thunder-lint]`` from the project's pyproject.toml and, in its second pass, joins every
file's summary into the project index, re-linting the files whose compiled functions it changes (a module a
script in another file compiles, the library default). Here: a submitted pyproject.toml is that config (read
from its submitted text, never from a disk); the request's own fields win as the command line does; the
first pass runs over the workers, the index is joined in one worker, and the files it changes are linted
again over the workers. Fix mode uses no index, as in the CLI.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from functools import cached_property

from analyzer import config as config_mod
from analyzer import discovery  # noqa: F401 (Config.file_rules imports it: loaded here, never on a request)
from analyzer.globs import GlobSet
from analyzer.project.index import module_names_of_labels, normalize_facts

from .dispatch import run_request
from .errors import ApiError
from .worker import FileOutcome, IndexJob, Job, JobResult, SubmittedFile

CONFIG_NAME = "pyproject.toml"


@dataclass(frozen=True)
class RequestConfig:
    """What the request and a submitted pyproject.toml say, merged as the CLI merges the command line and
    its config."""

    select: tuple[str, ...] | None
    ignore: tuple[str, ...]
    extend_select: tuple[str, ...]
    per_file_ignores: tuple
    config_root: str
    jit_decorators: tuple[str, ...]
    assume_compiled: tuple[str, ...] | None
    target: str
    exclude: tuple[str, ...]

    @cached_property
    def excluded(self) -> GlobSet:
        """``exclude`` compiled once per request (it is asked about every submitted file)."""
        return GlobSet(self.exclude)


def is_config(f: SubmittedFile) -> bool:
    """A config file the CLI would read: pyproject.toml, or a standalone thunder-lint.toml/.thunder-lint.toml."""
    return os.path.basename(f.path) in (CONFIG_NAME, *config_mod.CONFIG_NAMES)


def _rank(f: SubmittedFile) -> int:
    """In one folder the CLI takes .thunder-lint.toml, then thunder-lint.toml, then pyproject.toml."""
    order = (*config_mod.CONFIG_NAMES, CONFIG_NAME)
    return len(order) - order.index(os.path.basename(f.path))


def _config_text(f: SubmittedFile, index: int) -> str:
    try:
        return f.text if f.text is not None else f.data.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(422, "invalid_config", f"files[{index}] ({CONFIG_NAME}) is not UTF-8 text",
                       [{"field": f"files[{index}]", "message": "not UTF-8 text"}]) from None


def _chosen_config(files: list[SubmittedFile]) -> tuple[int, SubmittedFile] | None:
    """The pyproject.toml the CLI would find for these files: the deepest one at or above their common folder
    that has a [tool.thunder-lint] table (one that fails to parse counts if it mentions the table)."""
    sources = [os.path.dirname(f.path.replace("\\", "/")) for f in files if not is_config(f)]
    try:
        common = os.path.commonpath(sources) if sources else ""
    except ValueError:  # absolute and relative labels mixed
        common = ""
    best = None
    for i, f in enumerate(files):
        if not is_config(f):
            continue
        folder = os.path.dirname(f.path.replace("\\", "/"))
        if folder and common != folder and not common.startswith(folder + "/"):
            continue
        text = _config_text(f, i)
        if os.path.basename(f.path) != CONFIG_NAME:
            ours = True  # a standalone config is ours whatever it holds (a broken one is reported)
        else:
            try:
                tool = tomllib.loads(text).get("tool")
                ours = isinstance(tool, dict) and config_mod.TABLE in tool
            except tomllib.TOMLDecodeError:
                ours = f"[tool.{config_mod.TABLE}" in text
        if ours and (best is None or (len(folder), _rank(f)) > (len(os.path.dirname(best[1].path)), _rank(best[1]))):
            best = (i, f)
    return best


def request_config(req, files: list[SubmittedFile]) -> RequestConfig:
    """The effective settings: the chosen pyproject.toml's table, with the request's fields on top."""
    cfg = config_mod.Config(root="")
    chosen = _chosen_config(files)
    if chosen is not None:
        i, f = chosen
        try:
            # as the CLI reads the file (a standalone config's top level; a chosen pyproject.toml has our table)
            cfg = config_mod.from_toml(tomllib.loads(_config_text(f, i)), f.path)
        except (tomllib.TOMLDecodeError, config_mod.ConfigError, AttributeError) as e:
            message = f"{f.path}: invalid TOML: {e}" if isinstance(e, tomllib.TOMLDecodeError) else str(e)
            raise ApiError(422, "invalid_config", message, [{"field": f"files[{i}]", "message": message}]) from None
    if req.select is not None:  # as on the command line: select replaces the config's select and ignore
        select, ignore = tuple(req.select), tuple(req.ignore)
    else:
        select, ignore = cfg.select, cfg.ignore + tuple(req.ignore)
    if cfg.assume_compiled is None and req.assume_compiled is None:
        assume = None
    else:
        assume = tuple(cfg.assume_compiled or ()) + tuple(p.strip() for p in req.assume_compiled or () if p.strip())
    return RequestConfig(select, ignore, cfg.extend_select + tuple(req.extend_select), cfg.per_file_ignores,
                         cfg.root, cfg.jit_decorators, assume, req.target or cfg.target,
                         cfg.file_rules().exclude + cfg.extend_exclude)


def _excluded(path: str, rc: RequestConfig) -> bool:
    """The config's `exclude`/`extend-exclude` globs, as the CLI applies them to the files it finds (relative to
    its root). (.gitignore is not read here: the files are what the client chose to send.)"""
    excluded = rc.excluded
    if not excluded:
        return False
    rel = config_mod.relative_posix(path, os.path.abspath(rc.config_root))
    return excluded.matches(rel)


def _outcome_of_config(f: SubmittedFile) -> FileOutcome:
    import hashlib

    data = f.data if f.data is not None else f.text.encode("utf-8")
    return FileOutcome(f.path, hashlib.sha256(data).hexdigest())


async def lint_request(pool, files: list[SubmittedFile], rc: RequestConfig, *, fix, with_fixes: bool,
                       timeout: float, wait_timeout: float) -> tuple[JobResult, str]:
    """(the result in request order, diagnostics as JSON; why the library default applied, or "")."""
    sources = [i for i, f in enumerate(files) if not is_config(f) and not _excluded(f.path, rc)]
    linted = [files[i] for i in sources]
    modules = tuple(module_names_of_labels([f.path for f in linted]))
    # Fix mode lints as a plain request first (the project index, the library default), then fixes each file
    # with the facts the index gave it: the fixes and the remaining findings are those of a plain request.
    job = Job(tuple(linted), rc.select, rc.ignore, rc.extend_select, None, "json", with_fixes=with_fixes or fix is not None,
              per_file_ignores=rc.per_file_ignores, config_root=rc.config_root, jit_decorators=rc.jit_decorators,
              assume_compiled=rc.assume_compiled, target=rc.target, modules=modules)
    result = await run_request(pool, job, timeout=timeout, wait_timeout=wait_timeout)
    library_default = result.library_default if len(linted) == 1 else ""
    facts = None
    if len(linted) > 1:
        result, library_default, facts = await _second_pass(pool, job, result, timeout=timeout, wait_timeout=wait_timeout)
    if fix is not None:
        result = await run_request(pool, replace(job, fix=fix, with_fixes=with_fixes, facts=facts), timeout=timeout,
                                   wait_timeout=wait_timeout)
    outcomes: list[FileOutcome] = []
    by_source = dict(zip(sources, result.files))
    for i, f in enumerate(files):
        outcomes.append(by_source[i] if i in by_source else _outcome_of_config(f))
    return JobResult(outcomes, result.diagnostics), library_default


async def _second_pass(pool, job: Job, first: JobResult, *, timeout: float, wait_timeout: float):
    """(the result, why the library default applied or "", each file's facts from the index: None for a file
    the index has no summary of, which is then linted alone)."""
    have = [i for i, s in enumerate(first.summaries) if s is not None]
    if not have:
        return first, "", None
    index = IndexJob(tuple(first.summaries[i] for i in have), tuple(job.files[i] for i in have),
                     job.assume_compiled, job.target)
    facts_by_path, library_default = await pool.run(index, timeout=timeout, wait_timeout=wait_timeout)
    facts = tuple(facts_by_path.get(f.path) if i in set(have) else first.used_facts[i] for i, f in enumerate(job.files))
    todo = [i for i in have if normalize_facts(facts_by_path.get(job.files[i].path)) != first.used_facts[i]]
    if not todo:
        return first, library_default, facts
    again = replace(job, files=tuple(job.files[i] for i in todo), modules=tuple(job.modules[i] for i in todo),
                    facts=tuple(facts_by_path[job.files[i].path] for i in todo))
    redone = await run_request(pool, again, timeout=timeout, wait_timeout=wait_timeout)
    paths = {job.files[i].path for i in todo}
    files = list(first.files)
    for i, outcome in zip(todo, redone.files):
        files[i] = outcome
    diagnostics = [d for d in first.diagnostics if d["path"] not in paths] + redone.diagnostics
    diagnostics.sort(key=lambda d: (d["path"], d["line"], d["column"], d["code"]))
    return JobResult(files, diagnostics), library_default, facts

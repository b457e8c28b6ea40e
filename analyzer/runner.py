"""Linting many files, each once: summarized first, linted after the project index, with the results cache.

Every file is read, parsed, compile-checked and summarized first; the project index is built from the summaries;
then each file is linted once with its final facts (file_pass's ``hold``), in this process and forked helpers
holding a share each (helper_processes.py). Parsed trees are kept for a bounded number of bytes of sources
(HOLD_LIMIT_BYTES); past it a file's tree is let go and the file parsed again to lint. Where forking is unsafe, a
large project goes to a process pool: workers get a chunk of paths, read, hash, lint and return
compact results, so the parent never reads a file it does not have to; files whose facts the index changes are
linted again. The cache's known hashes go to the
workers once, at start-up: a file whose hash matches is answered "hit" without being decoded or parsed.
Forked workers start in milliseconds and inherit the imported engine; where forking is unsafe (other
threads alive) the pool spawns.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from .cache import ResultCache, entry_to_diag
from .diagnostics import Diagnostic
from .file_pass import (SERIAL_BELOW, FileResult, Settings, engine, fix_with_facts, hold_share, init_worker, keeps_linted_trees,
                        lint_held, lint_text, pool_context, process_file, run_chunk)
from .helper_processes import Helper, can_fork
from .parsing import gc_paused

__all__ = ["Settings", "FileResult", "RunResult", "run", "lint_text", "process_file", "default_jobs"]

CHUNKS_PER_JOB = 32  # small chunks keep the tail short (a file with fixes can take seconds); IPC stays cheap
# A project of at most this many bytes is linted by as many processes as there are idle cores; a bigger one by
# one per core (runner.default_jobs).
HOLD_BYTES = 8_000_000
# The runner (this process and its helpers together) keeps at most this many bytes of sources parsed until the
# project index is built: a parsed file takes about 30 times its size (transformers' 55 MB: about 1.6 GB). Files
# past it are parsed again to lint (a second parse, no second lint).
HOLD_LIMIT_BYTES = 64_000_000
# Helpers only for a project of at least this many bytes: below it the fork and pickles cost more than they save.
SPLIT_BYTES = 100_000


@dataclass
class RunResult:
    diagnostics: list[Diagnostic]
    files: list[FileResult]
    errors: list[str]  # internal errors, one line each
    cache_hits: int = 0
    elapsed: float = 0.0
    library_default: str = ""  # why every nn.Module forward was linted as compiled ("no compile call found"), or ""
    # what the summary says beyond that: "unresolved" compile calls ([path, line, label]) and "pipelines" (module
    # classes the library default took for data transforms: [path, class, evidence])
    report: dict = field(default_factory=dict)


# --- parent side -------------------------------------------------------------------------------------
def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def idle_cores() -> int:
    """The cores left idle (at least 1): by the 1-minute load average, unless fewer tasks are runnable right now
    (the lesser counts as busy). A held project gets a helper per idle core
    beyond this process only: on a busy machine one process is faster (measured on 2 cores at load 4,
    torchvision: one process 1.24 s CPU and 1.72 s wall, this process and a helper 1.34 s and 1.92 s)."""
    cores = default_jobs()
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        busy = 0.0
    return max(1, min(cores, round(cores - min(busy, _runnable_now()))))


def _runnable_now() -> float:
    """Other tasks runnable right now (Linux: /proc/loadavg's count of running tasks, less this process). The
    1-minute average lags: a build or a lint that just ended keeps it near a core for a minute after the cores are
    idle again. Where the count is not there, infinity (the average decides alone)."""
    try:
        with open("/proc/loadavg") as f:
            return max(0, int(f.read().split()[3].split("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        return float("inf")


def _size(path: str) -> int:
    try:
        return max(os.stat(path).st_size, 1)
    except OSError:
        return 1


def _total_bytes(paths: list[str]) -> int:
    return sum(map(_size, paths))


def _chunks(paths: list[str], n_chunks: int) -> list[list[str]]:
    """Split by size so that every chunk holds about the same number of bytes, big files first."""
    sizes = {p: _size(p) for p in paths}
    chunks: list[list[str]] = [[] for _ in range(max(1, min(n_chunks, len(paths))))]
    loads = [0] * len(chunks)
    for p in sorted(paths, key=sizes.__getitem__, reverse=True):
        i = loads.index(min(loads))
        chunks[i].append(p)
        loads[i] += sizes[p]
    return [c for c in chunks if c]


def _stop(pool) -> None:
    """Stop busy workers now (there is no public way), then let the pool's threads wind down."""
    for proc in list(getattr(pool, "_processes", {}).values()):
        try:
            proc.terminate()
        except Exception:
            pass
    # With its workers gone the pool's manager thread ends at once; waiting for it means the next pool
    # sees a single-threaded process again (and may fork).
    pool.shutdown(wait=True, cancel_futures=True)


def _one_at_a_time(paths: list[str], settings: Settings, known: dict[str, bytes], errors: list[str],
                   facts: dict[str, tuple] | None = None) -> list[FileResult]:
    """Each file linted in a worker of its own (with the project index's ``facts`` when given): a file that kills
    its worker is reported, and the next file gets a fresh worker."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    results: list[FileResult] = []
    pool = None
    try:
        for p in paths:
            if pool is None:
                pool = ProcessPoolExecutor(1, mp_context=pool_context(), initializer=init_worker, initargs=(settings, known))
            try:
                results.extend(pool.submit(run_chunk, [p], None if facts is None else {p: facts[p]}).result())
            except BrokenProcessPool:
                errors.append(f"{p}: internal error: the worker process died while linting this file")
                results.append(FileResult(p, diagnostics=[]))
                pool.shutdown(wait=True, cancel_futures=True)
                pool = None
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return results


def _hold_in_helpers(paths, settings, known, jobs, results, errors, progress, done, total, held: ExitStack):
    """Read, parse and hold ``paths`` in this process and ``jobs - 1`` forked helpers, a share each (by size),
    their results into ``results``; returns the ``finish`` that lints the held files with the index's facts."""
    engine()  # imported before forking: the helpers inherit it
    shares = _chunks(paths, jobs)
    budget = HOLD_LIMIT_BYTES // len(shares)  # each process's part of the bytes of trees kept
    helpers = []
    for share in shares[1:]:
        helper = Helper(share, settings, known, budget)
        held.callback(helper.stop)
        helpers.append(helper)
    results.extend(hold_share(shares[0], settings, known, budget, progress and (lambda i: progress(done + i, total))))
    done += len(shares[0])
    for helper in helpers:
        got = helper.first_pass()
        if got is None:
            errors.append(f"a helper process died; linting its {len(helper.share)} file(s) one at a time")
            got = _one_at_a_time(helper.share, settings, known, errors)
        results.extend(got)
        done += len(helper.share)
        if progress:
            progress(done, total)

    def finish(pending: list[tuple[FileResult, tuple]]) -> None:
        mine, theirs = [], {}
        for r, facts in pending:
            if isinstance(r.held, Helper):
                theirs.setdefault(r.held, []).append((r, facts))
            else:
                mine.append((r, facts))
        for helper, items in theirs.items():  # they start at once
            helper.send({r.path: facts for r, facts in items})
        for r, facts in mine:
            lint_held(r, settings, facts)
        for helper, items in theirs.items():
            linted = helper.linted()
            if linted is None:
                errors.append(f"a helper process died; linting its {len(items)} file(s) one at a time")
                again = _one_at_a_time([r.path for r, _ in items], settings, known, errors, {r.path: f for r, f in items})
                linted = {x.path: x for x in again}
            for r, _ in items:
                new = linted[r.path]
                r.diagnostics, r.error, r.facts, r.held = new.diagnostics, new.error, new.facts, None

    return finish


def run(
    paths: list[str],
    settings: Settings,
    *,
    jobs: int | None = None,
    cache: ResultCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Lint ``paths`` (files, already discovered); results sorted by path, line, column, code.

    With ``settings.fix``, the files are linted as a plain run lints them (project index, library default,
    cache) and the files with a fix they allow are then fixed with those facts: the remaining findings and the
    exit status equal a plain run on the fixed files, and the fixes are the ones a plain run offers."""
    if settings.fix is not None:
        return _run_then_fix(paths, settings, jobs, cache, progress)
    with ExitStack() as held:  # what holding files parsed needs undone: the paused collector, the helpers
        return _run(paths, settings, jobs, cache, progress, held)


def _run_then_fix(paths, settings, jobs, cache, progress) -> RunResult:
    from .fixes import choose_fix

    plain = run(paths, replace(settings, fix=None), jobs=jobs, cache=cache, progress=progress)
    unsafe = settings.fix == "unsafe"
    for r in plain.files:
        if r.error is None and r.digest is not None and any(choose_fix(d, unsafe) for d in r.diagnostics or ()):
            fix_with_facts(r, settings)
            if r.error:
                plain.errors.append(r.error)
                r.error = None
    _notebook_mentions(plain.files)
    plain.diagnostics = sorted((d for r in plain.files for d in r.diagnostics or ()), key=Diagnostic.sort_key)
    return plain


def _notebook_mentions(results: list[FileResult]) -> None:
    """A message naming a notebook's line (the project index counts lines in its joined code cells) names the
    cell and the line in it, as findings do (``compiled by ... at run.ipynb:cell 3:2``)."""
    if not any(".ipynb:" in d.message for r in results for d in r.diagnostics or ()):
        return
    from .notebook import cell_map_reader, place_mentions

    maps = {r.path: r.cells for r in results if r.cells is not None}
    read = cell_map_reader()

    def cell_map_of(path: str):
        return maps.get(path) or read(path)

    for r in results:
        if r.diagnostics and any(".ipynb:" in d.message for d in r.diagnostics):
            r.diagnostics = place_mentions(r.diagnostics, cell_map_of)


def _run(paths, settings, jobs, cache, progress, held: ExitStack) -> RunResult:
    start = time.perf_counter()
    use_cache = cache is not None  # (fix mode reaches here as a plain run: _run_then_fix)
    known = cache.known_hashes() if use_cache else {}
    results: list[FileResult] = []
    errors: list[str] = []
    total = len(paths)
    given = paths

    # Files whose stat signature is unchanged are answered here without being opened; only the rest
    # go to the workers (who still answer a hit when the content hash matches).
    todo = paths
    if use_cache:
        todo = []
        for p in paths:
            entry = cache.unchanged(os.path.abspath(p))
            if entry is None:
                todo.append(p)
            else:
                results.append(FileResult(p, digest=entry[0], diagnostics=[entry_to_diag(e, p) for e in entry[1]]))
        hits = len(results)
        if progress and hits:
            progress(hits, total)
    else:
        hits = 0
    paths = todo
    # answered by their stat signature: not fresh (their cache entries, signature included, stand as they are)
    stat_hits = {id(r) for r in results}

    # Each file is summarized first and linted once, after the project index (its facts are then final), by this
    # process and forked helpers that each hold a share (trees kept within HOLD_LIMIT_BYTES). Where forking is
    # unsafe a big project goes to a pool, each file linted as it is read, and files whose facts the index
    # changes linted again.
    size = _total_bytes(paths)
    small = size <= HOLD_BYTES
    if jobs is None or jobs <= 0:
        jobs = idle_cores() if small else default_jobs()
    fork = jobs > 1 and size >= SPLIT_BYTES and can_fork()
    hold = small or fork or jobs == 1 or len(paths) < SERIAL_BELOW
    finish = None  # how the held files are linted once the index gives their facts (None: here)
    if hold:
        held.enter_context(gc_paused())  # the held trees would be rescanned by every full collection
    if fork:
        finish = _hold_in_helpers(paths, settings, known, jobs, results, errors, progress, hits, total, held)
    elif hold:
        results.extend(hold_share(paths, settings, known, HOLD_LIMIT_BYTES, progress and (lambda i: progress(hits + i, total))))
    else:
        # (imported here: a run in one process never loads concurrent.futures and multiprocessing, ~10 ms)
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        engine()  # loaded once here, so that forked workers inherit it instead of each importing it
        chunks = _chunks(paths, jobs * CHUNKS_PER_JOB)
        done_files = hits
        pool = ProcessPoolExecutor(
            max_workers=min(jobs, len(chunks)), mp_context=pool_context(), initializer=init_worker, initargs=(settings, known)
        )
        try:
            pending = {pool.submit(run_chunk, c): c for c in chunks}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    chunk = pending.pop(fut)
                    try:
                        results.extend(fut.result())
                    except BrokenProcessPool:
                        raise
                    except Exception as e:  # a result that failed to come back: lint that chunk here
                        errors.append(f"worker failed ({type(e).__name__}: {e}); linting {len(chunk)} file(s) in-process")
                        results.extend(process_file(p, settings, known) for p in chunk)
                    done_files += len(chunk)
                    if progress:
                        progress(done_files, total)
            pool.shutdown(wait=True)
        except BrokenProcessPool:
            # A worker died (killed, out of memory, a crash in C code). Linting the rest in this process
            # could crash it too, so the rest goes to one worker, one file at a time: a second death
            # then names its file, which is reported, and a fresh worker takes the next one.
            finished = {r.path for r in results}
            rest = [p for p in paths if p not in finished]
            errors.append(f"a worker process died; linting the remaining {len(rest)} file(s) one at a time")
            _stop(pool)
            results.extend(_one_at_a_time(rest, settings, known, errors))
        except BaseException:  # Ctrl-C or anything else: stop the workers now, not after the queue drains
            _stop(pool)
            raise

    fresh_results = set()
    for r in results:
        if r.diagnostics is None and r.held is None:  # a worker found the content hash in the cache
            entry = cache.get(os.path.abspath(r.path), r.digest) if cache is not None and r.digest is not None else None
            if entry is None:  # the cache changed under us: lint it now
                fresh = process_file(r.path, settings, {})
                r.diagnostics, r.error, r.summary, r.facts = fresh.diagnostics, fresh.error, fresh.summary, fresh.facts
                fresh_results.add(id(r))
            else:
                r.diagnostics = [entry_to_diag(e, r.path) for e in entry]
                cache.put(os.path.abspath(r.path), r.digest, r.diagnostics, r.signature)  # refresh the stat
                hits += 1
        elif id(r) not in stat_hits:
            fresh_results.add(id(r))

    # Second pass: what the whole project compiles, and the files whose findings depend on it. The index
    # sees the files in the order given (a pool returns them as they finish): where two entry points reach
    # a function, the one a finding names must not depend on which worker was faster.
    from .project_pass import apply_project_index

    position = {p: i for i, p in enumerate(given)}
    results.sort(key=lambda r: position.get(r.path, -1))
    report: dict = {}
    relinted, library_default = apply_project_index(results, settings, cache, jobs, fresh_results, finish,
                                                    report=report)
    fresh_results.update(relinted)
    if keeps_linted_trees():
        # the linted trees stay until exit: moved out of the collector's sight, so no full collection rescans them
        gc.freeze()
    held.close()  # every held file is linted: the collector may run again, the helpers are done
    _notebook_mentions(results)

    for r in results:
        if id(r) in fresh_results and use_cache and r.digest is not None and r.error is None:
            cache.put(os.path.abspath(r.path), r.digest, r.diagnostics, r.signature)
        if r.error:
            errors.append(r.error)

    results.sort(key=lambda r: r.path)
    diagnostics = sorted((d for r in results for d in r.diagnostics or ()), key=Diagnostic.sort_key)
    return RunResult(diagnostics, results, errors, cache_hits=hits, elapsed=time.perf_counter() - start,
                     library_default=library_default, report=report)

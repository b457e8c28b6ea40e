"""Spreading one request over the worker pool: its files are split into size-balanced chunks, one per
worker, linted side by side, and merged back in request order, so a CI run that sends many files uses
every core. A sarif/github report over several chunks is rendered by a worker at the end, because the
report's URIs depend on the cwd and only the workers sit in the neutral one (``/``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from .pool import JobFailed, JobTimeout, PoolBusy, WorkerCrashed, WorkerPool
from .worker import Job, JobResult, RenderJob, SubmittedFile


async def run_request(pool: WorkerPool, job: Job, *, timeout: float, wait_timeout: float) -> JobResult:
    """The job's result, as if one worker had done it all; raises the pool's errors."""
    chunks = split_files(list(job.files), pool.size)
    if len(chunks) == 1:
        return await pool.run(job, timeout=timeout, wait_timeout=wait_timeout)
    parts = [replace(job, files=tuple(job.files[i] for i in chunk), fmt="json",
                     modules=None if job.modules is None else tuple(job.modules[i] for i in chunk),
                     facts=None if job.facts is None else tuple(job.facts[i] for i in chunk)) for chunk in chunks]
    outcomes = await asyncio.gather(
        *(pool.run(part, timeout=timeout, wait_timeout=wait_timeout) for part in parts), return_exceptions=True
    )
    _raise_first_failure(outcomes)
    result = merge_results(chunks, outcomes, len(job.files))
    if job.fmt != "json":
        render = RenderJob(tuple(result.diagnostics), job.fmt)
        result.rendered = await pool.run(render, timeout=timeout, wait_timeout=wait_timeout)
        result.diagnostics = []
    return result


def _raise_first_failure(outcomes: list) -> None:
    """All chunks have finished; if any failed, raise the most telling failure."""
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    for kind in (JobTimeout, WorkerCrashed, JobFailed, PoolBusy):
        for failure in failures:
            if isinstance(failure, kind):
                raise failure
    if failures:
        raise failures[0]


def split_files(files: list[SubmittedFile], parts: int) -> list[list[int]]:
    """Indices of ``files`` in at most ``parts`` groups of about equal size (bytes), so that one request
    with many files uses every worker; biggest files first, each to the lightest group."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(parts, len(files))))]
    loads = [0] * len(groups)
    size = lambda i: len(files[i].data) if files[i].data is not None else len(files[i].text)  # noqa: E731
    for i in sorted(range(len(files)), key=size, reverse=True):
        g = loads.index(min(loads))
        groups[g].append(i)
        loads[g] += size(i) + 1
    return [sorted(g) for g in groups if g] or [[]]


def merge_results(chunks: list[list[int]], results: list[JobResult], n_files: int) -> JobResult:
    """One JobResult in request order, diagnostics sorted as the CLI sorts them."""
    if len(results) == 1:
        return results[0]
    files = [None] * n_files
    summaries, used = [None] * n_files, [None] * n_files
    diagnostics = []
    for chunk, result in zip(chunks, results):
        for k, (i, outcome) in enumerate(zip(chunk, result.files)):
            files[i] = outcome
            if result.summaries:
                summaries[i], used[i] = result.summaries[k], result.used_facts[k]
        diagnostics.extend(result.diagnostics)
    diagnostics.sort(key=lambda d: (d["path"], d["line"], d["column"], d["code"]))
    return JobResult(files, diagnostics, summaries=summaries, used_facts=used)

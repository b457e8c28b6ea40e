"""The runner's second pass: join the files' summaries into the project index, lint the files held parsed
for it (a small project in one process) and re-lint the files whose compiled functions it changes, and keep
summaries beside the results cache.

The first pass lints every file knowing only what the file itself compiles (and its `assume-compiled`
matches); almost every file's findings stand as they are. Only files that another file compiles (or
whose cached findings were made under other facts) are linted again, so the index costs one extra
parse of those few files and none of the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from . import file_pass
from .file_pass import SERIAL_BELOW, init_worker, pool_context, process_file
from .project.index import ProjectIndex, normalize_facts

INDEX_FORMAT = 3  # 2: facts carry `assumed` (the library default); 3: summaries of AST facts, the report
KEEP_FILES = 4


class IndexCache:
    """abspath -> [content hash hex, summary, facts the cached findings were made with], as JSON."""

    def __init__(self, directory: str | os.PathLike, key: str):
        self.directory = Path(directory)
        self.file = self.directory / f"index-{key}.json"
        self.key = key
        self.entries: dict[str, list] = {}
        self.built_from = ""  # fingerprint of the files the stored facts were computed from
        self.library_default = ""  # why that index applied the library default, "" if it did not (ProjectIndex)
        self.report: dict = {}  # what else the summary says: unresolved compile calls, data transforms left out
        self.dirty = False

    def load(self) -> "IndexCache":
        try:
            with open(self.file, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") == INDEX_FORMAT and data.get("key") == self.key and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
                self.built_from = str(data.get("built_from", ""))
                self.library_default = str(data.get("library_default") or "")
                self.report = data.get("report") if isinstance(data.get("report"), dict) else {}
        except Exception:  # missing or damaged: rebuilt from this run
            self.entries = {}
        return self

    def get(self, abspath: str, digest: bytes):
        e = self.entries.get(abspath)
        if isinstance(e, list) and len(e) == 3 and e[0] == digest.hex() and isinstance(e[1], (dict, type(None))):
            return e[1], normalize_facts(e[2])
        return None

    def put(self, abspath: str, digest: bytes, summary: dict | None, facts: tuple) -> None:
        new = [digest.hex(), summary, [list(f) for f in facts]]
        if self.entries.get(abspath) != new:
            self.entries[abspath] = new
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": INDEX_FORMAT, "key": self.key, "built_from": self.built_from,
                           "library_default": self.library_default, "report": self.report, "entries": self.entries}, f, separators=(",", ":"))
            os.replace(tmp, self.file)
            others = sorted((p for p in self.directory.glob("index-*.json") if p != self.file), key=_mtime)
            for stale in others[: max(0, len(others) - KEEP_FILES)]:
                stale.unlink(missing_ok=True)
        except OSError:
            pass  # the results cache reports unwritable folders; the index is rebuilt next time


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _relint_chunk(items: list[tuple[str, tuple, bytes | None]]):
    return [process_file(p, file_pass.worker_settings(), {}, facts, digest) for p, facts, digest in items]


def _relint(todo: list[tuple[object, tuple]], settings, jobs: int) -> list:
    items = [(r.path, facts, r.digest) for r, facts in todo]
    if jobs <= 1 or len(items) < SERIAL_BELOW:
        return [process_file(p, settings, {}, facts, digest) for p, facts, digest in items]
    from concurrent.futures import ProcessPoolExecutor

    n = min(jobs * 8, len(items))
    chunks = [items[i::n] for i in range(n)]
    with ProcessPoolExecutor(min(jobs, n), mp_context=pool_context(), initializer=init_worker,
                             initargs=(settings, {})) as pool:
        done = list(pool.map(_relint_chunk, chunks))
    by_path = {r.path: r for chunk in done for r in chunk}
    return [by_path[p] for p, _, _ in items]


def _fingerprint(results: list) -> str:
    material = "\n".join(sorted(f"{os.path.abspath(r.path)}:{r.digest.hex() if r.digest else ''}" for r in results))
    return hashlib.blake2b(material.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def apply_project_index(results: list, settings, cache, jobs: int, fresh: set[int] = frozenset(),
                        finish=None, report: dict | None = None) -> tuple[set[int], str]:
    """Fill in summaries, build the index, lint the held files (``finish([(result, facts)])``, by default here)
    and re-lint files whose facts changed: (ids of re-linted results, why the library default applied ("no compile
    call found": every nn.Module forward linted as compiled), or ""). ``report``, when given, receives what the
    summary should say beyond that: "unresolved", the compile calls the index could not follow ([path, line,
    label], paths relative to the root), and "pipelines", the module classes the library default took for data
    transforms ([path, class, evidence])."""
    sidecar = IndexCache(cache.directory, cache.key).load() if cache is not None else None
    relinted: set[int] = set()
    for r in results:
        if r.summary is None and r.digest is not None and r.diagnostics is not None and r.error is None:
            got = sidecar.get(os.path.abspath(r.path), r.digest) if sidecar is not None else None
            if got is not None:
                r.summary, r.facts = got
            elif r.facts is None:
                # a cached result without its summary (an older cache): lint it afresh for both
                new = process_file(r.path, settings, {})
                r.diagnostics, r.error, r.summary, r.facts = new.diagnostics, new.error, new.summary, new.facts
                relinted.add(id(r))
    # The index is a function of the linted files and their contents: when those are the ones the stored
    # facts came from, every cached finding still stands and the index need not be built at all.
    built_from = _fingerprint(results)
    if sidecar is not None and not relinted and built_from == sidecar.built_from and all(
        r.facts is not None for r in results if r.digest is not None
    ) and not any(id(r) in fresh for r in results):
        if report is not None:
            report.update(sidecar.report)
        return relinted, sidecar.library_default
    with_summary = [r for r in results if r.summary is not None]
    index = ProjectIndex([r.summary for r in with_summary], settings.root, settings.assume_compiled, settings.target)
    said = {"unresolved": [list(u) for u in index.unresolved], "pipelines": [list(p) for p in index.pipelines],
            "unmatched": list(index.unmatched_patterns)}
    if report is not None:
        report.update(said)
    todo, held = [], []
    for r in with_summary:
        now = index.facts_for(r.summary["module"], r.summary["path"])
        if r.held is not None:  # parsed, waiting for these facts: linted now, once
            held.append((r, now))
        elif now != r.facts:
            todo.append((r, now))
    if finish is None:
        for r, facts in held:
            file_pass.lint_held(r, settings, facts)
    else:
        finish(held)
    for (r, _facts), new in zip(todo, _relint(todo, settings, jobs)):
        r.diagnostics, r.error, r.facts = new.diagnostics, new.error, new.facts
        relinted.add(id(r))
    if sidecar is not None:
        for r in results:
            if r.digest is not None and r.facts is not None and r.error is None:
                sidecar.put(os.path.abspath(r.path), r.digest, r.summary, r.facts)
        if sidecar.built_from != built_from or sidecar.library_default != index.library_default or sidecar.report != said:
            sidecar.built_from, sidecar.library_default, sidecar.dirty = built_from, index.library_default, True
            sidecar.report = said
        sidecar.save()
    return relinted, index.library_default

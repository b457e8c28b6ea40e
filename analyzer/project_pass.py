"""The runner's second pass: join the files' summaries into the project index, lint the files the first pass
summarized and held (each once, with its final facts: kept parsed, or parsed again past the memory budget) and
re-lint the files whose compiled functions it changes; cached and incremental like the first pass.

The first pass summarizes every file and holds it for this pass (runner.py), except in a process pool (a big
project where forking is unsafe): there it lints each file knowing only what the file itself compiles (and its
`assume-compiled` matches), and the files whose facts the index changes (or whose cached findings were made
under other facts) are linted again here.

What the index says is a function of what it reads: each file's summary (its *contribution*, kept as a digest)
and the text of the few files it reads beyond their summaries (a wrapper's callers). The results cache keeps,
beside each file's findings, its contribution and the facts it was linted with, and the fingerprint of what the
index was built from. A run whose files contribute what they did last time (nothing changed, or an edit that
changes no summary) builds no index and reads no summaries: every file's facts are the stored ones, and only
the edited files are linted (with them). Otherwise the summaries of the unchanged files come from their own
store (one file, read only then), the index is built (linear in the project: analyzer/project/index.py) and
only the files whose facts it changes are linted again.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import file_pass
from .cache import prune_stale, read_signed, write_signed
from .file_pass import SERIAL_BELOW, init_worker, pool_context, process_file
from .project.incremental import NOT_INDEXED, contribution, fingerprint
from .project.index import ProjectIndex, module_name, normalize_facts

SUMMARIES_FORMAT = 1
KEEP_FILES = 4


class SummaryStore:
    """abspath -> (content digest, summary), one signed file beside the results cache: read only when the index
    has to be built, so that the summaries of files answered from the cache need not be made again."""

    def __init__(self, directory: str | os.PathLike, key: str):
        self.directory = Path(directory)
        self.file = self.directory / f"summaries-{key}.pickle"
        self.key = key
        self.entries: dict[str, tuple] = {}
        self.dirty = False

    def load(self) -> "SummaryStore":
        try:
            data = read_signed(self.file)
            if isinstance(data, dict) and data.get("format") == SUMMARIES_FORMAT and data.get("key") == self.key \
                    and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
        except Exception:  # missing, damaged or not ours: the files are summarized again
            self.entries = {}
        return self

    def get(self, abspath: str, digest: bytes) -> dict | None:
        e = self.entries.get(abspath)
        if isinstance(e, tuple) and len(e) == 2 and e[0] == digest and isinstance(e[1], dict):
            return e[1]
        return None

    def put(self, abspath: str, digest: bytes, summary: dict) -> None:
        e = self.entries.get(abspath)
        if e is None or e[0] != digest or e[1] != summary:
            self.entries[abspath] = (digest, summary)
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            write_signed(self.directory, self.file, {"format": SUMMARIES_FORMAT, "key": self.key, "entries": self.entries})
            self.dirty = False
            prune_stale(self.directory, "summaries-*.pickle", self.file, KEEP_FILES)
            for stale in self.directory.glob("index-*.json"):
                stale.unlink(missing_ok=True)  # (index-*.json: the summaries' store before this one)
        except OSError:
            pass  # the results cache reports unwritable folders; the summaries are made again next time


def _relint_chunk(items: list[tuple[str, tuple, bytes | None]]):
    return [process_file(p, file_pass.worker_settings(), {}, facts, digest) for p, facts, digest in items]


def _relint(todo: list[tuple[object, tuple | None]], settings, jobs: int) -> list:
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


def apply_project_index(results: list, settings, cache, jobs: int, fresh: set[int] = frozenset(),
                        finish=None, report: dict | None = None) -> tuple[set[int], str]:
    """Give every file the facts of the project index: lint the held files (``finish([(result, facts)])``, by
    default here) and re-lint files whose facts changed. Returns (ids of re-linted results, why the library
    default applied ("no compile call found": every nn.Module forward linted as compiled), or ""). ``report``,
    when given, receives what the summary should say beyond that: "unresolved", the compile calls the index could
    not follow ([path, line, label], paths relative to the root), "pipelines", the module classes the library
    default took for data transforms ([path, class, evidence]), and "unmatched" `assume-compiled` patterns.
    (``fresh``, the results linted in this run, is kept for callers; what the files contribute decides.)"""
    stored = cache.project if cache is not None else {}
    absolute = {id(r): os.path.abspath(r.path) for r in results}  # (asked once: a big tree has thousands)
    known = stored.get("files") if isinstance(stored.get("files"), dict) else {}
    relinted: set[int] = set()
    contributions: dict[str, str] = {}  # abspath -> contribution, of every readable file
    digests: dict[str, bytes] = {}
    unknown = []  # cache hits stored without their contribution (an older cache): linted afresh for their summary
    for r in results:
        if r.digest is None:
            continue
        ap = absolute[id(r)]
        if r.facts is None and r.held is None and r.error is None:  # a cache hit: its part was stored with it
            got = known.get(ap)
            if got is not None and got[0] == r.digest:
                contributions[ap], r.facts = got[1], normalize_facts(got[2])
            else:
                unknown.append(r)
                continue
        else:  # (held files brought theirs: made in parallel, where they were summarized)
            contributions[ap] = r.contribution if r.contribution is not None else contribution(r.summary)
        digests[ap] = r.digest
    for r, new in zip(unknown, _relint([(r, None) for r in unknown], settings, jobs)):
        r.diagnostics, r.error, r.summary, r.facts = new.diagnostics, new.error, new.summary, new.facts
        r.digest, r.signature = new.digest, new.signature
        relinted.add(id(r))
        if r.digest is not None:
            ap = absolute[id(r)]
            contributions[ap], digests[ap] = contribution(r.summary), r.digest
    read = [p for p in stored.get("read", ()) if isinstance(p, str)]
    built_from = fingerprint(contributions, digests, read)
    indexed = {ap for ap, c in contributions.items() if c != NOT_INDEXED}

    # summaries made since the store was last written (an edit that changed no contribution): the next build's
    pending = stored.get("pending") if isinstance(stored.get("pending"), dict) else {}
    if stored.get("built_from") == built_from and all(ap in known for ap in indexed):
        # The index would be the one built last time: every file's facts are those stored for it.
        now = {ap: normalize_facts(known[ap][2]) for ap in indexed}
        library_default = str(stored.get("library_default") or "")
        said = stored.get("report") if isinstance(stored.get("report"), dict) else {}
        pending = dict(pending)
        for r in results:
            if r.summary is not None and r.digest is not None:
                got = known.get(absolute[id(r)])
                if got is None or got[0] != r.digest:  # (the store holds what the last build read)
                    pending[absolute[id(r)]] = (r.digest, r.summary)
    else:
        now, library_default, said, read = _build(results, absolute, settings, cache, jobs, relinted, contributions,
                                                  digests, pending)
        built_from = fingerprint(contributions, digests, read)
        indexed = {ap for ap, c in contributions.items() if c != NOT_INDEXED}
        pending = {}
    if report is not None:
        report.update(said)

    todo, held = [], []
    for r in results:
        ap = absolute[id(r)]
        if r.digest is None or ap not in indexed:
            continue
        facts = now.get(ap, ())
        if r.held is not None:  # parsed, waiting for these facts: linted now, once
            held.append((r, facts))
        elif facts != r.facts:
            todo.append((r, facts))
    if finish is None:
        for r, facts in held:
            file_pass.lint_held(r, settings, facts)
    else:
        finish(held)
    for (r, _facts), new in zip(todo, _relint(todo, settings, jobs)):
        r.diagnostics, r.error, r.facts = new.diagnostics, new.error, new.facts
        relinted.add(id(r))

    if cache is not None:
        files = dict(known)
        for r in results:
            ap = absolute[id(r)]
            if r.digest is not None and r.error is None and r.facts is not None and ap in contributions:
                files[ap] = (r.digest, contributions[ap], r.facts)
            else:  # (never left with facts of another build: the next run then builds the index)
                files.pop(ap, None)
        cache.set_project({"built_from": built_from, "read": read, "library_default": library_default,
                           "report": said, "files": files, "pending": pending})
    return relinted, library_default


def _build(results, absolute, settings, cache, jobs, relinted, contributions, digests, pending):
    """Build the index from every file's summary (the unchanged files' from the store): (abspath -> facts, the
    library default's note, the report, the files whose text it read)."""
    store = SummaryStore(cache.directory, cache.key).load() if cache is not None else None
    packages: dict[str, bool] = {}

    def is_package(folder: str) -> bool:
        if folder not in packages:
            packages[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
        return packages[folder]

    missing = []
    for r in results:
        if r.digest is None or r.summary is not None:
            continue
        ap = absolute[id(r)]
        if contributions.get(ap, NOT_INDEXED) == NOT_INDEXED:
            continue
        got = pending.get(ap)
        got = got[1] if isinstance(got, tuple) and len(got) == 2 and got[0] == r.digest and isinstance(got[1], dict) \
            else store.get(ap, r.digest) if store is not None else None
        # (an unchanged file's module name changes when an __init__.py comes or goes: its summary is made again)
        if got is not None and got.get("module") == module_name(ap, settings.root, is_package):
            r.summary = got
        else:
            missing.append(r)
    # a cache hit whose summary is not stored (an older cache, a damaged store): linted afresh for it
    for r, new in zip(missing, _relint([(r, None) for r in missing], settings, jobs)):
        r.diagnostics, r.error, r.summary, r.facts = new.diagnostics, new.error, new.summary, new.facts
        r.digest, r.signature = new.digest, new.signature
        relinted.add(id(r))
        ap = absolute[id(r)]
        if r.digest is not None:
            contributions[ap], digests[ap] = contribution(r.summary), r.digest
        else:
            contributions.pop(ap, None)
    with_summary = [r for r in results if r.summary is not None and r.digest is not None]
    index = ProjectIndex([r.summary for r in with_summary], settings.root, settings.assume_compiled, settings.target)
    said = {"unresolved": [list(u) for u in index.unresolved], "pipelines": [list(p) for p in index.pipelines],
            "unmatched": list(index.unmatched_patterns)}
    now = {absolute[id(r)]: index.facts_for(r.summary["module"], r.summary["path"]) for r in with_summary}
    if store is not None:
        for r in with_summary:
            if r.error is None:
                store.put(absolute[id(r)], r.digest, r.summary)
        store.save()
    return now, index.library_default, said, [os.path.abspath(p) for p in index.texts_read()]

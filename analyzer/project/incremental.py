"""What keeps the project index incremental, for the CLI's cached runs (analyzer/project_pass.py) and the language
server (analyzer/lsp/projects.py) alike.

The index is a function of what it reads: each file's summary (its *contribution*) and the text of the few files
it reads beyond their summaries (a wrapper's callers, ``ProjectIndex.texts_read``). A file whose contribution is
unchanged leaves every other file's facts as they were: only that file is linted again. A changed contribution
rebuilds the index (linear in the project), and only the files whose facts then differ are linted again.
"""

from __future__ import annotations

from ..cache import blake2b  # (the results cache's: without hashlib's OpenSSL import)

NOT_INDEXED = ""  # the contribution of a file with no summary (it does not parse): it adds nothing to the index


def contribution(summary: dict | None) -> str:
    """The digest of what a file contributes to the index (its summary; repr is exact for these plain values).

    Where its functions start and end counts only in a file with compile calls: the index matches those spans
    with the file's own compile calls, and otherwise only in files whose text it reads (counted by their content,
    ``fingerprint``). So adding a line to a model file with no compile call changes no contribution."""
    if summary is None:
        return NOT_INDEXED
    if not summary.get("entries"):
        summary = dict(summary, functions={q: rec[2:] for q, rec in summary["functions"].items()})
    return blake2b(repr(summary).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def fingerprint(contributions: dict[str, str], digests: dict[str, bytes], read: list[str]) -> str:
    """What the index is built from: every file's contribution, and the content of the files it read."""
    h = blake2b(digest_size=16)
    for path in sorted(contributions):
        h.update(f"{path}\0{contributions[path]}\n".encode("utf-8", "surrogateescape"))
    for path in read:
        d = digests.get(path)
        h.update(f"read {path}\0{d.hex() if d else '-'}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()

"""The results cache: one file per (tool, settings) key, mapping a file to its content hash and findings.

One pickle of plain builtins loads in milliseconds even for thousands of files (one file, not one per
source file). The key covers the tool version, a fingerprint of the engine and rule sources (so an
edited rule in a development checkout is never answered from stale results), the Python version and
every setting that changes findings. A file is a hit when its content hash matches, or, without even
being opened, when its stat signature is the one recorded when it was hashed (git's index does the
same; files modified moments before they were read are never trusted this way). A damaged or foreign
cache file is ignored and rewritten, never trusted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:  # blake2b without hashlib, whose import loads OpenSSL: ~2 ms of a small run's start-up
    from _blake2 import blake2b
except ImportError:  # (a build without the module: hashlib's is the same function)
    from hashlib import blake2b

from .diagnostics import Diagnostic

CACHE_DIR_NAME = ".thunder-lint-cache"
FORMAT = 3  # 3: the project-level pass's results beside the findings
KEEP_FILES = 4  # results files of other settings/versions kept beside the current one
# A file modified within this long before it was read may be modified again within the same mtime tick;
# for such "racy" files the stat shortcut is not recorded and the content hash decides next time.
RACY_NS = 2_000_000_000


def stat_signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def trusted_signature(st: os.stat_result) -> tuple[int, int, int, int] | None:
    """The stat signature if it can stand for the content later, else None (recently modified)."""
    import time

    if time.time_ns() - st.st_mtime_ns < RACY_NS:
        return None
    return stat_signature(st)


def content_hash(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


def _engine_fingerprint() -> str:
    """Size and mtime of every engine/rule source file: cheap, and changes whenever the code does."""
    here = Path(__file__).resolve().parent
    roots = [here / "static", here / "project", here.parent / "rules"]
    parts = []
    for root in roots:
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    parts.append(f"{os.path.relpath(os.path.join(dirpath, name), here.parent)}:{st.st_size}:{st.st_mtime_ns}")
    for extra in ("fixes.py", "diagnostics.py", "selection.py", "file_reader.py", "notebook.py", "parsing.py",
                  "compile_check.py"):
        p = here / extra
        if p.is_file():
            st = p.stat()
            parts.append(f"{extra}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(sorted(parts))


def settings_key(version: str, settings: object) -> str:
    material = "\n".join([f"format={FORMAT}", f"version={version}", f"python={sys.version_info[:2]}", _engine_fingerprint(), repr(settings)])
    return blake2b(material.encode(), digest_size=12).hexdigest()


def diag_to_entry(d: Diagnostic) -> tuple:
    j = d.to_json()
    del j["path"]  # the path is the cache key; a moved file is a miss anyway
    return tuple(sorted(j.items()))


def entry_to_diag(entry: tuple, path: str) -> Diagnostic:
    j = dict(entry)
    j["path"] = path
    return Diagnostic.from_json(j)


# --- authenticity: a cache file is only trusted if this user's secret signed it ------------------------
# Anyone who can write into the project (a cloned repository, a shared checkout) could otherwise plant
# a results file that hides findings. Each file is MAGIC + HMAC-SHA256(secret, payload) + payload; the
# payload's entries carry each source's content hash, so the MAC covers the findings and what they
# describe. The secret lives in the user's own cache folder (mode 600); a mismatch is a plain miss.
_MAGIC = b"thunder-lint-cache-v1\n"
_SECRET_ENV = "THUNDER_LINT_CACHE_SECRET_FILE"
_process_secret: bytes | None = None


def _secret_path() -> str:
    if os.environ.get(_SECRET_ENV):
        return os.environ[_SECRET_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "thunder-lint", "cache-secret")


def _secret() -> bytes:
    """This user's cache secret, created on first use; without a usable home folder, one per process
    (the cache then only helps within a run, never trusts a file it did not write)."""
    global _process_secret
    if _process_secret is not None:
        return _process_secret
    path = _secret_path()
    try:
        with open(path, "rb") as f:
            secret = f.read()
        if len(secret) < 32:
            raise OSError("short secret")
    except OSError:
        secret = os.urandom(32)
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secret)
        except FileExistsError:  # another run created it meanwhile: use theirs
            try:
                with open(path, "rb") as f:
                    theirs = f.read()
                if len(theirs) >= 32:
                    secret = theirs
            except OSError:
                pass
        except OSError:
            pass
    _process_secret = secret
    return secret


# (hmac, hashlib, pickle and tempfile are imported where a cache file is read or written: a --no-cache run never
# loads them)
def _signed(payload: bytes) -> bytes:
    import hashlib
    import hmac

    return _MAGIC + hmac.new(_secret(), payload, hashlib.sha256).digest() + payload


def _verified(blob: bytes) -> bytes:
    """The payload if this user's secret signed it; raises ValueError otherwise."""
    if not blob.startswith(_MAGIC):
        raise ValueError("not a signed cache file")
    import hashlib
    import hmac

    mac, payload = blob[len(_MAGIC) : len(_MAGIC) + 32], blob[len(_MAGIC) + 32 :]
    if not hmac.compare_digest(mac, hmac.new(_secret(), payload, hashlib.sha256).digest()):
        raise ValueError("cache file not signed with this user's secret")
    return payload


def _plain_load(payload: bytes):
    """Unpickle plain builtins only: a cache file can never make us import or call anything."""
    import io
    import pickle

    class PlainUnpickler(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"cache files hold plain data only, not {module}.{name}")

    return PlainUnpickler(io.BytesIO(payload)).load()


def read_signed(path: str | os.PathLike):
    """The plain data of a file ``write_signed`` wrote with this user's secret; raises otherwise."""
    with open(path, "rb") as f:
        payload = _verified(f.read())
    return _plain_load(payload)


def write_signed(directory: Path, path: Path, data) -> None:
    """Write plain data signed with this user's secret, atomically (temp file + rename); raises OSError."""
    import pickle
    import tempfile

    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_signed(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class ResultCache:
    """``entries``: absolute path -> (content hash, tuple of diagnostic entries, stat signature or None).

    A file whose stat signature (size, mtime, inode, device) is unchanged since it was hashed is a hit
    without being read, as in git's index; otherwise it is read and its content hash decides.
    """

    def __init__(self, directory: str | os.PathLike, key: str):
        self.directory = Path(directory)
        self.key = key
        self.file = self.directory / f"results-{key}.pickle"
        self.entries: dict[str, tuple[bytes, tuple]] = {}
        # The project-level pass's results (analyzer/project_pass.py): what each file contributes to the index and
        # the facts it was linted with, and what the index was built from. In this same file, so that a warm run
        # reads one file and builds no index.
        self.project: dict = {}
        self.dirty = False

    def load(self) -> "ResultCache":
        try:
            data = read_signed(self.file)
            if isinstance(data, dict) and data.get("key") == self.key and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
                self.project = data["project"] if isinstance(data.get("project"), dict) else {}
        except Exception:  # missing, truncated, or written by something else: start afresh
            self.entries, self.project = {}, {}
        return self

    def set_project(self, project: dict) -> None:
        if project != self.project:
            self.project = project
            self.dirty = True

    def known_hashes(self) -> dict[str, bytes]:
        return {path: entry[0] for path, entry in self.entries.items()}

    def get(self, abspath: str, digest: bytes) -> tuple | None:
        entry = self.entries.get(abspath)
        if entry is not None and entry[0] == digest:
            return entry[1]
        return None

    def unchanged(self, abspath: str) -> tuple[bytes, tuple] | None:
        """(hash, diagnostic entries) when the file's stat signature matches the recorded one."""
        entry = self.entries.get(abspath)
        if entry is None or entry[2] is None:
            return None
        try:
            st = os.stat(abspath)
        except OSError:
            return None
        if stat_signature(st) != entry[2]:
            return None
        return entry[0], entry[1]

    def put(self, abspath: str, digest: bytes, diagnostics: list[Diagnostic], signature: tuple | None = None) -> None:
        old = self.entries.get(abspath)
        entries = tuple(diag_to_entry(d) for d in diagnostics)
        new = (digest, entries, signature)
        if old != new:
            self.entries[abspath] = new
            self.dirty = True

    def save(self) -> str | None:
        """Write atomically (temp file + rename); returns a warning instead of raising."""
        if not self.dirty:
            return None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            gitignore = self.directory / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Created by thunder-lint automatically.\n*\n")
            write_signed(self.directory, self.file, {"key": self.key, "entries": self.entries, "project": self.project})
            self.dirty = False
            # the results files of settings not used lately go, so the folder does not grow forever
            prune_stale(self.directory, "results-*.pickle", self.file, KEEP_FILES)
        except OSError as e:
            return f"could not write the cache in {self.directory}: {e.strerror or e}"
        return None


def prune_stale(directory: Path, pattern: str, current: Path, keep: int) -> None:
    """Remove the files matching ``pattern`` beside ``current`` but the ``keep`` most recently modified."""
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    others = [p for p in directory.glob(pattern) if p != current]
    for stale in sorted(others, key=mtime)[: max(0, len(others) - keep)]:
        try:
            stale.unlink()
        except OSError:
            pass

"""Writing fixed text back to a user's file, safely.

- The new text goes to a temporary file made with ``mkstemp`` in the target's folder: created
  exclusively (``O_EXCL``: a planted file or symlink of that name is never followed) under an
  unpredictable name, then moved over the file with ``os.replace`` (atomic: readers see old or new).
- The temporary file gets the original's mode, owner and group before the move.
- A read-only file (no write bit, or not writable by us) is refused, not replaced by rename.
- A symlink is followed to its target, which is updated; the link stays a link.
- A file with several hard links is rewritten in place (same inode, so every link sees the fix),
  after checking through the open descriptor that its content is still what was linted.
- A file that changed since it was read is refused.

Each function returns None when the file was written, else the reason it was not (for the user).
"""

from __future__ import annotations

import os
import stat
import tempfile

from .cache import content_hash as digest
from .file_reader import os_reason


def write_fixed(path: str, expected: bytes | None, data: bytes) -> str | None:
    """Write ``data`` to ``path`` if its current bytes hash (``content_hash``) to ``expected``."""
    target = os.path.realpath(path)  # a symlink: update what it points to, keep the link
    try:
        st = os.stat(target, follow_symlinks=False)
    except OSError as e:
        return os_reason(e)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        return f"the file is read-only (mode {stat.S_IMODE(st.st_mode):o}); make it writable to fix it"
    if st.st_nlink > 1:
        return _write_in_place(target, expected, data)
    return _replace(target, st, expected, data)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _unchanged(target: str, expected: bytes | None) -> str | None:
    if expected is None:
        return None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return os_reason(e)
    try:
        current = _read_all(fd)
    finally:
        os.close(fd)
    return None if digest(current) == expected else "the file changed while it was being linted"


def _replace(target: str, st: os.stat_result, expected: bytes | None, data: bytes) -> str | None:
    folder, name = os.path.split(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".thunder-lint-tmp", dir=folder)
    except OSError as e:
        return f"cannot create a temporary file next to it: {os_reason(e)}"
    try:
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
                f.flush()
                os.fsync(fd)
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            _keep_owner(fd, st)
        finally:
            os.close(fd)
        problem = _unchanged(target, expected)  # as late as possible before the move
        if problem:
            os.unlink(tmp)
            return problem
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return os_reason(e)
    return None


def _keep_owner(fd: int, st: os.stat_result) -> None:
    """Owner and group as before; a user who may not give a file away still keeps its group if they can."""
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) == (st.st_uid, st.st_gid):
        return
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        try:
            os.fchown(fd, -1, st.st_gid)
        except PermissionError:
            pass
        os.fchmod(fd, stat.S_IMODE(st.st_mode))  # chown may clear set-id bits: put the mode back


def _write_in_place(target: str, expected: bytes | None, data: bytes) -> str | None:
    """Same inode, so every hard link sees the new text; checked and written through one descriptor."""
    try:
        fd = os.open(target, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return os_reason(e)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        if expected is not None and digest(_read_all(fd)) != expected:
            return "the file changed while it was being linted"
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError as e:
        return os_reason(e)
    finally:
        os.close(fd)
    return None

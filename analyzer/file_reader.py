"""Turning a file's bytes into source text, or into a reason it cannot be linted.

Reading follows Python's own rules (PEP 263 coding cookie, UTF-8 BOM), so a file Python would run is a
file we read. Binary files (a NUL byte near the start), undecodable bytes and anything that is not a
regular file (a FIFO would block a plain ``open``) become a TL002 ``unreadable-file`` finding instead.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize

from .diagnostics import Diagnostic, Severity

UNREADABLE = "TL002"
UNREADABLE_NAME = "unreadable-file"
BINARY_SNIFF = 8192
# Far beyond any hand-written module (the 10 MB test passes with room to spare); a multi-gigabyte file
# named .py would otherwise be read whole into memory and parsed for minutes.
MAX_FILE_BYTES = 64 * 1024 * 1024


class Unreadable(Exception):
    """The file cannot be linted; ``args[0]`` says why, ``line``/``column`` point at the cause."""

    def __init__(self, why: str, line: int = 1, column: int = 1):
        super().__init__(why)
        self.line = line
        self.column = column


def read_bytes(path: str) -> bytes:
    """The file's bytes; raises Unreadable for anything that is not a readable regular file."""
    return read_with_stat(path)[0]


def read_with_stat(path: str) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its stat taken on the same open file (so they describe the same file)."""
    try:
        # O_NONBLOCK: opening a FIFO or a device must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Unreadable(_os_reason(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise Unreadable(f"file too large to lint ({st.st_size / 2**20:.1f} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(), st
    except OSError as e:
        raise Unreadable(_os_reason(e)) from None
    finally:
        os.close(fd)


def _os_reason(e: OSError) -> str:
    import errno

    if e.errno == errno.ELOOP:
        return "symbolic link loop"
    if e.errno == errno.EACCES:
        return "permission denied"
    if e.errno == errno.ENOENT:
        return "no such file or directory"
    if e.errno == errno.EISDIR:
        return "is a directory"
    return e.strerror or str(e)


def decode(data: bytes) -> str:
    """Source text as Python would decode it; raises Unreadable for binary or undecodable bytes."""
    nul = data.find(b"\0", 0, BINARY_SNIFF)
    if nul != -1:
        line = data.count(b"\n", 0, nul) + 1
        raise Unreadable("binary file (contains NUL bytes)", line=line)
    if data.isascii():
        return data.decode("ascii")  # the common case: no cookie or BOM can change ASCII text
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        raise Unreadable(f"bad encoding declaration: {e.msg}") from None
    try:
        return data.decode(encoding)  # "utf-8-sig" strips a BOM
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise Unreadable(f"not valid {encoding} (byte 0x{data[e.start]:02x} at offset {e.start})", line, column) from None
    except LookupError:
        raise Unreadable(f"unknown encoding {encoding!r}") from None


def unreadable_diagnostic(path: str, problem: Unreadable | str) -> Diagnostic:
    why = str(problem)
    line = getattr(problem, "line", 1)
    column = getattr(problem, "column", 1)
    return Diagnostic(
        code=UNREADABLE,
        name=UNREADABLE_NAME,
        severity=Severity.ERROR,
        message=f"Cannot lint this file: {why}",
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column,
    )

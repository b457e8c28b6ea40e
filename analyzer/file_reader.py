"""Turning a file's bytes into source text, or into a reason it cannot be linted.

Reading follows Python's own rules (PEP 263 coding cookie, UTF-8 BOM), so a file Python would run is a
file we read. Binary files (a NUL byte near the start), undecodable bytes and anything that is not a
regular file (a FIFO would block a plain ``open``) become a TL002 ``unreadable-file`` finding instead.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tokenize

from .diagnostics import Diagnostic, Severity

UNREADABLE = "TL002"
UNREADABLE_NAME = "unreadable-file"
BINARY_SNIFF = 8192
# Files larger than this get TL002 before they are parsed (``--max-file-size`` changes it). Parsing costs
# about 230 MB of memory per MB of source in CPython's ``ast`` alone (bench/large_files.py), so 4 MiB
# keeps one file near 1 GB; hand-written modules are far smaller.
MAX_FILE_BYTES = 4 * 1024 * 1024

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


def parse_size(value: str) -> int:
    """``4MiB``, ``10MB``, ``500k`` or a number of bytes; raises ValueError."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"expected a size such as 4MiB, 10MB or 500000, got {value!r}")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size < 1:
        raise ValueError("a size must be at least 1 byte")
    return size


def too_large(size: int, limit: int) -> str:
    return f"file too large ({size / 1e6:.1f} MB > limit {limit / 1e6:.1f} MB); raise --max-file-size to lint it"


class Unreadable(Exception):
    """The file cannot be linted; ``args[0]`` says why, ``line``/``column`` point at the cause."""

    def __init__(self, why: str, line: int = 1, column: int = 1):
        super().__init__(why)
        self.line = line
        self.column = column


def read_bytes(path: str, max_bytes: int | None = None) -> bytes:
    """The file's bytes; raises Unreadable for anything that is not a readable regular file."""
    return read_with_stat(path, max_bytes)[0]


def read_with_stat(path: str, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its stat taken on the same open file (so they describe the same file).
    Over ``max_bytes`` (default MAX_FILE_BYTES) it is Unreadable, without reading it."""
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        # O_NONBLOCK: opening a FIFO or a device must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Unreadable(os_reason(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        if st.st_size > limit:
            raise Unreadable(too_large(st.st_size, limit))
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(), st
    except OSError as e:
        raise Unreadable(os_reason(e)) from None
    finally:
        os.close(fd)


def os_reason(e: OSError) -> str:
    """A short reason for an OSError, for findings and --fix messages."""
    import errno

    if e.errno == errno.ELOOP:
        return "symbolic link loop"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if e.errno == errno.ENOENT:
        return "no such file or directory"
    if e.errno == errno.EISDIR:
        return "is a directory"
    if e.errno == errno.EROFS:
        return "read-only file system"
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

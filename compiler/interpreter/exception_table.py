"""Parse `code.co_exceptiontable` (CPython 3.11+) without relying on dis' private helpers.

Format (Objects/exception_handling_notes.txt in CPython): a sequence of entries, each four varints
(start, length, target, depth_and_lasti) in units of 2-byte code units. A varint is big-endian groups of
6 bits; bit 6 (0x40) says another group follows; bit 7 (0x80) marks the first byte of an entry.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExceptionTableEntry:
    start: int  # byte offset of the first covered instruction
    end: int  # byte offset just past the last covered instruction
    target: int  # byte offset of the handler
    depth: int  # stack depth to unwind to before pushing the exception
    lasti: bool  # push the offset of the raising instruction before the exception


class ExceptionTableError(ValueError):
    pass


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    if pos >= len(data):
        raise ExceptionTableError("exception table ends inside an entry")
    byte = data[pos]
    value = byte & 0x3F
    pos += 1
    while byte & 0x40:
        if pos >= len(data):
            raise ExceptionTableError("exception table ends inside a varint")
        byte = data[pos]
        value = (value << 6) | (byte & 0x3F)
        pos += 1
    return value, pos


def parse_exception_table(data: bytes) -> list[ExceptionTableEntry]:
    entries = []
    pos = 0
    while pos < len(data):
        if not data[pos] & 0x80:
            raise ExceptionTableError(f"exception table entry at byte {pos} lacks its start marker")
        start, pos = _read_varint(data, pos)
        length, pos = _read_varint(data, pos)
        target, pos = _read_varint(data, pos)
        depth_lasti, pos = _read_varint(data, pos)
        entries.append(ExceptionTableEntry(start * 2, (start + length) * 2, target * 2,
                                           depth_lasti >> 1, bool(depth_lasti & 1)))
    return entries


def find_handler(entries: list[ExceptionTableEntry], offset: int) -> ExceptionTableEntry | None:
    # Entries do not overlap (the compiler flattens nesting), so the first hit is the innermost handler.
    for entry in entries:
        if entry.start <= offset < entry.end:
            return entry
    return None

"""The finding model shared by the static linter, the trace checks, the CLI and the server.

Positions are 1-based lines and columns; ``end_column`` is exclusive (the DESIGN.md JSON contract).
Columns count characters (code points) of the source line, not bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied only with --unsafe-fixes
    DISPLAY = "display"  # shown, never applied


@dataclass(frozen=True)
class Edit:
    """Replace the text between (line, column) and (end_line, end_column) with ``content``."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Edit":
        return cls(d["line"], d["column"], d["end_line"], d["end_column"], d["content"])


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "applicability": self.applicability.value,
            "edits": [e.to_json() for e in self.edits],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Fix":
        return cls(d["title"], Applicability(d["applicability"]), tuple(Edit.from_json(e) for e in d["edits"]))


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    origin: str = "static"  # "static" or "trace"
    fixes: tuple[Fix, ...] = field(default=())
    calls: int | None = None  # trace findings of `thunder-lint run`: how many jitted calls hit this location
    # notebooks: the 1-based cell (its position among all cells); ``line``/``end_line`` then count in that cell
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "origin": self.origin,
            "fixes": [f.to_json() for f in self.fixes],
            **({} if self.calls is None else {"calls": self.calls}),
            **({} if self.cell is None else {"cell": self.cell}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Diagnostic":
        return cls(
            code=d["code"],
            name=d["name"],
            severity=Severity(d["severity"]),
            message=d["message"],
            path=d["path"],
            line=d["line"],
            column=d["column"],
            end_line=d["end_line"],
            end_column=d["end_column"],
            origin=d.get("origin", "static"),
            fixes=tuple(Fix.from_json(f) for f in d.get("fixes", ())),
            calls=d.get("calls"),
            cell=d.get("cell"),
        )

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def where(self) -> str:
        """``path:line:column``, or ``path:cell N:line:column`` in a notebook (as ruff prints it)."""
        cell = "" if self.cell is None else f"cell {self.cell}:"
        return f"{self.path}:{cell}{self.line}:{self.column}"

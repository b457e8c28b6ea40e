"""Request and response models: the HTTP contract, and the source of /openapi.json.

Requests are strict (no "true" for true, no 1 for "1") and reject unknown fields, so a typo in a field
name is a 422 naming it rather than a silently ignored option.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from rules import RULES

_STRICT = ConfigDict(extra="forbid", strict=True)


def _all_selectors() -> list[str]:
    """ALL and every prefix of every code ("T", "TL", "TL1", "TL10", "TL101", ...), as the CLI accepts."""
    prefixes = {code[:i] for code in RULES for i in range(1, len(code) + 1)}
    return ["ALL", *sorted(prefixes, key=lambda p: (len(p), p))]


SELECTORS = _all_selectors()
_KNOWN_SELECTORS = frozenset(SELECTORS)


def _known_selector(value: str) -> str:
    if value not in _KNOWN_SELECTORS:
        raise ValueError(f"unknown rule selector {value!r} (a code such as TL101, a prefix such as TL1, or ALL)")
    return value


Selector = Annotated[
    str,
    AfterValidator(_known_selector),
    WithJsonSchema({"type": "string", "enum": SELECTORS, "description": "A rule code, a code prefix, or ALL."}),
]

OutputFormat = Literal["json", "sarif", "github"]


class SourceFile(BaseModel):
    # The schema says what the validators check: exactly one content field, no NUL in the path.
    model_config = ConfigDict(
        extra="forbid", strict=True,
        json_schema_extra={"oneOf": [{"required": ["content"]}, {"required": ["content_base64"]}]},
    )

    path: str = Field(
        min_length=1,
        max_length=4096,
        description="A label for the file in the results (e.g. its repository path). Never opened, read or "
        "written: absolute paths and `..` are just text.",
        examples=["pkg/model.py"],
        json_schema_extra={"pattern": "^[^\\u0000]+$"},
    )
    content: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(
        default=None, description="The source text (give this or `content_base64`)."
    )
    content_base64: Annotated[
        str | None,
        WithJsonSchema({"type": "string", "pattern": "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"}),
    ] = Field(
        default=None,
        description="The file's raw bytes in base64, instead of `content`: decoded exactly as the CLI decodes "
        "a file (PEP 263 coding cookie, BOM); undecodable bytes are a per-file TL002 result.",
    )

    @field_validator("path")
    @classmethod
    def _no_nul(cls, v: str) -> str:
        if "\0" in v:
            raise ValueError("the path must not contain NUL characters")
        return v

    @field_validator("content")
    @classmethod
    def _encodable(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"not valid Unicode text (a lone surrogate at character {e.start})") from None
        return v

    @field_validator("content_base64")
    @classmethod
    def _base64(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("not valid base64") from None
        return v

    @model_validator(mode="before")
    @classmethod
    def _no_null_content(cls, data):
        # The schema says string: an explicit null is an error, not "absent" (pydantic would take it).
        if isinstance(data, dict):
            for name in ("content", "content_base64"):
                if name in data and data[name] is None:
                    raise ValueError(f"`{name}` must be a string, not null (leave it out instead)")
        return data

    @model_validator(mode="after")
    def _one_content(self) -> "SourceFile":
        if (self.content is None) == (self.content_base64 is None):
            raise ValueError("give exactly one of `content` and `content_base64`")
        return self

    def raw_size(self) -> int:
        if self.content is not None:
            return len(self.content.encode("utf-8"))
        return len(base64.b64decode(self.content_base64 or ""))


# Trace findings come from our own `thunder-lint run`: integers are taken as JSON Schema counts them (2.0 is 2).
_Int1 = Annotated[int, Field(ge=1, strict=False)]


def _unicode(v: str) -> str:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"not valid Unicode text (a lone surrogate at character {e.start})") from None
    return v


_Text = Annotated[str, AfterValidator(_unicode)]


class TraceEditIn(BaseModel):
    model_config = _STRICT
    line: _Int1
    column: _Int1
    end_line: _Int1
    end_column: _Int1
    content: _Text


class TraceFixIn(BaseModel):
    model_config = _STRICT
    title: _Text
    applicability: Literal["safe", "unsafe", "display"]
    edits: list[TraceEditIn]


def _known_code(value: str) -> str:
    if value not in RULES:
        raise ValueError(f"unknown rule code {value!r}")
    return value


class TraceFinding(BaseModel):
    """One trace finding as `thunder-lint run --format json` writes it."""

    model_config = _STRICT
    code: Annotated[str, AfterValidator(_known_code), WithJsonSchema({"type": "string", "enum": list(RULES)})]
    name: _Text
    severity: Literal["error", "warning", "info"]
    message: _Text = Field(max_length=10_000)
    path: _Text = Field(min_length=1, max_length=4096)
    line: _Int1
    column: _Int1
    end_line: _Int1
    end_column: _Int1
    origin: Literal["trace"] = Field(description="Only trace findings: the static ones are computed here.")
    fixes: list[TraceFixIn] = Field(default_factory=list)
    calls: Annotated[int, Field(ge=0, strict=False)] | None = Field(
        default=None, description="Jitted calls that hit this location.")


class AnalyzeRequest(BaseModel):
    model_config = _STRICT

    files: list[SourceFile] = Field(description="The files to lint (may be empty).")
    select: list[Selector] | None = Field(
        default=None, description="Rule codes or prefixes to enable (`TL1`, `ALL`); default: every rule."
    )
    ignore: list[Selector] = Field(default_factory=list, description="Rule codes or prefixes to switch off.")
    extend_select: list[Selector] = Field(default_factory=list, description="Rule codes or prefixes to add to `select`.")
    fix: bool = Field(default=False, description="Apply fixes and return each file's `fixed_content`; the "
                      "diagnostics are then those that remain, as with `thunder-lint --fix`.")
    unsafe_fixes: bool = Field(default=False, description="With `fix`, apply unsafe fixes too.")
    assume_compiled: list[Annotated[str, Field(max_length=1000)]] | None = Field(
        default=None, max_length=1000,
        description="As the config's `assume-compiled`: globs over `package.module.Class.method` of code compiled "
        "outside the submitted files (added to a submitted pyproject.toml's). Left out: when no submitted file "
        "compiles an nn.Module, every nn.Module forward is linted as compiled (the library default); `[]` turns "
        "that off.")
    target: Literal["any", "thunder", "torch.compile"] | None = Field(
        default=None, description="As the config's `target`: the compiler the messages speak of (default: a "
        "submitted pyproject.toml's, else each function's own).")
    trace: list[TraceFinding] | None = Field(
        default=None, max_length=100_000,
        description="Trace findings from `thunder-lint run --format json` (or `pytest --thunder-lint`) for these "
        "files: merged with the static findings, filtered by the same selection and `# noqa` comments. The "
        "server never runs submitted code; it only merges what the run reported.")


class EditOut(BaseModel):
    line: int
    column: int
    end_line: int
    end_column: int
    content: str


class FixOut(BaseModel):
    title: str
    applicability: Literal["safe", "unsafe", "display"]
    edits: list[EditOut]


class DiagnosticOut(BaseModel):
    """One finding: the same object as in `thunder-lint --format json`."""

    code: str
    name: str
    severity: Literal["error", "warning", "info"]
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    origin: Literal["static", "trace"]
    fixes: list[FixOut]
    calls: int | None = Field(default=None, description="Trace findings: the jitted calls that hit this location.")
    cell: int | None = Field(default=None, description="Notebooks: the 1-based cell; `line` and `end_line` count in it.")


class FileResultOut(BaseModel):
    path: str
    sha256: str = Field(description="SHA-256 of the file's bytes (`content` as UTF-8, or the decoded base64).")
    error: str | None = Field(default=None, description="Present when the file could not be read or parsed.")
    fixed_content: str | None = Field(default=None, description="Present when `fix` was asked for.")


class SummaryOut(BaseModel):
    files: int
    diagnostics: int
    files_with_errors: int
    fixed: int = Field(description="Findings whose fix was applied (0 unless `fix`).")
    by_code: dict[str, int]
    by_severity: dict[str, int]
    version: str
    settings_hash: str = Field(description="SHA-256 of the effective settings (enabled rules, fix mode, version).")
    notes: list[str] | None = Field(default=None, description="What the CLI says after its findings, e.g. that no "
                                    "compile call was found and every nn.Module forward was linted as compiled.")


class AnalyzeResponse(BaseModel):
    version: str
    diagnostics: list[DiagnosticOut]
    files: list[FileResultOut]
    summary: SummaryOut


class FieldErrorOut(BaseModel):
    field: str = Field(description="Where in the request: `files[0].path`, `select`, `format`, `body`.")
    message: str


class ErrorResponse(BaseModel):
    """An RFC 9457 problem (`application/problem+json`); `code`, `request_id` and `fields` are extension members."""

    type: str = Field(description="`urn:thunder-lint:problem:` and the `code`.")
    title: str = Field(description="The same for every problem of this type.")
    status: int
    detail: str = Field(description="This occurrence, in words.")
    code: str = Field(description="A stable machine-readable reason, e.g. `invalid_request`, `body_too_large`.")
    request_id: str | None = None
    fields: list[FieldErrorOut] | None = None


class RuleOut(BaseModel):
    code: str
    name: str
    severity: str
    summary: str
    fixable: bool


class RuleDocsOut(RuleOut):
    docs: str = Field(description="The rule's documentation page (markdown), as `thunder-lint rule CODE` prints it.")


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    workers: int = Field(description="Lint worker processes alive.")
    idle_workers: int
    replaced_workers: int


class ProbeOut(BaseModel):
    status: Literal["ok", "not ready"]


class VersionOut(BaseModel):
    name: str
    version: str
    python: str
    rules: list[str]

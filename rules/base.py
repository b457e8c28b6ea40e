"""What every rule module provides.

A rule is one module in ``rules/``: its metadata (code, name, severity, message), its docs with ruff's
headings, VALID and INVALID examples (which generate its tests and its docs page), and its checks.
Rules import nothing from ``analyzer`` (imports point down: server -> analyzer -> rules -> compiler);
the static engine passes them a context object and turns what they report into Diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")


@dataclass
class RuleInfo:
    code: str  # "TL101": a public contract, never reused
    name: str  # "reshape-inplace"
    severity: str  # "error" | "warning"
    summary: str  # one line for `thunder-lint rules`
    docs: str  # markdown with the DOC_HEADINGS sections
    valid: list[str] = field(default_factory=list)  # programs that must produce no finding of this code
    invalid: list[str] = field(default_factory=list)  # programs that must produce at least one
    fixable: bool = False

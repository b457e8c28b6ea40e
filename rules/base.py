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


# --- What a rule's static check hands back to the engine ------------------------------------------
# Rules never import the analyzer: the engine gives each check a context object (duck-typed, see
# analyzer/static/context.py) and turns the Findings below into Diagnostics and libcst edits.


@dataclass(frozen=True)
class FixRequest:
    """A rewrite of one expression: the engine finds ``target``'s libcst node and calls ``rewrite`` on it."""

    title: str
    target: object  # the ast node whose source span is replaced
    rewrite: object  # Callable[[libcst.BaseExpression], libcst.BaseExpression]
    applicability: str = "unsafe"  # "safe" | "unsafe" | "display"
    # The same rewrite on the target's source text (str, its ast.expr) -> the code libcst would render, or None:
    # build it with ``rewrite``. Importing libcst costs ~0.14 s CPU, a tenth of linting torchvision.
    text_rewrite: object = None


@dataclass(frozen=True)
class Finding:
    """One hazard at ``node`` (an ast node carrying lineno/col_offset/end_lineno/end_col_offset)."""

    node: object
    message: str
    fixes: tuple[FixRequest, ...] = ()
    severity: str | None = None  # overrides the rule's severity (a jit rule under torch.compile warns)


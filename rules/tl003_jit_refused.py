"""TL003 jit-refused: emitted by `thunder-lint run` and `pytest --thunder-lint` when the compiler refuses a
function the program jitted; the function then runs eagerly and its trace checks are incomplete."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL003",
    name="jit-refused",
    severity="warning",  # reported as a note (SARIF level "note"): it is about the check, not a hazard
    summary="A jitted function was refused by thunder-lint's compiler while the program ran; it ran eagerly.",
    docs="""\
## What it does
Reports, as a note, a function that the program jitted (`torch.compile`, `thunder.jit`, ...) and that
thunder-lint's compiler refused to compile while `thunder-lint run` or `pytest --thunder-lint` ran the
program (an unsupported op, a Python construct the interpreter cannot follow faithfully). The message's first
line names the function, its note line the compiler's reason. The function ran eagerly from then on, so the
program's results did not change. A refused function outside the project (a library's or torch's own, passed
to `torch.compile` by the program) is reported too, once, where the program compiled it, naming where the
function lives: nothing in it was checked. TL003 is always reported, whatever the selection says, so a run
never ends with "All checks passed!" over code it did not check.

## Why is this bad?
The trace checks only see functions the compiler traces: a refused function is not checked at run time,
so the report is incomplete for it. The static findings for its file are still reported.

## Example
A jitted function that calls an op the compiler has no meta implementation for, such as `torch.cov(x)`.

## Use instead
Move the refused construct out of the jitted function, or rely on the static findings for it.

## Fix safety
There is no automatic fix.

## References
- `thunder-lint rule TL302` and the README's "thunder-lint run" section.
""",
)

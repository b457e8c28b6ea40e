"""How a jit rule's hazard plays out under the compiler that compiles the function.

Under thunder (and ours with ``sharp_edges``) the hazard is a correctness one: a silently different
result or a stale value. torch.compile guards, recompiles and breaks graphs instead, so the same code
gives eager results at a performance cost: a warning that names the cost. When the compiler is unknown
(a configured decorator, ``assume-compiled``), the message says both. Each claim here is checked by
tests/rules/test_rule_compilers.py against real torch.compile and compiler.jit.
"""

from __future__ import annotations


def compiled_message(target, subject: str, hazard: str, torch_compile: str) -> dict:
    """``Finding`` keywords for ``target``'s compiler: the message, and a severity override (None: the rule's own).

    ``subject`` names what was found; ``hazard`` continues it for thunder; ``torch_compile`` says what
    torch.compile does instead, starting with a verb ("recompiles ...").
    """
    compiler = getattr(target, "compiler", "unknown")
    if compiler == "torch.compile":
        return {"message": f"{subject}: torch.compile {torch_compile}", "severity": "warning"}
    # a hazard starting with a dash is a clause of its own ("—a hidden input ..."), else it goes on the subject
    said = f"{subject}: {hazard[1:]}" if hazard.startswith("—") else f"{subject} {hazard}"
    if compiler in ("thunder", "ours"):
        return {"message": said}
    return {"message": f"{said} under thunder, while torch.compile {torch_compile}"}

"""How a jit rule's hazard plays out under the compiler that compiles the function.

Under thunder (and ours with ``sharp_edges``) the hazard is a correctness one: a silently different
result or a stale value. torch.compile guards, recompiles and breaks graphs instead, so the same code
gives eager results at a performance cost: a warning that names the cost. When the compiler is unknown
(a configured decorator, ``assume-compiled``), the message says both. Each claim here is checked by
tests/rules/test_rule_compilers.py against real torch.compile and compiler.jit.
"""

from __future__ import annotations

from dataclasses import dataclass


HEADLINE_CHARS = 160  # a finding's first line: the hazard and the fix; the compiler's side goes to notes


def prose_length(line: str) -> int:
    """A first line's length without the code spans' contents (names, which are never shortened)."""
    parts = line.split("`")
    return sum(len(p) if i % 2 == 0 else 2 for i, p in enumerate(parts))


def compiled_message(target, subject: str, fix: str, hazard: str, torch_compile: str, code: str = "") -> dict:
    """``Finding`` keywords for ``target``'s compiler: the message, and a severity override (None: the rule's own).

    The first line is ``subject: fix`` (what was found and what to do), prefixed with "if `Net` is compiled,"
    when no compile call was found and the library default linted it. The lines after it are notes: where it is
    compiled, and what each compiler that may compile it does (``hazard``: thunder; ``torch_compile``, starting
    with a verb: torch.compile; compiler.jit's from the rule's BEHAVIOUR entry, which the tests check).
    """
    compiler = getattr(target, "compiler", "unknown")
    first = f"{subject}: {fix}"
    if getattr(target, "assumed", False):
        first = f"{target.elsewhere}, {first}"
    # Names stay whole, however long (a user searches for them; issue 35 found them cut at 20 characters): the
    # first line's limit is on its prose, measured by prose_length.
    notes = []
    elsewhere = getattr(target, "elsewhere", "")
    if elsewhere and not getattr(target, "assumed", False):
        notes.append(f"`{target.info.name}` is {elsewhere}")
    hazard = hazard.lstrip("—")
    severity = None
    if compiler == "torch.compile":
        notes.append(f"torch.compile {torch_compile}")
        severity = "warning"
    elif compiler == "ours" and code in BEHAVIOUR:
        notes.append(f"compiler.jit (thunder-lint's own) {BEHAVIOUR[code].ours}")
    elif compiler in ("thunder", "ours"):
        notes.append(f"under thunder, {hazard}")
    else:
        notes += [f"under thunder, {hazard}", f"torch.compile {torch_compile}"]
    return {"message": "\n".join([first, *notes]), "severity": severity}


# --- What each compiler does with each rule's pattern ----------------------------------------------
# The docs page of a rule renders this table, and tests/rules/test_rule_compilers.py runs every
# ``source`` under eager PyTorch, torch.compile (CPU, eager backend) and compiler.jit and checks each
# claim: "eager" (same outputs, prints and state as eager), "recompiles" (a second graph is compiled
# when the value changes), "graph break" (one call compiles more than one graph), or an error's name.
# ``calls``: arguments per call (a size for torch.ones); "bump" between calls changes the captured value.


@dataclass(frozen=True)
class Behaviour:
    source: str  # defines f (and bump, when the pattern has state to change)
    calls: tuple  # sizes of torch.ones(...) per call, or "bump"
    thunder: str  # what thunder does (upstream reports; thunder is not installed here)
    torch_compile: str  # prose for the docs
    torch_compile_claims: tuple  # checked: "eager", "recompiles", "graph break"
    ours: str
    ours_claim: str  # "eager" or the name of the error compiler.jit raises
    dynamic: bool = False  # compiled with dynamic shapes / symbolic values
    message_follows_compiler: bool = True  # TL101 is reported the same everywhere (eager code too)
    traced: bool = True  # analyzer.jit's trace check reports it too (TL205 has a static check only)


BEHAVIOUR = {
    "TL101": Behaviour(
        "def f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x * 1\n",
        ((2, 2), (2, 2)),
        "the in-place write may or may not reach `x`, and can differ from eager when the compiler's reshape "
        "copies where eager's made a view (lightning-thunder #957)",
        "matches eager here: functionalization replays the write onto `x` when eager's reshape is a view",
        ("eager",),
        "matches eager: the write reaches `x` exactly when eager's reshape is a view",
        "eager",
        message_follows_compiler=False,
    ),
    "TL102": Behaviour(
        "def f(x):\n    v = x[0]\n    v.add_(1)\n    return x * 2\n",
        ((2, 2), (2, 2)),
        "the write to the caller's tensor through a view may be dropped or replayed differently",
        "matches eager: the caller's tensor is updated after the graph (the cost: a copy back into the input)",
        ("eager",),
        "matches eager",
        "eager",
    ),
    "TL103": Behaviour(
        "def f(q, k):\n    q.mul_(2)\n    return q + k\n",
        ((3,), (3,)),
        "a reordered or aliased write-back into `q` can make the later read see the wrong memory "
        "(lightning-thunder #1193)",
        "matches eager: the writes are functionalized and copied back once (the cost: an extra copy)",
        ("eager",),
        "matches eager",
        "eager",
    ),
    "TL201": Behaviour(
        "G = 1.0\ndef f(x):\n    return x * G\ndef bump():\n    global G\n    G = 3.0\n",
        ((3,), "bump", (3,)),
        "the value read while tracing is baked into the trace and stays after the global changes "
        "(lightning-thunder #132)",
        "guards on the global's value: the new value is used, at the cost of a recompile per change",
        ("eager", "recompiles"),
        "matches eager: its prologue checks the value and retraces when it changes",
        "eager",
    ),
    "TL202": Behaviour(
        "def make():\n    k = 2.0\n    def f(x):\n        return x * k\n    def bump():\n        nonlocal k\n"
        "        k = 5.0\n    return f, bump\nf, bump = make()\n",
        ((3,), "bump", (3,)),
        "the captured value is baked into the trace (lightning-thunder #132)",
        "guards on the captured value: the new value is used, at the cost of a recompile",
        ("eager", "recompiles"),
        "matches eager: the cell is checked and the function retraced when it changes",
        "eager",
    ),
    "TL203": Behaviour(
        "calls = 0\ndef f(x):\n    global calls\n    calls = calls + 1\n    return x + calls\n",
        ((3,), (3,), (3,)),
        "the write happens while tracing only: a cached trace does not repeat it",
        "replays the write after every call, and guards on the value it reads: a recompile when it changes",
        ("eager", "recompiles"),
        "matches eager: the write is replayed after each call",
        "eager",
    ),
    "TL204": Behaviour(
        "def f(x):\n    y = x * 2\n    print('step')\n    return y + 1\n",
        ((3,), (3,)),
        "the print runs while tracing only; random numbers and time stamps are baked in",
        "prints on every call, at the cost of a graph break around the call",
        ("eager", "graph break"),
        "matches eager: the print runs on every call",
        "eager",
    ),
    "TL205": Behaviour(
        "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.counter = 0\n    def forward(self, x):\n        self.counter += 1\n        return x + self.counter\n"
        "net = Net()\ndef f(x):\n    return net(x)\n",
        ((3,), (3,), (3,)),
        "the value read while tracing is baked into the trace, and a cached trace does not repeat the write",
        "treats the module's int attribute as a constant and guards it: the count is right, at the cost of a "
        "recompile on every call (and eager fallback once the recompile limit, 8, is hit)",
        ("eager", "recompiles"),
        "matches eager: the count is right on every call",
        "eager",
        traced=False,
    ),
    "TL301": Behaviour(
        "def f(x):\n    if x.shape[0] > 2:\n        return x + 1\n    return x - 1\n",
        ((1,), (4,)),
        "with symbolic shapes, a trace cached for one branch may be reused for inputs that take the other "
        "(lightning-thunder #262)",
        "guards on the condition (dynamic=True): the other branch is compiled on first use",
        ("eager", "recompiles"),
        "matches eager: with cache=\"symbolic values\" every decision on a symbolic value is a constraint the "
        "prologue checks, so the other branch traces again",
        "eager",
        dynamic=True,
    ),
    "TL302": Behaviour(
        "def f(x):\n    if x.sum() > 0:\n        return x + 1\n    return x - 1\n",
        ((3,), "negate", (3,)),
        "the branch taken while tracing is replayed for data that takes the other one",
        "breaks the graph to read the data and takes the right branch; the code after the break compiles once "
        "per branch taken (the cost: separate graphs, a device sync, a compile per branch)",
        ("eager", "graph break", "recompiles"),
        "matches eager: the read of tensor data ends a trace segment, and the branch is decided on the real "
        "value",
        "eager",
    ),
}


def render_behaviour(code: str) -> str:
    """The "Under each compiler" section of a rule's docs page ("" for rules without a jit pattern)."""
    b = BEHAVIOUR.get(code)
    if b is None:
        return ""
    lines = [
        "## Under each compiler",
        "",
        "The pattern, run under each compiler (tests/rules/test_rule_compilers.py checks the torch.compile "
        "and compiler.jit claims on CPU):",
        "```python",
        b.source.rstrip("\n"),
        "```",
        f"- thunder: {b.thunder}." + (" Reported at the rule's severity." if b.message_follows_compiler else ""),
        f"- torch.compile{' (dynamic=True)' if b.dynamic else ''}: {b.torch_compile}."
        + (" Reported as a warning that names the cost." if b.message_follows_compiler else ""),
        f"- compiler.jit (this project's compiler): {b.ours}; "
        + ("`analyzer.jit(sharp_edges=...)` reports the hazard." if b.traced else
           "the linter's static check reports it (`analyzer.jit` has no trace check for it)."),
    ]
    if b.message_follows_compiler:
        lines.append("- unknown compiler (configured decorators, `assume-compiled`): the message says both.")
    return "\n".join(lines)

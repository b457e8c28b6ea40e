"""TL204 side-effect-call: print/open/input/random/time/globals() inside a jitted function."""

from __future__ import annotations

import ast

from ._call_sites import dead_spans
from ._jit_scopes import eager_only_spans_of, jitted_scopes
from ._torch_api import in_spans, report_only_spans
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import walk
from .dotted import chain_root

_BUILTINS = frozenset({"print", "open", "input", "breakpoint", "globals", "locals", "vars"})
_MODULES = ("random", "time")
# numpy.random's module-level functions draw from (or reseed) NumPy's global generator; its classes and
# `default_rng` build a generator of their own, which is no hidden state
_NUMPY_RANDOM = "numpy.random."
_NUMPY_RANDOM_BUILDERS = frozenset({"default_rng", "SeedSequence", "bit_generator"})
_NUMPY_STATE = {"numpy.random.seed": "reseeds", "numpy.random.set_state": "sets the state of",
                "numpy.random.get_state": "reads the state of"}
_ENV_CALLS = frozenset({"os.getenv", "os.environ.get"})
# Methods only a Python or NumPy random generator has (`random.Random`, `np.random.RandomState`): a draw from a
# generator object, whatever holds it (an argument, `self.rng`). The generic ones (`random()`, `choice()`, ...) count
# when the file binds the name to a generator (`self.rng = random.Random(seed)`, `rng = np.random.default_rng()`).
_RNG_METHODS = frozenset({"randint", "randrange", "getrandbits", "randbytes", "gauss", "normalvariate",
                          "lognormvariate", "expovariate", "vonmisesvariate", "gammavariate", "betavariate",
                          "paretovariate", "weibullvariate", "triangular", "choices"})
_RNG_GENERIC = frozenset({"random", "uniform", "choice", "shuffle", "sample", "integers", "normal", "permutation"})
_RNG_CLASSES = frozenset({"random.Random", "random.SystemRandom", "numpy.random.default_rng",
                          "numpy.random.RandomState", "numpy.random.Generator"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log",
                          "warning_once", "info_once", "warning_advice"})

INFO = RuleInfo(
    code="TL204",
    name="side-effect-call",
    severity="warning",
    summary="A jitted function calls print/open/input, random.*, time.*, globals()/locals()/vars(), reads os.environ "
    "or calls a logger.",
    docs="""\
## What it does
Reports calls with side effects or hidden inputs inside a jitted function: `print`, `open`, `input`,
`breakpoint`, functions of the `random` and `time` modules and of NumPy's global generator (`np.random.randint`,
`np.random.rand`, ...), and `globals()`/`locals()`/`vars()` (without
an argument: `vars(obj)` only reads an object's attributes); reads of the environment (`os.getenv`,
`os.environ.get`, `os.environ[k]`, `k in os.environ`) and calls of a module's logger (`logger.info(...)` on
`logger = logging.getLogger(...)`, `logging.warning(...)`), and draws from a random generator object: a method
only `random.Random`/NumPy generators have (`rng.randint(...)`, `rng.gauss(...)`), or `rng.random()`/`.choice()`/
`.uniform()`... on a name the file binds to one (`self.rng = random.Random(seed)`, `np.random.default_rng()`).

## Why is this bad?
A compiler traces the function once and replays the trace: the print happens only while tracing, the
random number or the time stamp is baked in as a constant, and the introspection sees the compiler's
frames rather than yours. The compiled function silently behaves differently from the Python one.
torch.compile (2.13, tests/rules/test_rule_tl204_torch_compile.py) bakes `os.getenv` results, and
`os.environ` reads of a variable unset at the first call, into the graph without a guard: setting the variable
later silently changes nothing (pytorch #189027); a logger call breaks the graph around it. A NumPy draw that
becomes a Python number breaks the graph (NumPy draws it on every call); one kept as an array is traced from
torch's generator, not NumPy's, so `np.random.seed` no longer reproduces it (tests/rules/test_rule_tl204_numpy_random.py).

## Example
```python
@torch.compile
def step(x):
    print("step", x.shape)
    return x * random.random()
```

## Use instead
Keep side effects outside the compiled region and use tensor randomness:
```python
@torch.compile
def step(x):
    return x * torch.rand(())
```

## Fix safety
There is no automatic fix.

## References
- [torch.compile: graph breaks and side effects](https://pytorch.org/docs/stable/torch.compiler_faq.html)
- [lightning-thunder #132](https://github.com/Lightning-AI/lightning-thunder/issues/132)
""",
    valid=[
        "import torch\n@torch.compile\ndef f(x):\n    return x * torch.rand(())\n",
        # code dead at every call: each call of the helper passes a pool type the print's branch excludes
        # (segmentation-models-pytorch's adaptive_avgmax_pool2d, issue 31 false class 9)
        "import torch\nimport torch.nn.functional as F\ndef pool(x, pool_type='avg'):\n    if pool_type == 'max':\n"
        "        return F.max_pool2d(x, 2)\n    elif pool_type != 'avg':\n        print('unknown pool type', pool_type)\n"
        "    return F.avg_pool2d(x, 2)\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return pool(x, pool_type='max') + pool(x)\nm = torch.compile(Net())\n",
        "import thunder\n@thunder.jit\ndef f(x):\n    def print(*a):\n        return a\n    print(x)\n    return x\n",
        "import random\ndef f(x):\n    print(x)\n    return random.random()\n",  # not jitted
        # a generator of its own, seeded: no hidden state
        "import numpy as np\nimport torch\n@torch.compile\ndef f(x):\n    return x * np.random.default_rng(0).random()\n",
        # a helper that the compiler runs without tracing it
        "import torch\n@torch.compiler.disable\ndef log(x):\n    print(x.shape)\n@torch.compile\ndef f(x):\n"
        "    log(x)\n    return x + 1\n",
        # eager-only code: under a compiler is_compiling() is true and the print never runs
        "import torch\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print('eager', x.shape)\n"
        "    return x + 1\n",
        # a warning for unusual inputs, in a branch that only logs (transformers' `logger.warning_once` pattern)
        "import logging, torch\nlogger = logging.getLogger(__name__)\n@torch.compile\ndef f(x, output_attentions=False):\n"
        "    if output_attentions:\n        logger.warning_once('attention weights are not returned')\n    return x * 2\n",
        # the environment read once at import, the logger called outside compiled code
        "import logging, os, torch\nlogger = logging.getLogger(__name__)\nSCALE = float(os.getenv('SCALE', '1'))\n"
        "@torch.compile\ndef f(x):\n    return x * SCALE\ndef run(x):\n    logger.info('step')\n    return f(x)\n",
        # torch's own generators and distributions draw on the device RNG: data in the graph; an unbound `.sample()`
        "import torch\n@torch.compile\ndef f(x, gen, dist):\n    noise = torch.randint(0, 9, x.shape, generator=gen)\n"
        "    return x + noise + dist.sample() + x.random_(0, 4)\n",
    ],
    invalid=[
        # a draw from a random.Random passed in, or held by the module (pytorch #145445)
        "import random, torch\ndef jitter(x, rng):\n    return x + rng.randint(1, 100)\ncj = torch.compile(jitter)\n"
        "cj(torch.zeros(3), random.Random(0))\n",
        "import random, torch\nclass Drop(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.rng = random.Random(0)\n    def forward(self, x):\n        if self.rng.random() < 0.5:\n"
        "            return x\n        return x * 2\nm = torch.compile(Drop())\n",
        # the same helper, called with a pool type that reaches the print
        "import torch\nimport torch.nn.functional as F\ndef pool(x, pool_type='avg'):\n    if pool_type == 'max':\n"
        "        return F.max_pool2d(x, 2)\n    elif pool_type != 'avg':\n        print('unknown pool type', pool_type)\n"
        "    return F.avg_pool2d(x, 2)\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return pool(x, pool_type='avgmax') + pool(x)\nm = torch.compile(Net())\n",
        "import torch\n@torch.compile\ndef f(x):\n    print('step', x.shape)\n    return x\n",
        "import random\nimport thunder\n@thunder.jit\ndef f(x):\n    return x * random.random()\n",
        "import thunder\nfrom time import time\n@thunder.jit\ndef f(x):\n    t = time()\n    return x + t\n",
        # NumPy's global generator, reached from forward (auraloss' RandomResolutionSTFTLoss, round 3)
        "import numpy as np\nimport torch\nclass Loss(torch.nn.Module):\n    def forward(self, x):\n"
        "        k = 2 ** np.random.randint(6, 10)\n        return x[..., :k]\nloss = torch.compile(Loss())\n",
        "from numpy.random import rand\nimport thunder\n@thunder.jit\ndef f(x):\n    return x * rand()\n",
        # a helper called from the jitted function is traced with it
        "import torch\ndef log(x):\n    print(x.shape)\n@torch.compile\ndef f(x):\n    log(x)\n    return x + 1\n",
        # the environment: torch.compile bakes `os.getenv` in without a guard (issue 31, miss 7)
        "import os, torch\n@torch.compile\ndef f(x):\n    if os.getenv('FLAG', '0') == '1':\n        return x + 1\n"
        "    return x - 1\n",
        "import os, torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if 'FAST' in os.environ:\n"
        "            return x * 2\n        return x\nm = torch.compile(M())\n",
        # a module logger's call: a graph break under torch.compile, a tracing-time-only log under thunder
        "import logging, torch\nlogger = logging.getLogger(__name__)\n@torch.compile\ndef f(x):\n    y = x + 1\n"
        "    logger.info('shape %s', x.shape)\n    return y * 2\n",
        # the compiling branch of an is_compiling() check is still traced
        "import torch\n@torch.compile\ndef f(x):\n    if torch.compiler.is_compiling():\n        print('compiled')\n"
        "    else:\n        x = x + 0\n    return x\n",
    ],
)


def _env_or_log(ctx, scope, call) -> tuple[str, str] | None:
    """("environ", what) for `os.getenv(...)`/`os.environ.get(...)`; ("logger", what) for `logger.info(...)` on a
    module-level logger (`logger = logging.getLogger(__name__)`) or `logging.warning(...)`."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    root = chain_root(func)
    if not isinstance(root, ast.Name) or scope.owner_of(root.id) is not None:
        return None
    name = ctx.resolve(func) or ""
    if name in _ENV_CALLS:
        return "environ", f"`{name}()`"
    if func.attr in _LOG_METHODS and isinstance(func.value, ast.Name):
        if name.startswith("logging.") or "logger" in ctx.index.bindings.get(func.value.id, ()):
            return "logger", f"`{ast.unparse(func)}()`"
    return None


def _rng_draw(ctx, call) -> str | None:
    """``rng.randint(1, 100)`` on a generator object: an argument, a local or ``self.rng``, not a module."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _RNG_METHODS | _RNG_GENERIC:
        return None
    holder = func.value
    name = holder.attr if isinstance(holder, ast.Attribute) else holder.id if isinstance(holder, ast.Name) else None
    if name is None or name in ctx.index.imports or (ctx.resolve(holder) or "").split(".")[0] in ("torch", "numpy"):
        return None  # `random.randint` is the module's (reported as such), `np.random.randint` numpy's module
    if func.attr in _RNG_GENERIC and name not in _generator_names(ctx):
        return None
    return f"`{ast.unparse(func)}()`"


def _generator_names(ctx) -> frozenset:
    """Names (a variable, or an attribute's last part) the file binds to a new random generator, or annotates so."""
    got = ctx.__dict__.get("_rng_names")
    if got is None:
        names = set()
        for node in ast.walk(ctx.tree):
            value, targets = None, ()
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, ast.AnnAssign):
                value, targets = node.value, [node.target]
                if (ctx.resolve(node.annotation) or "") in _RNG_CLASSES:
                    value = None
                    names.add(_last(node.target))
            elif isinstance(node, ast.arg) and node.annotation is not None \
                    and (ctx.resolve(node.annotation) or "") in _RNG_CLASSES:
                names.add(node.arg)
            if isinstance(value, ast.Call) and (ctx.resolve(value.func) or "") in _RNG_CLASSES:
                names.update(_last(t) for t in targets)
        got = ctx.__dict__["_rng_names"] = frozenset(n for n in names if n)
    return got


def _last(target) -> str | None:
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None


def _environ_reads(ctx, jit_scope):
    """`os.environ[k]` and `k in os.environ` in the jitted function (and the functions nested in it)."""
    for node in walk(jit_scope.node):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ctx.resolve(node.value) == "os.environ":
                yield node
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if any(ctx.resolve(c) == "os.environ" for c in node.comparators):
                yield node


def _numpy_draw(name: str) -> bool:
    """`numpy.random.randint` and the other functions of NumPy's global generator."""
    if not name.startswith(_NUMPY_RANDOM):
        return False
    rest = name[len(_NUMPY_RANDOM):]
    return "." not in rest and rest not in _NUMPY_RANDOM_BUILDERS and not rest[:1].isupper()


def numpy_draw(ctx, scope, call) -> str | None:
    """`numpy.random.randint` for a call of NumPy's global generator (`np.random.rand()`, `from numpy.random import
    randint`, `from numpy import random`), else None."""
    func = call.func
    root = chain_root(func) if isinstance(func, ast.Attribute) else func
    if not isinstance(root, ast.Name) or scope.owner_of(root.id) is not None or root.id not in ctx.index.imports:
        return None  # a local `np`, or a name the file does not import
    name = ctx.resolve(func) or ""
    return name if _numpy_draw(name) else None


def _side_effect(ctx, scope, call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        if scope.owner_of(func.id) is not None:
            return None  # a local or closure function of that name
        if func.id == "vars" and (call.args or call.keywords):
            return None  # vars(obj) is obj.__dict__, not the frame's locals
        if func.id in _BUILTINS and func.id not in ctx.index.bindings:
            return f"`{func.id}()`"
        origin = ctx.index.imports.get(func.id, "")
        if origin.split(".")[0] in _MODULES and func.id in ctx.index.bindings:
            return f"`{origin}()`"
        return None
    root = chain_root(func)
    if isinstance(root, ast.Name) and scope.owner_of(root.id) is None:
        name = ctx.resolve(func) or ""
        if name.split(".")[0] in _MODULES and ctx.index.imports.get(root.id, "").split(".")[0] in _MODULES:
            return f"`{name}()`"
    return None


def _environ_finding(target, node, what):
    return Finding(
        node,
        **compiled_message(
            target,
            f"{what} inside {target.subject} reads the environment",
            "read it once outside the compiled function and pass the value in",
            "the value read while tracing is baked into the trace",
            "bakes the value in: `os.getenv`, and a variable unset at the first call, get no guard, so later changes "
            "are silently ignored (pytorch #189027); a set variable read through `os.environ` recompiles when it "
            "changes",
            "TL204",
        ),
    )


def check(ctx):
    environ = "environ" in ctx.source.text
    for target, jit_scope in jitted_scopes(ctx):
        eager_only = eager_only_spans_of(ctx, jit_scope)  # (found once per function for every jit rule)
        # `if verbose: print(...)` where every call in the file leaves verbose=False: no call traces it
        eager_only = eager_only + dead_spans(ctx, target.info, ctx.facts(target.info.node))
        if environ:
            for node in _environ_reads(ctx, jit_scope):
                if not (eager_only and in_spans(node, eager_only)):
                    yield _environ_finding(target, node, f"`{ast.unparse(node)}`")
        warn_only = None
        for scope in jit_scope.walk():
            for call in scope.calls:
                if eager_only and in_spans(call, eager_only):
                    continue  # `if not torch.compiler.is_compiling(): print(...)` never runs compiled
                other = _env_or_log(ctx, scope, call)
                if other and other[0] == "environ":
                    yield _environ_finding(target, call, other[1])
                    continue
                if other:
                    if warn_only is None:
                        warn_only = report_only_spans(ctx.facts(target.info.node).all_ifs)
                    if in_spans(call, warn_only):
                        continue  # `if output_attentions: logger.warning_once(...)`: a warning for unusual inputs
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"{other[1]} inside {target.subject} is a logging side effect",
                            "log outside the compiled function, or return what to log",
                            "runs only while tracing: later calls log nothing",
                            "breaks the graph around it to run it on every call (the code before and after compiles "
                            "as separate graphs)",
                            "TL204",
                        ),
                    )
                    continue
                draw = numpy_draw(ctx, scope, call)
                if draw:
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"`{draw}()` inside {target.subject} {_NUMPY_STATE.get(draw, 'draws from')} NumPy's "
                            "global generator",
                            "seed outside the compiled function (torch's own draws follow `torch.manual_seed`)"
                            if draw in _NUMPY_STATE else
                            "draw with torch (`torch.randint`, `torch.rand`) or draw outside and pass the value in",
                            "runs only while tracing: the compiled function skips it or bakes its result in",
                            "breaks the graph where the draw becomes a Python number (NumPy draws it on every call); "
                            "an array draw is traced from torch's generator instead of NumPy's, so `np.random.seed` "
                            "no longer reproduces it",
                            "TL204",
                        ),
                    )
                    continue
                draw = _rng_draw(ctx, call)
                if draw:
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"{draw} inside {target.subject} draws from a Python random generator",
                            "draw outside the compiled function and pass the value in, or use torch's RNG",
                            "the draw made while tracing is baked into the trace: every call repeats it",
                            "replays the draws from the generator's state at tracing: later calls repeat the traced "
                            "values and the generator's state differs from eager's (pytorch #145445)",
                            "TL204",
                        ),
                    )
                    continue
                what = _side_effect(ctx, scope, call)
                if what:
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"{what} inside {target.subject} is a Python side effect",
                            "move it out of the compiled function",
                            "runs only while tracing: the compiled function skips it or bakes its result in",
                            "runs it on every call at the cost of a graph break around it (the code before and "
                            "after compiles as separate graphs)",
                            "TL204",
                        ),
                    )

"""TL202 closure-capture: a jitted function reads a variable of an enclosing function."""

from __future__ import annotations

from ._captured_modules import captures_a_module
from ._captures import compiled_per_call, is_tensor, looked_up_function, memoized, rebound_after
from ._jit_scopes import free_reads, jitted_scopes
from .compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL202",
    name="closure-capture",
    severity="warning",
    summary="A jitted function reads a free variable captured from an enclosing function.",
    docs="""\
## What it does
Reports the first read, inside a jitted function, of a variable that belongs to an enclosing function
outside the jitted one (a closure cell). Closures *inside* the jitted function over its own variables are
fine: they are part of the compiled computation.

A closure compiled anew on every call of the function that makes it (`step = torch.compile(step)` inside
`forward`) reads that call's values: its captured tensors are graph inputs and stay quiet; a captured Python
value is reported for what torch.compile does with it (a recompile per new value), and a value the maker
rebinds after the compile is a hidden input as any other.

## Why is this bad?
A closure cell is a hidden input, like a global: a compiler that binds it at compile time returns stale
results after the enclosing function rebinds it.

## Example
```python
def make():
    scale = 2.0
    @thunder.jit
    def f(x):
        return x * scale
    return f
```

## Use instead
```python
@thunder.jit
def f(x, scale):
    return x * scale
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #132: functional jit loading closures sharp edge](https://github.com/Lightning-AI/lightning-thunder/issues/132)
""",
    valid=[
        # a captured nn.Module: torch.compile takes its parameters as graph inputs (sglang's VAE compiles a closure
        # over `self` to call its encoder; its unit test captures a local layer): right results, no recompile
        "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n    def forward(self, x):\n        return x * 2\n"
        "class VAE(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.encoder = Encoder()\n"
        "    def encode(self, x):\n        @torch.compile\n        def encoder(x):\n            return self.encoder(x)\n"
        "        return encoder(x)\n",
        "import torch\ndef check():\n    model = torch.nn.Linear(2, 2).eval()\n    @torch.compile(fullgraph=True)\n"
        "    def encode(x):\n        return model(x)\n    return encode(torch.ones(1, 2))\n",
        # the closure's variable is the jitted function's own argument
        "import thunder\n@thunder.jit\ndef foo(x):\n    def bar():\n        return x\n    return bar()\n",
        # an enclosing helper function is not data
        "import thunder\ndef outer():\n    def helper(x):\n        return x\n    @thunder.jit\n    def f(x):\n        return helper(x)\n    return f\n",
        # a closure compiled anew on every call of its maker, over that call's tensors (liger-kernel's chunked
        # losses): torch.compile reads the cells on each call and takes the tensors as graph inputs (one graph for
        # new tensors on every call; tests/rules/test_rule_tl202_torch_compile.py)
        "import torch\ndef chunked_loss(x, weight, bias=None, compiled=True):\n"
        "    grad_weight = torch.zeros_like(weight) if weight.requires_grad else None\n"
        "    loss_acc = torch.zeros((), device=x.device)\n    def accumulate(chunk):\n"
        "        loss = (chunk @ weight.t()).sum()\n        if bias is not None:\n            loss = loss + bias.sum()\n"
        "        loss_acc.add_(loss)\n        if grad_weight is not None:\n            grad_weight.add_(1)\n"
        "    if compiled:\n        accumulate = torch.compile(accumulate)\n    for chunk in x.chunk(4):\n"
        "        accumulate(chunk)\n    return loss_acc\n",
        # the same, with the tensors known only from the helper they are passed to (liger-kernel's distillation
        # loss): `.t()` on the parameter, and an optional bias added to a matmul product
        "import torch\nfrom functools import partial\nclass Base:\n    @staticmethod\n"
        "    def _loss(x, weight, tx, teacher_weight, teacher_bias=None, scale=1.0):\n"
        "        t = tx @ teacher_weight.t()\n        if teacher_bias is not None:\n            t += teacher_bias\n"
        "        return ((x @ weight.t() - t) ** 2).sum() * scale\n    @staticmethod\n"
        "    def forward(x, weight, tx, teacher_weight, teacher_bias=None, compiled=True):\n"
        "        grad_weight = torch.zeros_like(weight)\n        loss_acc = torch.zeros(())\n"
        "        def accumulate(x_chunk, tx_chunk):\n"
        "            g, loss = torch.func.grad_and_value(partial(Base._loss, scale=0.5), argnums=1)(\n"
        "                x_chunk, weight, tx_chunk, teacher_weight, teacher_bias)\n"
        "            grad_weight.add_(g)\n            loss_acc.add_(loss)\n"
        "        if compiled:\n            accumulate = torch.compile(accumulate)\n"
        "        for x_chunk, tx_chunk in zip(x.chunk(2), tx.chunk(2)):\n            accumulate(x_chunk, tx_chunk)\n"
        "        return loss_acc, grad_weight\n",
        # a function from a builder that memoizes it in a module global (unsloth's nvfp4 verify()): the same object
        # on every call, so torch.compile's guard on the cell holds (tests/rules/test_rule_tl202_torch_compile.py)
        "import torch\n_OP = None\ndef _build_op():\n    global _OP\n    if _OP is not None:\n        return _OP\n"
        "    def op(x, s):\n        return x * s\n    _OP = op\n    return _OP\ndef verify(x):\n"
        "    op = _build_op()\n    op_compiled = torch.compile(lambda x, s: op(x, s), fullgraph=True)\n"
        "    return op_compiled(x, x)\n",
        # a function looked up on an imported class, through the saved-original idiom of a patch (unsloth's nvfp4
        # verify(): `_ORIGINAL or NVFP4Tensor.to_nvfp4`, the global bound only to None or to that lookup): the same
        # function on every call, torch.compile's identity guard holds
        "import torch\n_ORIGINAL = None\ndef install():\n    global _ORIGINAL\n    from quant import Quant\n"
        "    _ORIGINAL = Quant.to_q\n    Quant.to_q = staticmethod(lambda x: x)\n"
        "def verify(x):\n    from quant import Quant\n    original = _ORIGINAL or Quant.to_q\n"
        "    def reference(x):\n        return original(x) + 1\n    compiled = torch.compile(reference)\n"
        "    return compiled(x)\n",
        # a function looked up on an imported module that nothing here patches
        "import torch\nimport torch.nn.functional as F\ndef run(x):\n    act = F.gelu\n"
        "    def step(y):\n        return act(y) * 2\n    step = torch.compile(step)\n    return step(x)\n",
    ],
    invalid=[
        # `self` read for a number, not only to call its submodules: torch.compile guards the value
        "import torch\nfrom torch import nn\nclass VAE(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.encoder = nn.Linear(2, 2)\n        self.scale = 1.0\n    def encode(self, x):\n"
        "        @torch.compile\n        def encoder(x):\n            return self.encoder(x) * self.scale\n"
        "        return encoder(x)\n",
        # a looked-up function the file patches, with no saved original: the object changes between calls
        "import torch\nimport torch.nn.functional as F\ndef patch():\n    F.gelu = F.relu\ndef run(x):\n"
        "    act = F.gelu\n    def step(y):\n        return act(y) * 2\n    step = torch.compile(step)\n"
        "    return step(x)\n",
        # the saved global holds another function at some point: not the original either way
        "import torch\nimport torch.nn.functional as F\n_SAVED = None\ndef other():\n    global _SAVED\n"
        "    _SAVED = F.relu\ndef run(x):\n    act = _SAVED or F.gelu\n    def step(y):\n"
        "        return act(y) * 2\n    step = torch.compile(step)\n    return step(x)\n",
        # a builder that makes a new choice on every call (no memo): a different function recompiles
        "import torch\ndef _pick_op(x):\n    return torch.mul if x.dtype == torch.float32 else torch.add\n"
        "def verify(x):\n    op = _pick_op(x)\n    op_compiled = torch.compile(lambda x, s: op(x, s), fullgraph=True)\n"
        "    return op_compiled(x, x)\n",
        # a builder whose cache another function resets: the next call builds another object
        "import torch\n_OP = None\ndef _build_op():\n    global _OP\n    if _OP is not None:\n        return _OP\n"
        "    _OP = torch.mul\n    return _OP\ndef reset():\n    global _OP\n    _OP = None\ndef verify(x):\n"
        "    op = _build_op()\n    op_compiled = torch.compile(lambda x, s: op(x, s), fullgraph=True)\n"
        "    return op_compiled(x, x)\n",
        # a Python value passed to a helper that uses it as a number: no tensor evidence there, still guarded
        "import torch\ndef _scaled(x, s):\n    return x * s\ndef chunked_loss(x, scale):\n"
        "    def accumulate(chunk):\n        return _scaled(chunk, scale).sum()\n"
        "    accumulate = torch.compile(accumulate)\n    return sum(accumulate(c) for c in x.chunk(4))\n",
        # a number added to a matmul product, never tested against None: no bias evidence
        "import torch\ndef chunked_loss(x, w, shift):\n    def accumulate(chunk):\n        y = chunk @ w.t()\n"
        "        y += shift\n        return y.sum()\n"
        "    accumulate = torch.compile(accumulate)\n    return sum(accumulate(c) for c in x.chunk(4))\n",
        # the same per-call compile over a Python value: torch.compile guards it, a recompile per new value
        "import torch\ndef chunked_loss(x, scale):\n    def accumulate(chunk):\n        return (chunk * scale).sum()\n"
        "    accumulate = torch.compile(accumulate)\n    return sum(accumulate(c) for c in x.chunk(4))\n",
        # a tensor the maker rebinds after compiling: the compiled closure is called again with another value
        "import thunder\nimport torch\ndef run(xs):\n    acc = torch.zeros(())\n    def step(x):\n        return acc + x\n"
        "    jstep = thunder.jit(step)\n    for x in xs:\n        acc = jstep(x)\n    return acc\n",
        # a parameter of the enclosing function
        "import thunder\ndef make(scale):\n    @thunder.jit\n    def f(x):\n        return x * scale\n    return f\n",
        "import thunder\ndef make():\n    scale = 2.0\n    @thunder.jit\n    def f(x):\n        return x * scale\n    return f\n",
    ],
)


def check(ctx):
    for target, scope in jitted_scopes(ctx):
        per_call = False
        for node, kind, owner in free_reads(ctx, scope):
            if kind != "closure":
                continue
            if per_call is False:
                per_call = compiled_per_call(ctx, target, scope)
            maker = getattr(owner.node, "name", "<lambda>")
            if target.compiler == "torch.compile" and captures_a_module(ctx, owner.node, scope.node, node.id):
                continue  # a module's parameters are graph inputs to torch.compile, wherever it is reached from
            if per_call and owner.node is per_call[0] and not rebound_after(per_call[0], node.id, per_call[1]):
                # compiled anew on each call of its maker: the cell holds this call's value (rules/_captures.py)
                if is_tensor(ctx, per_call[0], node.id) or target.compiler == "thunder":
                    continue  # a graph input to torch.compile; a fresh trace for thunder's jit made each call
                if memoized(ctx, per_call[0], node.id) or looked_up_function(ctx, per_call[0], scope.node, node.id):
                    continue  # the same object on every call (a memoized builder, a looked-up function): guard holds
                yield Finding(node, **compiled_message(
                    target,
                    f"{target.subject} reads `{node.id}` of `{maker}`, which compiles it on every call",
                    "pass it in as an argument",
                    "—a jit made on each call traces anew; one that caches by code (torch.compile) recompiles",
                    "guards on the captured value: a recompile per new value (a captured tensor is a graph input)",
                    "TL202",
                ))
                continue
            yield Finding(
                node,
                **compiled_message(
                    target,
                    f"{target.subject} reads `{node.id}` of the enclosing `{maker}`, a hidden input",
                    "pass it in as an argument",
                    "—a hidden input a compiled trace may bake in",
                    "guards on the captured value: a change recompiles the function",
                    "TL202",
                ),
            )

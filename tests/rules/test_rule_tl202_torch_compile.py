"""TL202 on a closure compiled anew on every call of its maker (liger-kernel's chunked losses), linted and run
under torch.compile on CPU with a backend that counts graphs.

torch.compile caches by code object and reads the closure's cells on each call: a captured tensor is a graph
input (new tensors every call: one graph, TL202 quiet), a captured Python value is guarded (a new float: one
recompile, then it is dynamic; a new function: a recompile per function, TL202 reported). Results match eager.
"""

from __future__ import annotations

import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend

MAKER = """\
import torch
def chunked_loss(x, weight, scale, op, backend):
    loss_acc = torch.zeros(())
    def accumulate(chunk):
        loss_acc.add_(op(chunk @ weight.t(), scale).sum())
    accumulate = torch.compile(accumulate, backend=backend)
    for chunk in x.chunk(2):
        accumulate(chunk)
    return loss_acc
"""


def _reported() -> set[str]:
    return {d.message.split("`")[3] for d in lint_source(MAKER, "m.py") if d.code == "TL202"}


def _run(calls):
    ns: dict = {}
    exec(MAKER, ns)
    backend = CountingBackend()
    torch.manual_seed(0)
    for scale, op in calls:
        x, w = torch.randn(4, 3), torch.randn(3, 3)
        got = ns["chunked_loss"](x, w, scale, op, backend)
        assert torch.allclose(got, op(x @ w.t(), scale).sum(), atol=1e-5)  # eager's result, every call
    return len(backend.graphs)


def test_only_the_python_values_are_reported():
    assert _reported() == {"scale", "op"}  # loss_acc and weight are tensors (add_, .t()): quiet


def test_new_tensors_on_every_call_compile_once():
    assert _run([(2.0, torch.mul)] * 4) == 1


def test_a_new_float_recompiles_once_then_is_dynamic():
    assert _run([(1.0, torch.mul), (2.0, torch.mul), (3.0, torch.mul), (4.0, torch.mul)]) == 2


def test_a_new_function_recompiles_per_function():
    assert _run([(2.0, torch.mul), (2.0, torch.add), (2.0, torch.mul), (2.0, torch.sub)]) == 3


def test_tensors_known_from_the_helper_they_go_to_are_graph_inputs():
    """The VALID example whose tensors show only in the helper they are passed to (liger-kernel's distillation
    loss: partial + torch.func.grad_and_value): quiet, and under torch.compile one graph for new tensors on every
    call, eager's result each time."""
    from rules.tl202_closure_capture import INFO

    src = next(s for s in INFO.valid if "teacher_bias" in s)
    assert not [d for d in lint_source(src, "m.py") if d.code == "TL202"]
    backend = CountingBackend()
    ns: dict = {"backend": backend}
    exec(src.replace("torch.compile(accumulate)", "torch.compile(accumulate, backend=backend)"), ns)
    torch.manual_seed(0)
    for _ in range(3):
        x, w, tx, tw, tb = torch.randn(4, 3), torch.randn(5, 3), torch.randn(4, 2), torch.randn(5, 2), torch.randn(5)
        loss, grad = ns["Base"].forward(x, w, tx, tw, tb)
        want_loss, want_grad = ns["Base"].forward(x, w, tx, tw, tb, compiled=False)
        assert torch.allclose(loss, want_loss, atol=1e-5) and torch.allclose(grad, want_grad, atol=1e-5)
    assert len(backend.graphs) == 1


# unsloth's nvfp4 verify(): a closure and a lambda compiled on every call, over `op` from a builder that memoizes
# it in a module global and `original`, read from module state. Neither recompiles (the same objects each call);
# a new closure of the same code does not either; only a different function each call would.
VERIFY = """\
import torch
_OP = None
_ORIGINAL = None
class Quant:
    @staticmethod
    def to_q(x):
        return x * 2
def _build_op():
    global _OP
    if _OP is not None:
        return _OP
    def op(x, s):
        return x * s
    _OP = op
    return _OP
def _fresh_op():
    def op(x, s):
        return x * s
    return op
def verify(backend, build=_build_op):
    original = _ORIGINAL or Quant.to_q
    op = build()
    def reference(x):
        return original(x) + 1
    compiled = torch.compile(reference, backend=backend)
    op_compiled = torch.compile(lambda x, s: op(x, s), backend=backend)
    x = torch.randn(4)
    assert torch.equal(compiled(x), x * 2 + 1) and torch.equal(op_compiled(x, x), op(x, x))
"""


def _verify_graphs(build: str) -> int:
    ns: dict = {}
    exec(VERIFY, ns)
    backend = CountingBackend()
    ops = {"memoized": [ns["_build_op"]] * 3, "fresh": [ns["_fresh_op"]] * 3,
           "different": [lambda: torch.mul, lambda: torch.add, lambda: torch.sub]}[build]
    for i, make in enumerate(ops):
        ns["_ORIGINAL"] = ns["Quant"].to_q if i else None  # install() sets it before verify() runs again
        ns["verify"](backend, make)
    return len(backend.graphs)


def test_verify_values_are_the_same_objects_on_every_call_no_recompile():
    assert _verify_graphs("memoized") == 2  # one graph for reference, one for the lambda, over 3 calls


def test_a_new_closure_of_the_same_code_does_not_recompile():
    assert _verify_graphs("fresh") == 2  # dynamo inlines it by code and cells, not by the function object


def test_a_different_function_on_every_call_recompiles_on_every_call():
    assert _verify_graphs("different") == 4  # reference once, the lambda once per function


def test_a_captured_module_is_a_graph_input_right_results_no_recompile():
    """Round 4, class [18] (sglang's VAE: `@torch.compile def encoder(x): return self.encoder(x)` inside `encode`):
    a closure compiled on every call over a module reads its weights at each call, for this instance and another."""
    backend = CountingBackend()

    class VAE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Linear(4, 4)

        def encode(self, x):
            @torch.compile(backend=backend)
            def encoder(x):
                return self.encoder(x)
            return encoder(x)

    torch._dynamo.reset()
    a, b = VAE(), VAE()
    x = torch.randn(2, 4)
    for _ in range(3):
        assert torch.allclose(a.encode(x), a.encoder(x))
        with torch.no_grad():
            a.encoder.weight.add_(1.0)  # new weights between calls
    assert torch.allclose(b.encode(x), b.encoder(x))
    assert len(backend.graphs) == 1
    src = ("import torch\nclass VAE(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.encoder = torch.nn.Linear(4, 4)\n    def encode(self, x):\n        @torch.compile\n"
           "        def encoder(x):\n            return self.encoder(x)\n        return encoder(x)\n")
    assert [d for d in lint_source(src, "m.py") if d.code == "TL202"] == []

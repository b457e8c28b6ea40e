"""`--verify`: each call of a compiled graph is run again eagerly, on the same inputs, and compared.

The backend wrapper (hooks.py) hands every graph dynamo compiles to ``Reference.of(gm)`` before the backend sees
it (inductor's passes may rewrite the graph in place), so the reference is the graph dynamo captured, run by
eager PyTorch op by op. Graph inputs include the module state the graph reads (parameters and buffers are
lifted to inputs), so comparing the graph's outputs and the inputs it wrote is comparing the call's outputs,
its in-place writes and its buffers. Inputs are cloned only when the graph writes in place; random ops run
eagerly under the generator state the compiled call started from, and the program's generator continues from
where the compiled call left it. Tolerances are torch.testing.assert_close's by dtype.

Where a call differs, ``localize`` finds the first FX node whose value differs: the graph, with every
intermediate tensor added to its outputs, is compiled again by the same backend (the probe) and compared with an
eager run that records every node; that node's ``stack_trace`` names the user's line. A backend may draw random
numbers with its own generator (inductor does, unless fallback_random): a graph with random ops whose call
differs is checked through the probe, the eager run taking the random ops' values from it; it differs only
where a value that is not a random draw differs.
"""
from __future__ import annotations

import operator
import os
from dataclasses import dataclass

import torch
import torch.fx
from torch.utils._pytree import tree_flatten

from .where import user_line_of_text

_RANDOM = frozenset({
    "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm", "bernoulli", "normal",
    "multinomial", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "feature_dropout", "native_dropout", "rrelu", "gumbel_softmax", "bernoulli_",
    "normal_", "uniform_", "random_", "exponential_", "geometric_", "log_normal_", "cauchy_",
})
_MUTATING_FUNCTIONS = frozenset({"batch_norm", "instance_norm", "setitem", "__setitem__"})


def _name(node: torch.fx.Node) -> str:
    t = node.target
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def is_random(node: torch.fx.Node) -> bool:
    if node.op not in ("call_function", "call_method"):
        return False
    name = _name(node)
    if name == "scaled_dot_product_attention":
        p = node.kwargs.get("dropout_p", node.args[4] if len(node.args) > 4 else 0.0)
        return not (isinstance(p, (int, float)) and p == 0)
    return name in _RANDOM


def _writes(node: torch.fx.Node) -> bool:
    if node.op not in ("call_function", "call_method"):
        return False
    name = _name(node)
    if node.target is operator.setitem or name in _MUTATING_FUNCTIONS:
        return True
    if node.kwargs.get("inplace") is True or node.kwargs.get("out") is not None:
        return True
    return name.endswith("_") and not name.endswith("__")


def op_words(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return f"`.{node.target}()`"
    mod = getattr(node.target, "__module__", "") or ""
    short = {"torch._C._nn": "torch.nn.functional", "torch.nn.functional": "F", "_operator": "operator",
             "torch._C._VariableFunctions": "torch"}.get(mod, mod)
    return f"`{short + '.' if short else ''}{_name(node)}`"


def clone_inputs(args) -> list:
    return [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]


@dataclass
class Reference:
    """The graph as dynamo captured it, for eager runs; what it needs to know about itself."""

    gm: torch.fx.GraphModule
    writes: bool  # any in-place write: inputs are cloned before the compiled call
    random: bool
    probe: tuple | None = None  # (nodes, number of outputs, compiled probe), made on the first differing call

    @classmethod
    def of(cls, gm: torch.fx.GraphModule) -> "Reference":
        graph = torch.fx.Graph()
        out = graph.graph_copy(gm.graph, {})
        graph.output(out)
        ref = torch.fx.GraphModule(gm, graph)
        nodes = list(ref.graph.nodes)
        return cls(ref, any(_writes(n) for n in nodes), any(is_random(n) for n in nodes))


def rng_state():
    state = [torch.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state.append(torch.cuda.get_rng_state_all())
    return state


def set_rng_state(state) -> None:
    torch.set_rng_state(state[0])
    if len(state) > 1:
        torch.cuda.set_rng_state_all(state[1])


# torch.testing.assert_close's default (rtol, atol) by dtype: the fast check below uses the same formula
_TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
               torch.float64: (1e-7, 1e-7), torch.complex64: (1.3e-6, 1e-5), torch.complex128: (1e-7, 1e-7)}


def _quick_close(x, y) -> bool:
    """True when assert_close would pass, decided with one fused op (assert_close costs ~100 us of Python per
    tensor: too much for every call of a graph); False means "ask assert_close"."""
    try:
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device or x.layout != torch.strided:
            return False
        tol = _TOLERANCES.get(x.dtype)
        if tol is None:
            return bool(torch.equal(x, y))
        return bool(torch.allclose(x.detach(), y.detach(), rtol=tol[0], atol=tol[1], equal_nan=True))
    except (RuntimeError, TypeError):
        return False


def close(a, b) -> bool:
    """assert_close's verdict (tolerances by dtype, NaN equal to NaN) on the leaves, in order (a backend may
    return a list where the graph returns a tuple); non-tensors by ==."""
    fa, _ = tree_flatten(a)
    fb, _ = tree_flatten(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
                return False
            if _quick_close(x, y):
                continue
            try:
                torch.testing.assert_close(x.detach(), y.detach(), equal_nan=True, check_device=True,
                                           check_layout=False, check_stride=False)
            except AssertionError:
                return False
            except (RuntimeError, TypeError):  # e.g. a tensor subclass assert_close cannot compare
                return False
        elif x != y and not (x != x and y != y):  # NaN == NaN
            return False
    return True


@dataclass
class Outcome:
    verified: bool
    differs: bool = False
    why_not: str = ""  # when not verified: why


def run_checked(reference: Reference, compiled, args, *, probe_only: bool = False) -> tuple[object, Outcome, list | None, object]:
    """Run the compiled graph on ``args`` (the program's result), then the reference eagerly; compare.
    Returns (result, outcome, pristine inputs or None, the generator state the call started from). With
    ``probe_only`` (a graph whose random draws the backend makes itself) the eager run is left to the probe."""
    try:
        pristine = clone_inputs(args) if reference.writes else None
    except Exception as e:  # noqa: BLE001  (an input that cannot be copied: not verified, never "equal")
        return compiled(*args), Outcome(False, why_not=f"its inputs could not be copied ({type(e).__name__})"), None, None
    before = rng_state()
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
    result = compiled(*args)
    after = rng_state()
    if probe_only:
        return result, Outcome(True, differs=True), pristine if pristine is not None else list(args), before
    ref_inputs = clone_inputs(pristine) if pristine is not None else list(args)
    try:
        set_rng_state(before)
        with torch.no_grad():
            expected = reference.gm(*ref_inputs)
    except Exception as e:  # noqa: BLE001
        return result, Outcome(False, why_not=f"the eager run failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"), pristine, before
    finally:
        set_rng_state(after)
    same = close(result, expected)
    if same and pristine is not None:
        for a, v, r in zip(args, versions, ref_inputs):
            if isinstance(a, torch.Tensor) and (a._version != v) and not close(a, r):
                same = False
                break
    if not same and pristine is None and any(v is not None and a._version != v for a, v in zip(args, versions)):
        return result, Outcome(False, why_not="it wrote to its inputs in place through an op not known to write"), None, before
    return result, Outcome(True, differs=not same), pristine if pristine is not None else list(args), before


class _Recorder(torch.fx.Interpreter):
    """Runs the graph eagerly, keeping every tensor value; random ops may take given values instead."""

    def __init__(self, gm, given=None, copy=True):
        super().__init__(gm)
        self.values = {}
        self.given = given or {}
        self.copy = copy  # values must be copied only where the graph may write to them later

    def run_node(self, n):
        if n.name in self.given and is_random(n):
            value = self.given[n.name].clone()
        else:
            value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.values[n.name] = value.detach().clone() if self.copy else value.detach()
        return value


@dataclass
class Divergence:
    path: str | None
    line: int | None
    op: str  # the differing node's op, in words
    detail: str  # max abs difference, or why the place is approximate
    probe_failed: bool = False  # the place is the outputs' because the probe could not be compiled or run


def _diff(a: torch.Tensor, b: torch.Tensor) -> str:
    try:
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"compiled {tuple(a.shape)} {a.dtype}, eager {tuple(b.shape)} {b.dtype}"
        d = (a.detach().double() - b.detach().double()).abs()
        d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
        return f"max abs difference {d.max().item():.3g}" if d.numel() else "empty"
    except Exception:  # noqa: BLE001
        return "values differ"


def _fresh(reference: Reference, pristine) -> list:
    """Inputs for one more run: copies where the graph writes in place, the inputs themselves where it does not."""
    return clone_inputs(pristine) if reference.writes else list(pristine)


def _probe(reference: Reference, backend, pristine):
    """The graph with every intermediate tensor as an output too, compiled by the same backend (once per graph)."""
    if reference.probe is None:
        gm = reference.gm
        nodes = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")
                 and isinstance(n.meta.get("example_value"), torch.Tensor)]
        graph = torch.fx.Graph()
        env: dict = {}
        outs, _ = tree_flatten(graph.graph_copy(gm.graph, env))
        graph.output(tuple(outs) + tuple(env[n] for n in nodes))  # flat, as dynamo's graphs return
        probe = torch.fx.GraphModule(gm, graph)
        reference.probe = (nodes, len(outs), backend(probe, clone_inputs(pristine)))
    return reference.probe


def localize(reference: Reference, backend, pristine, rng, *, given_random: bool = False) -> Divergence | None:
    """The first node of the graph whose compiled value differs from its eager value. With ``given_random``, the
    eager run takes the random ops' values from the compiled probe (the backend's own generator drew them), and
    None means that everything else agreed."""
    saved = rng_state()
    try:
        nodes, n_outs, compiled = _probe(reference, backend, pristine)
        set_rng_state(rng)
        with torch.no_grad():
            probed = {n.name: v for n, v in zip(nodes, list(compiled(*_fresh(reference, pristine)))[n_outs:])}
        eager = _Recorder(reference.gm, probed if given_random else None, copy=reference.writes)
        set_rng_state(rng)
        with torch.no_grad():
            eager.run(*_fresh(reference, pristine))
    except Exception as e:  # noqa: BLE001  (the probe failed: report at the graph's outputs instead)
        if os.environ.get("THUNDER_LINT_DEBUG"):
            import traceback

            traceback.print_exc()
        d = _at_outputs(reference, f"the per-op probe failed ({type(e).__name__})")
        d.probe_failed = True
        return d
    finally:
        set_rng_state(saved)
    for n in nodes:
        if n.name in eager.values and not close(probed[n.name], eager.values[n.name]):
            where = user_line_of_text(n.meta.get("stack_trace"))
            return Divergence(where[0] if where else None, where[1] if where else None, op_words(n),
                              _diff(probed[n.name], eager.values[n.name]))
    if given_random:
        return None
    return _at_outputs(reference, "every intermediate agreed when compiled as outputs (the difference comes "
                                  "from how the backend fused the graph)")


def _at_outputs(reference: Reference, why: str) -> Divergence:
    """The last node feeding the outputs, as the place (an approximate one, said so)."""
    gm = reference.gm
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    for n in output.all_input_nodes:
        where = user_line_of_text(n.meta.get("stack_trace"))
        if where:
            return Divergence(where[0], where[1], op_words(n), why)
    return Divergence(None, None, "the graph's outputs", why)

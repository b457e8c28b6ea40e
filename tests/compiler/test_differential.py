"""Differential suite: every op sample and a few hundred random programs, compiled vs eager PyTorch.

For each case the eager function and `compiler.jit` of it run on separately built but identical inputs
(same values, same strides). Outputs must match in structure, dtype, shape, device, requires_grad and
values (exact for integer/bool, tight for float, looser for bfloat16); every input must be left exactly
as eager left it (that is how in-place ops and reshape/flatten-then-in-place, view or copy, are
checked); outputs must share memory with, or be, the same inputs as eager's. A second call must hit
the cache and match eager again, and the last trace must print as Python.

Also here: one jitted function fed every input of its sample group (cache guards), cache="no caching",
gradients, hidden inputs changed between calls (globals, closures, module state), and fake compilers
with one known bug each, which prove these checks can fail.
"""

from __future__ import annotations

import linecache
import math
import os
import random
import re
import types

import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.executors import TorchExecutor, python_executor
from opinfos import KNOWN_GAPS, SAMPLES, SAMPLES_BY_ID, T, OpSample
from same_values import tensors_in

# The cache every case is jitted with: COMPILER_TEST_CACHE="symbolic values" runs the whole suite with symbolic
# values (numbers and sizes of contiguous inputs symbolic); a shard of it always runs (test_*_under_symbolic_values).
CACHE = os.environ.get("COMPILER_TEST_CACHE", "constant values")

# (rtol, atol) per dtype. float32 is loose enough for a different but valid reduction order.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1.3e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


# ---------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------

FLOAT_ATOL = 1e-6  # (with float_rtol: a float32 tensor's own comparison allows 1e-5)


def assert_same(actual, expected, *, where: str, meta_only: bool = False,
                rtol: float | None = None, atol: float | None = None, float_rtol: float | None = None) -> None:
    """Assert `actual` is what eager returned: same structure, and per tensor same dtype, shape,
    device and values (within the dtype's tolerance). float_rtol: Python floats within it, or within FLOAT_ATOL
    (read by `.item()` from a fused reduction, which adds in another order: a sum that cancels to a small value,
    fuzz seed 760136, differs by 2e-5 relative, 4e-7 absolute); else exactly equal."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a tensor, got {type(actual).__name__}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != eager {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {tuple(actual.shape)} != eager {tuple(expected.shape)}"
        assert actual.device == expected.device, f"{where}: device {actual.device} != eager {expected.device}"
        assert actual.requires_grad == expected.requires_grad, \
            f"{where}: requires_grad {actual.requires_grad} != eager {expected.requires_grad}"
        if meta_only:
            return
        if expected.dtype.is_floating_point or expected.dtype.is_complex:
            default_rtol, default_atol = TOLERANCES.get(expected.dtype, (1e-5, 1e-5))
            r, a = (rtol if rtol is not None else default_rtol), (atol if atol is not None else default_atol)
        else:
            r, a = 0.0, 0.0  # integer and bool results must be exact
        torch.testing.assert_close(actual.detach(), expected.detach(), rtol=r, atol=a, equal_nan=True,
                                   check_stride=False, msg=lambda m: f"{where}: values differ from eager: {m}")
    elif isinstance(expected, torch.Size):
        assert isinstance(actual, torch.Size), f"{where}: expected a torch.Size, got {type(actual).__name__}"
        assert actual == expected, f"{where}: {actual} != eager {expected}"
    elif isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and isinstance(actual, tuple) == isinstance(expected, tuple), \
            f"{where}: expected a {type(expected).__name__}, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"{where}: {len(actual)} items != eager {len(expected)}"
        for i, (a_item, e_item) in enumerate(zip(actual, expected)):
            assert_same(a_item, e_item, where=f"{where}[{i}]", meta_only=meta_only, rtol=rtol, atol=atol,
                        float_rtol=float_rtol)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a dict, got {type(actual).__name__}"
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != eager {list(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], where=f"{where}[{key!r}]", meta_only=meta_only,
                        rtol=rtol, atol=atol, float_rtol=float_rtol)
    elif isinstance(expected, (bool, int, float)):
        assert type(actual) is type(expected), \
            f"{where}: expected a Python {type(expected).__name__}, got {type(actual).__name__}"
        close = type(expected) is float and float_rtol is not None and math.isclose(
            actual, expected, rel_tol=float_rtol, abs_tol=FLOAT_ATOL)
        assert actual == expected or close or (actual != actual and expected != expected), \
            f"{where}: {actual!r} != eager {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != eager {expected!r}"


def assert_inputs_like_eager(args, eager_args, pristine_args, *, where: str) -> None:
    """Every tensor input must hold what eager left in it; a mismatch says who changed what."""
    for i, (arg, eager_arg, before) in enumerate(zip(args, eager_args, pristine_args)):
        if not isinstance(eager_arg, torch.Tensor):
            continue
        if torch.equal(arg, eager_arg) or (arg.dtype.is_floating_point and
                                           torch.allclose(arg, eager_arg, equal_nan=True, rtol=0, atol=0)):
            continue
        eager_changed = not torch.equal(eager_arg, before)
        compiled_changed = not torch.equal(arg, before)
        raise AssertionError(f"{where}: input {i} after the call differs from eager's "
                             f"(eager changed it: {eager_changed}, compiled changed it: {compiled_changed})")



def _aliased_inputs(outputs, args) -> list[tuple[int, ...]]:
    """For each output tensor, the indices of the inputs whose memory it shares."""
    return [tuple(i for i, a in enumerate(args)
                  if isinstance(a, torch.Tensor) and a.numel() and out.numel()
                  and out.untyped_storage().data_ptr() == a.untyped_storage().data_ptr())
            for out in tensors_in(outputs)]


def _same_objects(outputs, args) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """For each output tensor: which inputs and which other outputs are the very same object."""
    outs = tensors_in(outputs)
    return [(tuple(i for i, a in enumerate(args) if a is out), tuple(j for j, o in enumerate(outs) if o is out))
            for out in outs]


def _aliased_outputs(outputs) -> list[tuple[int, ...]]:
    """For each output tensor, the indices of the other outputs whose memory it shares."""
    outs = tensors_in(outputs)
    return [tuple(j for j, o in enumerate(outs) if j != i and o.numel() and out.numel()
                  and out.untyped_storage().data_ptr() == o.untyped_storage().data_ptr())
            for i, out in enumerate(outs)]


def assert_aliasing_like_eager(actual, args, expected, eager_args, *, where: str) -> None:
    """A view of an input stays a view, a copy stays a copy, and an input returned as is (x.add_()
    returns x) is returned as is; outputs that share memory in eager share it (a view returned with its
    base): the caller can observe each difference."""
    got, want = _aliased_inputs(actual, args), _aliased_inputs(expected, eager_args)
    assert got == want, f"{where}: outputs share memory with inputs {got}, eager's with {want}"
    got, want = _aliased_outputs(actual), _aliased_outputs(expected)
    assert got == want, f"{where}: outputs share memory with outputs {got}, eager's with {want}"
    got, want = _same_objects(actual, args), _same_objects(expected, eager_args)
    assert got == want, f"{where}: output objects (is input, is output) {got}, eager's {want}"


def call(fn, args, manual_seed):
    """(result, None) or (None, exception): eager errors are part of the expected behaviour."""
    if manual_seed is not None:
        torch.manual_seed(manual_seed)
    grad_mode = torch.is_grad_enabled()
    try:
        return fn(*args), None
    except Exception as e:  # noqa: BLE001 - any eager error must be mirrored by the compiled function
        return None, e
    finally:  # a function that toggles grad mode and fails half-way must not leak it into later tests
        torch.set_grad_enabled(grad_mode)


def compare_one_call(jfn, fn, make_args, *, where: str, manual_seed=None, meta_only=False,
                     rtol=None, atol=None) -> bool:
    """Call eager `fn` and compiled `jfn` on fresh identical inputs and compare outputs, inputs left
    behind and aliasing. Returns whether eager raised (then the compiled call must raise too)."""
    eager_args = make_args()
    expected, eager_error = call(fn, eager_args, manual_seed)
    args = make_args()
    actual, error = call(jfn, args, manual_seed)
    if eager_error is not None:
        assert error is not None, f"{where}: eager raised {eager_error!r}, compiled returned a result"
        return True
    if error is not None:
        raise AssertionError(f"{where}: compiled raised {type(error).__name__}: {error}") from error
    assert_same(actual, expected, where=f"{where}: output", meta_only=meta_only, rtol=rtol, atol=atol)
    assert_inputs_like_eager(args, eager_args, make_args(), where=where)
    assert_aliasing_like_eager(actual, args, expected, eager_args, where=where)
    return False


def check_against_eager(fn, make_args, *, manual_seed=None, expect_error=False, meta_only=False,
                        rtol=None, atol=None) -> None:
    """Two compiled calls (trace, then cache hit), each compared with eager; then the trace prints."""
    jfn = compiler.jit(fn, cache=CACHE)
    for attempt in ("first call", "second call (cache hit)"):
        eager_raised = compare_one_call(jfn, fn, make_args, where=attempt, manual_seed=manual_seed,
                                        meta_only=meta_only, rtol=rtol, atol=atol)
        assert eager_raised == expect_error, f"the sample table is wrong: eager raised: {eager_raised}"
    if not expect_error:
        assert compiler.cache_misses(jfn) == 1, f"cache misses: {compiler.cache_misses(jfn)}, expected 1"
        assert compiler.cache_hits(jfn) == 1, f"cache hits: {compiler.cache_hits(jfn)}, expected 1"
        assert_trace_is_python(jfn)


def assert_trace_is_python(jfn) -> None:
    traces = compiler.last_traces(jfn)
    assert traces, "last_traces is empty"
    source = str(traces[-1])
    assert source.strip(), "the last trace prints as an empty string"
    compile(source, "<last trace>", "exec")  # raises SyntaxError with the line if it is not Python
    prologues = compiler.last_prologue_traces(jfn)
    assert prologues, "last_prologue_traces is empty: nothing guards the cached trace"
    compile(str(prologues[-1]), "<last prologue trace>", "exec")


def _param(case_id: str, value):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[case_id])] if case_id in KNOWN_GAPS else []
    return pytest.param(value, id=case_id, marks=marks)


# ---------------------------------------------------------------------------------------------------
# Op samples
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sample", [_param(s.id, s) for s in SAMPLES])
def test_op_matches_eager(sample: OpSample):
    check_against_eager(sample.fn, sample.make_args, manual_seed=sample.manual_seed,
                        expect_error=sample.expect_error, meta_only=sample.compare == "meta",
                        rtol=sample.rtol, atol=sample.atol)


def _sample_groups() -> list:
    """Samples that share one function object (a loop over shapes/dtypes/layouts), as one case each."""
    groups: dict[int, list[OpSample]] = {}
    for s in SAMPLES:
        if s.id not in KNOWN_GAPS and s.manual_seed is None:
            groups.setdefault(id(s.fn), []).append(s)
    cases, seen = [], {}
    for members in groups.values():
        if len(members) < 2:
            continue
        op = members[0].op
        seen[op] = seen.get(op, 0) + 1
        cases.append(_param(f"group:{op}" if seen[op] == 1 else f"group:{op}#{seen[op]}", members))
    return cases


@pytest.mark.parametrize("members", _sample_groups())
def test_one_jitted_function_across_inputs(members: list[OpSample]):
    """One jitted function called with every input of its group in turn, then the first again.

    Each new shape/dtype/layout must miss the cache and recompile (a stale entry reused for a
    transposed input would get reshape-then-in-place wrong); a failing call must not poison it.
    """
    jfn = compiler.jit(members[0].fn, cache=CACHE)
    for s in members + [next(m for m in members if not m.expect_error)]:
        compare_one_call(jfn, s.fn, s.make_args, where=f"input of {s.id}", meta_only=s.compare == "meta",
                         rtol=s.rtol, atol=s.atol)
    assert compiler.cache_hits(jfn) >= 1, "calling again with the first input must hit its cache entry"


@pytest.mark.parametrize("sample", [_param(s.id, s) for s in SAMPLES[::16]])
def test_op_matches_eager_under_symbolic_values(sample: OpSample, monkeypatch):
    """A shard of the op samples jitted with cache="symbolic values" (the whole suite in this mode:
    COMPILER_TEST_CACHE="symbolic values"): same results, one trace and one cache hit."""
    monkeypatch.setitem(globals(), "CACHE", "symbolic values")
    test_op_matches_eager(sample)


@pytest.mark.parametrize("sample", [_param(s.id, s) for s in SAMPLES[::10]])
def test_no_caching_matches_eager(sample: OpSample):
    """cache="no caching" retraces every call and must still match eager, with no cache hits."""
    jfn = compiler.jit(sample.fn, cache="no caching")
    for attempt in ("first call", "second call"):
        compare_one_call(jfn, sample.fn, sample.make_args, where=attempt, manual_seed=sample.manual_seed,
                         meta_only=sample.compare == "meta", rtol=sample.rtol, atol=sample.atol)
    assert compiler.cache_hits(jfn) == 0


# ---------------------------------------------------------------------------------------------------
# The prims path: ops run through their decompositions into prims (what a fusing executor such as
# nvFuser will run) must match eager too, or be refused with an ExecutorError naming the op.
# ---------------------------------------------------------------------------------------------------

def _jit_prims_only(fn):
    return compiler.jit(fn, executors=[TorchExecutor(only_prims=True), python_executor], cache=CACHE)


@pytest.mark.parametrize("sample", [_param(f"prims:{s.id}", s) for s in SAMPLES[::2] if s.id not in KNOWN_GAPS])
def test_prims_path_matches_eager_or_refuses(sample: OpSample):
    jfn = _jit_prims_only(sample.fn)
    try:
        compare_one_call(jfn, sample.fn, sample.make_args, where="prims only", manual_seed=sample.manual_seed,
                         meta_only=sample.compare == "meta", rtol=sample.rtol, atol=sample.atol)
    except AssertionError as e:
        if not isinstance(e.__cause__, compiler.ExecutorError):  # no decomposition yet: a clear refusal
            raise


PRIMS_CORE_SAMPLES = ["add-f32[3x4]-f32[4]", "mul-f32[4x3]T-f32[4x3]", "exp-f32[3x4]", "sum_dim-f32[2x3x4]",
                      "softmax-f32[3x4]", "F.layer_norm-f32[3x8]-f32[8]", "matmul-f32[3x4]-f32[4x5]",
                      "reshape-f32[2x3x4]T", "F.gelu-f32[3x4]", "where-b8[3x4]-f32[3x4]-f32[3x4]",
                      "inplace.add_-f32[3x4]-f32[4]", "reshape_inplace.reshape_add_-f32[4x3]T",
                      "F.embedding-idx[2x5]-f32[10x4]", "transpose-f32[2x3x4]", "masked_fill-f32[3x4]-b8[3x4]--1.0",
                      "cat-(f32[2x3],f32[4x3])-dim0"]


@pytest.mark.parametrize("sample_id", PRIMS_CORE_SAMPLES)
def test_prims_path_runs_the_core_ops(sample_id: str):
    """The refusal above must not become the rule: the ops a transformer needs do run as prims."""
    sample = SAMPLES_BY_ID[sample_id]
    jfn = _jit_prims_only(sample.fn)
    compare_one_call(jfn, sample.fn, sample.make_args, where="prims only")
    assert "prims." in str(compiler.last_traces(jfn)[-1]), "the execution trace calls no prims"


# ---------------------------------------------------------------------------------------------------
# Hidden inputs (seed 132): state the function reads but is not passed, changed between two calls.
# The second compiled call must see the change (or raise); reusing the first call's value is a silently
# wrong result. Each case returns [(compiled or CLEAR_ERROR, eager), ...] after the change.
# ---------------------------------------------------------------------------------------------------

CLEAR_ERROR = object()


def _after_change(jfn, *args):
    """The compiled call after the change: its result, or CLEAR_ERROR if it refused with a
    CompilerError (an allowed answer; a stale result is not). Calls before the change must work."""
    try:
        return jfn(*args)
    except compiler.CompilerError:
        return CLEAR_ERROR


GLOBAL_TENSOR = torch.ones(3)
GLOBAL_SCALE = 2.0


def _reads_global_tensor(x):
    return x * GLOBAL_TENSOR


def _reads_global_scale(x):
    return x * GLOBAL_SCALE


def _global_tensor_in_place():
    jfn, x = compiler.jit(_reads_global_tensor, cache=CACHE), torch.randn(3)
    jfn(x)
    GLOBAL_TENSOR.add_(1)
    return [(_after_change(jfn, x), _reads_global_tensor(x))]


def _global_tensor_rebound():
    global GLOBAL_TENSOR
    jfn, x = compiler.jit(_reads_global_tensor, cache=CACHE), torch.randn(3)
    jfn(x)
    GLOBAL_TENSOR = torch.full((3,), -4.0)
    return [(_after_change(jfn, x), _reads_global_tensor(x))]


def _global_number_rebound():
    global GLOBAL_SCALE
    jfn, x = compiler.jit(_reads_global_scale, cache=CACHE), torch.randn(3)
    jfn(x)
    GLOBAL_SCALE = GLOBAL_SCALE + 1.0
    return [(_after_change(jfn, x), _reads_global_scale(x))]


def _closure_rebound(value_before, value_after):
    def case():
        captured = value_before

        def fn(x):
            return x + captured

        jfn, x = compiler.jit(fn, cache=CACHE), torch.randn(3)
        jfn(x)
        captured = value_after  # noqa: F841 - rebinding the cell that fn reads
        return [(_after_change(jfn, x), fn(x))]
    return case


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x):
        return F.dropout(self.lin(x) * self.scale, 0.5, training=self.training)


def _module_case(change):
    def case():
        torch.manual_seed(0)
        model = _Scaled().eval()
        jmodel, x = compiler.jit(model, cache=CACHE), torch.randn(2, 3)
        with torch.no_grad():
            jmodel(x)
            change(model)
            return [(_after_change(jmodel, x), model(x))]
    return case


def _replace_parameter(model):
    model.lin.weight = torch.nn.Parameter(torch.zeros(3, 3))


def _train_mode(model):
    model.train()
    torch.manual_seed(5)


GLOBAL_CONFIG = {"scale": 2.0}
GLOBAL_LIST = [1.0, 2.0]


class _Settings:
    bias = 1.0


# a module object, as `import config` would give: modules are usually treated as constant namespaces
SETTINGS_MODULE = types.ModuleType("settings_for_the_differential_suite")
SETTINGS_MODULE.SCALE = 2.0


def _reads_module_attribute(x):
    return x * SETTINGS_MODULE.SCALE


def _module_attribute_changed():
    jfn, x = compiler.jit(_reads_module_attribute, cache=CACHE), torch.randn(3)
    jfn(x)
    SETTINGS_MODULE.SCALE = 7.0
    try:
        return [(_after_change(jfn, x), _reads_module_attribute(x))]
    finally:
        SETTINGS_MODULE.SCALE = 2.0


GLOBAL_SETTINGS = _Settings()


def _helper(t):
    return t * 2


def _reads_global_container(x):
    return x * GLOBAL_CONFIG["scale"] + GLOBAL_LIST[1] + GLOBAL_SETTINGS.bias


def _calls_global_helper(x):
    return _helper(x) + 1


def _makes_default_dtype_tensor(x):
    return torch.zeros(3) + x.sum()


def _global_container_case(change):
    def case():
        saved = (dict(GLOBAL_CONFIG), list(GLOBAL_LIST), GLOBAL_SETTINGS.bias)
        jfn, x = compiler.jit(_reads_global_container, cache=CACHE), torch.randn(3)
        try:
            jfn(x)
            change()
            return [(_after_change(jfn, x), _reads_global_container(x))]
        finally:
            GLOBAL_CONFIG.update(saved[0])
            GLOBAL_LIST[:] = saved[1]
            GLOBAL_SETTINGS.bias = saved[2]
    return case


def _global_helper_rebound():
    global _helper
    jfn, x = compiler.jit(_calls_global_helper, cache=CACHE), torch.randn(3)
    jfn(x)
    saved, _helper = _helper, (lambda t: t * 3)
    try:
        return [(_after_change(jfn, x), _calls_global_helper(x))]
    finally:
        _helper = saved


def _default_dtype_changed():
    jfn, x = compiler.jit(_makes_default_dtype_tensor, cache=CACHE), torch.randn(3)
    jfn(x)
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return [(_after_change(jfn, x), _makes_default_dtype_tensor(x))]
    finally:
        torch.set_default_dtype(saved)


def _grad_mode_changed():
    jfn, w = compiler.jit(lambda t: t * 2, cache=CACHE), torch.randn(3, requires_grad=True)
    jfn(w)
    with torch.no_grad():
        actual, expected = _after_change(jfn, w), w * 2
    assert actual is CLEAR_ERROR or actual.requires_grad == expected.requires_grad, \
        "requires_grad of the result differs from eager"
    return [(actual, expected)]


def _autocast_turned_on():
    def fn(a, b):
        return (a @ b).sum(-1) + a.mean()

    jfn, x, y = compiler.jit(fn, cache=CACHE), torch.randn(4, 4), torch.randn(4, 4)
    jfn(x, y)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # eager's matmul now runs in bfloat16
        return [(_after_change(jfn, x, y), fn(x, y))]


def _swap_submodule(model):
    model.lin = torch.nn.Linear(3, 3)


HIDDEN_INPUT_CASES = {
    "hidden.global_tensor_in_place": _global_tensor_in_place,
    "hidden.global_tensor_rebound": _global_tensor_rebound,
    "hidden.global_number_rebound": _global_number_rebound,
    "hidden.closure_tensor_rebound": _closure_rebound(torch.ones(3), torch.full((3,), 7.0)),
    "hidden.closure_number_rebound": _closure_rebound(1.0, 7.0),
    "hidden.module_float_attribute": _module_case(lambda m: setattr(m, "scale", 5.0)),
    "hidden.module_parameter_replaced": _module_case(_replace_parameter),
    "hidden.module_parameter_in_place": _module_case(lambda m: m.lin.bias.add_(1.0)),
    "hidden.module_submodule_swapped": _module_case(_swap_submodule),
    "hidden.global_dict_item": _global_container_case(lambda: GLOBAL_CONFIG.__setitem__("scale", 5.0)),
    "hidden.global_list_item": _global_container_case(lambda: GLOBAL_LIST.__setitem__(1, 9.0)),
    "hidden.global_object_attribute": _global_container_case(lambda: setattr(GLOBAL_SETTINGS, "bias", 4.0)),
    "hidden.global_function_rebound": _global_helper_rebound,
    "hidden.default_dtype": _default_dtype_changed,
    "hidden.grad_mode": _grad_mode_changed,
    "hidden.autocast": _autocast_turned_on,
    "hidden.imported_module_attribute": _module_attribute_changed,
}


@pytest.mark.parametrize("case", [_param(name, case) for name, case in HIDDEN_INPUT_CASES.items()])
def test_hidden_input_change_is_seen(case):
    for actual, expected in case():
        if actual is not CLEAR_ERROR:
            assert_same(actual, expected, where="after the change")


def test_module_train_eval_switch_matches_eager():
    torch.manual_seed(0)
    model = _Scaled().eval()
    jmodel, x = compiler.jit(model, cache=CACHE), torch.randn(4, 3)
    with torch.no_grad():
        assert_same(jmodel(x), model(x), where="eval")
        _train_mode(model)
        actual = jmodel(x)
        torch.manual_seed(5)
        assert_same(actual, model(x), where="train (dropout active)")


# ---------------------------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------------------------

def _grad_args(sample: OpSample, via_copy: bool) -> tuple[tuple, list[torch.Tensor]]:
    """Fresh inputs whose float32/float64 tensors require grad, and the leaves to differentiate.

    Directly: each such input is a leaf (same strides). via_copy: each is a clone of a leaf, so
    in-place ops on inputs are allowed (eager refuses them on leaves) and gradients flow through them.
    """
    args, leaves = [], []
    for a in sample.make_args():
        if isinstance(a, torch.Tensor) and a.dtype in (torch.float32, torch.float64):
            leaf = a.detach().requires_grad_()
            leaves.append(leaf)
            a = leaf.clone() if via_copy else leaf
        args.append(a)
    return tuple(args), leaves


def _output_and_grads(fn, args, leaves, manual_seed):
    """fn's output and the gradients of a fixed random projection of its differentiable outputs."""
    if manual_seed is not None:
        torch.manual_seed(manual_seed)
    out = fn(*args)
    gen = torch.Generator().manual_seed(0)
    loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum()
               for o in tensors_in(out) if o.requires_grad)
    return out, torch.autograd.grad(loss, leaves, allow_unused=True)


def _is_differentiable(sample: OpSample, via_copy: bool) -> bool:
    """Eager's forward runs with grad-requiring inputs and gives an output that requires grad."""
    if sample.expect_error or sample.compare != "values" or sample.id in KNOWN_GAPS:
        return False
    try:
        out = sample.fn(*_grad_args(sample, via_copy)[0])
    except Exception:  # noqa: BLE001 - e.g. in-place ops on a leaf: eager refuses, nothing to compare
        return False
    return any(o.requires_grad for o in tensors_in(out))


def _spread(samples: list[OpSample], per_op: int) -> list[OpSample]:
    """At most `per_op` samples of each op, spread over its table (shapes, layouts, dtypes), to keep
    the gradient checks inside the suite's time budget."""
    by_op: dict[str, list[OpSample]] = {}
    for s in samples:
        by_op.setdefault(s.op, []).append(s)
    return [s for members in by_op.values() for s in members[::-(-len(members) // per_op)]]


def _grad_cases() -> list:
    direct = _spread([s for s in SAMPLES if _is_differentiable(s, via_copy=False)], per_op=4)
    direct_ids = {s.id for s in direct}
    # samples eager only differentiates through non-leaf inputs: the in-place ones
    via_copy = _spread([s for s in SAMPLES if s.id not in direct_ids and not _is_differentiable(s, False)
                        and _is_differentiable(s, via_copy=True)], per_op=3)
    return ([pytest.param(s, False, id=s.id) for s in direct] +
            [pytest.param(s, True, id=f"{s.id}-via-copy") for s in via_copy])


@pytest.mark.parametrize("sample, via_copy", _grad_cases())
def test_gradients_match_eager(sample: OpSample, via_copy: bool):
    args, leaves = _grad_args(sample, via_copy)
    expected, eager_error = call(_output_and_grads, (sample.fn, args, leaves, sample.manual_seed), None)
    jfn = compiler.jit(sample.fn, cache=CACHE)
    args, leaves = _grad_args(sample, via_copy)
    actual, error = call(_output_and_grads, (jfn, args, leaves, sample.manual_seed), None)
    if eager_error is not None:  # e.g. no derivative, or a saved tensor modified in place
        assert error is not None, f"eager's backward raised {eager_error!r}, compiled computed gradients"
        return
    if error is not None:
        raise AssertionError(f"compiled raised {type(error).__name__}: {error}") from error
    (expected, expected_grads), (actual, grads) = expected, actual
    assert_same(actual, expected, where="output", rtol=sample.rtol, atol=sample.atol)
    assert [g is None for g in grads] == [g is None for g in expected_grads], \
        "inputs that got a gradient differ from eager"
    for i, (g, e) in enumerate(zip(grads, expected_grads)):
        if e is not None:
            assert_same(g, e, where=f"gradient of input {i}", rtol=1e-4 if e.dtype == torch.float32 else None)


# ---------------------------------------------------------------------------------------------------
# Random programs
# ---------------------------------------------------------------------------------------------------

UNARY_EXPRS = ["torch.tanh({a})", "torch.sigmoid({a})", "torch.relu({a})", "{a}.abs()", "-{a}",
               "torch.sin({a})", "torch.exp(torch.tanh({a}))", "F.gelu({a})", "F.silu({a})", "({a} * 0.5)",
               "({a} + 1)", "torch.sqrt({a}.abs() + 1)", "torch.clamp({a}, -1.0, 1.0)", "{a} ** 2",
               "F.layer_norm({a}, {a}.shape[-1:])", "{a}.double()", "{a}.float()",
               "({a} * torch.rsqrt({a}.pow(2).mean(-1, keepdim=True) + 1e-6))",
               # the number argument s, and Python control flow on it and on shapes (seed 262)
               "({a} * s)", "(s - {a})", "({a} * s if s > 1 else {a} - s)",
               "({a}.sum(0) if {a}.shape[0] > 2 else {a} * 2)"]
BINARY_EXPRS = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "torch.maximum({a}, {b})",
                "torch.where({a} > 0, {a}, {b})", "({a} / ({b}.abs() + 1))", "torch.minimum({a}, {b})",
                "torch.cat([{a}, {b}], {d})", "torch.stack([{a}, {b}])", "({a} @ {b}.mT)", "torch.matmul({a}, {b})",
                "{a}.masked_fill({b} < 0, -1.0)", "torch.where({b} > 0, {a}, 0.0)"]
REDUCTION_EXPRS = ["{a}.sum({d})", "{a}.sum({d}, keepdim=True)", "{a}.mean({d})", "torch.amax({a}, {d})",
                   "torch.softmax({a}, {d})", "torch.log_softmax({a}, {d})", "{a}.var({d}, keepdim=True)",
                   "{a}.sum()", "{a}.max({d}).values"]
VIEW_EXPRS = ["{a}.transpose({d}, {e})", "{a}.unsqueeze({d})", "{a}.reshape(-1)", "{a}.flatten()",
              "{a}.permute(*reversed(range({a}.ndim)))", "{a}[..., :2]", "{a}[1:]", "{a}.squeeze()",
              "{a}.expand(2, *{a}.shape)", "{a}.t() if {a}.ndim == 2 else {a}", "{a}.contiguous()",
              "{a}.mT", "{a}.view(-1)", "{a}.chunk(2, {d})[0]", "{a}.split(1, {d})[-1]", "{a}.unbind({d})[0]",
              "{a}.narrow({d}, 0, 1)", "{a}[None, ..., None]"]
INPLACE_STMTS = ["{v} = {a}.clone(); {v}.mul_(0.5)", "{v} = {a} * 1; {v}.add_(1)", "{v} = {a} + 0; {v}.zero_()",
                 "{v} = {a}.clone(); {v}[..., 0] = 2", "{v} = {a} * 2; {v}.masked_fill_({v} > 1, 0)"]
# in-place writes that may reach an input: through reshape/flatten (a view or a copy depending on the
# input's strides, seed 957) or directly
INPUT_WRITE_STMTS = ["{v} = {a}.reshape(-1); {v}.add_(1)", "{v} = {a}.flatten(); {v}.mul_(2)",
                     "{a}.add_(1); {v} = {a} * 1", "{v} = {a}.transpose(0, -1); {v}.sub_(1)",
                     "{v} = {a}.contiguous(); {v}.mul_(3)"]


def random_program(seed: int) -> tuple[str, list[T]]:
    """Python source of `def program(*inputs)` and its input specs: a chain of 2-8 random steps.

    Every candidate step is run on small real inputs first, so only programs eager accepts come out.
    """
    rng = random.Random(seed)
    ndim = rng.choice([0, 1, 2, 2, 3, 3])
    base = tuple(rng.choice([1, 2, 3, 4, 5]) for _ in range(ndim))
    dtype = rng.choice([torch.float32, torch.float32, torch.float32, torch.float64, torch.bfloat16])
    specs = []
    for _ in range(rng.randint(1, 3)):
        shape = tuple(1 if rng.random() < 0.2 else s for s in base)[rng.randint(0, min(1, ndim)):]
        layouts = ["contiguous", "sliced"] if shape else ["contiguous"]
        if len(shape) >= 2:
            layouts.append("transposed")
        input_dtype = rng.choices([dtype, torch.float64, torch.int64], [6, 1, 1])[0]
        specs.append(T(shape, input_dtype, rng.choice(layouts)))
    env = {"torch": torch, "F": F, "s": 0.5}
    gen = torch.Generator().manual_seed(seed)
    live = {f"a{i}": s.build(gen) for i, s in enumerate(specs)}
    lines = []
    for step in range(rng.randint(2, 8)):
        for _ in range(20):  # tries until a step runs
            a, b = rng.choice(list(live)), rng.choice(list(live))
            nd = live[a].ndim
            d = rng.randrange(-nd, nd) if nd else 0
            e = rng.randrange(-nd, nd) if nd else 0
            kind = rng.choices(["unary", "binary", "reduce", "view", "inplace", "input_write"],
                               [3, 4, 2, 3, 1, 1])[0]
            v = f"v{step}"
            if kind == "reduce" and nd == 0:
                continue
            if kind in ("inplace", "input_write"):
                table = INPLACE_STMTS if kind == "inplace" else INPUT_WRITE_STMTS
                stmt = rng.choice(table).format(v=v, a=a)
            else:
                table = {"unary": UNARY_EXPRS, "binary": BINARY_EXPRS, "reduce": REDUCTION_EXPRS,
                         "view": VIEW_EXPRS}[kind]
                stmt = f"{v} = " + rng.choice(table).format(a=a, b=b, d=d, e=e)
            scope = dict(env, **live)
            try:
                exec(stmt, scope)
            except Exception:  # noqa: BLE001 - an invalid candidate (shape/dim/dtype mismatch): draw another
                continue
            if isinstance(scope.get(v), torch.Tensor) and scope[v].numel() <= 4096:
                live[v] = scope[v]
                lines.append(stmt)
                break
    outputs = [name for name in live if name.startswith("v")][-2:] or ["a0"]
    params = ", ".join([f"a{i}" for i in range(len(specs))] + ["s"])
    body = "".join(f"    {line}\n" for line in lines)
    source = f"def program({params}):\n{body}    return {', '.join(outputs)}\n"
    return source, specs


def build_program(seed: int, *, contiguous: bool = False, number: float = 0.5):
    """The program as a function, a maker of its fresh inputs (optionally all contiguous, and with
    another value of the number argument), and its source."""
    source, specs = random_program(seed)
    if contiguous:
        specs = [T(s.shape, s.dtype, "contiguous", s.domain) for s in specs]
    filename = f"<random-program-{seed}>"
    # Registered with linecache so tracebacks and source-location comments can show the program.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "F": F}
    exec(compile(source, filename, "exec"), namespace)
    gen_seed = 1000 + seed

    def make_args():
        gen = torch.Generator().manual_seed(gen_seed)
        return tuple(s.build(gen) for s in specs) + (number,)

    return namespace["program"], make_args, source


RANDOM_PROGRAM_COUNT = 300


@pytest.mark.parametrize("seed", [_param(f"random-{i:03d}", i) for i in range(RANDOM_PROGRAM_COUNT)])
def test_random_program_matches_eager(seed: int):
    fn, make_args, source = build_program(seed)
    try:
        check_against_eager(fn, make_args)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from e


@pytest.mark.parametrize("seed", [_param(f"random-guards-{i:03d}", i) for i in range(0, RANDOM_PROGRAM_COUNT, 3)])
def test_random_program_one_jit_across_layouts_and_numbers(seed: int):
    """One jitted program fed its inputs, then contiguous copies, then another number, then the
    first inputs again: every change of layout or number must be guarded, never served stale."""
    fn, _, source = build_program(seed)
    jfn = compiler.jit(fn, cache=CACHE)
    variants = [dict(), dict(contiguous=True), dict(number=2.0), dict()]
    try:
        for variant in variants:
            _, make_args, _ = build_program(seed, **variant)
            compare_one_call(jfn, fn, make_args, where=f"inputs {variant or 'as generated'}")
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from e
    assert compiler.cache_hits(jfn) >= 1, "the first inputs again must hit their cache entry"


@pytest.mark.parametrize("seed", [_param(f"random-guards-{i:03d}", i) for i in range(0, RANDOM_PROGRAM_COUNT, 15)])
def test_random_program_across_layouts_and_numbers_under_symbolic_values(seed: int, monkeypatch):
    monkeypatch.setitem(globals(), "CACHE", "symbolic values")
    test_random_program_one_jit_across_layouts_and_numbers(seed)


def _program_grad_args(make_args) -> tuple[tuple, list[torch.Tensor]]:
    """Inputs whose float32/float64 tensors are clones of leaves that require grad (so the programs'
    in-place writes to inputs stay legal), and those leaves."""
    args, leaves = [], []
    for a in make_args():
        if isinstance(a, torch.Tensor) and a.dtype in (torch.float32, torch.float64):
            leaves.append(a.detach().requires_grad_())
            a = leaves[-1].clone()
        args.append(a)
    return tuple(args), leaves


def _program_has_gradients(seed: int) -> bool:
    """Eager differentiates it: some output depends on a float input (not only bf16/int64 inputs)."""
    fn, make_args, _ = build_program(seed)
    return call(_output_and_grads, (fn, *_program_grad_args(make_args), None), None)[1] is None


GRAD_PROGRAM_SEEDS = [seed for seed in range(RANDOM_PROGRAM_COUNT) if _program_has_gradients(seed)][::2]


@pytest.mark.parametrize("seed", [_param(f"random-grads-{i:03d}", i) for i in GRAD_PROGRAM_SEEDS])
def test_random_program_gradients_match_eager(seed: int):
    """Gradients of the programs' float inputs (through their in-place writes too) match eager's."""
    fn, make_args, source = build_program(seed)
    expected, eager_error = call(_output_and_grads, (fn, *_program_grad_args(make_args), None), None)
    actual, error = call(_output_and_grads, (compiler.jit(fn, cache=CACHE), *_program_grad_args(make_args), None), None)
    assert eager_error is None, f"eager's gradients failed: {eager_error!r}"
    try:
        if error is not None:
            raise AssertionError(f"compiled raised {type(error).__name__}: {error}") from error
        assert_same(actual[0], expected[0], where="output")
        for i, (g, e) in enumerate(zip(actual[1], expected[1])):
            assert (g is None) == (e is None), f"gradient of input {i}: None-ness differs from eager"
            if e is not None:
                assert_same(g, e, where=f"gradient of input {i}", rtol=1e-4 if e.dtype == torch.float32 else None)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program ---\n{source}") from e


def test_random_programs_are_deterministic_and_varied():
    """The generator is seeded (same program every run) and actually produces distinct programs."""
    assert random_program(7)[0] == random_program(7)[0]
    sources = {random_program(i)[0] for i in range(RANDOM_PROGRAM_COUNT)}
    assert len(sources) > RANDOM_PROGRAM_COUNT * 0.9
    assert sum(".sum(" in s or "amax" in s or "softmax" in s or ".mean(" in s for s in sources) > 50
    assert sum("transpose" in s or "reshape" in s or "permute" in s for s in sources) > 50
    assert sum("_(" in s for s in sources) > 50  # in-place ops
    assert sum(bool(re.search(r"\bs\b", s.split("\n", 1)[1])) for s in sources) > 30  # the number argument


# ---------------------------------------------------------------------------------------------------
# The harness checks itself: a comparison that cannot fail would make every test above meaningless.
# ---------------------------------------------------------------------------------------------------

def test_harness_catches_wrong_values_dtypes_shapes_and_inputs():
    x = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(AssertionError, match="values differ"):
        assert_same(x + 1e-3, x, where="out")
    with pytest.raises(AssertionError, match="dtype"):
        assert_same(x.double(), x, where="out")
    with pytest.raises(AssertionError, match="shape"):
        assert_same(x.reshape(3, 2), x, where="out")
    with pytest.raises(AssertionError, match="values differ"):
        assert_same(torch.tensor([1, 2]), torch.tensor([1, 3]), where="out")
    with pytest.raises(AssertionError, match="tuple"):
        assert_same([x], (x,), where="out")
    with pytest.raises(AssertionError, match="keys"):
        assert_same({"b": x, "a": x}, {"a": x, "b": x}, where="out")
    with pytest.raises(AssertionError, match="values differ"):
        assert_same({"a": [x, x * 2]}, {"a": [x, x * 3]}, where="out")
    assert_same(x.bfloat16() + 0.01, x.bfloat16(), where="out")  # within bf16 tolerance
    with pytest.raises(AssertionError, match="eager changed it: True, compiled changed it: False"):
        assert_inputs_like_eager((x.clone(),), (x + 1,), (x.clone(),), where="call")
    with pytest.raises(AssertionError, match="share memory"):
        assert_aliasing_like_eager(x.clone().view(-1), (x,), x.view(-1), (x,), where="call")
    y = x.clone()
    with pytest.raises(AssertionError, match="output objects"):
        assert_aliasing_like_eager(y.view_as(y), (y,), y, (y,), where="call")
    c = x.exp()
    with pytest.raises(AssertionError, match="outputs share memory with outputs"):
        assert_aliasing_like_eager((c.clone(), c.clone().view(-1)), (x,), (c, c.view(-1)), (x,), where="call")


def test_reshape_inplace_samples_cover_both_view_and_copy():
    """The seed-957 samples are only a test if eager writes through for some inputs (contiguous:
    reshape is a view) and not for others (transposed/sliced: a copy), for every op of the group."""
    changed: dict[str, set[bool]] = {}
    for s in SAMPLES:
        if s.op.startswith("reshape_inplace.") and not s.expect_error:
            args, before = s.make_args(), s.make_args()
            s.fn(*args)
            changed.setdefault(s.op, set()).add(not torch.equal(args[0], before[0]))
    assert len(changed) >= 6
    for op, outcomes in changed.items():
        # .view() and a reshape to the same shape are always views (or errors): controls, on purpose
        if op not in ("reshape_inplace.same_shape_reshape_zero_", "reshape_inplace.view_fill_"):
            assert outcomes == {True, False}, f"{op}: eager changed the input only {outcomes}"


def test_known_gaps_become_strict_xfails(monkeypatch):
    """An entry of KNOWN_GAPS must turn its case into a strict xfail (an XPASS then fails the suite,
    which is the signal to delete the entry); other cases carry no mark."""
    monkeypatch.setitem(KNOWN_GAPS, "add-f32[3x4]-f32[4]", "example reason")
    (mark,) = _param("add-f32[3x4]-f32[4]", None).marks
    assert mark.name == "xfail" and mark.kwargs == {"strict": True, "reason": "example reason"}
    assert not _param("sub-f32[3x4]-f32[4]", None).marks


def _install_fake_compiler(monkeypatch, transform) -> None:
    """Replace compiler.jit by `transform(fn)` run eagerly, with honest call counting: a stand-in
    that is wrong in one known way, to prove the checks above notice that way of being wrong."""
    calls: dict = {}

    def jit(fn, **options):
        impl = transform(fn)

        def jfn(*args):
            calls[jfn] = calls.get(jfn, 0) + 1
            return impl(*args)
        return jfn

    monkeypatch.setattr(compiler, "jit", jit)
    monkeypatch.setattr(compiler, "cache_hits", lambda jfn: calls.get(jfn, 0) - 1)
    monkeypatch.setattr(compiler, "cache_misses", lambda jfn: 1)
    monkeypatch.setattr(compiler, "last_traces", lambda jfn: ["def computation(x):\n  return x\n"])
    monkeypatch.setattr(compiler, "last_prologue_traces", lambda jfn: ["def prologue(args, kwargs):\n  return args\n"])


def _on_clones(fn):
    return lambda *args: fn(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))


def _first_result_forever(fn):
    """Like a cache without guards: whatever the inputs, the first call's result."""
    memo = []

    def run(*args):
        if not memo:
            memo.append(fn(*args))
        return memo[0]
    return run


def _map_outputs(change):
    return lambda fn: lambda *args: change(fn(*args))


def _also_writes_first_input(fn):
    def run(*args):
        out = fn(*args)
        args[0].add_(1)
        return out
    return run


def _writes_back(fn):
    """Like a compiler that treats reshape as always a view: the in-place result reaches the input."""
    def run(x):
        out = fn(x)
        x.copy_(out.reshape(x.shape))
        return out
    return run


def _reseeded(fn):
    def run(*args):
        torch.manual_seed(99)
        return fn(*args)
    return run


FAKE_COMPILER_BUGS = {
    "drops writes to inputs": (_on_clones, "reshape_inplace.reshape_add_-f32[3x4]"),
    "writes to an input it should not": (_also_writes_first_input, "add-f32[3x4]-f32[4]"),
    "writes through a reshape that eager copies": (_writes_back, "reshape_inplace.reshape_add_-f32[4x3]T"),
    "returns copies instead of views": (_map_outputs(lambda out: out.clone()), "transpose-f32[2x3x4]"),
    "returns the input instead of a copy": (lambda fn: lambda *args: args[0], "convert.contiguous-f64[3x2]T"),
    "upcasts the result": (_map_outputs(lambda out: out.double()), "add-f32[3x4]-f32[4]"),
    "off by a little": (_map_outputs(lambda out: out * (1 + 1e-4)), "F.layer_norm-f32[3x8]-f32[8]"),
    "swallows eager's error": (lambda fn: lambda *a: a[0], "view-f32[3x4]T"),
    "draws other random numbers": (_reseeded, "F.dropout_train_seeded-f32[4x5]"),
    "returns a list for a tuple": (_map_outputs(list), "split-f32[2x3x4]"),
    "returns a plain tuple for torch.Size": (
        _map_outputs(lambda out: tuple(tuple(o) if isinstance(o, torch.Size) else o for o in out)),
        "metadata-f32[2x3]"),
}


@pytest.mark.parametrize("bug", list(FAKE_COMPILER_BUGS))
def test_harness_catches_a_wrong_compiler(monkeypatch, bug):
    transform, sample_id = FAKE_COMPILER_BUGS[bug]
    sample = SAMPLES_BY_ID[sample_id]
    # the honest stand-in passes the same sample, so the failure below is the bug's
    _install_fake_compiler(monkeypatch, lambda fn: fn)
    test_op_matches_eager(sample)
    _install_fake_compiler(monkeypatch, transform)
    with pytest.raises(AssertionError):
        test_op_matches_eager(sample)


def test_harness_catches_a_stale_cache(monkeypatch):
    _install_fake_compiler(monkeypatch, _first_result_forever)
    members = next(p.values[0] for p in _sample_groups() if p.id == "group:abs")
    with pytest.raises(AssertionError, match="values differ|shape"):
        test_one_jitted_function_across_inputs(members)

"""The functional path: functionalization with write-backs, fusion regions, and the inductor executor.

The differential checks of test_differential.py (values, inputs left behind, aliasing, cache, gradients)
and the GPT model tests run with `compiler.jit` swapped for one with executors=(FUSER, "torch"). Breadth
uses torch.compile's "aot_eager" backend (the same graph capture, functionalization and autograd as
inductor, without C++ code generation, which costs seconds per region on this CI); a representative
shard and the GPT model run through real inductor. bench/functional_sweep.py runs every case.
"""
from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

import compiler
import test_differential as td
import test_gpt_model as gpt
from compiler.executors.inductor import InductorExecutor
from eager_parity import check_calls
from opinfos import KNOWN_GAPS, SAMPLES, SAMPLES_BY_ID

AOT_EAGER = InductorExecutor(backend="aot_eager")
INDUCTOR = "inductor"


@contextlib.contextmanager
def jit_with(executor):
    """compiler.jit with executors=(executor, "torch") everywhere, for tests written against compiler.jit."""
    real = compiler.jit

    def jit(fn, **kw):
        kw.setdefault("executors", (executor, "torch"))
        return real(fn, **kw)

    compiler.jit = jit
    try:
        yield
    finally:
        compiler.jit = real


def _sample_case(s):
    return lambda: td.check_against_eager(s.fn, s.make_args, manual_seed=s.manual_seed, expect_error=s.expect_error,
                                          meta_only=s.compare == "meta", rtol=s.rtol, atol=s.atol)


def all_cases(executor, kinds=("ops", "random", "grads", "random_grads")) -> list:
    """(name, zero-argument check) for every differential case of the kinds asked, run under jit_with."""
    cases = []
    if "ops" in kinds:
        cases += [(s.id, _sample_case(s)) for s in SAMPLES if s.id not in KNOWN_GAPS]
    if "random" in kinds:
        cases += [(f"random-{i:03d}", lambda i=i: td.test_random_program_matches_eager(i))
                  for i in range(td.RANDOM_PROGRAM_COUNT)]
    if "grads" in kinds:
        cases += [(f"grad:{p.id}", lambda v=p.values: td.test_gradients_match_eager(*v)) for p in td._grad_cases()]
    if "random_grads" in kinds:
        cases += [(f"random-grads-{i:03d}", lambda i=i: td.test_random_program_gradients_match_eager(i))
                  for i in td.GRAD_PROGRAM_SEEDS]

    def under(check):
        def run():
            with jit_with(executor):
                check()
        return run

    return [(name, under(check)) for name, check in cases]


# ---- breadth: a shard of every kind through aot_eager (the full sweep is bench/functional_sweep.py) ----

def _shard(kind, step):
    return [pytest.param(run, id=name) for name, run in all_cases(AOT_EAGER, (kind,))[::step]]


@pytest.mark.parametrize("run", _shard("ops", 20) + _shard("random", 15) + _shard("grads", 20)
                         + _shard("random_grads", 20))
def test_differential_shard_through_the_functional_path(run):
    run()


# the aliasing and in-place samples are the point of this path: all of them
ALIASING = [s.id for s in SAMPLES if s.id.startswith(("alias.", "inplace", "reshape_inplace", "out.", "python_same"))
            and s.id not in KNOWN_GAPS]


@pytest.mark.parametrize("sample_id", ALIASING)
def test_inplace_and_aliasing_samples(sample_id):
    with jit_with(AOT_EAGER):
        _sample_case(SAMPLES_BY_ID[sample_id])()


# ---- real inductor on a representative shard and the GPT model ----

INDUCTOR_SAMPLES = ["F.layer_norm-f32[3x8]-f32[8]", "softmax-f32[3x4]", "F.gelu-f32[3x4]",
                    "inplace.add_-f32[3x4]-f32[4]", "reshape_inplace.reshape_add_-f32[4x3]T",
                    "where-b8[3x4]-f32[3x4]-f32[3x4]"]


@pytest.mark.parametrize("sample_id", INDUCTOR_SAMPLES)
def test_inductor_samples(sample_id):
    with jit_with(INDUCTOR):
        _sample_case(SAMPLES_BY_ID[sample_id])()


def test_gpt_forward_and_gradients_through_inductor():
    with jit_with(INDUCTOR):
        gpt.test_forward_matches_eager(torch.float32, "is_causal")
        gpt.test_every_parameter_gradient_matches_eager(torch.float32)


@pytest.mark.parametrize("test", [gpt.test_no_grad_inference_matches_eager, gpt.test_optimizer_steps_match_eager,
                                  gpt.test_kv_cache_decode_matches_eager, gpt.test_in_place_parameter_update_is_seen],
                         ids=lambda t: t.__name__)
def test_gpt_model_through_the_functional_path(test):
    with jit_with(AOT_EAGER):
        test()


# ---- what the functional trace says ----

def _functional(jfn):
    return next(t for t in compiler.last_traces(jfn) if t.header.startswith("functional trace"))


def test_writes_become_write_backs_at_the_end():
    def f(x, y):
        x.add_(y)
        row = x[0]
        row.mul_(2)
        return x * 3, row

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x, y = torch.randn(3, 4), torch.randn(4)
    xe = x.clone()
    out, row = jfn(x, y)
    eout, erow = f(xe, y)
    torch.testing.assert_close(x, xe)
    torch.testing.assert_close(out, eout)
    assert row._base is x and torch.equal(row, erow), "a returned view of an input stays a view of it"
    trace = _functional(jfn)
    functional = trace.python_source(with_comments=False)
    inplace = [b.symbol.name for b in trace.bsyms if b.symbol.tags & compiler.core.symbols.Tag.INPLACE]
    assert inplace == ["prims.copy_to_out_"], f"one write-back and no other in-place op:\n{functional}"
    assert "prims.scatter_view" in functional, "the write through x[0] scatters into x's new value"


def test_kv_cache_pattern_two_copies_and_loops_pass_the_write_back_check():
    def kv(q_cache, k_cache, pos, q, k):  # seed 1193: index_copy_ into both caches, then attention reads them
        q_cache.index_copy_(1, pos, q)
        k_cache.index_copy_(1, pos, k)
        return F.scaled_dot_product_attention(q_cache, k_cache, k_cache)

    def two_copies(buf, a, b):
        buf.copy_(a)
        buf.copy_(b * 2)
        return buf + 1

    def loop(x):
        for i in range(3):
            x[i].add_(i)
            x.mul_(1.5)
        return x.sum()

    cases = [(kv, lambda: (torch.zeros(2, 6, 4), torch.zeros(2, 6, 4), torch.tensor([1, 3]), torch.randn(2, 2, 4),
                           torch.randn(2, 2, 4))),
             (two_copies, lambda: (torch.zeros(3, 4), torch.randn(3, 4), torch.randn(3, 4))),
             (loop, lambda: (torch.randn(4, 4),))]
    for fn, make in cases:
        torch.manual_seed(0)
        args = make()
        torch.manual_seed(0)
        eargs = make()
        jfn = compiler.jit(fn, executors=(AOT_EAGER, "torch"))
        torch.testing.assert_close(jfn(*args), fn(*eargs))
        for a, e in zip(args, eargs):
            torch.testing.assert_close(a, e)


def test_inputs_sharing_memory_run_in_eager_order():
    """The trace cannot know the caller's storage: a written input that shares memory with another input
    takes the eager-order trace, so the read through the other input sees the write."""
    def f(a, b):
        a.add_(1)
        return b * 2

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    base = torch.zeros(3, 3)
    out = jfn(base, base[1])  # b aliases a's second row
    assert torch.equal(out, torch.full((3,), 2.0))
    torch.testing.assert_close(jfn(torch.zeros(3, 3), torch.zeros(3)), torch.zeros(3))


def test_fusion_regions_print_their_prims_and_respect_barriers():
    def f(x, w):
        a = F.gelu(x, approximate="tanh") * torch.sigmoid(x)
        b = F.layer_norm(a, a.shape[-1:]) @ w  # the matmul joins the region (inductor calls mm inside it)
        noise = torch.rand_like(b)  # random: a barrier
        return (b + 1) * noise + b.tanh()

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    torch.manual_seed(0)
    out = jfn(x, w)
    torch.manual_seed(0)
    torch.testing.assert_close(out, f(x, w))
    execution = compiler.last_traces(jfn)[-1]
    regions = [b for b in execution.bsyms if getattr(b.symbol, "region", None) is not None]
    assert len(regions) >= 2, str(execution)
    text = str(execution)
    assert "torch_compile_aot_eager_fusion_0(" in text and "    # t" in text, "regions print their prims nested"
    for r in regions:
        assert all(s.symbol.tags & compiler.core.symbols.Tag.PRIM for s in r.subsymbols)
        assert not any(s.symbol.name == "prims.uniform_like" for s in r.subsymbols)
    assert any(s.symbol.name == "prims.matmul" for s in regions[0].subsymbols)
    compile(text, "<execution>", "exec")


def test_metadata_changing_inplace_runs_in_eager_order():
    def f(x):
        y = x * 2
        y.t_()
        return y + 1

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x = torch.randn(2, 3)
    torch.testing.assert_close(jfn(x), f(x))
    assert "not functionalized" in compiler.last_traces(jfn)[-1].header


def test_executor_names():
    from compiler.executors import python_executor, resolve_executors, torch_executor
    from compiler.executors.inductor import inductor_executor

    assert resolve_executors(("inductor", "torch")) == (inductor_executor, torch_executor, python_executor)
    assert resolve_executors(("torch",)) == (torch_executor, python_executor)
    with pytest.raises(ValueError, match="unknown executor"):
        compiler.jit(lambda x: x, executors=("tvm",))
    try:
        import nvfuser_direct  # noqa: F401
    except ImportError:
        with pytest.raises(compiler.ExecutorError, match="nvfuser_direct"):
            compiler.jit(lambda x: x, executors=("nvfuser", "torch"))
    jfn = compiler.jit(lambda x: x.exp() * 2 + 1, executors=("torch",))
    x = torch.randn(3)
    torch.testing.assert_close(jfn(x), x.exp() * 2 + 1)


def test_autocast_switch_runs_in_eager_order():
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
        return y.float().tanh() * 2 + 1

    jfn = compiler.jit(f, executors=(AOT_EAGER, "torch"))
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    td.assert_same(jfn(x, w), f(x, w), where="output")
    assert "not functionalized: the trace switches autocast" in compiler.last_traces(jfn)[-1].header


def test_inductor_regions_compute_eager_values():
    """Where inductor's defaults differ from eager, regions use eager's: bf16 rounded after each fused op (not
    once at the end of the region), and `x * 0` nan for inf and nan (not folded to 0), also in the VJP."""
    def f(x, y):
        a = (x + 1) * 3 + 1  # bf16: three roundings in eager
        b = y.detach() * 0 + 2  # inf * 0 is nan
        c = y * 0 / 0 + 2  # its VJP: (grad / 0) * 0, nan
        return a, b, c

    x = torch.randn(64, dtype=torch.bfloat16) * 100
    y = torch.tensor([float("inf"), float("nan"), -1.0, 2.0], requires_grad=True)
    jfn = compiler.jit(f, executors=(INDUCTOR, "torch"))
    got, want = jfn(x, y), f(x, y)
    assert torch.equal(got[0], want[0]), "bf16 rounding differs from eager"
    torch.testing.assert_close(got[1:], want[1:], equal_nan=True)
    g = torch.autograd.grad(got[2].sum(), y)[0]
    torch.testing.assert_close(g, torch.autograd.grad(want[2].sum(), y)[0], equal_nan=True)


@pytest.mark.parametrize("random_before", [False, True])
def test_writes_before_an_op_that_raises_happen_as_in_eager(random_before):
    # Found by bench/fuzz.py --executors inductor,torch (seed 400043): the functional trace writes inputs back
    # at its end, so when `max` over an empty dim raised, the `neg_` before it had not reached the argument.
    def fn(a, n):
        a.neg_()
        noise = torch.rand(2) if random_before else None
        values, _ = a.expand(n, *a.shape).flip(-1).max(0)  # n == 0: eager raises here, after neg_
        return values, noise

    jfn = compiler.jit(fn, executors=(AOT_EAGER, "torch"))
    for n in (2, 0, 3, 0):
        eager_arg, arg = torch.tensor(1.5), torch.tensor(1.5)
        torch.manual_seed(n)
        try:
            expected, eager_error = fn(eager_arg, n), None
        except IndexError as e:
            expected, eager_error = None, e
        eager_rng = torch.random.get_rng_state()
        torch.manual_seed(n)
        try:
            got, error = jfn(arg, n), None
        except IndexError as e:
            got, error = None, e
        assert (error is None) == (eager_error is None), f"n={n}: eager {eager_error!r}, jitted {error!r}"
        assert torch.equal(arg, eager_arg), f"n={n}: argument {arg} after the call, eager's {eager_arg}"
        assert torch.equal(torch.random.get_rng_state(), eager_rng), f"n={n}: RNG state differs from eager's"
        if expected is not None:
            td.assert_same(got, expected, where=f"n={n}")


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_unused_ops_that_raise_in_eager_raise_on_the_fused_path(cache):
    # Found by bench/fuzz.py --executors inductor,torch (seeds 461027, 461082): the default path keeps an unused
    # op that may raise (passes/dce.py), the functional trace's DCE dropped it, so the fused call returned where
    # eager raised (min() of an empty tensor; as_strided past its storage). Such ops now stay, outside regions.
    def reduced(a0, n):
        v3 = a0.expand(n, *a0.shape)
        v5 = v3.min()  # noqa: F841 - unused, as in the fuzzer's program
        return a0 * 2 + 1

    def strided(a0):
        v2 = a0.as_strided((2,), (1,))  # noqa: F841
        return a0.sin() * 3

    def bool_subtraction(a0):  # (seed 510954: kept, but carried as its prims, a cast and a subtraction, which
        v7 = a0 - 1  # noqa: F841 - accept the bool tensor eager's op refuses; kept ops now run as themselves)
        return a0.double() * 2

    executors = (AOT_EAGER, "torch")
    check_calls(reduced, [lambda: (torch.ones(2, 3), 2), lambda: (torch.ones(2, 3), 0)], cache=cache,
                executors=executors)
    check_calls(strided, [lambda: (torch.ones(3),), lambda: (torch.ones(1),)], cache=cache, executors=executors)
    for ex in (executors, (INDUCTOR, "torch")):
        check_calls(bool_subtraction, [lambda: (torch.ones(3, dtype=torch.bool),)] * 2, cache=cache, executors=ex)


# In-place ops whose operands promote past the written tensor's type: eager refuses the cast back (int64
# `x.mul_(1.5)`); meta kernels accept, and the functional form casts silently (bench/fuzz.py --executors
# inductor,torch seed 501967 returned where eager raised). Castable promotions and ops that cast their value run.
def _mul_int_by_float(x):
    x.mul_(1.5)
    return x + 1


def _out_int_of_float(x):
    y = torch.empty(4, dtype=torch.long)
    torch.mul(x, 1.5, out=y)
    return y


def _clamp_int_by_float(x):
    return x.clamp_(0.5) * 2


def _masked_fill_int_with_float(x):
    return x.masked_fill_(x > 1, 2.5) * 2


def _float_add_double(x):
    y = x.float()
    return y.add_(x.double())


@pytest.mark.parametrize("fn", [_mul_int_by_float, _out_int_of_float, _clamp_int_by_float, _masked_fill_int_with_float,
                                _float_add_double], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("executors", [None, (AOT_EAGER, "torch"), (INDUCTOR, "torch")], ids=["default", "aot_eager", "inductor"])
def test_inplace_results_that_cannot_cast_back_raise_as_eager(fn, executors):
    check_calls(fn, [lambda: (torch.arange(4),)] * 2, executors=executors)


def _resize_a_view_then_fill(a):
    v = a[:1]
    v.resize_(2, 1).fill_(0.5)
    return v * 2


@pytest.mark.parametrize("executors", [None, (INDUCTOR, "torch")], ids=["default", "inductor"])
def test_a_real_kernel_check_that_cannot_rebuild_the_arguments_is_no_error(executors):
    # fill_ of an int64 tensor with a float triggers the cast-back check; the view resized past its argument's
    # memory cannot be rebuilt on the CPU, which said nothing about the kernel but was raised as its error
    # (bench/fuzz.py --executors inductor,torch seed 510817)
    check_calls(_resize_a_view_then_fill, [lambda: (torch.zeros(1, 1, dtype=torch.int64),)] * 2, executors=executors)


@pytest.mark.parametrize("executor", [AOT_EAGER, INDUCTOR], ids=["aot_eager", "inductor"])
def test_results_of_symbolic_regions_carry_no_dynamo_marks(executor):
    # torch.compile(dynamic=True), which regions under symbolic values use, sets `_dynamo_propagated_dynamic_indices`
    # on its outputs: a result eager's has not (`vars(t)`, pickles, copies). bench/dynamo_port.py through inductor
    # compares result attributes: 126 of 327 programs differed in symbolic values
    def f(x):
        return abs(x) + 1, x * 2

    jf = compiler.jit(f, executors=(executor, "torch"), cache="symbolic values")
    for x in (torch.randn(3), torch.randn(5), torch.randn(4, requires_grad=True)):
        assert [vars(o) for o in jf(x)] == [vars(o) for o in f(x)] == [{}, {}]
    # ... nor on the arguments (a region's input it saw as dynamic: 9 more dynamo programs with modules)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    jnet = compiler.jit(net, executors=(executor, "torch"), cache="symbolic values")
    for n in (4, 7):
        x = torch.randn(n, 6)
        jnet(x)
        assert vars(x) == {}


def _masked_then_fused(a0, a1, n, s):
    v1 = a1[a1 > s] * 2
    v1.abs_()
    v3 = a1 * n
    v1 += a1
    return v3, v1


@pytest.mark.parametrize("cache", ["constant values", "no caching"])
@pytest.mark.parametrize("executor", [AOT_EAGER, INDUCTOR], ids=["aot_eager", "inductor"])
def test_a_region_fed_a_value_sized_tensor_checks_its_size_on_every_call(executor, cache):
    # `a1[a1 > s]` has a size the values decide, and one trace serves every such size; its functional copy lost
    # that mark, so the region after it was compiled for the first call's size: inductor's kernel then read one
    # element of the next call's empty tensor (a segfault: bench/fuzz.py --executors inductor,torch seed 520025)
    calls = [lambda v=v: (torch.tensor(0.0), torch.tensor(v, dtype=torch.float64), 3, 0.0) for v in (1.0, -1.0, 2.0)]
    check_calls(_masked_then_fused, calls, cache=cache, executors=(executor, "torch"))


@pytest.mark.timeout(60)  # (minutes before: the compile did not end in this time)
def test_a_chain_of_wheres_reading_their_input_three_times_compiles_in_seconds():
    # `v = torch.where(v > 0, v, -v)` ten times: inductor inlines each into the next, an expression 3^10 nodes
    # large, and its code generation ran for minutes (torch.compile's too: bench/fuzz.py --executors
    # inductor,torch seed 520535 "hung"); regions realize a pointwise value past 16 ops instead of 30
    def f(v):
        for _ in range(10):
            v = torch.where(v > 0, v, -v)
        return v.mT.sum()

    make = lambda: (torch.randn(5, 2, 2, generator=torch.Generator().manual_seed(0)),)  # noqa: E731
    check_calls(f, [make] * 2, executors=(INDUCTOR, "torch"))


def test_an_in_place_op_writes_a_dead_value_directly_and_only_then():
    """ResNet's `relu(bn(x), inplace=True)`: the functional trace wrote a copy of the batch norm's result (a copy
    per block); where nothing else reads the value, the op writes it as eager does. Where something else reads the
    old value (an earlier reader) or it is the caller's (an argument), the copy stays."""
    from compiler.executors.inductor import InductorExecutor

    fused = (InductorExecutor(backend="aot_eager"), "torch")

    def dead(x, w):
        y = torch.exp(x @ w)
        torch.relu_(y)
        return y * 2

    def read_before(x, w):
        y = torch.exp(x @ w) - 1.5
        a = y.sum(0)
        torch.relu_(y)
        return a + y

    def view_before(x, w):
        y = torch.exp(x @ w) - 1.5
        v = y.t()
        torch.relu_(y)
        return v * 3

    def argument(x, w):
        torch.relu_(x)
        return x * w.sum()

    # (view_before: the functional trace takes the view again from the written value, so nothing reads the old one)
    for fn, elided in ((dead, True), (read_before, False), (view_before, True), (argument, False)):
        x, w = torch.randn(3, 4) - 0.5, torch.randn(4, 4)
        xe = x.clone()
        with torch.no_grad():
            jf = compiler.jit(fn, executors=fused)
            got = jf(x, w)
            want = fn(xe, w)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(x, xe)  # (argument: the write reaches the caller's tensor)
        text = str(compiler.last_traces(jf)[-1])
        assert ("prims.clone" not in text) == elided, text


def test_a_result_viewing_a_buffer_of_its_own_op_is_new_memory():
    """F.linear of a 4-d input returns a view of a buffer it made for itself (no other tensor of the
    trace shares it): new memory, so a later in-place write is functionalized (ConvNeXt's blocks ran unfused,
    the whole trace in eager order: "views memory the compiler cannot attribute")."""
    from compiler.executors.inductor import InductorExecutor

    def block(x, w, b, scale):
        y = F.layer_norm(x.permute(0, 2, 3, 1), (4,))
        y = F.linear(y, w, b)  # (of a contiguous 4-d input: its meta result is a view of matmul's own buffer)
        y = F.gelu(y).permute(0, 3, 1, 2) * scale
        y += x
        return y

    x, w, b, scale = torch.randn(2, 4, 3, 3), torch.randn(4, 4), torch.randn(4), torch.randn(4, 1, 1)
    with torch.no_grad():
        jf = compiler.jit(block, executors=(InductorExecutor(backend="aot_eager"), "torch"))
        torch.testing.assert_close(jf(x, w, b, scale), block(x, w, b, scale))
    text = str(compiler.last_traces(jf)[-1])
    assert "not functionalized" not in text.splitlines()[0], text.splitlines()[0]

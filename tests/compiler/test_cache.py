"""Prologue guards and the cache: hits, misses and recompiles on every assumption a trace depends on."""
import pytest
import torch

import compiler


def add_scaled(x, y, alpha=1.0):
    return x + y * alpha


def test_hit_after_miss():
    jf = compiler.jit(add_scaled)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(jf(x, y), add_scaled(x, y))
    x2 = torch.randn(3, 4)
    torch.testing.assert_close(jf(x2, y), add_scaled(x2, y))  # new values, same metadata: a hit
    assert (compiler.cache_misses(jf), compiler.cache_hits(jf)) == (1, 1)


@pytest.mark.parametrize("change", ["dtype", "shape", "stride", "requires_grad", "number", "device_kind",
                                    "bool", "none"])
def test_recompiles_when_an_assumption_changes(change):
    def fn(x, y, scale, flag):
        out = x * scale + y
        return out if flag is None else out.sum()

    jf = compiler.jit(fn)
    base = dict(x=torch.randn(4, 4), y=torch.randn(4, 4), scale=2.0, flag=None)
    torch.testing.assert_close(jf(**base), fn(**base))
    changed = dict(base)
    if change == "dtype":
        changed["x"] = base["x"].double()
    elif change == "shape":
        changed["x"] = torch.randn(2, 4, 4)
    elif change == "stride":
        changed["x"] = torch.randn(4, 4).t()
    elif change == "requires_grad":
        changed["x"] = torch.randn(4, 4, requires_grad=True)
    elif change == "number":
        changed["scale"] = 3.0
    elif change == "device_kind":
        changed["x"], changed["y"] = torch.randn(4, 4, device="meta"), torch.randn(4, 4, device="meta")
    elif change == "bool":
        changed["flag"] = True
    elif change == "none":
        changed["flag"] = "x"
    out = jf(**changed)
    assert compiler.cache_misses(jf) == 2, f"a changed {change} must not reuse the first trace"
    expected = fn(**changed)
    assert out.shape == expected.shape and out.dtype == expected.dtype and out.device == expected.device
    if expected.device.type != "meta":
        torch.testing.assert_close(out, expected)
    # and both entries stay usable
    jf(**base)
    jf(**changed)
    assert compiler.cache_misses(jf) == 2 and compiler.cache_hits(jf) == 2


def test_number_guard_distinguishes_int_float_and_bool():
    jf = compiler.jit(lambda x, n: x * n)
    x = torch.ones(2)
    assert jf(x, 2).dtype == torch.float32
    jf(x, 2.0)
    jf(x, True)
    assert compiler.cache_misses(jf) == 3
    torch.testing.assert_close(jf(x, 5), x * 5)  # a different int value is a different trace
    assert compiler.cache_misses(jf) == 4


def test_grad_mode_is_guarded():
    w = torch.randn(3, requires_grad=True)
    jf = compiler.jit(lambda w: w * 2)
    assert jf(w).requires_grad
    with torch.no_grad():
        out = jf(w)
    assert not out.requires_grad, "a trace made with grad enabled must not be reused under no_grad"
    assert compiler.cache_misses(jf) == 2


def test_default_dtype_is_guarded():
    jf = compiler.jit(lambda x: x + torch.ones(2))
    x = torch.ones(2, dtype=torch.float64)
    assert jf(x).dtype == torch.float64
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        out = jf(torch.ones(2, dtype=torch.float64))
        assert compiler.cache_misses(jf) == 2
        assert out.dtype == (torch.ones(2, dtype=torch.float64) + torch.ones(2)).dtype
    finally:
        torch.set_default_dtype(old)


def test_kwargs_and_containers_are_guarded():
    def fn(xs, *, opts):
        return xs[0] * opts["scale"] + xs[1]

    jf = compiler.jit(fn)
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(jf([a, b], opts={"scale": 2}), fn([a, b], opts={"scale": 2}))
    jf([a, b], opts={"scale": 2})
    assert compiler.cache_hits(jf) == 1
    jf((a, b), opts={"scale": 2})  # tuple instead of list
    jf([a, b, a], opts={"scale": 2})  # longer list
    jf([a, b], opts={"scale": 2, "extra": None})  # new key
    assert compiler.cache_misses(jf) == 4


def test_no_caching_traces_every_call():
    jf = compiler.jit(add_scaled, cache="no caching")
    x = torch.randn(2)
    for _ in range(3):
        torch.testing.assert_close(jf(x, x), add_scaled(x, x))
    assert compiler.cache_misses(jf) == 3 and compiler.cache_hits(jf) == 0


def test_cache_options_are_checked():
    assert compiler.jit(add_scaled, cache="symbolic values").cache_option == "symbolic values"
    with pytest.raises(ValueError, match="unknown cache option"):
        compiler.jit(add_scaled, cache="sometimes")


def test_prologue_trace_prints_and_checks_every_tensor_fact():
    jf = compiler.jit(add_scaled)
    x = torch.randn(2, 3)
    jf(x, x.t().contiguous().t())
    (prologue,) = compiler.last_prologue_traces(jf)
    src = str(prologue)
    for fact in ("dtype is not torch.float32", "shape != (2, 3)", "stride() != (3, 1)", "stride() != (1, 2)",
                 "is_cpu", "requires_grad", "is_grad_enabled", "get_default_dtype", "_len_torch_function_stack"):
        assert fact in src, fact
    compile(src, "<prologue>", "exec")
    guard = prologue.python_callable()
    assert guard((x, x.t().contiguous().t()), {}) is not None
    assert guard((x, x), {}) is None  # strides differ from the traced layout
    assert guard((x,), {}) is None
    assert guard(("not a tensor", x), {}) is None


def test_module_training_flag_is_guarded():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    jm = compiler.jit(m)
    x = torch.randn(8, 4)
    m.eval()
    torch.testing.assert_close(jm(x), m(x))
    m.train()
    torch.manual_seed(3)
    got = jm(x)
    torch.manual_seed(3)
    torch.testing.assert_close(got, m(x))
    assert compiler.cache_misses(jm) == 2


def test_default_device_is_guarded():
    jf = compiler.jit(lambda x: x + torch.ones(2))
    assert jf(torch.ones(2)).device.type == "cpu"
    with torch.device("meta"):
        out = jf(torch.ones(2, device="meta"))
    assert out.device.type == "meta" and compiler.cache_misses(jf) == 2
    with torch.device("meta"):
        # a cpu input with a meta default device: eager's torch.ones lands on meta -> device mismatch
        with pytest.raises(compiler.DeviceMismatchError):
            jf(torch.ones(2, device="cpu"))
    jf(torch.ones(2))
    assert compiler.cache_hits(jf) == 1


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
def test_factories_before_a_data_dependent_read_use_the_default_device(executors):
    """A segment before a read of tensor data runs inside tracing, where the caller's `torch.device(...)` mode is
    not active: its factories made CPU tensors where eager's are on the default device (on CUDA: a device
    mismatch in the next op; here a result on another device). Seen with the CUDA tier's aliasing programs."""
    def f(x):
        idx = torch.zeros(2)
        t = torch.tensor([0.0, 1.0])
        if x.sum() > 0:
            x = x * 2
        return idx, t, x

    jf = compiler.jit(f, executors=executors)
    x = torch.ones(3, device="cpu")
    with torch.device("meta"):
        expected = [o.device for o in f(x)]
        for _ in range(2):  # tracing, then the cached segments
            assert [o.device for o in jf(x)] == expected == [torch.device("meta")] * 2 + [torch.device("cpu")]


def test_negative_zero_is_not_zero():
    jf = compiler.jit(lambda x, d: x / d)
    x = torch.ones(2)
    torch.testing.assert_close(jf(x, 0.0), x / 0.0)
    torch.testing.assert_close(jf(x, -0.0), x / -0.0)
    assert compiler.cache_misses(jf) == 2


class CountsCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.seen = []

    def forward(self, x):
        self.calls += 1  # an attribute the trace checks (its value), changed by every call
        self.last = x.sum()  # a plain tensor attribute (its identity is checked), reassigned by every call
        return x * self.calls


def test_traces_whose_call_changes_what_they_check_do_not_pile_up():
    # (before: every call traced and kept its entry, which no later call could pass: 50 entries, each checked
    # on every call)
    model, eager_model = CountsCalls(), CountsCalls()
    jm = compiler.jit(model)
    for step in range(50):
        x = torch.ones(2)
        assert torch.equal(jm(x), eager_model(x)), step
        assert model.calls == eager_model.calls and torch.equal(model.last, eager_model.last), step
    jitted = compiler._jitted(jm)
    assert len(jitted.entries) == compiler.runtime.cache.MAX_UNUSED_SELF_INVALIDATED and compiler.cache_misses(jm) == 50

    # state put back between calls: such an entry is used, and then kept like any other
    model.calls = 0
    for step in range(3):
        model.calls, model.last = 7, None
        jm(torch.ones(2))
        assert model.calls == 8
    assert compiler.cache_hits(jm) == 2 and not jitted.last_entry.self_invalidated

"""Issue 11's numbered places where a cached trace differed from eager; each test compares with eager."""
import collections
import dataclasses
import gc
import io
import pickle
import threading
import weakref

import pytest
import torch

import compiler


def _twins(make):
    torch.manual_seed(0)
    a, b = make(), make()
    b.load_state_dict(a.state_dict())
    return a, b


# 4. a jitted module behaves as the module for state_dict, parameters, train/eval, to(), pickling
def test_jitted_module_state_has_the_modules_names_and_round_trips():
    def make():
        return torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))

    model, plain = _twins(make)
    jm = compiler.jit(model)
    assert list(jm.state_dict()) == list(plain.state_dict())
    assert [n for n, _ in jm.named_parameters()] == [n for n, _ in plain.named_parameters()]
    assert [n for n, _ in jm.named_buffers()] == [n for n, _ in plain.named_buffers()]
    plain.load_state_dict(jm.state_dict())  # loads into the plain module without key surgery
    jm.load_state_dict(plain.state_dict())
    buf = io.BytesIO()
    torch.save(jm.state_dict(), buf)
    buf.seek(0)
    plain.load_state_dict(torch.load(buf))
    jm.eval()
    assert not model.training and not model[1].training
    x = torch.randn(4, 3)
    assert torch.equal(jm(x), plain.eval()(x))
    jm.train()
    assert model[1].training
    copy = pickle.loads(pickle.dumps(jm))
    assert type(copy) is type(jm) and list(copy.state_dict()) == list(plain.state_dict())
    jm.to(torch.float64)
    assert model[0].weight.dtype is torch.float64
    assert jm(x.double()).dtype is torch.float64


# 5. a call that raises after a Python effect keeps the effect, as eager does
def test_python_effects_before_a_users_exception_stay():
    global DELETED

    DELETED = 1

    def drops_then_fails(x):
        global DELETED
        del DELETED
        return x + DELETED

    with pytest.raises(NameError):
        compiler.jit(drops_then_fails)(torch.ones(2))
    assert "DELETED" not in globals()

    class Records(torch.nn.Module):
        def forward(self, x):
            self.seen = x * 2
            raise KeyError("after the store")

    m = Records()
    with pytest.raises(KeyError):
        compiler.jit(m)(torch.ones(2))
    assert torch.equal(m.seen, torch.full((2,), 2.0))


def test_a_refused_trace_still_puts_back_what_it_wrote():
    global WRITTEN

    WRITTEN = "before"

    def writes_then_unsupported(x):
        global WRITTEN
        WRITTEN = "after"
        return x.narrow(0, torch.tensor(0), 1)  # the compiler refuses this (a size from a tensor's value)

    with pytest.raises(compiler.DataDependentError):
        compiler.jit(writes_then_unsupported)(torch.ones(2))
    assert WRITTEN == "before"


# 6. the cache keeps no reference to argument tensors
def test_the_cache_keeps_no_argument_tensor_alive():
    def fn(x):
        return x * 2 if x.sum() > 0 else x

    class M(torch.nn.Module):
        def forward(self, x):
            self.total = x.sum()
            return x + 1

    for jfn in (compiler.jit(lambda x: x * 2), compiler.jit(fn), compiler.jit(M())):
        refs = []
        for i in range(10):  # 4 MB each
            x = torch.randn(1024, 1024) * (1 if i % 2 else -1)
            refs.append(weakref.ref(x))
            jfn(x)
            del x
        gc.collect()
        assert sum(r() is not None for r in refs) == 0


# 7. in-place effects on inputs before an exception happen under the jit too
def test_in_place_on_an_input_then_raise():
    def fn(x):
        x.add_(1)
        raise ValueError("boom")

    a, b = torch.zeros(3), torch.zeros(3)
    with pytest.raises(ValueError, match="boom"):
        fn(b)
    with pytest.raises(ValueError, match="boom"):
        compiler.jit(fn)(a)
    assert torch.equal(a, b)

    def after_a_read(x):
        x.mul_(2)
        if x.sum() > 0:
            x.add_(1)
        raise ValueError("late")

    a, b = torch.ones(3), torch.ones(3)
    with pytest.raises(ValueError):
        after_a_read(b)
    with pytest.raises(ValueError):
        compiler.jit(after_a_read)(a)
    assert torch.equal(a, b)


# 8. threads: no lost updates of a global counter
COUNT = 0


def _count(x):
    global COUNT
    COUNT += 1
    return x + 1


def test_a_global_counter_from_four_threads():
    global COUNT
    COUNT = 0
    jfn = compiler.jit(_count)
    errors = []

    def work():
        try:
            for _ in range(100):
                assert torch.equal(jfn(torch.ones(2)), torch.full((2,), 2.0))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and COUNT == 400


def test_threads_tracing_different_shapes_get_their_own_results():
    jfn = compiler.jit(lambda x: (x * 2).sum(0))
    results, errors = {}, []

    def work(n):
        try:
            for _ in range(10):
                x = torch.arange(float(n * 3)).reshape(n, 3)
                results[n] = torch.equal(jfn(x), (x * 2).sum(0))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(results.values()) and len(results) == 4


# 1. hooks added after the first call run on the next call, as in eager
def test_hooks_added_or_removed_after_the_first_call():
    torch.manual_seed(0)
    m = torch.nn.Linear(2, 2)
    jm = compiler.jit(m)
    x = torch.ones(1, 2)
    assert torch.equal(jm(x), m(x))
    for register in (lambda: m.register_forward_hook(lambda mod, i, o: o * 3),
                     lambda: m.register_forward_pre_hook(lambda mod, i: (i[0] * 2,)),
                     lambda: torch.nn.modules.module.register_module_forward_hook(lambda mod, i, o: o + 1)):
        handle = register()
        try:
            assert torch.equal(jm(x), m(x))
        finally:
            handle.remove()
        assert torch.equal(jm(x), m(x))


def test_hooks_added_to_a_module_a_jitted_function_calls():
    # (before: the hook dictionaries of a module reached through a closure were not guarded: a forward hook
    # added after the first call was ignored on cache hits)
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 2)

    def fn(x):
        return lin(x) + 1

    jfn = compiler.jit(fn)
    x = torch.ones(1, 2)
    assert torch.equal(jfn(x), fn(x))
    for register in (lambda: lin.register_forward_hook(lambda mod, i, o: o * 3),
                     lambda: lin.register_forward_pre_hook(lambda mod, i: (i[0] * 2,))):
        handle = register()
        try:
            assert torch.equal(jfn(x), fn(x))
        finally:
            handle.remove()
        assert torch.equal(jfn(x), fn(x))
    assert torch.equal(jfn(x), fn(x)) and compiler.cache_hits(jfn) >= 1


# (module backward hooks: tests/compiler/test_backward_hooks.py)


# reading Tensor.grad and returning dataclasses work as in eager
def test_reading_grad_for_clipping_and_a_hand_written_step():
    def clip(p, max_norm):
        if p.grad is None:
            return None
        norm = p.grad.norm()
        p.grad.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
        return norm

    def sgd(w, lr):
        with torch.no_grad():
            w.sub_(w.grad * lr)

    jclip, jsgd = compiler.jit(clip), compiler.jit(sgd)
    a, b = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
    assert jclip(a, 1.0) is None and clip(b, 1.0) is None
    for _ in range(3):
        for w in (a, b):
            w.grad = None
            (w * w * 3).sum().backward()
        assert torch.equal(jclip(a, 1.0), clip(b, 1.0)) and torch.equal(a.grad, b.grad)
        jsgd(a, 0.1)
        sgd(b, 0.1)
        assert torch.equal(a, b)
    assert compiler.cache_hits(jclip) == 2


def test_returning_a_dataclass():
    import dataclasses

    @dataclasses.dataclass
    class Output:
        loss: torch.Tensor
        logits: torch.Tensor
        aux: object = None

    def fn(x):
        return Output(loss=(x * 2).sum(), logits=x * 2)

    jfn = compiler.jit(fn)
    for _ in range(2):
        got, want = jfn(torch.ones(3)), fn(torch.ones(3))
        assert type(got) is Output and torch.equal(got.loss, want.loss) and torch.equal(got.logits, want.logits)
        assert got.aux is None


class _ModelOutput(collections.OrderedDict):
    """Hugging Face's ModelOutput, in short: a dataclass that is also an ordered dict of its non-None fields;
    item and attribute writes of an existing key stay in sync, an attribute set later is not a key."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is not None:
                self[f.name] = getattr(self, f.name)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class _LMOutput(_ModelOutput):
    loss: torch.Tensor = None
    logits: torch.Tensor = None
    hidden: tuple = None


def test_returning_a_model_output_keeps_its_keys_and_attributes():
    # (before: the output was rebuilt from its fields: keys ['loss', 'logits'] where eager has ['logits',
    # 'hidden'], since `out.loss = ...` on a field that was None is an attribute, not a key)
    def fn(x):
        out = _LMOutput(logits=x * 2)
        out.loss = out.logits.sum()
        out["hidden"] = (x + 1,)
        return out

    jfn = compiler.jit(fn)
    for _ in range(3):
        x = torch.randn(3)
        got, want = jfn(x), fn(x)
        assert type(got) is _LMOutput and list(got.keys()) == list(want.keys()) == ["logits", "hidden"]
        assert torch.equal(got.loss, want.loss) and torch.equal(got.logits, want.logits)
        assert all(torch.equal(a, b) for a, b in zip(got.to_tuple()[:1], want.to_tuple()[:1]))
        assert torch.equal(got["hidden"][0], want["hidden"][0]) and torch.equal(got.hidden[0], want.hidden[0])
    assert compiler.cache_hits(jfn) == 2


# 2. a custom autograd.Function runs as a unit whose backward is the user's
class _Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3, (x > 0).long()

    @staticmethod
    def backward(ctx, grad, _):
        (x,) = ctx.saved_tensors
        # deliberately not the true derivative: the user's backward, not autograd's, must run
        return (grad * ctx.k * x if ctx.needs_input_grad[0] else None), None


class _ExpArgmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        idx = x.argmax()
        ctx.save_for_backward(out)
        ctx.mark_non_differentiable(idx)
        return out, idx

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad, _):
        (out,) = ctx.saved_tensors
        return grad * out * 2


def _uses_functions(x):
    a, positive = _Cube.apply(x, 5.0)
    b, idx = _ExpArgmax.apply(a + 1)
    return (b * 2).sum(), positive, idx


def test_custom_autograd_functions_keep_their_backward():
    jfn = compiler.jit(_uses_functions)
    for seed in range(3):
        x1 = torch.randn(4, generator=torch.Generator().manual_seed(seed)).requires_grad_()
        x2 = x1.detach().clone().requires_grad_()
        got, want = jfn(x1), _uses_functions(x2)
        assert all(torch.equal(g, w) for g, w in zip(got, want))
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [True, False, False]
        got[0].backward()
        want[0].backward()
        assert torch.equal(x1.grad, x2.grad)
    assert compiler.cache_hits(jfn) == 2
    x = torch.randn(4)  # needs_input_grad False: no grad anywhere, as in eager
    assert not jfn(x)[0].requires_grad


# 3. seeds and RNG state set inside the function are part of the trace: eager's numbers, call by call
def _seed_in_fork(x):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        a = torch.rand_like(x)
    return a + torch.rand_like(x)


def _seed_in_freeze(x):
    from torch.testing._internal.common_utils import freeze_rng_state

    with freeze_rng_state():
        torch.manual_seed(5)
        y = torch.rand_like(x)
    return y * torch.rand_like(x)


def _state_saved_and_restored(x):
    s = torch.get_rng_state()
    a = torch.rand_like(x)
    torch.set_rng_state(s)
    return a, torch.rand_like(x)


def _seed_then_data_read(x):
    torch.manual_seed(1)
    y = torch.rand_like(x)
    if y.sum() > 1.5:  # a segment boundary: the draws before it run for real
        return y + torch.rand_like(x)
    return y - torch.randn(3)


def _draw_then_data_read(x):
    y = torch.rand_like(x)
    if y.sum() > 1.5:
        return y + torch.rand_like(x)
    return y - 1


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
@pytest.mark.parametrize("fn", [_seed_in_fork, _seed_in_freeze, _state_saved_and_restored, _seed_then_data_read,
                                _draw_then_data_read])
def test_rng_changes_inside_the_function_give_eagers_numbers(fn, executors):
    jfn = compiler.jit(fn) if executors is None else compiler.jit(fn, executors=executors)
    for call in range(5):
        x = torch.ones(3)
        torch.manual_seed(call)
        want, after_eager = fn(x), torch.rand(2)
        torch.manual_seed(call)
        got, after_jit = jfn(x), torch.rand(2)
        want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, tuple) else (got,))
        assert all(torch.equal(g, w) for g, w in zip(got, want))
        assert torch.equal(after_jit, after_eager)  # the caller's RNG state afterwards is eager's too
    assert compiler.cache_hits(jfn) >= 3


def test_seed_is_printed_in_the_trace_in_eagers_order():
    jfn = compiler.jit(_seed_in_fork)
    jfn(torch.ones(3))
    text = str(compiler.last_traces(jfn)[-1])
    order = [text.index(s) for s in ("get_state()", "torch.manual_seed(0)", "rand_like", "set_state(")]
    assert order == sorted(order)


# 9. recursion: as deep as eager, RecursionError past what the interpreter holds, never a crash
def _recurse(x, n):
    return x if n == 0 else _recurse(x + 1, n - 1)


def test_recursion_reaches_eagers_depth():
    lo, hi = 1, 3000  # eager's deepest n from here
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            _recurse(torch.zeros(1), mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    jitted = compiler.jit(_recurse, cache="no caching")
    assert torch.equal(jitted(torch.zeros(1), lo - 3), torch.full((1,), float(lo - 3)))
    # the limit follows Python frames only (eager's counter also counts C calls below): about eager's depth
    with pytest.raises(RecursionError):
        jitted(torch.zeros(1), lo + 100)


def test_very_deep_recursion_raises_instead_of_crashing():
    import os
    import subprocess
    import sys

    code = ("import sys, torch, compiler\nsys.setrecursionlimit(100000)\n"
            "def rec(x, n):\n    return x if n == 0 else rec(x + 1, n - 1)\n"
            "try:\n    compiler.jit(rec)(torch.zeros(1), 20000)\nexcept RecursionError:\n    print('RecursionError')\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "RecursionError", done.stderr[-2000:]

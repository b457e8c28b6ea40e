"""Issue 11's numbered places where a cached trace differed from eager; each test compares with eager."""
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
        return x.numpy()  # the compiler refuses this (no run-time form while tracing)

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

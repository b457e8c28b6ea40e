"""State a forward stores outside its result is replayed after the computation (compiler/epilogue.py):
after every call the module, globals and closures hold what eager leaves there."""
import torch

import compiler


class Stateful(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("running", torch.zeros(3))
        self.cache = {}

    def forward(self, x):
        h = self.lin(x)
        if not hasattr(self, "first"):
            self.register_buffer("first", h.detach().mean(0))  # on the first call only
        self.running = self.running * 0.9 + h.detach().mean(0) * 0.1  # a buffer assigned, not updated in place
        self.last = h.detach()  # a plain attribute
        self.cache["k"] = h.detach() * 2  # a module-held dict
        return h + self.first + self.running


def _pair(cls):
    torch.manual_seed(0)
    a, b = cls(), cls()
    b.load_state_dict(a.state_dict())
    return a, b


def test_attribute_buffer_and_container_writes_reach_the_module_as_in_eager():
    jitted_model, eager_model = _pair(Stateful)
    jm = compiler.jit(jitted_model)
    for step in range(4):
        x = torch.randn(2, 3)
        assert torch.equal(jm(x), eager_model(x)), step
        for name in ("running", "first", "last"):
            assert torch.equal(getattr(jitted_model, name), getattr(eager_model, name)), (step, name)
        assert torch.equal(jitted_model.cache["k"], eager_model.cache["k"])
        assert sorted(jitted_model._buffers) == sorted(eager_model._buffers) == ["first", "running"]
    assert "store" in str(compiler.last_traces(jm)[-1])


def test_a_buffer_assigned_every_call_is_served_from_the_cache():
    # thunder's module-buffer issue #1951: the buffer's new value must be what the next call reads
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))

        def forward(self, x):
            self.steps = self.steps + 1
            return x * self.steps

    jitted_model, eager_model = _pair(Counter)
    jm = compiler.jit(jitted_model)
    for _ in range(5):
        x = torch.ones(2)
        assert torch.equal(jm(x), eager_model(x))
    assert jitted_model.steps.item() == eager_model.steps.item() == 5
    assert compiler.cache_misses(jm) == 1 and compiler.cache_hits(jm) == 4


def test_a_kv_cache_kept_as_an_attribute_grows_as_in_eager():
    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)
            self.kv = None

        def forward(self, x):
            k = self.proj(x)
            self.kv = k if self.kv is None else torch.cat([self.kv, k], dim=0)
            return self.kv.sum(0)

    jitted_model, eager_model = _pair(Decoder)
    jm = compiler.jit(jitted_model)
    for _ in range(4):
        x = torch.randn(1, 4)
        assert torch.equal(jm(x), eager_model(x))
        assert torch.equal(jitted_model.kv, eager_model.kv)
    assert jitted_model.kv.shape == (4, 4)


def test_globals_and_closure_variables_holding_results():
    store = {}

    def make():
        last = None

        def fn(x):
            nonlocal last
            global LAST_GLOBAL
            last = x * 2
            LAST_GLOBAL = x + 1
            return x.sum()

        return fn, lambda: last

    fn, read_last = make()
    jfn = compiler.jit(fn)
    for v in (1.0, 2.0):
        x = torch.full((2,), v)
        jfn(x)
        store[v] = (read_last(), LAST_GLOBAL)  # noqa: F821 - set by fn
        assert torch.equal(store[v][0], x * 2) and torch.equal(store[v][1], x + 1)


def test_a_store_after_a_data_dependent_read():
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("hits", torch.zeros(()))

        def forward(self, x):
            if x.sum() > 0:
                self.hits = self.hits + 1
            return x * 2

    jitted_model, eager_model = _pair(Gate)
    jm = compiler.jit(jitted_model)
    for v in (1.0, -1.0, 1.0, 1.0):
        x = torch.full((2,), v)
        assert torch.equal(jm(x), eager_model(x))
    assert jitted_model.hits.item() == eager_model.hits.item() == 3

"""State a forward stores outside its result is replayed after the computation (compiler/frontend/epilogue.py):
after every call the module, globals and closures hold what eager leaves there."""
import pytest
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


class StoresAroundAnIndex(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("before", torch.zeros(()))
        self.register_buffer("after", torch.zeros(()))

    def forward(self, x, idx):
        self.before = x.mean()  # eager stores this even when the indexing below raises
        y = x[idx] * 2  # an index out of range raises only when the cached computation runs
        self.after = y.sum()  # ... and never gets here
        return y


LAST = None


def _global_store_then_index(x, idx):
    global LAST
    LAST = x * 3
    return x[idx]


def _outcome(model, *args):
    """The model's result, or "IndexError" where the call raised it (eager and jit must agree on which)."""
    try:
        return model(*args)
    except IndexError:
        return "IndexError"


def _same_outcome(a, b) -> bool:
    return type(a) is type(b) and (isinstance(a, str) or torch.equal(a, b))


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
def test_stores_happen_where_eager_makes_them_when_a_cached_call_raises(executors):
    eager_model, jitted_model = StoresAroundAnIndex(), StoresAroundAnIndex()
    jm = compiler.jit(jitted_model, executors=executors)
    for step, idx in enumerate([[0, 1], [2, 3], [0, 9], [1, 1], [7, 0]]):
        x, idx = torch.randn(4) + step, torch.tensor(idx)
        assert _same_outcome(_outcome(eager_model, x, idx), _outcome(jm, x, idx)), step
        assert torch.equal(jitted_model.before, eager_model.before), step  # (was stale after a raise)
        assert torch.equal(jitted_model.after, eager_model.after), step
    assert compiler.cache_hits(jm) == 4
    text = str(compiler.last_traces(jm)[-1])
    assert text.index("store(") < text.index("__getitem__")  # the store sits where eager makes it

    global LAST
    jfn = compiler.jit(_global_store_then_index, executors=executors)
    for step, idx in enumerate([[0], [5], [1]]):
        x, idx = torch.randn(2), torch.tensor(idx)
        for fn in (_global_store_then_index, jfn):
            LAST = None
            try:
                fn(x, idx)
            except IndexError:
                pass
            assert torch.equal(LAST, x * 3), step


class WritesTwiceAroundAnIndex(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.zeros(()))
        self.register_buffer("b", torch.zeros(2))

    def forward(self, x, idx):
        self.a = x.mean()  # eager keeps these first writes when the indexing below raises
        self.b = None
        y = x[idx] * 2
        self.a = y.sum()
        self.b = y
        return y


TWICE = None


def _global_written_twice(x, idx):
    global TWICE
    TWICE = x * 3
    y = x[idx]
    TWICE = y + 1
    return y


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
def test_a_slot_written_twice_keeps_its_first_write_when_a_cached_call_raises_between(executors):
    # (before: only the last write was stored, at its own point: a raise between left the old value)
    global TWICE
    eager_model, jitted_model = WritesTwiceAroundAnIndex(), WritesTwiceAroundAnIndex()
    jm = compiler.jit(jitted_model, executors=executors)
    jfn = compiler.jit(_global_written_twice, executors=executors)
    for step, idx in enumerate([[0, 1], [2, 3], [0, 9], [1, 1], [7, 0]]):
        x, idx = torch.randn(4) + step, torch.tensor(idx)
        outcomes, stored = [], []
        for model, fn in ((eager_model, _global_written_twice), (jm, jfn)):
            outcomes.append(_outcome(model, x, idx))
            TWICE = None
            try:
                fn(x, idx)
            except IndexError:
                pass
            stored.append(TWICE)
        assert _same_outcome(*outcomes), step
        assert torch.equal(jitted_model.a, eager_model.a), step
        assert (jitted_model.b is None) == (eager_model.b is None), step
        assert eager_model.b is None or torch.equal(jitted_model.b, eager_model.b), step
        assert torch.equal(stored[0], stored[1]), step
    assert compiler.cache_hits(jm) == 3  # both raising calls hit; the call after a raise finds b None: traces


class History(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hist = []

    def forward(self, x):
        self.hist.append(x.mean())
        return x * 2


def test_a_module_list_appended_to_on_every_call():
    # (before: the second call raised CompilerError "changed its own inputs' metadata": the list's key guard
    # compared tuple(list), its items, with its indices)
    eager_model, jitted_model = History(), History()
    jm = compiler.jit(jitted_model)
    for step in range(3):
        x = torch.randn(4) + step
        assert torch.equal(jm(x), eager_model(x))
        assert len(jitted_model.hist) == len(eager_model.hist) == step + 1
        assert all(torch.equal(a, b) for a, b in zip(jitted_model.hist, eager_model.hist))


class ContainersAroundAnIndex(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hist = []
        self.d = {}

    def forward(self, x, idx):
        self.hist.append(x.mean())  # eager keeps these when the indexing below raises
        self.d["before"] = x.sum()
        y = x[idx] * 2
        self.hist.append(y.sum())
        self.d["after"] = y
        return y


class ContainersAroundAnIndexInPlaceOperators(ContainersAroundAnIndex):
    def forward(self, x, idx):
        self.hist += [x.mean()]  # (BINARY_OP in place, not a method call)
        self.d |= {"before": x.sum()}
        y = x[idx] * 2
        self.hist += [y.sum()]
        self.d |= {"after": y}
        return y


@pytest.mark.parametrize("cls", [ContainersAroundAnIndex, ContainersAroundAnIndexInPlaceOperators])
def test_module_container_changes_happen_where_eager_makes_them_when_a_call_raises(cls):
    # (before: a module-held list/dict's contents were stored at the end of the trace; `+=`/`|=` were until
    # the interpreter reported in-place operators on containers)
    eager_model, jitted_model = cls(), cls()
    jm = compiler.jit(jitted_model)
    for step, idx in enumerate([[0, 1], [0, 9], [1, 1], [7, 0]]):
        x, idx = torch.randn(4) + step, torch.tensor(idx)
        assert _same_outcome(_outcome(eager_model, x, idx), _outcome(jm, x, idx)), step
        assert len(jitted_model.hist) == len(eager_model.hist), step
        assert all(torch.equal(a, b) for a, b in zip(jitted_model.hist, eager_model.hist)), step
        assert list(jitted_model.d) == list(eager_model.d), step
        assert all(torch.equal(jitted_model.d[k], eager_model.d[k]) for k in eager_model.d), step
    text = str(compiler.last_traces(jm)[-1])
    assert text.index("store(") < text.index("__getitem__")


# ---------------------------------------------------------------- stores across data-dependent reads

class StoresAcrossReads(torch.nn.Module):
    """Writes in the first and second of three segments (each `if` on a tensor ends one), each followed by
    an indexing that raises only when the computation runs."""

    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.zeros(()))
        self.register_buffer("b", torch.zeros(()))

    def forward(self, x, idx):
        x.add_(1)  # an effect on the input: once per call, as in eager, also when the call raises
        self.a = x.mean()
        self.b = None
        self.more_state(x)
        y = x[idx] * 2  # raises in segment 1, after the writes above
        if y.sum() > 0:
            self.b = y.sum()
            z = x[idx + 1]  # raises in segment 2 (not the final one), after the write of b
            if z.sum() > 0:
                return z * 3
            return z
        return y

    def more_state(self, x):
        pass


class StoresAcrossReadsInAttributesAndLists(StoresAcrossReads):
    """Also a plain attribute and a module-held list (both guarded by identity: every call traces)."""

    def __init__(self):
        super().__init__()
        self.hist = []

    def more_state(self, x):
        self.note = x.sum()
        self.hist.append(x.max())


def _state(model) -> list:
    return [model.a, model.b, getattr(model, "note", None), list(getattr(model, "hist", []))]


def _same_state(a, b) -> bool:
    def same(u, v):
        if isinstance(u, list):
            return len(u) == len(v) and all(same(p, q) for p, q in zip(u, v))
        return (u is None and v is None) or (u is not None and v is not None and torch.equal(u, v))

    return same(a, b)


# idx [2] on 4 elements: x[idx] works, x[idx + 1] works; [3]: x[idx + 1] raises (in segment 2); [9]: x[idx]
# raises (in segment 1). The signs of x pick the branches.
_ACROSS_READS_CALLS = [([2], 1.0), ([2], 2.0), ([3], 1.0), ([9], 1.0), ([1], -9.0), ([9], -9.0), ([3], 1.0),
                       ([2], -1.0), ([0], 1.0), ([3], 2.0), ([9], 3.0)]


@pytest.mark.parametrize("cls", [StoresAcrossReads, StoresAcrossReadsInAttributesAndLists])
@pytest.mark.parametrize("first", [0, 3], ids=["first-call-works", "first-call-raises"])
@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
def test_stores_in_earlier_segments_happen_where_eager_makes_them_when_a_call_raises(executors, first, cls):
    # (before: a write in a segment before the final one was stored at the final segment's start: a cached
    # call raising in between kept the old value; a segment raising while tracing ran its ops twice and lost
    # the stores)
    eager_model, jitted_model = cls(), cls()
    jm = compiler.jit(jitted_model, executors=executors)
    calls = _ACROSS_READS_CALLS[first:] + _ACROSS_READS_CALLS[:first]
    for step, (idx, sign) in enumerate(calls):
        x = (torch.arange(4.0) + step) * sign
        xe, xj, idx = x.clone(), x.clone(), torch.tensor(idx)
        assert _same_outcome(_outcome(eager_model, xe, idx), _outcome(jm, xj, idx)), step
        assert torch.equal(xe, xj), step  # x.add_(1) happened once
        assert _same_state(_state(jitted_model), _state(eager_model)), step
    if cls is StoresAcrossReads:
        assert compiler.cache_hits(jm) >= 5


class ResetsInOneBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.zeros(()))

    def forward(self, x):
        self.a = x.mean()
        self.more_state(x)
        if x.sum() > 0:  # one continuation leaves the tensors, the other resets them
            self.a = None
            self.less_state()
        return x * 2

    def more_state(self, x):
        pass

    def less_state(self):
        pass


class ResetsAndDeletesInOneBranch(ResetsInOneBranch):
    """Also a plain attribute, deleted in one branch (guarded by identity: every call traces)."""

    def more_state(self, x):
        self.stat = x.sum()

    def less_state(self):
        del self.stat


class ResetsAListInOneBranch(ResetsInOneBranch):
    """A module-held list appended to, and put back as it was in one branch."""

    def __init__(self):
        super().__init__()
        self.hist = []

    def more_state(self, x):
        self.hist.append(x.sum())

    def less_state(self):
        self.hist.pop()

    @property
    def stat(self):  # (compared by the test below)
        return torch.stack(self.hist) if self.hist else torch.zeros(0)


@pytest.mark.parametrize("cls", [ResetsInOneBranch, ResetsAndDeletesInOneBranch, ResetsAListInOneBranch])
def test_a_continuation_that_resets_a_slot_an_earlier_segment_wrote(cls):
    # (before: a cached call down the resetting branch kept the tensor an earlier call stored)
    eager_model, jitted_model = cls(), cls()
    jm = compiler.jit(jitted_model)
    for step, sign in enumerate([-1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0]):
        x = (torch.arange(3.0) + step) * sign
        assert torch.equal(jm(x), eager_model(x)), step
        assert (jitted_model.a is None) == (eager_model.a is None), step
        assert eager_model.a is None or torch.equal(jitted_model.a, eager_model.a), step
        assert hasattr(jitted_model, "stat") == hasattr(eager_model, "stat"), step
        assert not hasattr(eager_model, "stat") or torch.equal(jitted_model.stat, eager_model.stat), step
    if cls is ResetsInOneBranch:
        assert compiler.cache_hits(jm) >= 4
    elif cls is ResetsAndDeletesInOneBranch:
        jm(torch.ones(3))  # (the deleting branch: its store says so)
        assert any("__dict__['stat']: deleted" in str(t) for t in compiler.last_traces(jm))


class SetsOrResets(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", None)

    def forward(self, x, flag: bool):
        self.a = x.mean() if flag else None
        return x * 2


def test_a_slot_set_to_none_by_one_trace_and_to_a_tensor_by_another():
    # (before: the trace for flag=False stored nothing, so a cached call after a flag=True call kept its tensor;
    # no data-dependent read needed)
    eager_model, jitted_model = SetsOrResets(), SetsOrResets()
    jm = compiler.jit(jitted_model)
    for step, flag in enumerate([False, True, False, True, False]):
        x = torch.randn(3)
        assert torch.equal(jm(x, flag), eager_model(x, flag)), step
        assert (jitted_model.a is None) == (eager_model.a is None), step
        assert eager_model.a is None or torch.equal(jitted_model.a, eager_model.a), step
    assert compiler.cache_hits(jm) >= 2


class ResetsPythonValues(torch.nn.Module):
    def forward(self, x):
        self.cache = {}
        self.n = 5
        self.shape = tuple(x.shape)
        return x * 2


def test_python_values_a_forward_assigns_are_assigned_on_every_call():
    # (before: a cached call assigned nothing: `cache` stayed the dict of the tracing call)
    eager_model, jitted_model = ResetsPythonValues(), ResetsPythonValues()
    jm = compiler.jit(jitted_model)
    dicts = []  # (kept alive, so that a new dict cannot reuse an old one's id)
    for step in range(4):
        x = torch.randn(3)
        assert torch.equal(jm(x), eager_model(x)), step
        for m in (eager_model, jitted_model):
            assert m.cache == {} and m.n == 5 and m.shape == (3,), step
        dicts.append(jitted_model.cache)
    assert len({id(d) for d in dicts}) == 4  # a new dict on every call, as in eager
    assert compiler.cache_hits(jm) == 3  # (written before they are read: the first trace ignores what they held)
    for m in (eager_model, jitted_model):  # changed between calls: the next call assigns them again
        m.cache["k"], m.n = 1, 7
        m(torch.randn(3)) if m is eager_model else jm(torch.randn(3))
        assert m.cache == {} and m.n == 5


class KeepsAnObjectMadeInTheCall(torch.nn.Module):
    def forward(self, x):
        self.made = object()
        return x * 2


def test_an_object_made_in_the_call_and_kept_makes_the_trace_single_use():
    jitted_model = KeepsAnObjectMadeInTheCall()
    jm = compiler.jit(jitted_model)
    made = set()
    for _ in range(3):
        jm(torch.randn(3))
        made.add(id(jitted_model.made))
    assert len(made) == 3 and compiler.cache_hits(jm) == 0  # a new object each call, as in eager


class WritesThenRefused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.ones(()))
        self.mode = "before"

    def forward(self, x):
        self.mode = "after"  # a Python value
        self.a = None  # a buffer reset
        self.extra = 3  # a new attribute
        return x.narrow(0, torch.tensor(0), 1)  # the compiler refuses this (a size from a tensor's value)


def test_a_refused_trace_puts_back_the_python_values_it_wrote_on_the_module():
    model = WritesThenRefused()
    with pytest.raises(compiler.DataDependentError):
        compiler.jit(model)(torch.ones(2))
    assert model.mode == "before" and torch.equal(model.a, torch.ones(())) and not hasattr(model, "extra")


class RaisesAfterPythonWrites(WritesThenRefused):
    def forward(self, x):
        self.mode = "after"
        self.a = None
        if x.sum() > 0:
            raise ValueError("positive")
        return x * 2


def test_python_values_written_before_a_users_exception_stay_as_in_eager():
    eager_model, jitted_model = RaisesAfterPythonWrites(), RaisesAfterPythonWrites()
    jm = compiler.jit(jitted_model)
    for step, sign in enumerate([1.0, -1.0, 1.0, -1.0, 1.0]):  # raising while tracing, then on cached paths
        outcomes = []
        for model, called in ((eager_model, eager_model), (jitted_model, jm)):
            model.mode, model.a = "before", torch.ones(())
            try:
                outcomes.append(called(torch.full((2,), sign)))
            except ValueError:
                outcomes.append("ValueError")
        assert _same_outcome(*outcomes), step
        assert jitted_model.mode == eager_model.mode == "after" and jitted_model.a is None and eager_model.a is None
    assert compiler.cache_hits(jm) >= 1


class WritesAfterTheFailingOp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.zeros(()))
        self.mode = "start"

    def forward(self, x, idx):
        y = x[idx]  # raises only when the segment runs; tracing has gone on to the read below by then
        self.mode = "after"
        self.a = y.sum()
        if y.sum() > 0:
            return y
        return -y


def test_writes_tracing_ran_ahead_to_are_not_made_when_an_op_before_them_raises():
    eager_model, jitted_model = WritesAfterTheFailingOp(), WritesAfterTheFailingOp()
    jm = compiler.jit(jitted_model)
    for step, idx in enumerate([[9], [1], [9], [0], [9]]):  # raising while tracing, then on a cached path
        x = torch.arange(3.0) + step
        for model in (eager_model, jitted_model):
            model.mode, model.a = "start", torch.full((), -1.0)
        assert _same_outcome(_outcome(eager_model, x, torch.tensor(idx)), _outcome(jm, x, torch.tensor(idx))), step
        assert jitted_model.mode == eager_model.mode and torch.equal(jitted_model.a, eager_model.a), step
    assert compiler.cache_hits(jm) >= 1


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_rnn_modules_private_caches_do_not_make_traces_single_use(cache):
    # RNNBase keeps weakrefs to its weights in `_flat_weight_refs`, rebuilt by its forward: an object a cached
    # trace cannot rebuild, in a private attribute, left as written (before: every call traced again)
    torch.manual_seed(0)
    eager_model = torch.nn.LSTM(4, 8, num_layers=2, batch_first=True)
    jitted_model = torch.nn.LSTM(4, 8, num_layers=2, batch_first=True)
    jitted_model.load_state_dict(eager_model.state_dict())
    jm = compiler.jit(jitted_model, cache=cache)
    for step in range(3):
        x = torch.randn(2, 5, 4)
        (got, (h, c)), (want, (h0, c0)) = jm(x), eager_model(x)
        assert torch.equal(got, want) and torch.equal(h, h0) and torch.equal(c, c0), step
    assert compiler.cache_hits(jm) == 2

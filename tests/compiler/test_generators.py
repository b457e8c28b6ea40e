"""torch.Generator objects inside a jitted function (compiler/features/rng.py): passed in, created inside and
seeded there, get_state/set_state and seed() on them. Each program runs call by call beside eager with
generators in the same state: the results and every generator's state after each call equal eager's."""
import pytest
import torch

import compiler
from compiler.core.tree import tree_leaves

EXECUTORS = [None, ("inductor", "torch")]


def _equal(a, b) -> bool:
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
                                      for x, y in zip(la, lb))


def draws_from_argument(x, g):
    return x + torch.randn(3, generator=g), torch.rand(2, generator=g)


def reseeds_argument(x, g):
    a = torch.rand(3, generator=g)
    g.manual_seed(7)
    return x + a, torch.rand(3, generator=g)


def saves_and_restores_argument_state(x, g):
    s = g.get_state()
    a = torch.rand(3, generator=g)
    g.set_state(s)
    return x + a, torch.rand(3, generator=g), s


def creates_and_seeds(x):
    g = torch.Generator().manual_seed(0)
    return x + torch.randn(3, generator=g), torch.rand(3, generator=g)


def created_state_round_trip(x):
    g = torch.Generator()
    g.manual_seed(3)
    a = torch.rand(3, generator=g)
    s = g.get_state()
    b = torch.rand(3, generator=g)
    g.set_state(s)
    return x + a, b, torch.rand(3, generator=g), s, torch.rand(1)  # (the default generator advances too)


def mixes_default_and_argument(x, g):
    torch.manual_seed(11)
    a = torch.rand(3)
    g.set_state(torch.default_generator.get_state())
    return x + a, torch.rand(3, generator=g), torch.rand(3)


PROGRAMS = [draws_from_argument, reseeds_argument, saves_and_restores_argument_state, creates_and_seeds,
            created_state_round_trip, mixes_default_and_argument]


@pytest.mark.parametrize("executors", EXECUTORS, ids=["default", "inductor"])
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_generators_give_eagers_numbers_and_states_call_by_call(fn, executors):
    takes_g = fn.__code__.co_argcount == 2
    ge, gj = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)  # kept across calls
    jfn = compiler.jit(fn, executors=executors)
    for call in range(4):
        torch.manual_seed(100 + call)
        expected = fn(torch.ones(3), ge) if takes_g else fn(torch.ones(3))
        default_after_eager = torch.get_rng_state()
        torch.manual_seed(100 + call)
        got = jfn(torch.ones(3), gj) if takes_g else jfn(torch.ones(3))
        assert _equal(got, expected), (fn.__name__, call)
        assert torch.equal(torch.get_rng_state(), default_after_eager)
        assert torch.equal(gj.get_state(), ge.get_state())  # the caller's generator advanced as in eager
    assert compiler.cache_hits(jfn) >= 3


def test_trace_creates_a_fresh_generator_each_call():
    jfn = compiler.jit(creates_and_seeds)
    jfn(torch.ones(3))
    text = str(compiler.last_traces(jfn)[-1])
    assert "torch.Generator()" in text and "torch._C.Generator.manual_seed(g" in text


def _branchy_argument(x, g):
    a = torch.rand(3, generator=g)
    if a.sum() > 1.5:  # a data read: the trace is split, the generator crosses segments
        return x + a, torch.rand(2, generator=g)
    return x - a, torch.zeros(2)


def _branchy_created(x):
    g = torch.Generator().manual_seed(int(x.sum()))
    a = torch.rand(3, generator=g)
    if a.sum() > 1.5:
        return a, torch.rand(2, generator=g)
    return a, torch.zeros(2) - torch.rand(1, generator=g)


@pytest.mark.parametrize("fn", [_branchy_argument, _branchy_created], ids=["argument", "created"])
def test_generators_across_data_dependent_segments(fn):
    jfn = compiler.jit(fn)
    outcomes = set()
    for call in range(8):
        if fn is _branchy_argument:
            ge, gj = torch.Generator().manual_seed(call), torch.Generator().manual_seed(call)
            expected, got = fn(torch.ones(3), ge), jfn(torch.ones(3), gj)
            assert torch.equal(gj.get_state(), ge.get_state())
        else:
            expected, got = fn(torch.full((3,), float(call))), jfn(torch.full((3,), float(call)))
        assert _equal(got, expected), call
        outcomes.add(bool(expected[1][0] > 0))  # (the other branch gives zero or less)
        assert compiler.last_segment_count(jfn) >= 2
    assert len(outcomes) == 2  # both branches were taken


def test_seed_draws_a_new_seed_on_every_call():
    def fn(x, g):
        g.seed()
        return x + torch.rand(3, generator=g)

    g = torch.Generator()
    jfn = compiler.jit(fn)
    seeds = []
    for _ in range(3):
        out = jfn(torch.zeros(3), g)
        seeds.append(g.initial_seed())
        again = torch.rand(3, generator=torch.Generator().manual_seed(seeds[-1]))
        assert torch.equal(out, again)  # the numbers come from the seed drawn in this call
    assert len(set(seeds)) == 3 and compiler.cache_hits(jfn) == 2


G = None


class StoresGenerator(torch.nn.Module):
    def forward(self, x):
        self.g = torch.Generator()
        return x


def _uses_seed(x):
    s = torch.Generator().seed()
    return x + s


def _returns_seed(x):
    return x, torch.seed()


def _stores_global(x):
    global G
    G = torch.Generator().manual_seed(1)
    return x


def _reads_initial_seed(x, g):
    return x * g.initial_seed()


def _returns_generator(x):
    return x, torch.Generator()


@pytest.mark.parametrize("fn, args, match", [
    (_uses_seed, (), "Generator.seed"),
    (_returns_seed, (), "Generator.seed"),
    (_stores_global, (), "stores a torch.Generator it creates"),
    (StoresGenerator(), (), "stores a torch.Generator it creates"),
    (_reads_initial_seed, (torch.Generator(),), "initial_seed"),
    (_returns_generator, (), "returns a torch.Generator"),
], ids=["seed-value-used", "seed-returned", "global", "module-attribute", "initial_seed", "returned"])
def test_what_cannot_be_exact_is_refused_clearly(fn, args, match):
    with pytest.raises(compiler.CompilerError, match=match):
        compiler.jit(fn)(torch.ones(3), *args)
    assert G is None and getattr(fn, "g", None) is None  # stores put back

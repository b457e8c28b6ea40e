"""Arguments that are objects holding tensors (a kv cache passed back for the next step) are inputs by structure:
guarded by class and attribute names, their tensors inputs of each call, the attributes the call reassigns stored
into that call's object. A trace made for one such object serves another of the same structure (issue 37: a
second generation of the same lengths hits on every step)."""
from __future__ import annotations

import torch

import compiler


class Layer:
    def __init__(self, k):
        self.keys = k
        self.steps = 0


class Cache:
    def __init__(self, n, length):
        self.layers = [Layer(torch.randn(2, length)) for _ in range(n)]
        self.name = "kv"


def step(x, cache):
    out = x
    for layer in cache.layers:
        layer.keys = torch.cat([layer.keys, out], dim=-1)  # reassigned (a new tensor)
        out = layer.keys.sum(-1, keepdim=True) * 0.5
    return out, cache


def _equal_caches(a, b):
    assert type(a) is type(b) and a.name == b.name and len(a.layers) == len(b.layers)
    for p, q in zip(a.layers, b.layers):
        assert torch.equal(p.keys, q.keys) and p.steps == q.steps


def test_an_argument_object_holding_tensors_is_an_input_by_structure():
    jf = compiler.jit(step)
    for run in range(3):  # each run a new cache of the same structure
        torch.manual_seed(run)
        cache = Cache(2, 3)
        torch.manual_seed(run)
        eager_cache = Cache(2, 3)
        x = torch.randn(2, 1)
        (out, returned), (expected, eager_returned) = jf(x, cache), step(x, eager_cache)
        assert returned is cache and eager_returned is eager_cache  # the caller's object, as in eager
        assert torch.equal(out, expected)
        _equal_caches(cache, eager_cache)
    assert (compiler.cache_hits(jf), compiler.cache_misses(jf)) == (2, 1)


def test_its_structure_is_guarded():
    jf = compiler.jit(step)
    jf(torch.randn(2, 1), Cache(2, 3))
    for cache in (Cache(3, 3), Cache(2, 4)):  # another number of layers, another length
        eager_cache = Cache(0, 0)
        eager_cache.layers = [Layer(layer.keys.clone()) for layer in cache.layers]
        x = torch.randn(2, 1)
        out, _ = jf(x, cache)
        expected, _ = step(x, eager_cache)
        assert torch.equal(out, expected)
        _equal_caches(cache, eager_cache)
    c = Cache(2, 3)
    c.extra = 1  # an attribute more
    jf(torch.randn(2, 1), c)
    assert compiler.cache_misses(jf) == 4 and compiler.cache_hits(jf) == 0


def test_a_decode_loop_with_the_object_passed_back():
    jf = compiler.jit(step)
    torch.manual_seed(0)
    cache = Cache(2, 3)
    torch.manual_seed(0)
    eager_cache = Cache(2, 3)
    x = torch.randn(2, 1)
    for i in range(3):  # the same object, its tensors longer each step: a trace per length (constant values)
        (x, _), (ex, _) = jf(x, cache), step(x, eager_cache)
        assert torch.equal(x, ex)
        _equal_caches(cache, eager_cache)


def test_a_python_value_it_is_given_is_stored_too():
    def count(x, cache):
        cache.layers[0].steps = cache.layers[0].steps + 1
        return x + cache.layers[0].steps

    jf = compiler.jit(count)
    cache, eager_cache = Cache(1, 2), Cache(1, 2)
    for i in range(3):
        assert torch.equal(jf(torch.ones(1), cache), count(torch.ones(1), eager_cache))
        assert cache.layers[0].steps == eager_cache.layers[0].steps == i + 1


def test_an_argument_object_kept_on_the_module_is_that_call_s_object():
    class Keeps(torch.nn.Module):
        def forward(self, x, cache):
            self.past = cache  # written before read: no guard on what it held
            return step(x, cache)[0]

    model = Keeps()
    jm = compiler.jit(model)
    for run in range(3):
        cache, eager_cache = Cache(2, 3), Cache(0, 0)
        eager_cache.layers = [Layer(layer.keys.clone()) for layer in cache.layers]
        x = torch.randn(2, 1)
        assert torch.equal(jm(x, cache), step(x, eager_cache)[0])
        assert model.past is cache
        _equal_caches(cache, eager_cache)
    assert (compiler.cache_hits(jm), compiler.cache_misses(jm)) == (2, 1)


def test_stores_into_an_argument_object_across_a_value_read():
    """The trace splits at `if layer.keys.sum() > 0` (segments): the final segment stores into that call's object
    (before: the segment did not get the object as an input, NameError)."""
    def f(x, cache):
        layer = cache.layers[0]
        layer.keys = torch.cat([layer.keys, x], -1)
        if layer.keys.sum() > 0:
            layer.steps = layer.steps + 1
            return x + 1
        return x - 1

    jf = compiler.jit(f)
    for i in range(4):
        torch.manual_seed(i)
        cache, eager_cache = Cache(1, 2), Cache(0, 0)
        eager_cache.layers = [Layer(cache.layers[0].keys.clone())]
        x = torch.randn(2, 1) * 5
        assert torch.equal(jf(x, cache), f(x, eager_cache))
        _equal_caches(cache, eager_cache)
    assert compiler.cache_hits(jf) >= 1


class Log:
    def __init__(self):
        self.entries = [torch.ones(2)]


def test_an_object_whose_list_of_tensors_the_call_appends_to_matches_eager_on_every_call():
    """A list of tensors held by an argument object is appended to (a log), not reassigned: the object stays an
    input by identity, and every call appends what eager appends."""
    def fn(x, log):
        log.entries.append(x.sin())
        return x + 1

    for mode in ("constant values", "symbolic values", "no caching"):
        jfn = compiler.jit(fn, cache=mode)
        mine, eagers = Log(), Log()
        for _ in range(3):
            x = torch.randn(2)
            assert torch.equal(jfn(x, mine), fn(x, eagers))
        assert len(mine.entries) == len(eagers.entries) == 4
        assert all(torch.equal(a, b) for a, b in zip(mine.entries, eagers.entries))

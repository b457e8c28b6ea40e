"""Objects the call makes and returns (a transformers DynamicCache, a user class instance) are made again by every
call from the trace: the class and attributes recorded when tracing, tensors from that call's results, one
object reached twice still one object. Objects that existed before the call are returned by identity."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import compiler
from eager_parity import CACHES


class Layer:
    def __init__(self, keys, values):
        self.keys, self.values, self.ready = keys, values, True


class Cache:
    def __init__(self):
        self.layers = []
        self.note = "made inside"


SHARED_CONFIG = {"scale": 2}


class Holder:
    def __init__(self, t):
        self.t = t
        self.config = SHARED_CONFIG  # existed before the call: by identity


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    cache: object = None


def model(x):
    cache = Cache()
    for i in range(2):
        cache.layers.append(Layer(x * (i + 1), x.sin() + i))
    return Output(x.cos(), cache), cache


@pytest.mark.parametrize("cache", CACHES)
def test_a_cache_object_made_in_the_call_is_made_again_by_every_call(cache):
    jf = compiler.jit(model, cache=cache)
    seen = []
    for i in range(3):
        x = torch.randn(3) + i
        (out, c), (eout, ec) = jf(x), model(x)
        assert type(c) is Cache and type(c.layers[0]) is Layer and c.note == "made inside"
        assert out.cache is c  # one object, reached twice
        assert torch.equal(out.logits, eout.logits)
        for a, b in zip(c.layers, ec.layers):
            assert vars(a).keys() == vars(b).keys() and a.ready is True
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        assert all(c is not s for s in seen)  # a new object per call, as eager's
        seen.append(c)
    if cache != "no caching":
        assert compiler.cache_hits(jf) == 2


def test_an_object_held_that_existed_before_the_call_is_returned_by_identity():
    def f(x):
        return Holder(x * 2)

    jf = compiler.jit(f)
    for _ in range(2):
        h = jf(torch.ones(2))
        assert h.config is SHARED_CONFIG and torch.equal(h.t, torch.full((2,), 2.0))
    assert compiler.cache_hits(jf) == 1


def test_a_returned_object_holding_itself_is_still_refused():
    class Node:
        def __init__(self, t):
            self.t, self.me = t, self

    with pytest.raises(compiler.UnsupportedInputError):
        compiler.jit(lambda x: Node(x + 1))(torch.ones(2))


def test_gradients_flow_through_a_rebuilt_object():
    w = torch.randn(3, requires_grad=True)

    def f(x):
        c = Cache()
        c.layers.append(Layer(x * w, w.exp()))
        return c

    jf = compiler.jit(f)
    for _ in range(2):
        c = jf(torch.ones(3))
        (c.layers[0].keys.sum() + c.layers[0].values.sum()).backward()
        got, w.grad = w.grad.clone(), None
        e = f(torch.ones(3))
        (e.layers[0].keys.sum() + e.layers[0].values.sum()).backward()
        assert torch.equal(got, w.grad)
        w.grad = None


def test_an_object_made_before_a_read_of_a_tensor_value_is_rebuilt_per_outcome():
    def f(x):
        c = Cache()
        c.layers.append(Layer(x.sin(), x))
        if x.sum() > 0:  # the trace is split here
            c.layers[0].keys = c.layers[0].keys * 2
        return c

    jf = compiler.jit(f)
    for x in (torch.ones(3), -torch.ones(3), torch.ones(3), -torch.ones(3)):
        c, e = jf(x), f(x)
        assert torch.equal(c.layers[0].keys, e.layers[0].keys) and torch.equal(c.layers[0].values, x)
    assert (compiler.cache_hits(jf), compiler.cache_misses(jf)) == (2, 2)


def test_an_object_argument_returned_is_returned_by_identity():
    def f(x, holder, items):
        return x * 2, holder, items

    jf = compiler.jit(f)
    holder, items = Holder(torch.ones(2)), [torch.ones(2), 3]
    for _ in range(2):
        y, h, got = jf(torch.ones(2), holder, items)
        assert h is holder and torch.equal(y, torch.full((2,), 2.0))
        assert type(got[0]) is torch.Tensor and got[1] == 3  # (a list argument: rebuilt, never the proxied copy)

"""Traced values never escape into user state: what a jitted function stores into objects that outlive the call
(a global list, a dict a forward hook fills, a config object's attribute, a list a @contextmanager appends to)
is the real value eager stores, after every call, also when the program raises or reads tensor values on the
way; objects the function returns but did not create are returned by identity. (The conftest's sweep checks
after every test of this folder that no proxy is reachable from the test module's state.)"""
from __future__ import annotations

import contextlib

import pytest
import torch

import compiler
from proxy_sweep import proxies_reachable

LOG: list = []
STORE: dict = {}


class _Config:
    pass


CONFIG = _Config()


@pytest.fixture(autouse=True)
def _fresh_state():
    LOG.clear()
    STORE.clear()
    vars(CONFIG).clear()
    yield


def _assert_clean():
    assert not proxies_reachable([LOG, STORE, CONFIG]), proxies_reachable([LOG, STORE, CONFIG])


@pytest.mark.parametrize("cache", ["constant values", "symbolic values", "no caching"])
def test_appended_to_a_global_list_is_the_real_tensor(cache):
    def fn(x):
        LOG.append(x.sin())
        return x * 2

    jfn, x = compiler.jit(fn, cache=cache), torch.randn(3)
    for call in range(3):
        jfn(x)
        assert len(LOG) == call + 1 and type(LOG[-1]) is torch.Tensor
        torch.testing.assert_close(LOG[-1], x.sin())
    _assert_clean()


def test_a_forward_hook_storing_into_a_global_dict():
    lin = torch.nn.Linear(3, 2)
    lin.register_forward_hook(lambda mod, inp, out: STORE.__setitem__("out", out))
    jlin, x = compiler.jit(lin), torch.randn(4, 3)
    for _ in range(2):
        out = jlin(x)
        assert type(STORE["out"]) is torch.Tensor and torch.equal(STORE["out"], out)
    _assert_clean()


@contextlib.contextmanager
def _recording(t):
    LOG.append(t * 2)
    yield
    LOG.append(t + 1)


def test_a_contextmanager_appending():
    def fn(x):
        with _recording(x):
            y = x.cos()
        return y

    x = torch.randn(3)
    compiler.jit(fn)(x)
    assert [type(v) for v in LOG] == [torch.Tensor, torch.Tensor]
    torch.testing.assert_close(LOG[0], x * 2)
    torch.testing.assert_close(LOG[1], x + 1)
    _assert_clean()


def test_an_attribute_and_values_nested_in_new_containers():
    def fn(x):
        CONFIG.last = x.cos()
        LOG.append((x * 3, [x * 4, {"k": x * 5}]))
        return x

    x = torch.randn(3)
    compiler.jit(fn)(x)
    torch.testing.assert_close(CONFIG.last, x.cos())
    pair = LOG[0]
    assert type(pair) is tuple and type(pair[0]) is torch.Tensor
    torch.testing.assert_close(pair[1][1]["k"], x * 5)
    _assert_clean()


def test_stored_before_the_program_raises():
    def fn(x):
        LOG.append(x * 5)
        raise ValueError("raised by the program")

    x = torch.randn(3)
    with pytest.raises(ValueError):
        compiler.jit(fn)(x)
    assert type(LOG[0]) is torch.Tensor
    torch.testing.assert_close(LOG[0], x * 5)
    _assert_clean()


def test_stored_around_a_data_dependent_read():
    def fn(x):
        LOG.append(x * 7)
        if x.sum() > 0:
            LOG.append(x * 8)
        return x + 1

    jfn = compiler.jit(fn)
    for x in (torch.ones(3), -torch.ones(3), torch.ones(3)):
        LOG.clear()
        jfn(x)
        expected = [x * 7] + ([x * 8] if x.sum() > 0 else [])
        assert len(LOG) == len(expected)
        for got, want in zip(LOG, expected):
            assert type(got) is torch.Tensor
            torch.testing.assert_close(got, want)
    _assert_clean()


def test_numbers_read_under_symbolic_values_are_plain_numbers():
    def fn(x, n):
        LOG.append(x.sum().item())
        LOG.append(n + 1)
        return x

    jfn = compiler.jit(fn, cache="symbolic values")
    for n in (3, 4):
        LOG.clear()
        x = torch.randn(3)
        jfn(x, n)
        assert LOG == [x.sum().item(), n + 1] and [type(v) for v in LOG] == [float, int]


def test_returned_objects_the_function_did_not_create_are_returned_by_identity():
    def fn(x):
        LOG.append(x.sum())
        return x + 1, LOG, STORE

    jfn = compiler.jit(fn)
    for _ in range(2):
        out = jfn(torch.ones(2))
        assert out[1] is LOG and out[2] is STORE
    assert len(LOG) == 2 and all(type(v) is torch.Tensor for v in LOG)


def test_a_returned_global_list_left_unchanged_is_returned_by_identity_on_cache_hits():
    settings = [1, 2]

    def fn(x):
        return x * settings[0], settings

    jfn = compiler.jit(fn)
    for _ in range(3):
        assert jfn(torch.ones(2))[1] is settings
    assert compiler.cache_hits(jfn) == 2


def test_effects_wait_for_the_ops_before_them():
    """An op that can only fail when it runs (here an element of a value-dependent size) fails before the Python
    effects that follow it, as in eager: nothing is appended, and no proxy is left."""
    def fn(x, y):
        LOG.extend([x, y])
        picked = x.masked_select(x > 10)
        first = picked[0]  # eager: IndexError when nothing is picked
        LOG.append(first)
        return first

    jfn = compiler.jit(fn)
    for values in (torch.full((3,), 20.0), torch.zeros(3), torch.full((3,), 30.0)):
        LOG.clear()
        eager_log = []
        try:
            eager_log += [values, values * 2]
            expected = values.masked_select(values > 10)[0]
            eager_log.append(expected)
        except IndexError:
            expected = IndexError
        if expected is IndexError:
            with pytest.raises(IndexError):
                jfn(values, values * 2)
        else:
            assert torch.equal(jfn(values, values * 2), expected)
        assert len(LOG) == len(eager_log) and all(type(t) is torch.Tensor for t in LOG)
        _assert_clean()


def test_a_refused_call_leaves_real_values_where_it_stored():
    def fn(x):
        LOG.append(x * 2)
        LOG.append(x)
        return torch.geqrf(x)  # refused: no meta kernel

    x = torch.ones(2, 2)
    with pytest.raises(compiler.UnsupportedOpError):
        compiler.jit(fn)(x)
    assert [type(v) for v in LOG] == [torch.Tensor, torch.Tensor]
    torch.testing.assert_close(LOG[0], x * 2)
    _assert_clean()


class _ChangedWhileListed(dict):
    """A dict that changes while the walk lists it the first time (as a weakref callback run by the garbage
    collector can change a dict mid-listing: "dictionary changed size during iteration", once in the suite)."""

    listings = 0

    def items(self):
        type(self).listings += 1
        if type(self).listings == 1:
            raise RuntimeError("dictionary changed size during iteration")
        return super().items()


_HELD = []


def test_a_container_that_changes_while_the_escape_walk_lists_it():
    def fn(x):
        _HELD.append(x.sin())
        return x + 1

    _HELD[:] = [_ChangedWhileListed(a=1)]
    _ChangedWhileListed.listings = 0
    out = compiler.jit(fn)(torch.ones(2))
    torch.testing.assert_close(out, torch.full((2,), 2.0))
    torch.testing.assert_close(_HELD[-1], torch.ones(2).sin())
    assert _ChangedWhileListed.listings >= 2  # listed again after the change

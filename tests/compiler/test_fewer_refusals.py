"""Ordinary code that used to be refused: numpy scalars, dtypes and arrays as arguments; user objects, nn.Module
instances, functools.partial, functions and context managers as arguments (passed as they are, guarded by
identity and by what they hold); returned OrderedDict/defaultdict/set; tensor.numpy() inside (a data read);
_foreach_* ops; Tensor.new, torch.is_floating_point, Tensor.ndimension, Tensor.untyped_storage."""
from __future__ import annotations

import collections
import functools

import numpy as np
import pytest
import torch

import compiler
from eager_parity import CACHES, check_calls


@pytest.mark.parametrize("cache", CACHES)
def test_numpy_scalars_and_dtypes_as_arguments(cache):
    def fn(x, s, dt):
        return x * s, x.to(torch.float64) if dt == np.float32 else x, torch.tensor(s).dtype

    calls = [lambda: (torch.ones(2, dtype=torch.float16), np.float64(2.5), np.float32),
             lambda: (torch.ones(2, dtype=torch.float16), np.float64(3.5), np.float32),
             lambda: (torch.ones(2), np.int64(3), np.dtype("float64"))]
    check_calls(fn, calls, cache=cache)


def test_numpy_arrays_as_arguments_changed_in_place_between_calls():
    def fn(x, a):
        return x + torch.from_numpy(a), torch.tensor(a) * 2, float(a.sum())

    array = np.ones(2, dtype=np.float32)
    jfn = check_calls(fn, [lambda: (torch.ones(2), array)])
    array[0] = 5  # the same array, new contents: read by Python while tracing, so traced again
    check_calls(fn, [lambda: (torch.ones(2), array), lambda: (torch.ones(2), np.arange(2.0, dtype=np.float32))],
                jfn=jfn)


class _Config:
    def __init__(self):
        self.scale = 3.0
        self.offsets = [1.0, 2.0]


@pytest.mark.parametrize("cache", CACHES)
def test_a_user_object_as_an_argument(cache):
    def fn(x, cfg):
        return x * cfg.scale + cfg.offsets[1]

    cfg = _Config()
    jfn = check_calls(fn, [lambda: (torch.ones(2), cfg)] * 2, cache=cache)
    cfg.scale = 5.0
    cfg.offsets.append(9.0)
    cfg.offsets[1] = -1.0
    check_calls(fn, [lambda: (torch.ones(2), cfg), lambda: (torch.ones(2), _Config())], cache=cache, jfn=jfn)


def test_a_module_as_an_argument():
    def fn(x, m):
        return m(x) * 2

    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    with torch.no_grad():
        jfn = check_calls(fn, [lambda: (torch.ones(2), a), lambda: (torch.ones(2), b), lambda: (torch.ones(2), a)])
        a.weight.add_(1)  # a parameter changed in place: read by reference
        b.weight = torch.nn.Parameter(torch.zeros(2, 2))  # replaced: guarded
        check_calls(fn, [lambda: (torch.ones(2), a), lambda: (torch.ones(2), b)], jfn=jfn)


def test_partials_functions_and_context_managers_as_arguments():
    def fn(x, f, g, ctx):
        with ctx:
            y = f(x) + g(x)
        return y, y.requires_grad

    add_one = functools.partial(torch.add, other=1)
    x = torch.ones(2, requires_grad=True)
    check_calls(fn, [lambda: (x, add_one, torch.sin, torch.no_grad()),
                     lambda: (x, add_one, torch.cos, torch.enable_grad()),
                     lambda: (x, functools.partial(torch.mul, other=3), torch.sin, torch.no_grad())])


@pytest.mark.parametrize("cache", CACHES)
def test_returned_ordered_dict_defaultdict_and_set(cache):
    def fn(x):
        d = collections.defaultdict(list)
        d["a"].append(x)
        return collections.OrderedDict(y=x * 2, z=x + 1), d, {1, 2, x.shape[0]}, frozenset({"k"})

    check_calls(fn, [lambda: (torch.ones(2),), lambda: (torch.ones(3),), lambda: (torch.ones(2),)], cache=cache)
    out = compiler.jit(fn)(torch.ones(2))
    assert type(out[0]) is collections.OrderedDict and type(out[1]) is collections.defaultdict
    assert out[1].default_factory is list


@pytest.mark.parametrize("cache", CACHES)
def test_tensor_numpy_inside_is_a_data_read(cache):
    def fn(x):
        a = x.numpy()
        a[0] = 7  # shares memory with x, as in eager
        return x * 2, a.sum(), np.asarray(a).shape

    calls = [lambda: (torch.ones(3),), lambda: (torch.arange(3.0),), lambda: (torch.ones(3),)]
    check_calls(fn, calls, cache=cache)


def test_foreach_ops():
    def fn(xs, ys):
        torch._foreach_add_(xs, 1)
        torch._foreach_addcmul_(xs, ys, ys, value=0.5)
        norms = torch._foreach_norm(xs)
        return torch._foreach_mul(xs, [2.0, 3.0]), norms, torch._foreach_sqrt(torch._foreach_abs(ys))

    check_calls(fn, [lambda: ([torch.ones(3), torch.ones(2, 2)], [torch.arange(3.0), torch.ones(2, 2)])] * 2)


def test_tensor_new_is_floating_point_ndimension_untyped_storage():
    def fn(x):
        made = x.new(2, 3).zero_() + x.new([1.0, 2.0, 3.0])
        kind = 2 if torch.is_floating_point(x) else 3
        return made * kind * x.ndimension(), (x * 2).untyped_storage().nbytes(), x.new_zeros(5).untyped_storage().size()

    check_calls(fn, [lambda: (torch.ones(2),), lambda: (torch.ones(2, 2),)])


def test_untyped_storage_of_an_argument_is_refused_not_guessed():
    def fn(x):
        return x.untyped_storage().nbytes()

    with pytest.raises(compiler.UnsupportedOpError, match="untyped_storage"):
        compiler.jit(fn)(torch.ones(4, 3)[1:])


def test_namedtuples_and_return_types_as_arguments():
    Pair = collections.namedtuple("Pair", ["a", "b"])

    def fn(p):
        first, second = p
        return first + second * 2, type(p).__name__

    check_calls(fn, [lambda: (Pair(torch.ones(2), torch.ones(2)),), lambda: (torch.max(torch.ones(3, 2), 0),),
                     lambda: (Pair(torch.zeros(2), torch.ones(2)),)])


@pytest.mark.parametrize("cache", CACHES)
def test_a_returned_comparison_of_symbolic_values_is_a_bool_as_in_eager(cache):
    # (under "symbolic values" `item() > s` and `shape[0] > 2` are comparisons of symbols: returning one was
    # refused; now the trace returns its answer, guarded, and a call with the other answer traces again)
    def fn(x, s):
        k = x.max().item() > s
        return x * 2, {"k": k, "long": x.shape[0] > 2}

    calls = [lambda: (torch.tensor([1.0, 3.0]), 2.0), lambda: (torch.tensor([1.0, 1.5]), 2.0),
             lambda: (torch.tensor([1.0, 3.0, 4.0]), 3.5), lambda: (torch.tensor([5.0, 3.0, 4.0]), 0.5),
             lambda: (torch.tensor([1.0, 3.0]), 2.0)]
    jfn = check_calls(fn, calls, cache=cache)
    for make in calls:
        _, flags = jfn(*make())
        assert type(flags["k"]) is bool and type(flags["long"]) is bool

"""Python-level questions user code asks about tensors get eager's answers while tracing."""
import pytest
import torch

import compiler


@pytest.mark.parametrize("fn", [
    lambda x: x * torch.numel(x) if torch.is_floating_point(x) else x,
    lambda x: torch.tensor([x[0, 0], x[1, 1]]) + torch.as_tensor([x.sum(), 1.5]),
    lambda x: torch.tensor([[x[0, 0].long()], [3]]),
    lambda x: x.T if x.dim() == 2 and x.size(0) == 4 else x,
])
def test_answers_match_eager(fn):
    x = torch.randn(4, 3)
    got, expected = compiler.jit(fn)(x), fn(x)
    assert got.dtype == expected.dtype and torch.equal(got, expected)


def test_tensor_from_non_scalar_traced_tensors_is_refused_like_eager():
    with pytest.raises(ValueError, match="one element"):
        compiler.jit(lambda x: torch.tensor([x, x]))(torch.ones(2))


@pytest.mark.parametrize("fn", [
    lambda x: x * 2 if isinstance(x, torch.Tensor) else x,
    lambda x: x.sum() if torch.is_tensor(x) else x,
    lambda x: x * 3 if isinstance(x, (int, torch.Tensor)) else x,
    lambda x: x * 3 if isinstance(x, torch.nn.Parameter) else x - 1,
])
def test_isinstance_tensor_answers_like_eager(fn):
    x = torch.randn(2, 2)
    torch.testing.assert_close(compiler.jit(fn)(x), fn(x))
    assert isinstance.__module__ == "builtins"  # restored after tracing


def test_isinstance_parameter_answers_like_eager():
    p = torch.nn.Parameter(torch.ones(2))
    fn = lambda w: w * 2 if isinstance(w, torch.nn.Parameter) else w  # noqa: E731
    torch.testing.assert_close(compiler.jit(fn)(p), fn(p))


def test_type_of_a_traced_tensor_answers_as_in_eager_and_the_native_front_end_refuses_it():
    from compiler.frontend.native import native_frontend

    def fn(x):
        return x.sum() if type(x) is torch.Tensor else x

    def param_only(p):
        return p * 2 if type(p) is torch.nn.Parameter else p - 1

    x, p = torch.ones(2), torch.nn.Parameter(torch.ones(2))
    torch.testing.assert_close(compiler.jit(fn)(x), fn(x))
    torch.testing.assert_close(compiler.jit(param_only)(p), param_only(p))
    torch.testing.assert_close(compiler.jit(param_only)(x), param_only(x))
    assert compiler.jit(lambda t: type(t).__name__ + str(type(3)))(x) == "Tensor<class 'int'>"
    with pytest.raises(compiler.CompilerError, match="compares type"):
        compiler.jit(fn, frontend=native_frontend)(x)


def test_autocast_inside_the_function_follows_eagers_dtypes():
    def fn(a):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = a @ a
            return h, torch.softmax(h, -1), (h.float() + a).sum()

    a = torch.randn(3, 3)
    jfn = compiler.jit(fn)
    for _ in range(2):
        for got, want in zip(jfn(a), fn(a)):
            assert got.dtype is want.dtype and torch.equal(got, want)
    assert not torch._C._is_any_autocast_enabled()
    assert compiler.cache_hits(jfn) == 1


def test_one_tensor_passed_twice_is_one_object():
    def fn(a, b):
        return a * 2 if a is b else a - b

    x, y = torch.ones(3), torch.full((3,), 5.0)
    jf = compiler.jit(fn)
    torch.testing.assert_close(jf(x, x), fn(x, x))
    torch.testing.assert_close(jf(x, y), fn(x, y))  # not the aliased trace
    torch.testing.assert_close(jf(y, y), fn(y, y))
    assert compiler.cache_misses(jf) == 2 and compiler.cache_hits(jf) == 1
    assert len({id(t) for t in [x, x]}) == 1


def test_aliased_inputs_with_inplace_match_eager():
    def fn(a, b):
        a.add_(1)
        return b * 2

    x1, x2 = torch.ones(2), torch.ones(2)
    torch.testing.assert_close(compiler.jit(fn)(x1, x1), fn(x2, x2))
    assert torch.equal(x1, x2)

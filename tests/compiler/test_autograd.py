"""Autograd: the computation runs real torch ops, so gradients come from eager's own autograd."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import compiler


def _grads(fn, *inputs):
    out = fn(*inputs)
    loss = out.sum() if isinstance(out, torch.Tensor) else sum(o.sum() for o in out)
    loss.backward()
    return [i.grad for i in inputs]


def test_function_gradients_match_eager():
    def fn(x, w):
        h = torch.tanh(x @ w)
        return F.softmax(h, -1) * h.sigmoid() + F.layer_norm(h, (5,))

    torch.manual_seed(0)
    x, w = torch.randn(3, 4), torch.randn(4, 5)
    ex, ew = x.clone().requires_grad_(), w.clone().requires_grad_()
    jx, jw = x.clone().requires_grad_(), w.clone().requires_grad_()
    for got, expected in zip(_grads(compiler.jit(fn), jx, jw), _grads(fn, ex, ew)):
        torch.testing.assert_close(got, expected)


def test_module_gradients_match_eager():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    ref = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    ref.load_state_dict(m.state_dict())
    x = torch.randn(6, 4)
    compiler.jit(m)(x).pow(2).sum().backward()
    ref(x).pow(2).sum().backward()
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_no_grad_block_inside_the_function_is_respected():
    def fn(x):
        with torch.no_grad():
            stat = x.mean()
        return x * stat

    x = torch.randn(4, requires_grad=True)
    out = compiler.jit(fn)(x)
    out.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    fn(x2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    assert torch.is_grad_enabled()


def test_inplace_on_a_leaf_that_requires_grad_fails_like_eager():
    x = torch.randn(3, requires_grad=True)
    jf = compiler.jit(lambda x: x.add_(1))
    try:
        jf(x)
    except RuntimeError as e:
        assert "leaf Variable" in str(e) and "Tensor.add_" in str(e)
    else:
        raise AssertionError("expected eager's leaf in-place error")

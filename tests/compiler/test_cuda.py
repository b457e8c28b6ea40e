"""CUDA execution and guards (skipped on machines without a GPU)."""
import pytest
import torch
import torch.nn.functional as F

import compiler

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_elementwise_and_reductions_on_cuda_match_eager():
    def fn(x, y):
        return F.softmax(x @ y, -1).sum(0), (x * 2).reshape(-1)

    x, y = torch.randn(8, 16, device="cuda"), torch.randn(16, 4, device="cuda")
    got, expected = compiler.jit(fn)(x, y), fn(x, y)
    for g, e in zip(got, expected):
        assert g.device == e.device
        torch.testing.assert_close(g, e)


def test_device_change_retraces():
    jf = compiler.jit(lambda x: x + torch.ones(3, device=x.device))
    jf(torch.zeros(3))
    out = jf(torch.zeros(3, device="cuda"))
    assert out.device.type == "cuda" and compiler.cache_misses(jf) == 2


def test_transfers_and_mixed_devices():
    jf = compiler.jit(lambda x: x.to("cuda") * 2 + x.cuda() + x.to(torch.device("cuda", 0)))
    out = jf(torch.ones(3))
    assert out.device == torch.device("cuda", 0)
    torch.testing.assert_close(out.cpu(), torch.full((3,), 4.0))
    with pytest.raises(compiler.DeviceMismatchError, match="cuda"):
        compiler.jit(lambda a, b: a + b)(torch.ones(3), torch.ones(3, device="cuda"))
    # a cpu 0-d tensor with a cuda tensor is allowed, as in eager
    torch.testing.assert_close(compiler.jit(lambda a, s: a * s)(torch.ones(2, device="cuda"), torch.tensor(3.0)),
                               torch.full((2,), 3.0, device="cuda"))


def test_gradients_on_cuda():
    w = torch.randn(4, 4, device="cuda", requires_grad=True)
    w2 = w.detach().clone().requires_grad_()
    x = torch.randn(2, 4, device="cuda")
    compiler.jit(lambda x, w: torch.tanh(x @ w).sum())(x, w).backward()
    torch.tanh(x @ w2).sum().backward()
    torch.testing.assert_close(w.grad, w2.grad)

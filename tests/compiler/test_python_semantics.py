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

"""F.embedding through a fusing executor: the weight's gradient is eager's, padding row included (the prims
decomposition, an index_select, gave the padding row a gradient: BERT's tied word embeddings through inductor)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import compiler


@pytest.mark.parametrize("options", [{"padding_idx": 0}, {"scale_grad_by_freq": True}, {}])
def test_embedding_weight_gradient_equals_eager_through_inductor(options):
    def f(idx, w, head):
        return (F.embedding(idx, w, **options).tanh() @ head).square().mean()

    idx = torch.tensor([[0, 3, 3, 1], [2, 0, 4, 3]])
    grads = []
    for fn in (f, compiler.jit(f, executors=("inductor", "torch"))):
        torch.manual_seed(0)
        w = torch.randn(5, 6, requires_grad=True)
        head = torch.randn(6, 2)
        fn(idx, w, head).backward()
        grads.append(w.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1.3e-6, atol=1e-6)
    if options.get("padding_idx") == 0:
        assert torch.equal(grads[1][0], torch.zeros(6))

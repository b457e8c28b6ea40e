"""Ops whose result size depends on tensor values (x[mask], masked_select, nonzero) run as in eager;
Python code can never read the unknown size at trace time."""
import pytest
import torch

import compiler


def masked_loss(pred, target):
    keep = target >= 0
    return ((pred[keep] - target[keep]) ** 2).mean()


def test_masked_loss_and_gradients_match_eager():
    pred = torch.randn(6, 3)
    target = torch.randn(6, 3)
    p1, p2 = pred.clone().requires_grad_(), pred.clone().requires_grad_()
    jf = compiler.jit(masked_loss)
    got = jf(p1, target)
    expected = masked_loss(p2, target)
    torch.testing.assert_close(got, expected)
    got.backward()
    expected.backward()
    torch.testing.assert_close(p1.grad, p2.grad)
    # another mask, same metadata: a cache hit that still selects by the new values
    torch.testing.assert_close(jf(pred, target), masked_loss(pred, target))
    target2 = -target
    torch.testing.assert_close(jf(pred, target2), masked_loss(pred, target2))
    assert compiler.cache_hits(jf) == 1 and compiler.cache_misses(jf) == 2


def test_selected_rows_nonzero_and_masked_select():
    def fn(x):
        rows = x[x[:, 0] > 0]
        return rows * 2, torch.nonzero(x > 0.5), torch.masked_select(x, x < 0).abs(), rows.sum()

    x = torch.randn(7, 4)
    for g, e in zip(compiler.jit(fn)(x), fn(x)):
        assert g.shape == e.shape and torch.equal(g, e)


def test_reading_a_value_dependent_size_reads_it_at_run_time():
    def fn(x):
        return x[x > 0].shape[0]

    jfn = compiler.jit(fn)
    for x in (torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 1.0, 2.0]), torch.tensor([1.0, -1.0, 2.0])):
        assert jfn(x) == fn(x)
    assert compiler.cache_misses(jfn) == 2 and compiler.cache_hits(jfn) == 1


def test_setitem_with_a_mask_matches_eager():
    def fn(x):
        x[x < 0] = 0.0
        return x

    a = torch.randn(3, 3)
    b = a.clone()
    compiler.jit(fn)(a)
    fn(b)
    assert torch.equal(a, b)

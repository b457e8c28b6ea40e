"""Shape rules under cache="symbolic values" (compiler/shape_rules.py): ONE trace serves many input shapes.

Each case reads the sizes of the op's output (a reshape by them and a number made from them), which without
a rule would specialize every symbolic input, so every new shape would trace again. Each case is called at
three shapes against eager (one trace, two cache hits); then once more with a decision on the output's sizes
(`if sum(y.shape) > k`) whose outcome changes at the third shape: that call must trace again.
"""
import pytest
import torch
import torch.nn.functional as F

import compiler
from same_values import same

SYM = "symbolic values"


def T(*shape):
    return ("randn", shape)


def I(high, *shape):  # noqa: E743 - an index tensor with values in [0, high)
    return ("randint", high, shape)


def _build(spec, gen):
    if isinstance(spec, tuple) and spec and spec[0] == "randn":
        return torch.randn(spec[1], generator=gen)
    if isinstance(spec, tuple) and spec and spec[0] == "randint":
        return torch.randint(0, spec[1], spec[2], generator=gen)
    return spec  # a number argument


def _use(y):
    """Reads every size of y: a reshape by them and a number computed from them."""
    return y.reshape(y.shape[0], -1) * 2 + y.shape[-1] if y.ndim else y + 1


def _outs(y):
    return tuple(_use(t) for t in y) if isinstance(y, (tuple, list)) else _use(y)


# name -> (op, three argument specs: each call's inputs at other shapes)
CASES = {
    "expand": (lambda x: x.unsqueeze(0).expand(3, -1, -1), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "expand-sizes-read": (lambda x, y: x.expand(y.shape[0], -1),
                          [(T(1, 4), T(3)), (T(1, 6), T(5)), (T(1, 2), T(7))]),
    "expand_as": (lambda x, y: x.expand_as(y), [(T(1, 4), T(3, 4)), (T(1, 6), T(5, 6)), (T(1, 3), T(2, 3))]),
    "broadcast_to": (lambda x, y: torch.broadcast_to(x, (y.shape[0], x.shape[1])),
                     [(T(1, 4), T(3)), (T(1, 5), T(6)), (T(1, 2), T(4))]),
    "squeeze": (lambda x: x.unsqueeze(1).squeeze(1) * x[:, :1].squeeze()[:, None],
                [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "gather": (lambda x, i: torch.gather(x, 1, i),
               [(T(3, 5), I(5, 3, 2)), (T(4, 6), I(6, 4, 3)), (T(2, 7), I(7, 2, 4))]),
    "scatter_add": (lambda x, i, s: torch.scatter_add(x, 1, i, s),
                    [(T(3, 5), I(5, 3, 2), T(3, 2)), (T(4, 6), I(6, 4, 3), T(4, 3)), (T(2, 7), I(7, 2, 4), T(2, 4))]),
    "index_select": (lambda x, i: x.index_select(0, i), [(T(3, 5), I(3, 4)), (T(4, 6), I(4, 2)), (T(6, 2), I(6, 7))]),
    "index_add": (lambda x, i, s: x.index_add(0, i, s),
                  [(T(3, 5), I(3, 4), T(4, 5)), (T(4, 6), I(4, 2), T(2, 6)), (T(6, 2), I(6, 7), T(7, 2))]),
    "take_along_dim": (lambda x, i: torch.take_along_dim(x, i, dim=1),
                       [(T(3, 5), I(5, 3, 2)), (T(4, 6), I(6, 4, 3)), (T(2, 7), I(7, 2, 4))]),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1),
               [(T(2, 3, 8), T(4, 3, 3)), (T(3, 4, 11), T(5, 4, 3)), (T(2, 2, 9), T(3, 2, 3))]),
    "conv2d-stride": (lambda x, w: F.conv2d(x, w, stride=2, padding=1),
                      [(T(2, 3, 8, 6), T(4, 3, 3, 3)), (T(3, 3, 11, 7), T(5, 3, 3, 3)),
                       (T(2, 3, 9, 12), T(2, 3, 3, 3))]),
    "conv2d-same": (lambda x, w: F.conv2d(x, w, padding="same"),
                    [(T(2, 3, 8, 6), T(4, 3, 3, 3)), (T(3, 3, 11, 7), T(5, 3, 3, 3)), (T(2, 3, 9, 12), T(2, 3, 3, 3))]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), [(T(2, 3, 8, 6),), (T(3, 2, 11, 7),), (T(2, 4, 9, 12),)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [(T(2, 3, 8),), (T(3, 2, 11),), (T(2, 4, 9),)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2), [(T(2, 3, 8, 6),), (T(3, 2, 11, 7),), (T(2, 4, 9, 12),)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, None)),
                            [(T(2, 3, 8, 6),), (T(3, 2, 11, 7),), (T(2, 4, 9, 12),)]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "stack": (lambda x, y: torch.stack([x, y], 1), [(T(2, 4), T(2, 4)), (T(3, 5), T(3, 5)), (T(5, 3), T(5, 3))]),
    "narrow": (lambda x, n: x.narrow(1, 1, n), [(T(2, 6), 3), (T(3, 5), 2), (T(5, 9), 7)]),
    "narrow-computed": (lambda x: x.narrow(1, 1, x.shape[1] - 2), [(T(2, 6),), (T(3, 5),), (T(5, 9),)]),
    "chunk": (lambda x: x.chunk(3, 1), [(T(2, 6),), (T(3, 7),), (T(5, 9),)]),
    "movedim": (lambda x: torch.movedim(x, 0, -1), [(T(2, 4, 3),), (T(3, 5, 2),), (T(5, 3, 4),)]),
    "diagonal": (lambda x: torch.diagonal(x, 1, 0, 1), [(T(3, 5),), (T(4, 6),), (T(6, 9),)]),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 3)), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "pad-to-multiple": (lambda x: F.pad(x, (0, (-x.shape[-1]) % 4)), [(T(2, 5),), (T(3, 7),), (T(4, 10),)]),
    "topk": (lambda x, k: x.topk(k, dim=-1), [(T(3, 6), 2), (T(4, 7), 3), (T(2, 9), 5)]),
    "sort": (lambda x: x.sort(dim=1), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "where": (lambda x, y: torch.where(x > 0, x, y), [(T(2, 4), T(4)), (T(3, 5), T(5)), (T(5, 3), T(3))]),
    "masked_fill": (lambda x, m: x.masked_fill(m > 0, -1.0), [(T(2, 4), T(4)), (T(3, 5), T(5)), (T(5, 3), T(3))]),
    "zeros": (lambda x: torch.zeros(x.shape[0], 3) + x.sum(1, keepdim=True), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "full": (lambda x: torch.full((x.shape[0], 2), 1.5) * x[:, :2], [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "new_zeros": (lambda x: x.new_zeros(x.shape[0], x.shape[1] * 2) + 1, [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
    "flatten": (lambda x: x.flatten(1), [(T(2, 4, 3),), (T(3, 5, 2),), (T(5, 3, 4),)]),
    "interpolate": (lambda x: F.interpolate(x, scale_factor=2), [(T(2, 3, 4),), (T(3, 2, 5),), (T(2, 4, 7),)]),
    "getitem-none-ellipsis": (lambda x: x[:, None, ..., 1:], [(T(2, 4, 3),), (T(3, 5, 2),), (T(5, 3, 4),)]),
}


def _args(specs, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(_build(s, gen) for s in specs)


def _same(out, ref):
    return same(out, ref, atol=1e-6, rtol=1e-5)


def counts(jf):
    return compiler.cache_misses(jf), compiler.cache_hits(jf)


@pytest.mark.parametrize("name", list(CASES))
def test_one_trace_serves_every_shape(name):
    op, calls = CASES[name]

    def fn(*args):
        return _outs(op(*args))

    jf = compiler.jit(fn, cache=SYM)
    for i, specs in enumerate(calls):
        args = _args(specs, i)
        out, ref = jf(*args), fn(*args)
        assert _same(out, ref), (name, i)
    assert counts(jf) == (1, 2), (name, str(compiler.last_prologue_traces(jf)[-1]))


@pytest.mark.parametrize("name", list(CASES))
def test_a_decision_on_the_output_sizes_traces_again(name):
    op, calls = CASES[name]

    def fn(k, *args):
        y = op(*args)
        first = y[0] if isinstance(y, (tuple, list)) else y
        if sum(first.shape) > k:  # a decision on the rule's sizes: a constraint of the trace
            return _outs(y), 1
        return _outs(y), 0

    def total(args):
        y = op(*args)
        return sum((y[0] if isinstance(y, (tuple, list)) else y).shape)

    jf = compiler.jit(fn, cache=SYM)
    argss = [_args(specs, i) for i, specs in enumerate(calls)]
    ks = [total(argss[0]) - 1, total(argss[1]) - 1, total(argss[2])]  # True, True, then False
    for k, args in zip(ks, argss):
        out, ref = jf(k, *args), fn(k, *args)
        assert _same(out, ref), name
    assert [o[1] for o in [fn(k, *a) for k, a in zip(ks, argss)]] == [1, 1, 0]
    assert counts(jf) == (2, 1), (name, str(compiler.last_prologue_traces(jf)[-1]))


def test_a_derived_size_that_is_one_is_squeezed_only_while_it_is_one():
    def fn(x):
        y = x[:, : x.shape[1] - 2].squeeze(1)  # (n, 1) -> (n,) while x.shape[1] == 3, else kept
        return y * 2

    jf = compiler.jit(fn, cache=SYM)
    for shape in [(2, 3), (5, 3), (2, 4), (3, 6), (4, 3)]:
        x = torch.randn(shape)
        out, ref = jf(x), fn(x)
        assert out.shape == ref.shape and torch.equal(out, ref), shape
    assert counts(jf) == (2, 3)


def test_chunk_count_is_a_decision():
    def fn(x):
        return [_use(c) for c in x.chunk(3, 1)]

    jf = compiler.jit(fn, cache=SYM)
    for shape in [(2, 6), (3, 9), (2, 4), (5, 8), (2, 7)]:  # pieces: 3, 3, 2 (size 4: 2+2), 2, 3
        x = torch.randn(shape)
        out, ref = jf(x), fn(x)
        assert _same(out, ref), shape
    assert counts(jf) == (2, 3)


class _ViewFlat(torch.nn.Module):
    def forward(self, x):
        return x.view(x.size(0), -1)  # the classic CNN flatten: reads the sizes of the conv/pool output


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        _ViewFlat(), torch.nn.Linear(16, 10)).eval()


def test_cnn_at_several_image_sizes_is_one_trace():
    model = _cnn()
    jm = compiler.jit(model, cache=SYM)
    with torch.no_grad():
        for shape in [(2, 3, 16, 16), (3, 3, 12, 20), (2, 3, 9, 31), (4, 3, 16, 16)]:
            x = torch.randn(shape)
            out, ref = jm(x), model(x)
            assert out.shape == ref.shape and torch.allclose(out, ref, atol=1e-5), shape
    assert counts(jm) == (1, 3)


class _BertAttention(torch.nn.Module):
    """BERT-style self-attention with a padding mask expanded over heads and queries."""

    def __init__(self, c=16, h=4):
        super().__init__()
        self.h = h
        self.qkv, self.proj = torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, 2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (c // self.h) ** 0.5
        keep = mask[:, None, None, :].expand(b, self.h, t, t)
        att = att.masked_fill(keep == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        out = self.proj(y)
        return out.view(-1, out.size(-1))  # (as a loss reads logits): a size read of what the rules followed


def test_bert_attention_with_an_expanded_mask_at_several_lengths_is_one_trace():
    torch.manual_seed(0)
    model = _BertAttention().eval()
    jm = compiler.jit(model, cache=SYM)
    with torch.no_grad():
        for b, t in [(2, 5), (3, 9), (2, 16), (4, 7)]:
            x = torch.randn(b, t, 16)
            mask = (torch.arange(t)[None, :] < torch.tensor([t - 1, 2, 3, 4][:b])[:, None]).long()
            out, ref = jm(x, mask), model(x, mask)
            assert torch.allclose(out, ref, atol=1e-5), (b, t)
    assert counts(jm) == (1, 3)

"""Shape rules under cache="symbolic values" (compiler/symbolic/shape_rules.py): ONE trace serves many input shapes.

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


torch.manual_seed(0)
_GRU = torch.nn.GRU(4, 6, batch_first=True)
_LSTM = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True)  # (time, batch, features)
_GRU.requires_grad_(False), _LSTM.requires_grad_(False)  # (no autograd: the sizes are the point, and it is faster)

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
    "conv_transpose1d": (lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, output_padding=1, groups=2,
                                                         dilation=2),
                         [(T(2, 4, 5), T(4, 3, 3)), (T(3, 4, 7), T(4, 3, 3)), (T(2, 4, 9), T(4, 3, 3))]),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                         [(T(2, 4, 5, 6), T(4, 3, 3, 3)), (T(3, 4, 7, 5), T(4, 3, 3, 3)),
                          (T(2, 4, 9, 8), T(4, 3, 3, 3))]),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w, stride=(1, 2, 2)),
                         [(T(2, 4, 3, 5, 6), T(4, 3, 2, 3, 3)), (T(3, 4, 4, 7, 5), T(4, 3, 2, 3, 3)),
                          (T(2, 4, 5, 9, 8), T(4, 3, 2, 3, 3))]),
    "max_pool2d-ceil": (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
                        [(T(2, 3, 8, 7),), (T(2, 3, 10, 9),), (T(2, 3, 12, 11),)]),
    "avg_pool1d-ceil": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), [(T(2, 3, 8),), (T(2, 3, 10),),
                                                                            (T(2, 3, 12),)]),
    "Tensor.unfold": (lambda x: x.unfold(1, 3, 2), [(T(2, 8),), (T(3, 9),), (T(2, 11),)]),
    "F.unfold": (lambda x: F.unfold(x, 3, padding=1, stride=2), [(T(2, 3, 8, 7),), (T(2, 3, 9, 10),),
                                                                 (T(2, 3, 11, 6),)]),
    "F.fold": (lambda x: F.fold(F.unfold(x, 2, stride=2), x.shape[-2:], 2, stride=2),
               [(T(2, 3, 8, 6),), (T(2, 3, 10, 10),), (T(2, 3, 12, 6),)]),
    "tensor_split": (lambda x: x.tensor_split(3, 1), [(T(2, 8),), (T(3, 9),), (T(2, 11),)]),
    "tensor_split-indices": (lambda x: x.tensor_split([2, 5], 1), [(T(2, 8),), (T(3, 9),), (T(2, 11),)]),
    "gru": (lambda x: _GRU(x), [(T(2, 5, 4),), (T(3, 7, 4),), (T(4, 3, 4),)]),
    "lstm": (lambda x: (lambda o: (o[0], *o[1]))(_LSTM(x)), [(T(5, 2, 4),), (T(7, 3, 4),), (T(3, 4, 4),)]),
    "arange-start-end": (lambda x: x + torch.arange(1, x.shape[1] + 1), [(T(2, 4),), (T(3, 5),), (T(5, 3),)]),
}
# the cases of the rules added for conv_transpose, ceil_mode pooling, unfold/fold and tensor_split
NEWER = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool2d-ceil", "avg_pool1d-ceil",
         "Tensor.unfold", "F.unfold", "F.fold", "tensor_split", "tensor_split-indices", "gru", "lstm"]


def _args(specs, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(_build(s, gen) for s in specs)


def _same(out, ref):
    return same(out, ref, atol=1e-6, rtol=1e-5)


def counts(jf):
    return compiler.cache_misses(jf), compiler.cache_hits(jf)


def _run_case(name):
    """CASES[name]'s calls through one jitted function, each compared with eager; the jitted function."""
    op, calls = CASES[name]

    def fn(*args):
        return _outs(op(*args))

    jf = compiler.jit(fn, cache=SYM)
    for i, specs in enumerate(calls):
        args = _args(specs, i)
        assert _same(jf(*args), fn(*args)), (name, i)
    return jf


@pytest.mark.parametrize("name", list(CASES))
def test_one_trace_serves_every_shape(name):
    jf = _run_case(name)
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


@pytest.mark.parametrize("name", NEWER)
def test_without_the_rule_every_shape_traces_again(name, monkeypatch):
    """The cases can fail: with the rules of compiler/symbolic/shape_rules.py off, every new shape is a new trace."""
    import compiler.symbolic.shape_rules as rules
    from compiler.symbolic.sizes import _Unknown

    def off(*args):
        raise _Unknown

    monkeypatch.setattr(rules, "rule", off)
    assert counts(_run_case(name)) == (3, 0), name


def test_ceil_mode_dropping_the_last_window_is_a_constraint():
    """kernel 2, stride 2, padding 1: with ceil_mode the last window of an odd size would start in the right
    padding, so torch drops it; whether it does is a decision on the size (guarded), here its parity."""
    def fn(x):
        y = F.max_pool1d(x, 2, 2, 1, ceil_mode=True)
        return y * y.shape[-1]  # the output's size, as the rule gives it, enters the result

    jf = compiler.jit(fn, cache=SYM)
    for n in [4, 6, 5, 9, 8, 7]:
        x = torch.randn(2, 3, n)
        out, ref = jf(x), fn(x)
        assert out.shape == ref.shape and torch.allclose(out, ref), n
    assert counts(jf) == (2, 4)


def test_tensor_split_indices_past_the_end_are_clamped_with_a_constraint():
    def fn(x):
        return [p * (p.shape[1] + 1) for p in x.tensor_split([2, 5], 1)]

    jf = compiler.jit(fn, cache=SYM)
    for n in [8, 9, 3, 4, 1, 7]:  # 3 and 4: the second index is past the end; 1: the first too
        x = torch.randn(2, n)
        assert _same(jf(x), fn(x)), n
    assert counts(jf) == (3, 3)

"""Values as eager: None returned after a data-dependent read; under symbolic values, sizes that follow
in-place shape changes, eager's error where a size read from a tensor is 0, split whose chunk count changes;
tensors whose size depends on values combined with others; arguments' strides as eager reports them."""
from __future__ import annotations

import warnings

import pytest
import torch

import compiler
from eager_parity import CACHES, check_calls


def _randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("cache", CACHES)
def test_none_returned_after_a_data_dependent_read(cache):
    def fn(x):
        if x.sum() > 0:
            x.mul_(2)
        return None

    def bare_return(x):
        x.add_(x.max().item())

    calls = [lambda: (torch.ones(3),), lambda: (-torch.ones(3),), lambda: (torch.ones(3),)]
    jfn = check_calls(fn, calls, cache=cache)
    assert jfn(torch.ones(3)) is None
    check_calls(bare_return, calls, cache=cache)


@pytest.mark.parametrize("op", ["t_", "transpose_", "unsqueeze_", "squeeze_", "swapdims_", "resize_"])
def test_sizes_follow_in_place_shape_changes_under_symbolic_values(op):
    def fn(x, n):
        if op == "t_":
            x.t_()
        elif op == "transpose_":
            x.transpose_(0, 1)
        elif op == "unsqueeze_":
            x.unsqueeze_(0)
        elif op == "squeeze_":
            x.squeeze_()
        elif op == "swapdims_":
            x.swapdims_(0, -1)
        else:
            x.resize_(n, 2)
        return x.shape[0], x.shape, x.reshape(x.shape[0], -1).sum(1)

    def make(rows, cols, n):
        return lambda: (torch.arange(float(rows * cols)).reshape(rows, cols), n)

    cols = 1 if op == "squeeze_" else 3
    check_calls(fn, [make(2, cols, 2), make(4, cols, 3), make(5, cols, 4), make(2, cols, 2)],
                cache="symbolic values")


def test_a_size_read_from_a_tensor_that_becomes_zero_raises_eagers_error():
    def fn(x, t):
        return x.reshape(int(t), -1)

    calls = [lambda: (torch.ones(4), torch.tensor(2)), lambda: (torch.ones(4), torch.tensor(0)),
             lambda: (torch.ones(6), torch.tensor(3))]
    check_calls(fn, calls, cache="symbolic values")

    def arange_view(x, n):
        v = torch.arange(n) * 1.0
        return v.view(v.shape[-1], -1)

    check_calls(arange_view, [lambda: (torch.ones(2), 3), lambda: (torch.ones(2), 0)], cache="symbolic values")


@pytest.mark.parametrize("cache", CACHES)
def test_split_whose_chunk_count_changes(cache):
    def fn(x):
        pieces = x.split(2)
        a, b = x.split(x.shape[0] // 2)
        return len(pieces), a * b, [p.sum() for p in pieces]

    calls = [lambda: (torch.arange(4.0),), lambda: (torch.arange(6.0),), lambda: (torch.arange(5.0),),
             lambda: (torch.arange(8.0),), lambda: (torch.arange(4.0),)]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_value_dependent_sizes_combine_as_in_eager(cache):
    def fn(x, y):
        t = x[x > -10]  # every element: the same size as x
        m = x > 0
        return t + x, x[m] * y[m], torch.stack([x[m], y[m]]), torch.nonzero(x).float() + 1

    calls = [lambda i=i: (_randn(i, 6), _randn(i + 10, 6)) for i in range(3)]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_bool_masks_inside_index_tuples(cache):
    def fn(x):
        first = x[x[:, 0] > 0, 1:]
        last = x[..., x[0] > 0]
        x[x[:, 1] > 0, 0] = 5.0
        return first, last, x

    check_calls(fn, [lambda i=i: (_randn(i, 4, 3),) for i in range(3)], cache=cache)


def test_strides_of_an_expanded_argument_that_requires_grad():
    def fn(x):
        return x.shape, x.stride(), x * 2

    def make():
        leaf = torch.ones(1, 3, requires_grad=True)
        return (leaf.clone().expand(4, 3),)

    check_calls(fn, [make, make])


class _Offset(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.tensor(0.5))
        self.register_buffer("scale", torch.tensor(3.0))

    def forward(self, x):
        return x * self.scale + self.offset


_NET = _Offset()


@pytest.mark.parametrize("cache", CACHES)
def test_continuations_traced_later_use_their_own_captured_tensors(cache):
    """A new outcome of a data-dependent read is traced later: the tensors it captures after the read are named
    by its own trace (they may clash with names another continuation gave other tensors)."""
    def fn(a, b):
        if a.sum() > 0:
            b = b * 2 + 1
            extra = _NET.scale * 2
        else:
            extra = _NET.offset
        return _NET(a) + extra, b

    signs = [1.0, -1.0, 1.0, -1.0, -1.0]
    calls = [lambda s=s: (torch.full((4, 3), s) + torch.arange(12.0).reshape(4, 3) * 0.01, torch.ones(3))
             for s in signs]
    check_calls(fn, calls, cache=cache)


def test_an_op_caught_by_the_program_under_symbolic_values():
    """Whether an op raises depends on the sizes, and the program catches it: a trace made for sizes where
    it did not raise must not serve sizes where it does (and the other way round)."""
    def fn(x, y):
        try:
            v = x.reshape(2, -1)
        except RuntimeError:
            v = x.flatten()
        try:
            w = y[4]
        except IndexError:
            w = y.sum()
        return v, w

    sizes = [(4, 5), (3, 3), (6, 4), (5, 6), (4, 5)]
    calls = [lambda a=a, b=b: (torch.arange(float(a)), torch.arange(float(b))) for a, b in sizes]
    check_calls(fn, calls, cache="symbolic values")


def test_view_sizes_that_do_not_divide_under_symbolic_values():
    def fn(x):
        return x.view(2, -1).sum(0), x.reshape(x.shape[0] // 2, 2)

    calls = [lambda n=n: (torch.arange(float(n)),) for n in (4, 6, 5, 8)]
    check_calls(fn, calls, cache="symbolic values")


def test_eagers_exception_type_where_the_meta_kernel_raises_another():
    def fn(x):
        return int(x.argmax())  # an empty tensor: IndexError in eager (the meta kernel raises RuntimeError)

    check_calls(fn, [lambda: (torch.ones(3),), lambda: (torch.ones(0),), lambda: (torch.ones(2, 0),)])


def test_multi_output_views_whose_base_was_written():
    def fn(x, s):
        rows = x.unbind(0)
        x.neg_()
        return (rows[-1] > 0).any(), rows[0] * s

    def make():
        leaf = torch.ones(4, 2, requires_grad=True)
        return (leaf.clone(), 2.0)

    check_calls(fn, [make, make])


@pytest.mark.parametrize("cache", CACHES)
def test_an_in_place_write_into_one_output_of_split_raises_eagers_error(cache):
    # autograd refuses it (where the base requires grad); the meta tensors hold the same view history, the CPU
    # rebuild the compiler checks errors on does not: this was refused as "the meta kernel refuses these inputs"
    def written(x):
        v = x.split(2, 0)[0]
        v.add_(1)
        return v * 2

    def transposed(x):
        v = x.split(2, 0)[0]
        v.t_()
        return v

    def caught(x):
        a, b = x.unbind(0)
        try:
            a.mul_(2)
        except RuntimeError:
            return x * 3
        return x + a

    def calls():
        def values(*shape):
            return torch.arange(float(torch.Size(shape).numel())).reshape(shape) - 3

        return [lambda: (values(4, 3).requires_grad_() * 1,), lambda: (values(4, 3),),
                lambda: (values(2, 3).requires_grad_().clone(),)]

    for fn in (written, transposed, caught):
        check_calls(fn, calls(), cache=cache)
        with torch.no_grad():
            check_calls(fn, calls(), cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_splitting_a_tensor_whose_size_depends_on_values(cache):
    def fn(x, n):
        picked = x[x > 0]
        rows = torch.nonzero(x > -1).unbind(0)
        return [p * 2 for p in picked.split(n)], len(rows), picked.chunk(2)

    calls = [lambda i=i: (_randn(i, 6), 2) for i in range(4)]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_ops_the_program_catches_errors_of(cache):
    """Inside try/except, whether an op raises is eager's: indices into value-dependent sizes, dtype mixes the
    meta kernel accepts."""
    def fn(x, y):
        picked = torch.nonzero(x > 0)
        try:
            row = picked[4]
        except IndexError:
            row = picked.sum(0)
        try:
            prod = y.float() @ y.double()
        except RuntimeError:
            prod = y.sum()
        return row, prod

    calls = [lambda i=i: (_randn(i, 6), _randn(i, 3, 3)) for i in range(3)]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_slices_bounded_by_tensor_values(cache):
    def fn(lengths, x):
        start = lengths[0]
        out = (torch.ones(8)[start:] + 3) * 5
        x[(1, slice(lengths[1], None, None))] = 0
        return out, x

    calls = [lambda: (torch.tensor([1, 2]), _randn(0, 3, 5)), lambda: (torch.tensor([4, 0]), _randn(1, 3, 5))]
    check_calls(fn, calls, cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_torch_where_with_a_condition_only(cache):
    def fn(x):
        rows, cols = torch.where(x > 0)
        return rows, cols, x[rows, cols].sum()

    check_calls(fn, [lambda i=i: (_randn(i, 3, 4),) for i in range(3)], cache=cache)


def test_symbolic_bools_and_empty_chunks_under_symbolic_values():
    def fn(x, n, s):
        flag = x.max().item() > s
        full = torch.full((n,), flag)
        pieces = torch.full((n,), n).chunk(2)
        return full, len(pieces)

    calls = [lambda: (_randn(0, 3, 3), 2, 0.5), lambda: (_randn(1, 3, 3), 0, 5.0), lambda: (_randn(2, 3, 3), 3, -5.0)]
    check_calls(fn, calls, cache="symbolic values")


def test_a_slice_bounded_by_a_symbolic_number_after_a_data_dependent_read():
    def fn(x, n):
        made = torch.arange(float(n + 4))
        if x.sum() > 0:
            made = made * 2
        return made[:n], made[n:]

    calls = [lambda: (torch.ones(2), 2), lambda: (-torch.ones(2), 3), lambda: (torch.ones(2), 1)]
    check_calls(fn, calls, cache="symbolic values")


def test_the_number_of_pieces_of_a_size_no_rule_follows_under_symbolic_values():
    def fn(x):
        last = x[-1:]  # (a negative slice start: no shape rule follows it)
        first, *rest = last.unbind(-2)
        x[1:].mul_(-1)
        a, b = first.split(2, -1)
        return a, len(rest)

    calls = [lambda s=s: (torch.ones(s),) for s in ((4, 3, 3), (2, 5, 5), (3, 4, 4), (4, 3, 3))]
    check_calls(fn, calls, cache="symbolic values")


def test_value_dependent_errors_are_not_guessed_inside_try():
    """Asking the real kernel (inside try/except) must not invent an error the values decide: an integer
    division raises only for a zero denominator; tensor_split by a tensor stays a clear refusal."""
    def fn(x, y):
        try:
            q = x // y
        except RuntimeError:
            q = x
        return q

    calls = [lambda: (torch.arange(1, 5), torch.full((4,), 2)), lambda: (torch.arange(4), torch.full((4,), 3))]
    check_calls(fn, calls)
    with pytest.raises(compiler.DataDependentError):
        compiler.jit(lambda x, i: torch.tensor_split(x, i))(torch.randn(5), torch.tensor(1))


def test_split_into_pieces_of_a_symbolic_size_that_becomes_zero():
    def fn(x, n, s):
        picked = x.masked_select(x > s)
        return picked.split(n)[0], torch.arange(float(n + 3)).split(n + 1)

    calls = [lambda: (torch.arange(6.0), 2, 1.0), lambda: (torch.arange(6.0), 0, 1.0), lambda: (torch.arange(6.0), 0, 9.0),
             lambda: (torch.arange(6.0), 3, 0.5)]
    check_calls(fn, calls, cache="symbolic values")


@pytest.mark.parametrize("cache", CACHES)
def test_strides_of_computed_tensors_with_dims_of_size_one(cache):
    """Kernels choose the strides of size-1 dims freely and the CPU kernel does not always choose as the meta
    kernel: the strides Python reads are the real tensor's."""
    def fn(x):
        y = x + 1
        return y.stride(), y.shape, y.t().contiguous().stride(0)

    def make(rows, cols):
        return lambda: (torch.arange(float(rows * cols)).reshape(cols, rows).t(),)

    check_calls(fn, [make(1, 5), make(2, 3), make(5, 1), make(1, 5)], cache=cache)


@pytest.mark.parametrize("case", ["dropout of an empty tensor", "contiguous of a full slice"])
def test_an_op_returning_its_input_for_some_sizes_only_under_symbolic_values(case):
    # Found by bench/fuzz.py (seed 200128): F.dropout of an empty tensor returns the tensor itself, so the trace
    # made for n == 0 returned `v1` where a larger n gets dropout's new tensor.
    def fn(x, n):
        if case == "dropout of an empty tensor":
            v = torch.ones(n, x.shape[0]) + x.sum()
            return torch.nn.functional.dropout(v, 1.0, training=True), v  # (p=1: zeros, no random draw)
        y = x[:, :n].contiguous()  # x's own memory when n covers every column, else a copy
        y.add_(1)
        return y

    def make(rows, n):
        return lambda: (torch.arange(float(rows * 3)).reshape(rows, 3) if case != "dropout of an empty tensor"
                        else torch.arange(float(rows)), n)

    first = 0 if case == "dropout of an empty tensor" else 3
    check_calls(fn, [make(4, first), make(4, 2), make(5, 2), make(4, first)], cache="symbolic values")


@pytest.mark.parametrize("cache", CACHES)
def test_an_unused_softmax_over_a_dim_eager_refuses_raises(cache):
    # Found by bench/fuzz.py (seed 200738): torch's meta kernel of softmax accepts dim=1 of a 1-d tensor, eager
    # raises IndexError; the unused result was removed as dead code and the compiled call returned normally.
    def fn(x):
        F_out = torch.nn.functional.softmax(x.flatten(), dim=1)  # noqa: F841 - unused: only its error matters
        return x + 1

    check_calls(fn, [lambda: (torch.arange(9.0).reshape(3, 3),), lambda: (torch.arange(8.0).reshape(4, 2),)], cache=cache)


@pytest.mark.parametrize("op", ["unbind", "split"])
def test_results_counted_for_an_empty_dim_under_symbolic_values(op):
    # Found by bench/fuzz.py (seeds 201712, 203381): `unbind` of an empty dim has no result, so no size was
    # decided and the trace for n == 0 served n == 1; `split` of an empty dim has one piece where the rule
    # counted ceil(0 / 2) = 0, so the trace for n == 0 served n == 3 (its guard: not exactly one piece).
    def fn(x, n):
        t = torch.arange(n) * 1.0 if op == "split" else torch.zeros(n, 2)
        for piece in (t.unbind(0) if op == "unbind" else t.split(2, 0)):
            x.add_(piece.sum() + 1)
        first, *rest = t.split(2, 0) if op == "split" else (t, ())
        return x, first

    calls = [lambda n=n: (torch.zeros(()), n) for n in (2, 0, 1, 3, 0, 3)]
    check_calls(fn, calls, cache="symbolic values")


def test_sizes_after_an_out_argument_eager_resizes_under_symbolic_values():
    # Found by bench/aliasing_fuzz.py --cache "symbolic values" (seeds 1049, 383): sizes read after an out=
    # that eager resizes were the ones before the resize.
    def fn(x, buf):
        torch.add(x, x, out=buf)  # (n, 2, 1) into (n, 2, 2): eager resizes buf
        return buf.reshape(buf.shape[::-1]), buf.numel() // 2

    def make(n):
        return lambda: (torch.arange(float(n * 2)).reshape(n, 2, 1), torch.zeros(n, 2, 2))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (eager warns that it resizes a non-empty out=)
        check_calls(fn, [make(3), make(4), make(5), make(3)], cache="symbolic values")


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("convert", ["type", "to", "double"])
def test_a_value_dependent_size_survives_a_dtype_conversion(convert, cache):
    # Found by bench/fuzz.py (seed 305712): `nonzero(x).type(torch.float32).split(n)` unpacked as many pieces as
    # the placeholder size allowed: the conversion's result had lost its value-dependent mark.
    def fn(x, n):
        idx = torch.nonzero(x)
        f = idx.type(torch.float32) if convert == "type" else idx.to(torch.float64) if convert == "to" else idx.double()
        return f.split(n)[0], f.unbind(0)

    check_calls(fn, [lambda: (torch.tensor([1.0, 0.0, 2.0, 3.0, 0.0]), 2),
                     lambda: (torch.tensor([0.0, 0.0, 5.0]), 2)], cache=cache)


@pytest.mark.parametrize("cache", CACHES)
def test_set_to_a_tensor_of_value_dependent_size(cache):
    # Found by bench/fuzz.py (seed 331254): after `x.set_(y[mask])` the shape read was the placeholder's.
    def fn(x):
        v = x.flatten()[x.flatten() < 0]
        x.set_(v)
        return x.shape, x.stride(), x * 2

    check_calls(fn, [lambda: (torch.tensor([[1.0, -2.0], [-3.0, 4.0]]),),
                     lambda: (torch.tensor([[-1.0, -2.0], [-3.0, 4.0]]),)], cache=cache)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("case", ["contiguous then view", "is_contiguous of a strided slice"])
def test_layout_decisions_on_a_value_dependent_size(case, cache):
    # Found by bench/fuzz.py (seeds 347667, 347721): the layout of `nonzero`'s result (its real strides) and of a
    # slice of `unique`'s (contiguous or not with the real size) were answered from the placeholder.
    def fn(x):
        if case == "contiguous then view":
            return torch.nonzero(x).contiguous().view(-1)
        v = torch.unique(x)[..., ::2]
        return v + 1 if v.is_contiguous() else v - 1

    check_calls(fn, [lambda: (torch.tensor([[1.0, 0.0], [2.0, 3.0]]),), lambda: (torch.tensor([[5.0, 5.0], [0.0, 0.0]]),)],
                cache=cache)

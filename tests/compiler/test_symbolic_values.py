"""cache="symbolic values": one trace serves many numbers; every decision on a number is a prologue constraint.

Each case runs a call sequence with different values against eager and asserts the cache-hit counts: a
value that decides nothing hits the cache, a value that takes another branch (or loop count, or list
length) traces again. thunder 0.2.6 returns silently stale results for these (seed 262).
"""
import math

import pytest
import torch

import compiler
from same_values import same as _same

SYM = "symbolic values"


def run_sequence(fn, calls, **options):
    jf = compiler.jit(fn, cache=SYM, **options)
    for args in calls:
        out, ref = jf(*args), fn(*args)
        assert _same(out, ref), (fn.__name__, args, out, ref)
    return jf


def counts(jf):
    return compiler.cache_misses(jf), compiler.cache_hits(jf)


def constraints(jf):
    return [ln.strip() for ln in str(compiler.last_prologue_traces(jf)[-1]).splitlines()
            if ln.strip().startswith("if") and "# " in ln]


# ---- seed 262's first program: a branch on a number

def flag_branch(flag):
    if flag > 5:
        return torch.ones(1)
    return torch.zeros(1)


def test_branch_on_a_number_is_a_constraint():
    jf = run_sequence(flag_branch, [(6,), (0,), (7,), (-1,), (100,)])
    assert counts(jf) == (2, 3)  # one trace per branch; every other call is a hit
    assert any("flag > 5" in c for c in constraints(jf))


def test_prologue_prints_readable_constraints():
    jf = run_sequence(flag_branch, [(6,)])
    prologue = str(compiler.last_prologue_traces(jf)[-1])
    assert "if not (flag > 5): return None" in prologue
    assert "type(flag) is not int" in prologue
    comp = str(compiler.last_traces(jf)[-1])
    assert "def computation(flag)" in comp


def test_arithmetic_stays_symbolic_and_the_executor_gets_each_value():
    def fn(a, n, s):
        return a * (n + 1) - s / 2, n * 2, abs(-n), n // 3, n % 4, n ** 2

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 2, 1.5), (x, 5, 0.25), (x, 11, -3.0)])
    assert counts(jf) == (1, 2)
    text = str(compiler.last_traces(jf)[-1])
    assert "n + 1" in text and "def computation(t0, a_shape0, n, s)" in text


# ---- thunder's failing cases from the issue

def range_loop(a, n):
    for i in range(n):
        a = a + i
    return a


def test_range_loop_specializes_the_trip_count():
    x = torch.randn(3)
    jf = run_sequence(range_loop, [(x, 2), (x, 4), (x, 2), (x, 4), (x, 0)])
    assert counts(jf) == (3, 2)
    assert any("n == " in c for c in constraints(jf))


def max_select(a, n):
    return a * max(n, 3)


def test_max_selects_a_side_under_a_constraint():
    x = torch.randn(3)
    jf = run_sequence(max_select, [(x, 2), (x, 5), (x, 1), (x, 7), (x, 3)])
    assert counts(jf) == (2, 3)


def test_min_of_two_numbers():
    def fn(a, n, m):
        return a * min(n, m)

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 2, 5), (x, 3, 9), (x, 9, 3), (x, 7, 1)])
    assert counts(jf) == (2, 2)


def cat_repeated(a, n):
    return torch.cat([a] * n)


def test_list_repetition_specializes_the_length():
    x = torch.randn(3)
    jf = run_sequence(cat_repeated, [(x, 2), (x, 3), (x, 2), (x, 1)])
    assert counts(jf) == (3, 1)


def int_of_bool(a, n):
    return a * int(n > 3)


def test_int_of_a_comparison_stays_symbolic():
    x = torch.randn(3)
    jf = run_sequence(int_of_bool, [(x, 2), (x, 5), (x, 1), (x, 9)])
    assert counts(jf) == (1, 3)  # no decision at all: one trace


def test_indexing_a_list_and_a_dict_key_specialize():
    def fn(a, i, k):
        scales = [1.0, 2.0, 3.0]
        table = {0: -1.0, 1: 1.0}
        return a * scales[i] + table[k]

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 0, 1), (x, 2, 0), (x, 0, 1), (x, 1, 1)])
    assert counts(jf) == (3, 1)


def test_and_or_not_and_while():
    def fn(a, n, m):
        if n > 2 and not m < 0 or n == -7:
            a = a + 1
        k = n
        while k > 0:
            a = a * 2
            k = k - 3
        return a

    x = torch.randn(3)
    calls = [(x, 3, 1), (x, 3, 2), (x, 3, -1), (x, -7, -1), (x, 5, 1), (x, 4, 1)]
    run_sequence(fn, calls)


def test_math_functions_and_conversions():
    def fn(a, f, n):
        return a * math.sqrt(f) + float(n) / 3 + math.floor(f) + int(f * 2)

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 2.0, 1), (x, 5.5, 4), (x, 0.25, 9)])
    assert counts(jf) == (1, 2)


def test_string_formatting_specializes():
    def fn(a, n):
        key = f"layer{n}"
        return a * len(key)

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 1), (x, 2), (x, 12), (x, 1)])
    assert counts(jf) == (3, 1)


def test_numbers_in_containers_are_symbolic():
    def fn(a, cfg):
        return a * cfg["scale"] + cfg["shift"][0]

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, {"scale": 2.0, "shift": [1]}), (x, {"scale": 3.5, "shift": [4]})])
    assert counts(jf) == (1, 1)


def test_a_number_as_a_shape_specializes_with_a_guard():
    def fn(a, n):
        return torch.eye(n) + a.sum(), a.reshape(n, -1)  # (eye: no shape rule follows its number)

    jf = run_sequence(fn, [(torch.randn(6), 2), (torch.randn(6), 3), (torch.randn(6), 2)])
    assert counts(jf) == (2, 1)


def test_a_number_as_a_shape_of_a_creation_op_stays_symbolic():
    def fn(a, n):
        z = torch.zeros(n) + a.sum()
        return z.reshape(z.shape[0], 1), a.reshape(n, -1)

    jf = run_sequence(fn, [(torch.randn(6), 2), (torch.randn(6), 3), (torch.randn(6), 2)])
    assert counts(jf) == (1, 2)


def test_check_and_raise_are_constraints():
    def fn(a, n):
        assert n > 0
        if n > 100:
            raise ValueError("too big")
        return a * n

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 2), (x, 5)])
    assert counts(jf) == (1, 1)
    with pytest.raises(AssertionError):
        jf(x, -1)
    with pytest.raises(ValueError, match="too big"):
        jf(x, 101)


def test_bools_stay_guarded_by_value_and_constant_values_stays_the_default():
    def fn(a, n, flag):
        return a * n if flag else a

    x = torch.randn(3)
    jf = run_sequence(fn, [(x, 2, True), (x, 3, True), (x, 3, False)])
    assert counts(jf) == (2, 1)
    default = compiler.jit(fn)
    default(x, 2, True)
    default(x, 3, True)
    assert counts(default) == (2, 0)


def test_data_dependent_branches_split_under_symbolic_values():  # (more: test_symbolic_segments.py)
    def fn(a, n):
        if a.sum() > 0:
            return a * n
        return a - n

    x = torch.randn(4)
    run_sequence(fn, [(x, 2), (-x, 2), (x, 3), (x.abs(), 3)])


def test_user_except_does_not_swallow_the_fallback():
    def fn(a, n):
        try:
            s = str(-(n - n))  # -0.0 cannot be guarded by ==: this call is traced with constant values
        except Exception:
            s = "caught"
        return a * n, s

    jf = run_sequence(fn, [(torch.ones(2), 2.0), (torch.ones(2), 3.0)])
    assert not jf.last_entry.symbolic


def test_fusing_executors_trace_with_symbolic_values_too():
    # their fused plan is made per call's values from the symbolic trace (tests/compiler/test_symbolic_fusion.py)
    fused, plain = compiler.jit(range_loop, cache=SYM, executors=("inductor", "torch")), compiler.jit(range_loop, cache=SYM)
    for jf in (fused, plain):
        assert torch.equal(jf(torch.ones(2), 3), range_loop(torch.ones(2), 3))
    assert fused.last_entry.symbolic and plain.last_entry.symbolic


def test_module_with_number_arguments():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, scale):
            return self.lin(x) * scale

    m = M()
    jm = compiler.jit(m, cache=SYM)
    x = torch.randn(2, 4)
    for s in (0.5, 2.0, 3):
        torch.testing.assert_close(jm(x, s), m(x, s))
    assert (compiler.cache_misses(jm), compiler.cache_hits(jm)) == (2, 1)  # float then int: a type change


# ---- symbolic sizes

def test_a_shape_change_that_decides_nothing_hits_the_cache():
    def fn(a):
        return a * 2 + a.sin()

    jf = run_sequence(fn, [(torch.randn(2, 2, 2),), (torch.randn(3, 4, 5),), (torch.randn(1, 4, 5),),
                           (torch.randn(3, 4, 5),), (torch.randn(7, 2, 9),)])
    assert counts(jf) == (2, 3)  # sizes 1 specialize: (1, 4, 5) is a second trace
    assert "a_shape0 = v1.shape[0]" in str(compiler.last_prologue_traces(jf)[-1])


def shape_branch(a):
    if a.shape[0] > 2:
        return a + 1
    return a - 1


def shape_tuple(a):
    if tuple(a.shape) == (2, 2):
        return a + 1
    return a - 1


def test_branches_on_shapes_and_shape_tuples():
    jf = run_sequence(shape_branch, [(torch.randn(3),), (torch.randn(2),), (torch.randn(5),), (torch.randn(4),)])
    assert counts(jf) == (2, 2)
    jf = run_sequence(shape_tuple, [(torch.randn(2, 2),), (torch.randn(3, 2),), (torch.randn(2, 2),),
                                    (torch.randn(4, 2),)])
    assert counts(jf) == (2, 2)


def seed_split(a, dim0, dim1):  # seed 262's second program
    dim2 = a.size(2) - dim0 - dim1
    return torch.split(a, (dim0, dim1, dim2), dim=2)


def test_dynamic_split_sizes_stay_symbolic():
    jf = run_sequence(seed_split, [(torch.randn(8, 16, 32), 2, 8), (torch.randn(8, 16, 32), 4, 4),
                                   (torch.randn(4, 6, 20), 3, 9)])
    assert counts(jf) == (1, 2)
    assert "a_shape2 - dim0" in str(compiler.last_traces(jf)[-1])


def test_views_with_computed_sizes():
    def fn(a, h):
        b = a.shape[0]
        return a.view(b, -1, h).transpose(1, 2).reshape(b * h, -1).sum(0)

    jf = run_sequence(fn, [(torch.randn(4, 12), 3), (torch.randn(6, 12), 4), (torch.randn(5, 30), 5)])
    assert counts(jf) == (1, 2)


def test_numel_len_and_size_are_symbolic():
    def fn(a):
        return a * (a.numel() + len(a) + a.size(1) + a.size()[0])

    jf = run_sequence(fn, [(torch.randn(2, 3),), (torch.randn(4, 5),)])
    assert counts(jf) == (1, 1)


def test_a_size_no_rule_follows_specializes_every_size():
    def fn(a):
        b = torch.rot90(a, 1, (0, 1)).t()  # (rot90 has no shape rule: its sizes are unknown symbolically)
        return b * b.shape[0]

    jf = run_sequence(fn, [(torch.randn(3, 2),), (torch.randn(4, 2),), (torch.randn(3, 2),)])
    assert counts(jf) == (2, 1)


def test_broadcasting_two_symbolic_sizes_is_a_constraint():
    def fn(a, b):
        return (a + b).shape[0] * a

    jf = run_sequence(fn, [(torch.randn(3), torch.randn(3)), (torch.randn(5), torch.randn(5))])
    assert counts(jf) == (1, 1)
    with pytest.raises(RuntimeError):
        jf(torch.randn(4), torch.randn(6))  # eager raises too


def test_gpt_block_at_several_sequence_lengths_is_one_trace():
    from test_gpt_model import Block, BATCH, WIDTH

    torch.manual_seed(0)
    for mode in ("is_causal", "buffer"):
        block = Block(mode)
        jb = compiler.jit(block, cache=SYM)
        for seq in (5, 9, 16, 7):
            x = torch.randn(BATCH, seq, WIDTH)
            torch.testing.assert_close(jb(x), block(x), rtol=1e-5, atol=1e-5)
        assert (compiler.cache_misses(jb), compiler.cache_hits(jb)) == (1, 3), mode


def test_a_computed_size_of_one_in_a_broadcast_is_decided():
    def fn(a, b, n):
        return b * (a[:n] + b).shape[0]

    a, b = torch.randn(5), torch.randn(3)
    jf = run_sequence(fn, [(a, b, 3), (a, b, 1), (a, b, 3), (a, b, 1)])
    assert counts(jf) == (2, 2)


def test_a_negative_view_size_is_not_taken_for_a_given_size():
    def fn(a, n):
        return a.view(n, 4).shape[0] * a  # view(-1, 4) infers 3

    x = torch.randn(12)
    jf = run_sequence(fn, [(x, 3), (x, -1), (x, 3), (x, -1)])
    assert counts(jf) == (2, 2)


def test_reductions_unsqueeze_and_flatten_keep_sizes_symbolic():
    def fn(a):
        s = a.sum(1, keepdim=True) + a.mean(-1).unsqueeze(1)
        return s * a.amax(0).shape[0] + a.flatten().shape[0]

    jf = run_sequence(fn, [(torch.randn(3, 4),), (torch.randn(5, 2),), (torch.randn(2, 7),)])
    assert counts(jf) == (1, 2)


@pytest.mark.parametrize("cache", ["constant values", SYM])
def test_type_of_a_number_argument_is_its_type(cache):
    def fn(a, n, f):
        return a + 1 if type(n) is int and type(f) is float else a - 1

    jf = compiler.jit(fn, cache=cache)
    x = torch.zeros(1)
    assert torch.equal(jf(x, 3, 0.5), fn(x, 3, 0.5))


def test_int_methods_and_attributes_do_not_bake_the_value():
    def fn(a, n):
        return a * n.bit_length() + n.real + n.numerator

    x = torch.zeros(1)
    jf = run_sequence(fn, [(x, 3), (x, 4), (x, 9), (x, 3)])
    assert counts(jf) == (3, 1)  # bit_length() reads the value: one trace per value


def test_binary_max_min_broadcast_at_symbolic_sizes():
    # (found by the OpInfo sweep in symbolic mode: the reduction rule read `b` as a dim and crashed)
    def fn(a, b):
        return torch.max(a, b) * 2, torch.min(a, other=b)

    jf = compiler.jit(fn, cache=SYM)
    for n in (3, 4, 5, 7):
        a, b = torch.randn(n, 4), torch.randn(4)
        assert _same(jf(a, b), fn(a, b)), n
    assert (compiler.cache_misses(jf), compiler.cache_hits(jf)) == (1, 3)


def test_torch_helpers_that_check_isinstance_bool_accept_a_symbolic_comparison():
    # torch.broadcast_shapes hands `a == 1` on symbolic ints to guard_or_false, which asserts isinstance(x, bool)
    # (found by the OpInfo sweep: "AssertionError: Expected bool, got <class 'bool'>")
    def fn(a, n, m):
        return a.expand(torch.broadcast_shapes((n, 1), (1, m))) + 1

    # torch.Size(...) is a native constructor that reads plain ints: the sizes specialize, with a guard
    # (before: they were read silently and the second call returned the first call's shape)
    calls = [(torch.ones(1, 1), 3, 4), (torch.ones(1, 1), 5, 2), (torch.ones(1, 1), 1, 4), (torch.ones(1, 1), 3, 4)]
    jf = run_sequence(fn, calls)
    assert counts(jf) == (3, 1)

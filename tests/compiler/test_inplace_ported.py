"""lightning-thunder's in-place, aliasing and functionalization tests, ported to compiler.jit.

The programs of thunder/tests/test_inplace_functionalization.py, test_update_aliases.py and
test_inplace_copy.py (lightning-thunder, public on GitHub), written here against `compiler.jit` and judged
against eager PyTorch with the aliasing programs' comparison (aliasing_programs.check_program: outputs,
inputs left behind, which outputs and inputs share memory or are the same object, views, gradients, what a
later write into each output changes), on the default path and on the functional (fused) path. Where
thunder raises (its "in-place to a view of a reshape" errors, its copy_ sanity check), eager runs, so the
jitted function must give eager's result; the functional path may run such a trace in eager order, and says
why in the trace header. Also here: the programs of issue 23 (writes into expanded inputs, a source that
views its destination, out= that eager resizes, in-place on a view of a non-leaf that requires grad, outputs
that view each other, contiguous() of an expanded input that requires grad) and the memory checks (no call's
tensors kept after it returns).
"""
from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

import aliasing_programs as ap
import compiler
from compiler.executors.inductor import InductorExecutor

AOT_EAGER = InductorExecutor(backend="aot_eager")
PATHS = {"default": None, "functional": (AOT_EAGER, "torch")}


@dataclass
class Case:
    fn: object
    make: object  # () -> (inputs, leaves whose gradients are compared)


def _t(*shape, seed=0, requires_grad=False, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)  # (drawn on the CPU; the CUDA tier's default device takes them)
    t = torch.randn(shape, generator=gen, dtype=torch.float64, device="cpu").mul(3).to(torch.get_default_device(), dtype)
    return t.requires_grad_() if requires_grad else t


def _plain(*shapes):
    return lambda: ([_t(*s, seed=i) for i, s in enumerate(shapes)], [])


# ---- test_inplace_functionalization.py ----

def inplace_to_views_f(a, b):
    c = torch.exp(a)
    d = torch.tanh(b)
    e = c.view(-1)
    e += d.flatten()
    d.div_(a)
    return c, d, e


def inplace_to_views_g(a, b):
    c = torch.exp(a)
    d = torch.tanh(b)
    e, _ = c.chunk(2)
    e *= 1.5
    d.div_(a)
    return d, e


def inplace_to_views_h(a, b):
    c = torch.exp(a)
    d = torch.tanh(b)
    e = c.view(-1)
    e.add_(d.flatten())
    d.div_(a)
    return c, d, e / 2.0


def inplace_to_args_nvfuser(a, b):
    a += b
    c = torch.exp(a)
    d = torch.tanh(b)
    e = c.view(-1)
    e.add_(d.flatten())
    d.div_(a)
    return c, d, e / 2.0


def inplace_to_flatten_output(a, b):  # thunder: NotImplementedError (flatten may copy); eager: a view here
    c = torch.exp(a)
    d = torch.tanh(b)
    e = c.flatten()
    e += d.flatten()
    d.div_(a)
    return c, d, e


def inplace_to_chunk_returned_with_base(a, b):  # thunder: NotImplementedError
    c = torch.exp(a)
    d = torch.tanh(b)
    e, _ = c.chunk(2)
    e *= 1.5
    d.div_(a)
    return c, d, e


def multiple_inplace_to_args(a):
    a.exp_()
    a.sin_()
    return a.cos()


def multiple_inplace_through_view(a):
    b = a.view(-1)
    return b.exp_().sin_().cos()


def chained_inplace_returned(a):
    return a.exp_().sin_()


def views_before_inplace_to_base(x):
    y = x.view(-1)
    z = x.view(-1)
    x.add_(1)
    y2 = y + 1  # noqa: F841 - y sees the write too
    z2 = z + 1
    return z2


def views_before_inplace_to_intermediate(x):
    x = x.add(1)
    y = x.view(-1)
    z = x.view(-1)
    x.add_(1)
    y2 = y + 1  # noqa: F841
    z2 = z + 1
    return z2


def strided_view_before_inplace(x):  # thunder: "Fail to propagate the in-place change"; eager runs
    x = x.add(1)
    z = x.view(-1)[::2]
    x.add_(1)
    z2 = z + 1
    return z2


def multiple_inplace_to_multiple_args(xs, ys, z):
    for i in range(len(xs)):
        ys[i].add_(xs[i].exp_().sin_())
        z.add_(ys[i])
    return z


@torch.no_grad()
def add_y(x, y):
    return x.add_(y, alpha=0.1)


@torch.no_grad()
def add_grad(x, y):
    return x.add_(x.grad, alpha=0.1)


def _with_grad_attribute():
    x = _t(2, 2, seed=0, requires_grad=True)
    x.grad = _t(2, 2, seed=1)
    return [x, _t(2, 2, seed=2)], []


def single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, state_steps, lr=1e-2, beta1=0.9, beta2=0.9, eps=1e-5):
    for i, param in enumerate(params):
        grad = grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]
        exp_avg.mul_(beta1).add_(grad)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1)
        step_t.add_(1)
        bias_correction2 = 1 - beta2 ** step_t
        step_size = lr / (1 - beta1 ** step_t)
        step_size_neg = step_size.neg()
        denom = exp_avg_sq.sqrt() / (bias_correction2 * step_size_neg).add(eps / step_size_neg)
        param.addcdiv_(exp_avg, denom)


def _adam_inputs():
    tensors = [[_t(4, seed=10 * k + i).abs() + 1 for i in range(2)] for k in range(4)]
    return [*tensors, [torch.tensor(1) for _ in range(2)]], []


def inplace_to_arg_return_value(a, b):
    c = a + b
    b.mul_(c)
    return b


def no_self_repeat(a, b, c):
    a.add_(b, alpha=c)
    return a.add_(b, alpha=c)


def inplace_copy_on_fusion_inputs_issue_791(x, y, idx, src):
    x.index_copy_(0, idx, src)
    z = x + 1
    y.index_copy_(0, idx, src)
    return z


def inplace_to_alias_func_args(a, b):
    return a.exp_() + b.tanh_(), a


def three_inplace(a, b, c):
    d = a.exp_()
    e = b.tanh_()
    f = c.cosh_()
    return d + e + f


def zero_(a):
    return a.zero_()


def reshape_add_(x):  # thunder: NotImplementedError; a view here (contiguous), so eager writes x
    y = x.reshape(6, 4)
    y.add_(1)
    return y


def flatten_add_(x):
    y = x.flatten()
    y.add_(1)
    return y


def reshape_as_add_(x):
    y = x.reshape_as(torch.zeros(6, 4))
    y.add_(1)
    return y


def aliases_and_functionalizable_inplace(a, x, y):
    return a.exp().add_(x) + y.exp()


def _aliases_inputs():
    x = _t(2, 2)
    return [x.clone(), x, x.view(1, 2, 2)], []


def unused_view_input(a, x, unused):
    return a.exp().add_(x)


def _unused_view_inputs():
    x = _t(2, 2)
    return [x.clone(), x, x[0]], []


def inplace_on_to_self(a):
    return a.to().sin_()


def inplace_on_to_copy(a):
    return a.to(torch.float64).sin_()


# ---- test_update_aliases.py ----

def setitem_on_view_returns_base(x, _):
    y = x.view((3, 2))
    y[0][0] = 0
    return x


def setitem_on_view_returns_view(x, _):
    y = x.view((3, 2))
    y[0][0] = 0
    return y


def inplace_on_view_h(x, y):
    c = torch.exp(x)
    d = torch.tanh(y)
    e = c.view(-1)
    d.div_(x)
    e += d.flatten()
    return c, d, e


def inplace_on_view_i(x, y):
    c = torch.exp(x)
    d = torch.tanh(y)
    e = c.view(-1)
    e += d.flatten()
    d.div_(x)
    return c, d, e


def inplace_on_view_j(x, _):
    a = x.view(-1)
    b = x.view(-1)
    x.add_(1)
    return a + 1, b + 1


def inplace_on_chunk_non_default_dim(x):
    y, z = x.chunk(2, dim=1)
    y.relu_()
    return y, z


def inplace_on_chunk_g(x):
    y, z = x.chunk(2, dim=0)
    y.relu_()
    return y + 1, z


def inplace_on_chunk_h(x):
    x.relu_()
    y = x.chunk(2, dim=0)
    y[0].add_(1)
    return y


def chained_f(x):
    x.add_(1).sin_().mul_(5)
    return x


def chained_g(x):
    x.add_(1).sin().mul_(5)
    return x


def chained_h(x):
    x.exp_()
    x.sin_()
    return x.cos()


def nn_module_inplace(x):
    return torch.nn.ReLU(inplace=True)(x)


def inplace_f(a, b):
    c = a + b
    c.add_(1)
    return c


def inplace_g(a, b):
    c = a + b
    c.add_(1)
    d = c + c
    d.add_(1)
    c.add_(d)
    return c, d


def aliased_input(x, y, z):
    return y.exp_().add(x) + z.exp()


def _aliased_input_inputs():
    a = _t(2, 1, 2)
    return [a, a.clone(), a.view(1, 2, 2)], []


def write_to_intermediate_result(x):
    y = x.view(-1)
    y.add_(1)
    return y


class _Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = x * 1
        y.sin_()
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        y = g * x
        y.cos_()
        return y


def higher_order_inplace_alias_update(x):
    return _Sin.apply(x)


def viewed_inputs_of_different_shapes(x, y, z):
    return x + 2, y.add_(z)


def _rows_of_one_tensor():
    a = _t(2, 3)
    return [a, a[0, :], a[1, :]], []


# ---- test_inplace_copy.py ----

def copy_fwd(x, y):
    z = x + y
    return x.copy_(z)


def copy_bwd(x, y):
    z = x * y
    z = z * x
    x.copy_(z)
    return y * y


def copy_sanity_0(x, y):  # thunder's copy_ sanity check refuses these four; eager runs them
    z = x * y
    x.copy_(z)
    return x + y


def copy_sanity_1(x, y):
    z = x * y
    o1 = x.copy_(z)
    o2 = x.copy_(y)
    return x, o1, o2


def copy_sanity_2(x, y):
    z = x * y
    o1 = x.copy_(z)
    o2 = y.copy_(x)
    return y, o1, o2


def copy_sanity_3(x, y):
    z = x * y
    o1 = x.copy_(z)
    o2 = y.copy_(o1)
    return y, o2


def dst_copy_returned_issue_1109(t0):
    t1 = torch.sin(t0)
    t0.copy_(t1)
    t2 = torch.cos(t1)
    t0.copy_(t2)
    return t1, t2


class _BatchNorm3d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm3d(2, track_running_stats=True)

    def forward(self, x):
        return self.bn(x)


# ---- issue 23 ----

def masked_write_into_expanded(x):
    x[x < 0] *= -1
    return x


def copy_into_itself(x):
    x.copy_(x)
    return x * 2


def source_views_destination(z, idx):
    z.index_copy_(0, idx, z.t().narrow(0, 0, 2))
    return z


def out_resized(x, y):
    torch.mul(y, -2, out=x)
    return x


def out_broadcast(x, y):
    torch.add(y, 1, out=x)
    return x


def lerp_on_detached_view_of_nonleaf(x):
    t2 = x.unbind(0)[-1]
    t5 = t2.detach()
    t5.lerp_(t2, 0.5)
    return t5, x * 2


def outputs_view_each_other(a, b):
    c = torch.exp(a)
    d = c + b
    e = c.view(-1)
    e += 1
    return c, d, e


def contiguous_of_expanded(y):
    z = y.contiguous()
    z[z > 0] = 0
    return z


def _expanded(requires_grad=False, leaf=True):
    def make():
        base = _t(3, 1)
        if requires_grad:
            base.requires_grad_()
        if requires_grad and leaf:
            return [base.detach().expand(3, 4).requires_grad_()], []
        return [base.expand(3, 4)], ([base] if requires_grad else [])
    return make


def _nonleaf(*shape):
    def make():
        leaf = _t(*shape, requires_grad=True)
        return [leaf * 1], [leaf]
    return make


CASES = {
    # test_inplace_functionalization.py
    "inplace_to_views.f": Case(inplace_to_views_f, _plain((2, 2), (2, 2))),
    "inplace_to_views.g": Case(inplace_to_views_g, _plain((2, 2), (2, 2))),
    "inplace_to_views.h": Case(inplace_to_views_h, _plain((2, 2), (2, 2))),
    "inplace_to_args_with_nvfuser": Case(inplace_to_args_nvfuser, _plain((2, 2), (2, 2))),
    "error_of_inplace_to_views.flatten": Case(inplace_to_flatten_output, _plain((2, 2), (2, 2))),
    "error_of_inplace_to_views.chunk": Case(inplace_to_chunk_returned_with_base, _plain((2, 2), (2, 2))),
    "multiple_inplace_to_args.f": Case(multiple_inplace_to_args, _plain((2, 2))),
    "multiple_inplace_to_args.f_with_view": Case(multiple_inplace_through_view, _plain((2, 2))),
    "multiple_inplace_to_args.returned": Case(chained_inplace_returned, _plain((2, 2))),
    "multiple_views_before_inplace_to_base.input": Case(views_before_inplace_to_base, _plain((2, 2))),
    "multiple_views_before_inplace_to_base.intermediate": Case(views_before_inplace_to_intermediate, _plain((2, 2))),
    "multiple_views_before_inplace_to_base.strided": Case(strided_view_before_inplace, _plain((2, 2))),
    "multiple_inplace_to_multiple_args": Case(
        multiple_inplace_to_multiple_args,
        lambda: ([[_t(2, 2, seed=i) for i in range(2)], [_t(2, 2, seed=2 + i) for i in range(2)], _t(2, 2, seed=4)],
                 [])),
    "inplace_to_tensors_with_grad.add_y": Case(add_y, _with_grad_attribute),
    "inplace_to_tensors_with_grad.add_grad": Case(add_grad, _with_grad_attribute),
    "single_tensor_adam_like": Case(single_tensor_adam, _adam_inputs),
    "inplace_to_arg_return_value": Case(inplace_to_arg_return_value, _plain((2, 2), (2, 2))),
    "no_self_repeat_in_subsymbols": Case(no_self_repeat, lambda: ([_t(2, 2), _t(2, 2, seed=1), 0.5], [])),
    "inplace_copy_on_fusion_inputs_issue_791": Case(
        inplace_copy_on_fusion_inputs_issue_791,
        lambda: ([_t(2, 2), _t(2, 2, seed=1), torch.arange(2), _t(2, 2, seed=2)], [])),
    "inplace_to_alias_func_args.distinct": Case(inplace_to_alias_func_args, _plain((2, 2), (2, 2))),
    "inplace_to_alias_func_args.same": Case(inplace_to_alias_func_args, lambda: ([_t(2, 2)] * 2, [])),
    "inplace_to_alias_func_args.row": Case(inplace_to_alias_func_args, lambda: ((lambda a: [a, a[0, :]])(_t(2, 2)), [])),
    "inplace_to_alias_func_args.three_same": Case(three_inplace, lambda: ([_t(2, 2)] * 3, [])),
    "inplace_to_alias_func_args.two_of_three": Case(three_inplace, lambda: ((lambda a, b: [a, b, b])(_t(2, 2), _t(2, 2, seed=1)), [])),
    "inplace_to_alias_func_args.first_and_last": Case(three_inplace, lambda: ((lambda a, b: [a, b, a])(_t(2, 2), _t(2, 2, seed=1)), [])),
    "inplace_to_alias_func_args.zero_": Case(zero_, _plain((2, 2))),
    "reshape_flatten_error_out.reshape": Case(reshape_add_, _plain((3, 2, 4))),
    "reshape_flatten_error_out.flatten": Case(flatten_add_, _plain((3, 2, 4))),
    "reshape_flatten_error_out.reshape_as": Case(reshape_as_add_, _plain((3, 2, 4))),
    "reshape_flatten_error_out.reshape_transposed": Case(reshape_add_, lambda: ([_t(4, 2, 3).permute(2, 1, 0)], [])),
    "aliases_and_functionalizable_inplace": Case(aliases_and_functionalizable_inplace, _aliases_inputs),
    "unused_view_input": Case(unused_view_input, _unused_view_inputs),
    "inplace_on_to.self": Case(inplace_on_to_self, _plain((2, 2))),
    "inplace_on_to.copy": Case(inplace_on_to_copy, _plain((2, 2))),
    # test_update_aliases.py
    "setitem_on_view.base": Case(setitem_on_view_returns_base, _plain((2, 3), (2, 3))),
    "setitem_on_view.view": Case(setitem_on_view_returns_view, _plain((2, 3), (2, 3))),
    "inplace_on_view.h": Case(inplace_on_view_h, _plain((2, 3), (2, 3))),
    "inplace_on_view.i": Case(inplace_on_view_i, _plain((2, 3), (2, 3))),
    "inplace_on_view.j": Case(inplace_on_view_j, _plain((2, 3), (2, 3))),
    "inplace_on_chunk_non_default_dim": Case(inplace_on_chunk_non_default_dim, _plain((2, 3))),
    "inplace_on_chunk.g": Case(inplace_on_chunk_g, _plain((2, 3))),
    "inplace_on_chunk.h": Case(inplace_on_chunk_h, _plain((2, 3))),
    "chained_inplace.f": Case(chained_f, _plain((2, 3))),
    "chained_inplace.g": Case(chained_g, _plain((2, 3))),
    "chained_inplace.h": Case(chained_h, _plain((2, 3))),
    "nn_module_inplace": Case(nn_module_inplace, _plain((2, 3))),
    "inplace.f": Case(inplace_f, _plain((2, 3), (2, 3))),
    "inplace.g": Case(inplace_g, _plain((2, 3), (2, 3))),
    "aliased_input": Case(aliased_input, _aliased_input_inputs),
    "write_to_intermediate_result": Case(write_to_intermediate_result, _plain((2, 3))),
    "higher_order_inplace_alias_update": Case(higher_order_inplace_alias_update,
                                              lambda: (lambda a: ([a], [a]))(torch.ones(2, requires_grad=True))),
    "aliasing_for_viewed_input_of_different_shapes": Case(viewed_inputs_of_different_shapes, _rows_of_one_tensor),
    # test_inplace_copy.py
    "prim_inplace_copy_fwd.f32": Case(copy_fwd, _plain((4, 4), (4, 4))),
    "prim_inplace_copy_fwd.i64": Case(copy_fwd, lambda: ([torch.arange(16).reshape(4, 4), torch.ones(4, 4, dtype=torch.int64)], [])),
    "prim_inplace_copy_fwd.bool": Case(copy_fwd, lambda: ([torch.eye(4, dtype=torch.bool), torch.ones(4, 4, dtype=torch.bool).tril()], [])),
    "prim_inplace_copy_bwd": Case(copy_bwd, lambda: (lambda y: ([_t(4, 4), y], [y]))(_t(4, 4, seed=1, requires_grad=True))),
    "inplace_copy_sanity_check.0": Case(copy_sanity_0, _plain((4, 4), (4, 4))),
    "inplace_copy_sanity_check.1": Case(copy_sanity_1, _plain((4, 4), (4, 4))),
    "inplace_copy_sanity_check.2": Case(copy_sanity_2, _plain((4, 4), (4, 4))),
    "inplace_copy_sanity_check.3": Case(copy_sanity_3, _plain((4, 4), (4, 4))),
    "inplace_copy_dst_copy_returned_issue_1109": Case(dst_copy_returned_issue_1109, _plain((4, 4))),
    # issue 23
    "issue23.masked_write_into_expanded": Case(masked_write_into_expanded, _expanded()),
    "issue23.copy_into_expanded_itself": Case(copy_into_itself, _expanded()),
    "issue23.source_views_destination": Case(source_views_destination,
                                             lambda: ([torch.arange(9.0).reshape(3, 3), torch.tensor([0, 2])], [])),
    "issue23.out_resized": Case(out_resized, _plain((5, 2), (5, 1))),
    "issue23.out_broadcast": Case(out_broadcast, _plain((5, 2), (5, 1))),
    "issue23.out_broadcast_smaller": Case(out_broadcast, _plain((5, 1), (5, 2))),
    "issue23.lerp_on_detached_view_of_nonleaf": Case(lerp_on_detached_view_of_nonleaf, _nonleaf(3, 4)),
    "issue23.outputs_view_each_other": Case(outputs_view_each_other, _plain((2, 3), (2, 3))),
    "issue23.contiguous_of_expanded_leaf_requiring_grad": Case(contiguous_of_expanded, _expanded(True, leaf=True)),
    "issue23.contiguous_of_expanded_view_of_leaf": Case(contiguous_of_expanded, _expanded(True, leaf=False)),
}

SYMBOLIC = ["aliased_input", "write_to_intermediate_result", "aliasing_for_viewed_input_of_different_shapes",
            "issue23.outputs_view_each_other", "inplace_on_view.i", "single_tensor_adam_like"]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name", list(CASES))
def test_ported_program_matches_eager(name, path):
    outcome = ap.check_program(CASES[name], PATHS[path])
    assert outcome.kind == "same", f"{outcome.kind}: {outcome.detail}"


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name", SYMBOLIC)
def test_ported_program_under_symbolic_values(name, path):
    outcome = ap.check_program(CASES[name], PATHS[path], cache="symbolic values", calls=3)
    assert outcome.kind == "same", f"{outcome.kind}: {outcome.detail}"


def test_batch_norm_running_stats_and_gradients():
    for executors in PATHS.values():
        torch.manual_seed(0)
        eager, jitted = _BatchNorm3d().train(), _BatchNorm3d().train()
        jm = compiler.jit(jitted, executors=executors)
        x = _t(3, 2, 3, 4, 12, requires_grad=True)
        xj = x.detach().clone().requires_grad_()
        out, jout = eager(x), jm(xj)
        out.sum().backward()
        jout.sum().backward()
        torch.testing.assert_close(jout, out)
        for name, buf in eager.named_buffers():
            torch.testing.assert_close(dict(jitted.named_buffers())[name], buf)
        torch.testing.assert_close(xj.grad, x.grad)


def test_functional_path_says_why_it_runs_in_eager_order():
    """The programs the functional path cannot express run in eager order, with the reason in the header."""
    expected = {"issue23.masked_write_into_expanded": "whose elements share memory",
                "issue23.source_views_destination": "another view of the same memory",
                "issue23.out_resized": "changes a tensor's shape or strides in place",
                "issue23.lerp_on_detached_view_of_nonleaf": "another view of the same memory"}
    for name, reason in expected.items():
        case = CASES[name]
        jfn = compiler.jit(case.fn, executors=PATHS["functional"])
        jfn(*case.make()[0])
        header = compiler.last_traces(jfn)[-1].header
        assert "runs in eager order" in header and reason in header, (name, header)
    # and the ones it can express are functional (one write-back, fused), not run in eager order
    jfn = compiler.jit(outputs_view_each_other, executors=PATHS["functional"])
    c, d, e = jfn(*CASES["issue23.outputs_view_each_other"].make()[0])
    assert e._base is c, "e is a view of the returned c, as in eager"
    assert "eager order" not in compiler.last_traces(jfn)[-1].header


@pytest.mark.parametrize("path", list(PATHS))
def test_contiguous_of_an_expanded_input_that_requires_grad_is_a_new_tensor(path):
    (y,), _ = _expanded(True, leaf=False)()
    out = compiler.jit(lambda t: t.contiguous(), executors=PATHS[path])(y)
    assert out is not y and out.is_contiguous() and out.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()
    (y,), _ = _expanded(True, leaf=True)()
    out = compiler.jit(lambda t: t.contiguous(), executors=PATHS[path])(y)
    assert out is not y and out.is_contiguous()


# ---- a jitted function keeps no reference to a call's tensors ----

def _computes_and_writes(x, y):
    z = x * 2
    x.add_(1)
    return (z + y).sum(0)


def _reads_a_value(x, y):
    if x.sum() > 0:  # a data-dependent read: the trace is split into segments
        return x * y
    return x - y


def _differentiable(x, y):
    return (torch.tanh(x) * y + x).sum(0)


@pytest.mark.parametrize("fn", [_computes_and_writes, _reads_a_value, _differentiable], ids=lambda f: f.__name__)
@pytest.mark.parametrize("cache", ["constant values", "symbolic values", "no caching"])
@pytest.mark.parametrize("path", list(PATHS))
def test_no_call_keeps_its_tensors(fn, cache, path):
    """lightning-thunder's test_freeing_of_tensors: eager frees a call's inputs and outputs once the caller
    drops them; so must the jitted function, with no garbage collection (reference counts alone), from the
    tracing call on (also a call that re-traces for a new outcome of a data-dependent read, and a call whose
    inputs require grad)."""
    jfn = compiler.jit(fn, executors=PATHS[path], cache=cache)
    gc.collect()
    gc.disable()
    try:
        for i in range(3):
            x = _t(4 + i, 3, seed=i, requires_grad=fn is _differentiable) + (0 if fn is _differentiable else 4 - 4 * i)
            y = _t(4 + i, 3, seed=10 + i)
            out = jfn(x, y)
            refs = [weakref.ref(t) for t in (x, y, out)]
            del x, y, out
            assert [r() is None for r in refs] == [True] * 3, f"call {i}: a tensor outlived the call"
    finally:
        gc.enable()


# ---- stores under symbolic values with a fusing executor ----

STORED = None


def _stores_global(x, n):
    global STORED
    y = x * n
    STORED = y.sin()
    return y + 1


class _StoresAttribute(torch.nn.Module):
    def forward(self, x):
        self.saved = x.exp() * 2
        return self.saved + 1


def _closure_storing():
    box = None

    def fn(x):
        nonlocal box
        box = x.cos() + 1
        return box * 2

    return fn, lambda: box


@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
@pytest.mark.parametrize("path", list(PATHS))
def test_stored_tensors_are_real_tensors(cache, path):
    executors = PATHS[path]
    jfn = compiler.jit(_stores_global, executors=executors, cache=cache)
    module = _StoresAttribute()
    jmodule = compiler.jit(module, executors=executors, cache=cache)
    closure, stored = _closure_storing()
    jclosure = compiler.jit(closure, executors=executors, cache=cache)
    for i, n in enumerate([2.0, 3.0, 4.0]):
        x = _t(4 + i, 3, seed=i)
        torch.testing.assert_close(jfn(x, n), x * n + 1)
        assert type(STORED) is torch.Tensor and torch.equal(STORED, (x * n).sin())
        torch.testing.assert_close(jmodule(x), x.exp() * 2 + 1)
        assert type(module.saved) is torch.Tensor and torch.allclose(module.saved, x.exp() * 2)
        torch.testing.assert_close(jclosure(x), (x.cos() + 1) * 2)
        assert type(stored()) is torch.Tensor and torch.allclose(stored(), x.cos() + 1)

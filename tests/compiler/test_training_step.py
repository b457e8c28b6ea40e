"""A training step inside a jitted function (compiler/features/training_step.py): backward, optimizer steps,
zero_grad, scheduler steps and writes to a global parameter's `.grad` are refused on entry with what to do
instead, leaving parameters, gradients and optimizer state untouched (before: the cached trace skipped the
optimizer's Python state and parameters drifted from eager from the second step on). The supported
pattern, and torch.compile's behaviour as the reference, are checked against eager."""
import pytest
import torch

import compiler


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2)


def _data(step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(8, 4, generator=g), torch.randn(8, 2, generator=g)


MODEL, OPT, SCHED = _model(), None, None


def _loss(x, y):
    return ((MODEL(x) - y) ** 2).mean()


def backward_inside(x, y):
    _loss(x, y).backward()
    return x


def grad_inside(x, y):
    return torch.autograd.grad(_loss(x, y), MODEL.weight)


def step_inside(x, y):
    OPT.step()
    return x


def zero_grad_inside(x, y):
    OPT.zero_grad()
    return x


def scheduler_inside(x, y):
    SCHED.step()
    return x


def grad_write_inside(x, y):
    MODEL.weight.grad = None
    return x


@pytest.mark.parametrize("fn, match", [
    (backward_inside, "backward"), (grad_inside, "torch.autograd.grad"), (step_inside, "SGD.step"),
    (zero_grad_inside, "SGD.zero_grad"), (scheduler_inside, "StepLR.step"), (grad_write_inside, "setting 'grad'"),
], ids=lambda v: getattr(v, "__name__", v))
def test_training_step_inside_is_refused_before_it_acts(fn, match):
    global OPT, SCHED
    OPT = torch.optim.SGD(MODEL.parameters(), lr=0.1, momentum=0.9)
    SCHED = torch.optim.lr_scheduler.StepLR(OPT, step_size=1)
    _loss(*_data(0)).backward()
    before = [(p.detach().clone(), p.grad.clone()) for p in MODEL.parameters()]
    with pytest.raises(compiler.UnsupportedOpError, match=match) as err:
        compiler.jit(fn)(*_data(1))
    assert "outside the jitted function" in str(err.value)
    for p, (value, grad) in zip(MODEL.parameters(), before):
        assert torch.equal(p, value) and torch.equal(p.grad, grad)
    assert len(OPT.state) == 0 and OPT.param_groups[0]["lr"] == 0.1 and SCHED.last_epoch == 0
    MODEL.zero_grad()


def _run_steps(loss_fn, model, opt, steps=5):
    losses = []
    for step in range(steps):
        loss = loss_fn(model, *_data(step))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return losses


def test_jitted_loss_with_the_step_outside_equals_eager():
    def loss_fn(model, x, y):
        return ((model(x) - y) ** 2).mean()

    me, mj = _model(), _model()
    oe, oj = torch.optim.Adam(me.parameters(), lr=0.01), torch.optim.Adam(mj.parameters(), lr=0.01)
    jitted = compiler.jit(lambda x, y: loss_fn(mj, x, y))
    expected = _run_steps(loss_fn, me, oe)
    got = _run_steps(lambda m, x, y: jitted(x, y), mj, oj)
    assert all(torch.equal(a, b) for a, b in zip(expected, got))
    assert all(torch.equal(a, b) for a, b in zip(me.parameters(), mj.parameters()))
    for pe, pj in zip(me.parameters(), mj.parameters()):
        assert torch.equal(oe.state[pe]["exp_avg"], oj.state[pj]["exp_avg"])
    assert compiler.cache_hits(jitted) == 4


def test_torch_compile_reference_keeps_a_step_inside_equal_to_eager():
    # What torch.compile does with the whole step inside (CPU, eager backend): eager-equal parameters and
    # momentum over several steps (it splits the graph at backward). The compiler refuses instead.
    def make_step(model, opt):
        def step(x, y):
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step

    me, mc = _model(), _model()
    oe, oc = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (me, mc))
    eager, compiled = make_step(me, oe), torch.compile(make_step(mc, oc), backend="eager")
    for step in range(3):
        assert torch.equal(eager(*_data(step)), compiled(*_data(step)))
    assert all(torch.equal(a, b) for a, b in zip(me.parameters(), mc.parameters()))
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert torch.equal(oe.state[pe]["momentum_buffer"], oc.state[pc]["momentum_buffer"])

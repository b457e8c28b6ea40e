"""Module backward hooks under compiler.jit (compiler/features/backward_hooks.py): each model runs call by call beside
an eager twin with the same hooks; outputs, input and parameter gradients, and every hook call (which hook,
which module, the grad_input/grad_output tensors it received, None where eager gives None) equal eager's."""
import pytest
import torch

import compiler


def _clone(gs):
    return tuple(None if g is None else g.detach().clone() for g in gs)


class Recorder:
    """Hooks that log what they see; `scale` makes the full hooks return replaced grad_input and the pre
    hooks replaced grad_output."""

    def __init__(self, model, scale=None):
        self.log = []
        self.names = {id(m): n or "top" for n, m in model.named_modules()}
        self.scale = scale

    def name(self, module):
        return self.names[id(module)]

    def full(self, module, grad_input, grad_output):
        if id(module) not in self.names:  # a global hook sees the twin's modules too
            return None
        self.log.append(("full", self.name(module), _clone(grad_input), _clone(grad_output)))
        if self.scale is not None:
            return tuple(None if g is None else g * self.scale for g in grad_input)

    def pre(self, module, grad_output):
        if id(module) not in self.names:
            return None
        self.log.append(("pre", self.name(module), _clone(grad_output)))
        if self.scale is not None:
            return tuple(None if g is None else g + self.scale for g in grad_output)


def _same_log(a, b):
    assert [e[:2] for e in a] == [e[:2] for e in b]
    for ea, eb in zip(a, b):
        for ga, gb in zip(ea[2:], eb[2:]):
            assert len(ga) == len(gb)
            for x, y in zip(ga, gb):
                assert (x is None) == (y is None), (ea[:2], ga, gb)
                assert x is None or torch.equal(x, y), ea[:2]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.inner(x)) + x


class Twice(torch.nn.Module):
    """One submodule called twice in a forward: two BackwardHook objects, each with its own grads."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(torch.relu(self.lin(x)))


class TupleIO(torch.nn.Module):
    """Non-tensor arguments and outputs: their places get None in grad_input / grad_output."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, scale, y):
        h = self.lin(x) * scale
        return h, 7, h * y, y.detach() * 2


def _tuple_loss(out):
    return out[0].sum() + (out[2] * out[2]).sum()


MODELS = {
    "linear": (lambda: torch.nn.Linear(3, 3), lambda x: (x,), lambda y: y.sum(), None),
    "nested": (lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), Block(), torch.nn.Linear(4, 2)),
               lambda x: (x,), lambda y: (y * y).sum(), None),
    "called_twice": (Twice, lambda x: (x,), lambda y: (y * y).sum(), None),
    "tuple_in_out": (TupleIO, lambda x: (x, 0.5, torch.full((2, 3), 3.0, requires_grad=True)), _tuple_loss, None),
    "grads_replaced": (lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)),
                       lambda x: (x,), lambda y: (y * y).sum(), 2.0),
}


def _hooked(make, scale, *, forward_hooks=False):
    torch.manual_seed(0)
    model = make()
    rec = Recorder(model, scale)
    for m in model.modules():
        if forward_hooks:  # they change values: backward hooks see the gradients of what they return
            m.register_forward_pre_hook(lambda mod, args: (args[0] * 1.5, *args[1:]))
            m.register_forward_hook(lambda mod, args, out: out * 0.5 + 0.25)
        m.register_full_backward_pre_hook(rec.pre)
        m.register_full_backward_hook(rec.full)
    return model, rec


def _step(model, args, loss):
    out = model(*args)
    loss(out).backward()
    return out


@pytest.mark.parametrize("input_grad", [True, False], ids=["input_requires_grad", "input_without_grad"])
@pytest.mark.parametrize("case", list(MODELS))
def test_backward_hooks_see_and_change_eagers_gradients(case, input_grad):
    make, inputs, loss, scale = MODELS[case]
    eager, erec = _hooked(make, scale, forward_hooks=case == "nested")
    model, jrec = _hooked(make, scale, forward_hooks=case == "nested")
    jm = compiler.jit(model)
    for call in range(3):
        torch.manual_seed(call)
        x = torch.randn(2, 3, requires_grad=input_grad)
        xe, xj = x.detach().clone().requires_grad_(input_grad), x.detach().clone().requires_grad_(input_grad)
        torch.manual_seed(call)
        ae = inputs(xe)
        torch.manual_seed(call)
        aj = inputs(xj)
        with pytest.warns(UserWarning) if not input_grad and case != "tuple_in_out" else _no_warning():
            oe = _step(eager, ae, loss)
        oj = _step(jm, aj, loss)
        for a, b in zip(oe if isinstance(oe, tuple) else (oe,), oj if isinstance(oj, tuple) else (oj,)):
            assert (torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b)
        for a, b in zip(ae, aj):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                assert torch.equal(a.grad, b.grad)
        for (name, p), q in zip(eager.named_parameters(), model.parameters()):
            assert torch.equal(p.grad, q.grad), name
    assert erec.log and any(e[0] == "full" for e in erec.log)
    _same_log(erec.log, jrec.log)
    assert compiler.cache_hits(jm) == 2


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_inductor_executors_keep_hooked_traces_in_eager_order():
    make, inputs, loss, scale = MODELS["grads_replaced"]
    eager, erec = _hooked(make, scale)
    model, jrec = _hooked(make, scale)
    jm = compiler.jit(model, executors=("inductor", "torch"))
    for call in range(2):
        x = torch.randn(2, 3, requires_grad=True)
        xj = x.detach().clone().requires_grad_(True)
        assert torch.equal(_step(eager, (x,), loss), _step(jm, (xj,), loss))
        assert torch.equal(x.grad, xj.grad)
    _same_log(erec.log, jrec.log)
    assert "not functionalized: module backward hooks" in compiler.last_traces(jm)[-1].header


def test_hooks_added_after_the_first_call_and_removed_are_honoured():
    torch.manual_seed(0)
    eager = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sigmoid())
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sigmoid())
    model.load_state_dict(eager.state_dict())
    erec, jrec = Recorder(eager, 3.0), Recorder(model, 3.0)
    jm = compiler.jit(model)
    handles = {"e": [], "j": []}
    module_hooks = torch.nn.modules.module
    steps = [lambda m, r: m[0].register_full_backward_hook(r.full),
             lambda m, r: m.register_full_backward_pre_hook(r.pre),
             lambda m, r: module_hooks.register_module_full_backward_hook(r.full),
             lambda m, r: module_hooks.register_module_full_backward_pre_hook(r.pre)]

    def compare():
        x = torch.randn(2, 3, requires_grad=True)
        xj = x.detach().clone().requires_grad_(True)
        assert torch.equal(_step(eager, (x,), lambda y: y.sum()), _step(jm, (xj,), lambda y: y.sum()))
        assert torch.equal(x.grad, xj.grad)
        for p, q in zip(eager.parameters(), model.parameters()):
            assert torch.equal(p.grad, q.grad)
        _same_log(erec.log, jrec.log)

    try:
        compare()  # no hooks
        for step in steps:  # each added after a call: the cached trace must not be reused
            handles["e"].append(step(eager, erec))
            handles["j"].append(step(model, jrec))
            n = len(jrec.log)
            compare()
            assert len(jrec.log) > n
        compare()  # a cache hit with all four
        for he, hj in zip(handles["e"], handles["j"]):  # each removed
            he.remove()
            hj.remove()
            compare()
    finally:
        for h in handles["e"] + handles["j"]:
            h.remove()
    n = len(jrec.log)
    compare()
    assert len(jrec.log) == n  # none left
    assert compiler.cache_hits(jm) >= 1


def test_a_hooked_module_split_by_a_data_dependent_branch():
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            if h.sum() > 0:  # a read of a value: the trace splits inside the hooked call
                return h * 2
            return h - 1

    eager, erec = _hooked(Gate, None)
    model, jrec = _hooked(Gate, None)
    jm = compiler.jit(model)
    signs = []
    for call in range(6):
        torch.manual_seed(call)
        x = torch.randn(2, 3) * 3
        xe, xj = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        signs.append(bool(eager.lin(x).sum() > 0))
        assert torch.equal(_step(eager, (xe,), lambda y: (y * y).sum()), _step(jm, (xj,), lambda y: (y * y).sum()))
        assert torch.equal(xe.grad, xj.grad)
        assert compiler.last_segment_count(jm) == 2
    assert len(set(signs)) == 2  # both branches taken
    _same_log(erec.log, jrec.log)


def test_a_hooked_module_inside_a_jitted_function_and_under_no_grad():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append(grad_output[0].clone())

    def fn(x):
        return lin(x).relu().sum()

    jfn = compiler.jit(fn)
    x = torch.randn(2, 3, requires_grad=True)
    assert torch.equal(jfn(x), fn(x))
    handle = lin.register_full_backward_hook(hook)  # added after the first call
    try:
        fn(x).backward()
        jfn(x).backward()
        assert len(seen) == 2 and torch.equal(seen[0], seen[1])
        with torch.no_grad():  # no grad: nothing is wrapped, in eager or in the trace
            assert torch.equal(jfn(x), fn(x))
    finally:
        handle.remove()
    fn(x).backward()
    jfn(x).backward()
    assert len(seen) == 2


def test_a_hook_returning_the_wrong_number_of_grads_raises_eagers_error():
    def bad(module, grad_input, grad_output):
        return grad_input + grad_input

    errors = []
    for wrap in (lambda m: m, compiler.jit):
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 3)
        m.register_full_backward_hook(bad)
        with pytest.raises(RuntimeError, match="invalid number of grad_input") as e:
            wrap(m)(torch.randn(2, 3, requires_grad=True)).sum().backward()
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_non_full_backward_hooks_and_the_native_front_end_are_refused_clearly():
    from compiler.frontend.native import native_frontend

    m = torch.nn.Linear(3, 3)
    m.register_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(compiler.UnsupportedOpError, match="register_backward_hook"):
        compiler.jit(m)(torch.ones(1, 3, requires_grad=True))
    m = torch.nn.Linear(3, 3)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(compiler.UnsupportedOpError, match="native front end"):
        compiler.jit(m, frontend=native_frontend)(torch.ones(1, 3, requires_grad=True))

"""The interpreter over torch code: nn.Module.__call__ with hooks, torch lookasides. Skips without torch."""
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from compiler.interpreter import events as ev  # noqa: E402
from compiler.interpreter import interpret, run  # noqa: E402

SCALE = 0.5


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x))) * SCALE


def test_module_call_matches_eager():
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(3, 4)
    out = interpret(model, x)
    torch.testing.assert_close(out, model(x))


def test_module_construction_is_interpreted_too():
    torch.manual_seed(0)

    def build_and_run(x):
        torch.manual_seed(1)
        m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        return m(x)

    x = torch.randn(2, 4)
    traced = run(build_and_run, (x,))
    torch.testing.assert_close(traced.value, build_and_run(x))
    assert traced.frames > 10


def test_forward_hooks_run_under_the_interpreter():
    torch.manual_seed(0)
    model = MLP()
    log = []

    def pre_hook(module, args):
        log.append("pre")
        return (args[0] * 2,)

    def hook(module, args, output):
        log.append("post")
        return output + 1

    h1 = model.register_forward_pre_hook(pre_hook)
    h2 = model.fc1.register_forward_hook(hook)
    try:
        x = torch.randn(3, 4)
        expected = model(x)
        assert log == ["pre", "post"]
        log.clear()
        out = interpret(model, x)
        assert log == ["pre", "post"]
        torch.testing.assert_close(out, expected)
    finally:
        h1.remove()
        h2.remove()


def test_global_read_in_forward_is_reported_with_user_line():
    model = MLP()
    traced = run(model, (torch.randn(1, 4),))
    reads = [e for e in traced.events if e.kind == ev.GLOBAL_READ and e.name == "SCALE"]
    assert len(reads) == 1
    assert reads[0].location.filename == __file__
    assert reads[0].location.function == "MLP.forward"


def test_torch_lookasides_intercept_functions_methods_and_operators():
    calls = []

    def fake_gelu(x, approximate="none"):
        calls.append("gelu")
        return torch.zeros_like(x)

    def fake_mul(a, b):
        calls.append("mul")
        return a * 0 + 7

    model = MLP()
    out = interpret(model, torch.randn(2, 4), lookasides={F.gelu: fake_gelu, torch.Tensor.__mul__: fake_mul})
    assert "gelu" in calls
    assert torch.all(out == model.fc2(torch.zeros(2, 8)) * SCALE) or torch.all(out == 7)


def test_tensor_method_and_property_lookasides():
    seen = []

    def fake_add(self, other):
        seen.append("Tensor.add")
        return self - other

    def fake_shape(t):
        seen.append("shape")
        return ("symbolic", tuple(t.size()))

    def f(x, y):
        return x.add(y), x.shape

    x, y = torch.ones(2), torch.ones(2)
    shape_descriptor = torch.Tensor.shape
    result, shape = interpret(f, x, y, lookasides={torch.Tensor.add: fake_add, shape_descriptor: fake_shape})
    assert torch.equal(result, torch.zeros(2))
    assert shape == ("symbolic", (2,))
    assert seen == ["Tensor.add", "shape"]


def test_parameter_provenance_is_an_argument_path():
    model = MLP()

    def f(m, x):
        return x @ m.fc1.weight.T

    traced = run(f, (model, torch.randn(1, 4)))
    roots = [str(p) for p in traced.provenance.roots()]
    assert roots == ["args[1]", "args[0].fc1.weight.T"]

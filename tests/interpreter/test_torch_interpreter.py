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


class _Block(nn.Module):
    """A pre-norm transformer block over torch's own Python code (MultiheadAttention, LayerNorm, GELU)."""

    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        h = self.ln1(x)
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class _TinyGPT(nn.Module):
    def __init__(self, vocab=50, dim=16, layers=2, ctx=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList([_Block(dim) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def test_small_gpt_through_torch_python_code_matches_eager():
    torch.manual_seed(0)
    model = _TinyGPT().eval()
    idx = torch.randint(0, 50, (2, 8))
    with torch.no_grad():
        expected = model(idx)
        traced = run(model, (idx,))
    torch.testing.assert_close(traced.value, expected)
    assert traced.frames > 50  # Module.__call__, MultiheadAttention and F.* Python code were interpreted


def test_small_gpt_gradients_match_eager():
    torch.manual_seed(0)
    model = _TinyGPT().train()
    idx = torch.randint(0, 50, (2, 8))
    torch.manual_seed(1)
    model(idx).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.manual_seed(1)  # dropout draws the same mask in both runs
    interpret(model, idx).sum().backward()
    for got, want in zip([p.grad for p in model.parameters()], expected):
        torch.testing.assert_close(got, want)


def test_building_the_model_under_the_interpreter():
    def build():
        torch.manual_seed(3)
        return _TinyGPT()

    torch.manual_seed(0)
    native = build()
    interpreted = interpret(build)
    assert [n for n, _ in native.named_parameters()] == [n for n, _ in interpreted.named_parameters()]
    for a, b in zip(native.parameters(), interpreted.parameters()):
        torch.testing.assert_close(a, b)


def test_runs_under_the_compilers_tracing_as_its_front_end():
    """The integration step: compiler.jit with a front end that interprets the user's function inside the
    native front end's tracing context (torch calls reach the compiler's symbols through its TorchFunctionMode;
    the compiler's own Python code runs natively via native_paths)."""
    import os

    compiler = pytest.importorskip("compiler")
    if not hasattr(compiler, "jit"):
        pytest.skip("compiler.jit not available")
    from compiler.frontend.native import native_frontend

    compiler_dir = os.path.dirname(os.path.abspath(compiler.__file__)) + os.sep
    interpreter_dir = os.path.join(compiler_dir, "interpreter") + os.sep
    seen = []

    class Interpreted:
        def __init__(self, fn):
            self.fn = fn
            self.__wrapped__ = fn

        def __call__(self, *args, **kwargs):
            # everything in compiler/ except the interpreter (whose own code always runs natively anyway)
            trusted = tuple(os.path.join(compiler_dir, d) for d in os.listdir(compiler_dir)
                            if os.path.join(compiler_dir, d) + os.sep != interpreter_dir)
            return run(self.fn, args, kwargs, observers=(seen.append,), native_paths=trusted).value

    def frontend(fn, args, kwargs, **kw):
        return native_frontend(Interpreted(fn), args, kwargs, **kw)

    def f(x, y):
        return F.gelu(x * SCALE + y.sin()).sum(-1)

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    jf = compiler.jit(f, frontend=frontend)
    torch.testing.assert_close(jf(x, y), f(x, y))
    reads = [(e.kind, e.name) for e in seen if e.kind == ev.GLOBAL_READ]
    assert ("global_read", "SCALE") in reads
    assert all(not e.location.filename.startswith(compiler_dir) or e.location.filename.startswith(interpreter_dir)
               for e in seen)


def _module_cases():
    torch.manual_seed(0)
    cases = [
        ("Conv2d", nn.Conv2d(3, 4, 3, padding=1), (torch.randn(2, 3, 8, 8),)),
        ("BatchNorm1d", nn.BatchNorm1d(5).eval(), (torch.randn(4, 5),)),
        ("LSTM", nn.LSTM(4, 6, batch_first=True), (torch.randn(2, 3, 4),)),
        ("GRU", nn.GRU(4, 6), (torch.randn(3, 2, 4),)),
        ("TransformerEncoderLayer", nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval(),
         (torch.randn(2, 5, 8),)),
        ("Sequential", nn.Sequential(nn.Flatten(), nn.Linear(12, 3), nn.Softmax(-1)), (torch.randn(2, 3, 4),)),
        ("GroupNorm", nn.GroupNorm(2, 4), (torch.randn(2, 4, 3),)),
        ("MaxPool2d", nn.MaxPool2d(2), (torch.randn(1, 1, 4, 4),)),
        ("Upsample", nn.Upsample(scale_factor=2, mode="nearest"), (torch.randn(1, 1, 2, 2),)),
        ("CrossEntropyLoss", nn.CrossEntropyLoss(), (torch.randn(3, 5), torch.tensor([1, 0, 4]))),
    ]
    return cases


@pytest.mark.parametrize("name,module,args", _module_cases(), ids=[c[0] for c in _module_cases()])
def test_torch_nn_modules_match_eager(name, module, args):
    with torch.no_grad():
        expected = module(*args)
        traced = run(module, args, check_stack=True)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = traced.value if isinstance(traced.value, tuple) else (traced.value,)
    for e, g in zip(expected, got):
        if isinstance(e, tuple):  # LSTM's (h, c)
            for ei, gi in zip(e, g):
                torch.testing.assert_close(gi, ei)
        else:
            torch.testing.assert_close(g, e)
    assert traced.frames >= 2

"""Jit rules (TL2xx/TL3xx) on realistic compiled code: training scripts, a GPT, Hugging Face style attention,
closures and configs. Each program must give exactly the listed findings: a finding is a real hazard, and
the `self.training` / `is None` / flag / dtype / rank checks, UPPER_CASE constants and loggers stay quiet."""

from pathlib import Path

import pytest

from analyzer.static import lint_source

PROGRAMS = Path(__file__).resolve().parent / "jit_programs"

# file -> [(code, text of the reported line)], in line order
EXPECTED = {
    # thunder.jit(model) of a nanoGPT: asserts and branches on self.config / self.training / `targets is None`
    # under the default cache, and the eager training loop around it, hold no hazard
    "train_gpt.py": [],
    "train_step.py": [
        ("TL301", "if rem == 0:"),  # rem = x.shape[-1] % multiple under dynamic=True
        # one finding per function: the `max(h.shape[0], 1)` below is listed in its message
        ("TL301", "for start in range(0, h.shape[0], chunk_size):"),
        ("TL302", "if (norm < eps).any():"),  # x is a tensor: `x.norm(...)`
    ],
    "hf_style.py": [
        # `if output_attentions and q_len > 1:` only logs: no finding
        ("TL301", "if num_logits_to_keep > 0:"),
        ("TL301", "if n_rep == 1:"),
        ("TL101", "boxes[:, 0::2] /= w"),  # boxes = boxes.reshape(-1, 4) of the argument
    ],
    # UPPER_CASE constants bound once on every path (if/else on cuda, try: import / except ImportError),
    # TYPE_CHECKING imports, string annotations, local lambdas: quiet; a constant rebound is not one
    "constants_and_flags.py": [("TL201", "return x * SCALE")],
    # a closure over a local function or class is no hidden data; eager-only prints under
    # `if not torch.compiler.is_compiling()` never run compiled; `len` of a ModuleList, `torch.is_tensor` and
    # `numel()` are no tensor data, but `not torch.isfinite(x).all()` is
    "eager_guards_and_closures.py": [("TL302", "while not torch.isfinite(x).all():")],
    "thunder_funcs.py": [
        ("TL201", "return x * scale"),
        ("TL202", "return x * factor"),
        ("TL203", "count += 1"),
        ("TL204", "return x + random.random()"),
        ("TL201", "_cache[key] = torch.zeros_like(x)"),
        ("TL203", "_cache[key] = torch.zeros_like(x)"),  # a write into a module-level dict (issue 31)
        ("TL102", "flat.sub_(flat.mean())"),
        ("TL102", "x.diagonal().fill_(value)"),
        ("TL101", "y.sub_(1)"),
        # the module's helper a jitted function calls is traced with it (issue 31: TL302 follows helpers as TL204 does)
        ("TL302", "return x.sum().item()"),
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_program_findings_are_exactly_the_hazards(name):
    text = (PROGRAMS / name).read_text()
    lines = text.splitlines()
    found = [(d.code, lines[d.line - 1].strip()) for d in lint_source(text, name, with_fixes=False)]
    assert found == EXPECTED[name]


def test_every_program_is_listed():
    assert sorted(p.name for p in PROGRAMS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize(
    "src, expected",
    [
        # thunder.jit of a lambda with symbolic values: the ternary on `n` and the global read
        (
            "import thunder\nscale = 3\n"
            "jfn = thunder.jit(lambda x, n: x * n if n > 2 else x * scale, cache='symbolic values')\n",
            [("TL301", 3), ("TL201", 3)],
        ),
        # a compiled lambda in a factory: the closure read and the .item()
        ("import torch\ndef make(k):\n    return torch.compile(lambda x: (x * k).sum().item())\n", [("TL302", 3), ("TL202", 3)]),
        # `is None` in a compiled lambda is no hazard
        ("import torch\nf = torch.compile(lambda x, mask=None: x if mask is None else x * mask)\n", []),
    ],
)
def test_jitted_lambdas_are_analysed(src, expected):
    assert [(d.code, d.line) for d in lint_source(src, with_fixes=False)] == expected

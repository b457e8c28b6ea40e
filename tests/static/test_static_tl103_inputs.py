"""TL103 speaks only of real inputs of the compiled function (issue 31, false class 8).

A helper that the compiled code calls gets the caller's values: its argument is an input only when the compiled
caller passes one of its own inputs. Multi-file projects, linted as the CLI lints them.
"""

from __future__ import annotations

import pytest

from analyzer import lint_paths

HEADER = "import torch\nfrom torch import nn\n"

# The helper writes its argument and reads it again; forward passes it an intermediate.
MODEL_INTERMEDIATE = HEADER + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self._rotate(self.lin(x), 2.0)

    def _rotate(self, t, freqs):
        t.mul_(freqs)
        return t + 1
"""

# The same helper handed the forward's own input: the caller's tensor is written.
MODEL_INPUT = MODEL_INTERMEDIATE.replace("self._rotate(self.lin(x), 2.0)", "self._rotate(x, 2.0) + self.lin(x)")

UTILS = "import torch\n\n\ndef rotate_(t, freqs):\n    t.mul_(freqs)\n    return t + 1\n"

MODEL_UTILS = HEADER + """from utils import rotate_


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return rotate_(h, 2.0)
"""

TRAIN = "import torch\nfrom model import Net\n\nmodel = torch.compile(Net())\n"


def tl103(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [d for d in lint_paths(tmp_path, cache=False, jobs=1) if d.code == "TL103"]


@pytest.mark.parametrize(
    "files",
    [
        {"model.py": MODEL_INTERMEDIATE, "train.py": TRAIN},
        {"model.py": MODEL_INTERMEDIATE + "\n\nmodel = torch.compile(Net())\n"},
        {"model.py": MODEL_UTILS, "utils.py": UTILS, "train.py": TRAIN},
    ],
    ids=["method-compiled-elsewhere", "method-compiled-here", "function-of-another-module"],
)
def test_a_helpers_intermediate_argument_is_no_input(tmp_path, files):
    assert tl103(tmp_path, files) == []


def test_a_helper_handed_the_compiled_input_is_reported(tmp_path):
    [d] = tl103(tmp_path, {"model.py": MODEL_INPUT, "train.py": TRAIN})
    assert d.path.endswith("model.py") and d.line == MODEL_INPUT.splitlines().index("        t.mul_(freqs)") + 1
    assert "`_rotate`" in d.message and "input `t`" in d.message
    # the torch.compile note says what torch.compile does with an input (tests/rules/test_rule_tl103_torch_compile.py)
    assert "stores the new values into the caller's tensor" in d.message


def test_a_function_the_compile_call_names_keeps_its_inputs(tmp_path):
    ops = "import torch\n\n\ndef fused_step(q, k):\n    q.mul_(2)\n    return q + k\n"
    main = "import torch\nimport ops\n\nstep = torch.compile(ops.fused_step)\n"
    [d] = tl103(tmp_path, {"ops.py": ops, "main.py": main})
    assert d.path.endswith("ops.py") and "input `q`" in d.message


# monai's PerceptualLoss shape: the compiled loss hands its input to a submodule's forward, which normalizes it in
# place (only when it has 3 channels: another path rebinds it to a copy first). The caller's tensor is written.
LOSS = HEADER + """

def zscore_norm_(x: torch.Tensor):
    x[:, 0] = (x[:, 0] - 0.485) / 0.229
    x[:, 1] = (x[:, 1] - 0.456) / 0.224
    return x


class Similarity(nn.Module):
    def forward(self, input, target):
        if input.shape[1] == 1:
            input = input.repeat(1, 3, 1, 1)
        input = zscore_norm_(input)
        return (input - target).abs().mean()


class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.similarity = Similarity()

    def forward(self, input, target):
        return self.similarity(input, target)
"""


def test_an_input_handed_on_through_a_submodule_and_a_branch_is_still_an_input(tmp_path):
    [d] = tl103(tmp_path, {"loss.py": LOSS, "train.py": "import torch\nfrom loss import Loss\nf = torch.compile(Loss())\n"})
    assert "`zscore_norm_`" in d.message and "input `x`" in d.message


def test_a_submodule_handed_an_intermediate_is_quiet(tmp_path):
    loss = LOSS.replace("return self.similarity(input, target)", "return self.similarity(input * 2, target)")
    assert tl103(tmp_path, {"loss.py": loss, "train.py": "import torch\nfrom loss import Loss\nf = torch.compile(Loss())\n"}) == []


# TL102 follows the same inputs: diffusers' rotary embedding fills a view of frequencies its forward computed.
ROPE = HEADER + """

class Rope(nn.Module):
    def interleave(self, freqs):
        freqs_t = freqs[0]
        freqs_t[..., 1::3] = freqs[1, ..., 1::3]
        return freqs_t

    def forward(self, position_ids):
        freqs = position_ids[None].float().expand(3, -1, -1) * 2
        return self.interleave(freqs)
"""


def test_tl102_a_helpers_intermediate_argument_is_no_input(tmp_path):
    train = "import torch\nfrom rope import Rope\nf = torch.compile(Rope())\n"
    found = [d for d in lint_paths(_write(tmp_path, {"rope.py": ROPE, "train.py": train}), cache=False, jobs=1)
             if d.code == "TL102"]
    assert found == []
    handed = ROPE.replace("return self.interleave(freqs)", "return self.interleave(position_ids)")
    found = [d for d in lint_paths(_write(tmp_path, {"rope.py": handed}), cache=False, jobs=1) if d.code == "TL102"]
    assert [d.line for d in found] == [handed.splitlines().index("        freqs_t[..., 1::3] = freqs[1, ..., 1::3]") + 1]


def _write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_view_of_the_compiled_input_handed_to_a_helper_is_an_input(tmp_path):
    model = MODEL_INTERMEDIATE.replace("self._rotate(self.lin(x), 2.0)", "self._rotate(x[0], 2.0) + self.lin(x)")
    [d] = tl103(tmp_path, {"model.py": model, "train.py": TRAIN})
    assert "input `t`" in d.message

"""TL204 and NumPy's global generator in compiled code (round 3 miss: auraloss' RandomResolutionSTFTLoss draws
`np.random.randint`/`rand`/`choice` in a method its forward calls).

The message says torch.compile (2.13) "breaks the graph where the draw becomes a Python number (NumPy draws it on
every call); an array draw is traced from torch's generator instead of NumPy's, so `np.random.seed` no longer
reproduces it". Both halves run here under real torch.compile on CPU, and every spelling is reported.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy import random as np_random
from numpy.random import randint

from analyzer import lint_paths
from analyzer.static import lint_source
from counting_backend import CountingBackend


def _compiled(f):
    torch._dynamo.reset()
    backend = CountingBackend()
    return torch.compile(f, backend=backend), backend


def _draws(f, n=4):
    np.random.seed(0)
    torch.manual_seed(0)
    return [f(torch.ones(3)).tolist() for _ in range(n)]


SCALAR_DRAWS = {
    "np.random.randint": lambda: np.random.randint(2, 100),
    "np.random.rand": lambda: np.random.rand(),
    "np.random.choice": lambda: np.random.choice([1.0, 0.5, 0.25]),
    "from numpy.random import randint": lambda: randint(2, 100),
    "from numpy import random": lambda: np_random.uniform(0.0, 1.0),
}


@pytest.mark.parametrize("draw", list(SCALAR_DRAWS.values()), ids=list(SCALAR_DRAWS))
def test_a_scalar_draw_breaks_the_graph_and_numpy_draws_it_every_call(draw):
    def f(x):
        y = x + 1
        return y * draw()

    jf, backend = _compiled(f)
    eager = _draws(f)
    assert _draws(jf) == eager and len({tuple(v) for v in eager}) > 1  # fresh draws, NumPy's own, each call
    assert len(backend.graphs) >= 2  # `x + 1` and the code after the draw: separate graphs


def test_an_array_draw_is_traced_from_torchs_generator_not_numpys():
    def f(x):
        return x * torch.from_numpy(np.random.rand(3)).float()

    jf, backend = _compiled(f)
    eager = _draws(f)
    compiled = _draws(jf)
    assert compiled != eager  # the same NumPy seed, other values: np.random.seed no longer fixes the draw
    assert compiled == _draws(jf)  # torch.manual_seed does
    assert len(backend.graphs) == 1  # no graph break: the draw is in the graph


def test_a_seeded_array_draw_differs_from_eager_and_between_calls():
    # botorch's PairwiseMCSampler.forward: np.random.seed(self.seed), then np.random.choice(n, k, replace=False)
    def f(x):
        np.random.seed(3)
        return x[torch.from_numpy(np.random.choice(range(6), 3, replace=False))]

    x = torch.arange(6.0)
    jf, _ = _compiled(f)
    compiled = [jf(x).tolist() for _ in range(4)]
    assert f(x).tolist() == f(x).tolist()  # eager: the seed fixes the choice
    assert len({tuple(c) for c in compiled}) > 1  # compiled: the seed is ignored, each call another choice


@pytest.mark.parametrize("imports, call", [
    ("import numpy as np", "np.random.randint(2, 6)"),
    ("import numpy as np", "np.random.rand()"),
    ("import numpy", "numpy.random.choice([1.0, 0.5])"),
    ("from numpy import random", "random.randint(2, 6)"),
    ("from numpy.random import randint", "randint(2, 6)"),
    ("import numpy.random as npr", "npr.normal(size=3).sum()"),
    ("import numpy as np", "np.random.seed(0)"),
])
def test_tl204_reports_each_spelling(imports, call):
    source = f"{imports}\nimport torch\n@torch.compile\ndef f(x):\n    return x * {call}\n"
    found = [d for d in lint_source(source, "m.py") if d.code == "TL204"]
    assert len(found) == 1, found
    assert "NumPy's global generator" in found[0].message and "torch's generator" in found[0].message
    assert ("reseeds" in found[0].message) == ("seed" in call)


@pytest.mark.parametrize("imports, call", [
    ("import numpy as np", "np.random.default_rng(0).random()"),  # a seeded generator of its own
    ("import numpy as np", "np.random.RandomState(0).rand()"),
    ("import numpy as np", "np.linalg.norm([3.0, 4.0])"),
])
def test_a_generator_of_its_own_is_no_hidden_state(imports, call):
    source = f"{imports}\nimport torch\n@torch.compile\ndef f(x):\n    return x * {call}\n"
    assert not [d for d in lint_source(source, "m.py") if d.code == "TL204"]


def test_a_draw_in_a_method_forward_calls_is_reported(tmp_path):
    # auraloss' RandomResolutionSTFTLoss: forward calls randomize_losses(), which draws the STFT sizes (the
    # project pass follows `self.randomize()`)
    source = (
        "import numpy as np\nimport torch\nclass Loss(torch.nn.Module):\n"
        "    def randomize(self):\n        self.size = 2 ** np.random.randint(6, 10)\n"
        "    def forward(self, x):\n        self.randomize()\n        return x * self.size\n"
        "loss = torch.compile(Loss())\n"
    )
    (tmp_path / "m.py").write_text(source)
    found = list(lint_paths([str(tmp_path)], select=["TL204"], cache=False))
    assert [d.line for d in found] == [5]

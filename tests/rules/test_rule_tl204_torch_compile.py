"""TL204's claims for environment reads and logger calls (issue 31, miss 7), each run under real torch.compile (CPU).

The rule says torch.compile "bakes the value in: `os.getenv`, and a variable unset at the first call, get no guard
(pytorch #189027); a set variable read through `os.environ` recompiles when it changes", and that a logger call
"breaks the graph around it to run it on every call". Each claim is measured here, and the same source is reported.
"""

from __future__ import annotations

import logging
import os

import pytest
import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend

_KEY = "THUNDER_LINT_TL204_PROBE"


def _compiled(f):
    torch._dynamo.reset()
    backend = CountingBackend()
    return torch.compile(f, backend=backend), backend


def _getenv(x):
    if os.getenv(_KEY, "0") == "1":
        return x + 1
    return x - 1


def _environ_get(x):
    if os.environ.get(_KEY) == "1":
        return x + 1
    return x - 1


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv(_KEY, raising=False)
    return monkeypatch


@pytest.mark.parametrize("f", [_getenv, _environ_get], ids=["os.getenv", "os.environ.get"])
def test_a_variable_unset_at_the_first_call_is_baked_in(env, f):
    jf, backend = _compiled(f)
    x = torch.ones(2)
    assert torch.equal(jf(x), f(x))
    env.setenv(_KEY, "1")
    assert not torch.equal(jf(x), f(x))  # silently stale: eager now takes the other branch
    assert len(backend.graphs) == 1


def test_os_getenv_of_a_set_variable_is_baked_in_too(env):
    env.setenv(_KEY, "1")
    jf, backend = _compiled(_getenv)
    x = torch.ones(2)
    assert torch.equal(jf(x), _getenv(x))
    env.setenv(_KEY, "0")
    assert not torch.equal(jf(x), _getenv(x))
    assert len(backend.graphs) == 1


def test_os_environ_of_a_set_variable_recompiles_when_it_changes(env):
    env.setenv(_KEY, "1")
    jf, backend = _compiled(_environ_get)
    x = torch.ones(2)
    assert torch.equal(jf(x), _environ_get(x))
    env.setenv(_KEY, "0")
    assert torch.equal(jf(x), _environ_get(x))
    assert len(backend.graphs) == 2


def test_a_logger_call_breaks_the_graph_and_logs_on_every_call():
    logger = logging.getLogger("thunder_lint_tl204_probe")
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def f(x):
        y = x + 1
        logger.info("shape %s", x.shape)
        return y * 2

    jf, backend = _compiled(f)
    for _ in range(3):
        assert torch.equal(jf(torch.ones(2)), f(torch.ones(2)))
    assert len(records) == 6  # 3 compiled calls and 3 eager ones: the compiled function logs every time
    assert len(backend.graphs) == 2  # the graph break: `x + 1` and `y * 2` are separate graphs


@pytest.mark.parametrize("body", [
    "    if os.getenv('FLAG', '0') == '1':\n        return x + 1\n    return x - 1\n",
    "    if os.environ.get('FLAG') == '1':\n        return x + 1\n    return x - 1\n",
    "    if 'FLAG' in os.environ:\n        return x + 1\n    return x - 1\n",
    "    return x * float(os.environ['FLAG'])\n",
    "    y = x + 1\n    logger.info('shape %s', x.shape)\n    return y * 2\n",
])
def test_tl204_reports_each_form(body):
    source = "import logging, os, torch\nlogger = logging.getLogger(__name__)\n@torch.compile\ndef f(x):\n" + body
    found = [d for d in lint_source(source, "m.py") if d.code == "TL204"]
    assert len(found) == 1 and "torch.compile" in found[0].message and found[0].severity == "warning"


def test_a_draw_from_a_random_generator_object_repeats_the_traced_values_and_is_reported():
    # pytorch #145445: a random.Random passed to the compiled function, and one the module holds. torch.compile
    # (2.13) replays the draws from the generator's state at tracing: the calls after the first repeat the traced
    # value, and the generator ends in another state than eager's. The rule reports both draws with that claim.
    import random

    source = (
        "import random, torch\n"
        "def jitter(x, rng):\n    return x + rng.randint(1, 100)\n"
        "class Pick(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.rng = random.Random(0)\n    def forward(self, x):\n        return x * self.rng.random()\n"
        "cj = torch.compile(jitter)\ncp = torch.compile(Pick())\n"
    )
    found = [d for d in lint_source(source, "m.py") if d.code == "TL204"]
    assert [d.line for d in found] == [3, 9], [d.message for d in found]
    assert all("replays the draws from the generator's state at tracing" in d.message for d in found)
    ns = {}
    exec(compile(source.replace("cj = ", "#").replace("cp = ", "#"), "<tl204>", "exec"), ns)
    x = torch.zeros(1)
    rng_eager, rng_compiled = random.Random(0), random.Random(0)
    eager = [ns["jitter"](x, rng_eager).item() for _ in range(3)]
    compiled_fn, _ = _compiled(ns["jitter"])
    compiled = [compiled_fn(x, rng_compiled).item() for _ in range(3)]
    assert compiled[0] == eager[0] and compiled[1:] == [compiled[0]] * 2 != eager[1:], (eager, compiled)
    assert rng_eager.getstate() != rng_compiled.getstate()
    eager_mod, compiled_mod = ns["Pick"](), ns["Pick"]()
    compiled_pick, _ = _compiled(compiled_mod)
    eager = [eager_mod(torch.ones(1)).item() for _ in range(3)]
    compiled = [compiled_pick(torch.ones(1)).item() for _ in range(3)]
    assert compiled[0] == eager[0] and compiled[1:] == [compiled[0]] * 2 != eager[1:], (eager, compiled)

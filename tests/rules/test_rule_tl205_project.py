"""TL205 on a project: the model in one file, the compile call and the training loop in another.

The project index says which forward is compiled (train.py compiles models.Net); TL205 then reads the class's
own methods and the objects it holds in models.py. What train.py does to the model between calls is another
file's code, which TL205 does not see (see rules/_module_state.py).
"""

from __future__ import annotations

from analyzer import lint_paths

MODELS = """\
import torch
from torch import nn


class KVCache:
    def __init__(self, n):
        self.k = torch.zeros(n, 4)
        self.pos = 0

    def append(self, k):
        self.k[self.pos] = k
        self.pos += 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = KVCache(16)
        self.heads = 4
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, k):
        self.steps += 1
        self.cache.append(k)
        return self.cache.k.sum(0) / self.heads


class Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x
"""

TRAIN = """\
import torch
from models import Net

model = torch.compile(Net())
for step in range(3):
    model(torch.ones(4))
"""


def test_a_forward_compiled_in_another_file_reports_its_module_state(tmp_path):
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(TRAIN)
    found = [d for d in lint_paths([str(tmp_path)], select=["TL205"], cache=False)]
    # the call in the compiled forward, and the write itself in KVCache.append, which the index says forward
    # reaches (compiled with it); the buffer updated in place, `heads` and the uncompiled Unused stay quiet
    assert [(d.path.rsplit("/", 1)[-1], d.line) for d in found] == [("models.py", 12), ("models.py", 24)], \
        [d.message for d in found]
    first, *notes = found[1].message.split("\n")
    assert "`self.cache.append`" in first and "`self.cache.pos`" in first
    assert any("train.py:4" in n for n in notes), notes  # where it is compiled
    # the compile call is torch.compile: its note names the recompile
    assert any(n.startswith("torch.compile ") and "recompile" in n for n in notes), notes
    assert "`self.pos`" in found[0].message.split("\n")[0]


LIBRARY = """\
import torch
from torch import nn


class ScheduledLoss(nn.Module):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule
        self.n_steps = 0
        self.loss_fn = schedule[0]

    def forward(self, *args, **kwargs):
        self.n_steps += 1
        return self.loss_fn(*args, **kwargs)


class Engine(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.module = model
        self.iteration = 0

    def forward(self, **batch):
        self.iteration += 1
        return self.module(**batch)


class GlobalNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.step_count = 0

    def forward(self, x, lengths=None):
        self.step_count += 1
        return x - x.mean()
"""


def test_library_default_leaves_wrappers_that_pass_their_inputs_through(tmp_path):
    # no compile call: every forward is taken as compiled (the library default). A forward with inputs of its own
    # (GlobalNorm) is a model's: its counter is reported. One that only passes *args/**kwargs on (a loss schedule,
    # an engine around a model) is machinery around the model the user compiles: quiet.
    (tmp_path / "lib.py").write_text(LIBRARY)
    found = [d for d in lint_paths([str(tmp_path)], select=["TL205"], cache=False)]
    assert [d.line for d in found] == [34], [d.message for d in found]
    assert "GlobalNorm" in found[0].message


def test_the_same_wrapper_compiled_by_a_call_is_reported(tmp_path):
    (tmp_path / "lib.py").write_text(LIBRARY)
    (tmp_path / "train.py").write_text("import torch\nfrom lib import ScheduledLoss\n"
                                       "loss = torch.compile(ScheduledLoss([torch.nn.MSELoss()]))\n")
    found = [d for d in lint_paths([str(tmp_path)], select=["TL205"], cache=False)]
    assert [d.line for d in found] == [13], [d.message for d in found]


SOLVERS = """\
import torch


class Solver:
    def __init__(self, cov):
        self.cov = cov
        self.step = 0

    def pivot_(self, pivot):
        if self.step < pivot:
            self.cov = self.cov.roll(pivot - self.step, 0)

    def solve(self, n):
        if self.step > n:
            raise ValueError("ran ahead")
        for i in range(n):
            self.pivot_(i)
            self.step += 1
        return self.cov.sum()
"""

ACQUISITION = """\
from torch import nn

from solvers import Solver


class ProbabilityOfImprovement(nn.Module):
    def forward(self, x):
        solver = Solver(x @ x.T)
        return solver.solve(x.shape[0])


class Stepper(nn.Module):
    def forward(self, x, solver: Solver):
        return solver.solve(2) * x
"""


def test_an_object_the_compiled_call_builds_for_itself_has_no_state_between_calls(tmp_path):
    # round 3, class [14] (botorch's MVNXPB): forward builds the solver and steps it; `step` changes within one
    # call, never between calls (tests/rules/test_rule_tl205_torch_compile.py: one graph for six calls). The same
    # solver handed in as an argument outlives the call: its counter is reported.
    (tmp_path / "solvers.py").write_text(SOLVERS)
    (tmp_path / "acquisition.py").write_text(ACQUISITION.replace("\n\nclass Stepper", "\n\nclass _Unused").replace(
        "solver: Solver", "solver"))
    found = [d for d in lint_paths([str(tmp_path)], select=["TL205"], cache=False)]
    assert found == [], [d.message for d in found]
    (tmp_path / "acquisition.py").write_text(ACQUISITION)
    found = [d for d in lint_paths([str(tmp_path)], select=["TL205"], cache=False)]
    assert {(d.path.rsplit("/", 1)[-1], d.line) for d in found} >= {("solvers.py", 18)}, [d.message for d in found]

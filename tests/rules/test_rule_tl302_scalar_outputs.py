"""TL302 where the project sets `torch._dynamo.config.capture_scalar_outputs = True` (round 3: torchtitan sets it
before compiling its blocks).

There torch.compile (2.13) traces `.item()`, `.tolist()`, `int(t)`, `float(t)` as symbolic scalars: no graph break
for the read itself; a branch or a loop on the value still breaks the graph (an error under `fullgraph=True`).
Each claim runs here under real torch.compile on CPU; the finding stays, with a note that says which case it is.
"""

from __future__ import annotations

import pytest
import torch

from analyzer import lint_paths
from analyzer.static import lint_source
from counting_backend import CountingBackend


def _compiled(f, **kw):
    torch._dynamo.reset()
    backend = CountingBackend()
    return torch.compile(f, backend=backend, **kw), backend


def _item(x):
    return x / x.max().item()


def _tolist(x):
    a, b = x[:2].int().tolist()
    return x * a + b


def _int(x):
    return x * int(x.max())


def _float(x):
    return x * float(x.max())


def _branch(x):
    y = x * 2
    n = x.sum().item()
    if n > 0:
        return y + 1
    return y - 1


def _loop(x):
    out = x * 0
    for v in x[:3].tolist():
        out = out + v
    return out


@pytest.fixture
def captured():
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        yield


@pytest.mark.parametrize("f", [_item, _tolist, _int, _float], ids=["item", "tolist", "int", "float"])
def test_a_read_is_no_graph_break_when_scalar_outputs_are_captured(captured, f):
    jf, backend = _compiled(f)
    for x in (torch.tensor([3.0, 1.0, 2.0, 4.0]), torch.tensor([5.0, 2.0, 7.0, 1.0])):
        assert torch.equal(jf(x), f(x))
    assert len(backend.graphs) == 1  # one graph: the value is a symbolic scalar in it


@pytest.mark.parametrize("f", [_item, _tolist], ids=["item", "tolist"])
def test_without_the_setting_the_read_breaks_the_graph(f):
    jf, backend = _compiled(f)
    x = torch.tensor([3.0, 1.0, 2.0, 4.0])
    assert torch.equal(jf(x), f(x))
    assert len(backend.graphs) >= 2


@pytest.mark.parametrize("f", [_branch, _loop], ids=["branch", "loop"])
def test_a_branch_or_loop_on_the_value_still_breaks_the_graph(captured, f):
    jf, backend = _compiled(f)
    for x in (torch.ones(4), -torch.ones(4)):
        assert torch.equal(jf(x), f(x))
    assert len(backend.graphs) >= 2


def test_a_branch_on_the_value_is_an_error_under_fullgraph(captured):
    jf, _ = _compiled(_branch, fullgraph=True)
    with pytest.raises(Exception, match="data-dependent"):
        jf(torch.ones(4))


SETTING = "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n"
READ = "import torch\n@torch.compile\ndef f(x):\n    return x / x.max().item()\n"
BRANCH = "import torch\n@torch.compile\ndef f(x):\n    n = x.sum().item()\n    m = n * 2\n    if m > 0:\n        return x\n    return -x\n"


def _tl302(found):
    return [d for d in found if d.code == "TL302"]


@pytest.mark.parametrize("setting", [
    "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n",
    "import torch._dynamo\ntorch._dynamo.config.capture_scalar_outputs = True\n",
    "from torch._dynamo import config\nconfig.capture_scalar_outputs = True\n",
    "import torch\ntorch._dynamo.config.update({'capture_scalar_outputs': True})\n",
    "import torch\ndef setup():\n    torch._dynamo.config.capture_scalar_outputs = True\n",
])
def test_the_setting_in_another_file_changes_the_note(tmp_path, setting):
    (tmp_path / "setup.py").write_text(setting)
    (tmp_path / "model.py").write_text(READ)
    (found,) = _tl302(lint_paths([str(tmp_path)], cache=False))
    assert "captures it as a symbolic scalar" in found.message and "no graph break here" in found.message
    assert "setup.py:" in found.message and "breaks the graph where" not in found.message


def test_a_value_that_decides_a_branch_keeps_the_graph_break(tmp_path):
    (tmp_path / "setup.py").write_text(SETTING)
    (tmp_path / "model.py").write_text(BRANCH)
    (found,) = _tl302(lint_paths([str(tmp_path)], cache=False))  # kept: the branch needs the data
    assert "breaks the graph at the branch or loop this value decides" in found.message


def test_without_the_setting_the_note_is_the_graph_break():
    (found,) = _tl302(lint_source(READ, "m.py"))
    assert "breaks the graph where the value reaches Python" in found.message


def test_a_file_linted_alone_sees_its_own_setting():
    (found,) = _tl302(lint_source(SETTING + READ.replace("import torch\n", ""), "m.py"))
    assert "captures it as a symbolic scalar" in found.message and "(line 2)" in found.message


def test_false_or_another_option_is_no_setting(tmp_path):
    (tmp_path / "setup.py").write_text("import torch\ntorch._dynamo.config.capture_scalar_outputs = False\n"
                                       "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n")
    (tmp_path / "model.py").write_text(READ)
    (found,) = _tl302(lint_paths([str(tmp_path)], cache=False))
    assert "breaks the graph where the value reaches Python" in found.message


def test_a_cached_run_follows_the_setting_in_another_file(tmp_path, monkeypatch):
    # the setting is part of every file's facts: turning it off in setup.py re-lints model.py with the old note
    monkeypatch.chdir(tmp_path)
    (tmp_path / "setup.py").write_text(SETTING)
    (tmp_path / "model.py").write_text(READ)
    first = _tl302(lint_paths(["."]))
    again = _tl302(lint_paths(["."]))
    assert [d.message for d in again] == [d.message for d in first] and "symbolic scalar" in first[0].message
    (tmp_path / "setup.py").write_text("import torch\n")
    (found,) = _tl302(lint_paths(["."]))
    assert "breaks the graph where the value reaches Python" in found.message

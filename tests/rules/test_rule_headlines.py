"""A finding's first line states the hazard and the fix in at most HEADLINE_CHARS characters (issue 24); what
each compiler does goes to the lines after it (notes), and the rule's docs.

Every rule's reported examples are linted as they are, under each `target`, and as a library whose module
nothing compiles (the library default), whose first line names the class.
"""

from __future__ import annotations

import pytest

from analyzer.project.index import ProjectFile
from analyzer.static import lint_source
from rules import OBSERVED, RULES
from rules.compilers import HEADLINE_CHARS, prose_length


def _examples():
    for code, info in RULES.items():
        if code in OBSERVED:  # programs run under `run --observe` (tests/run/test_observe_rules.py)
            continue
        for i, src in enumerate(info.invalid):
            yield pytest.param(code, src, id=f"{code}-{i}")


@pytest.mark.parametrize("code,src", list(_examples()))
@pytest.mark.parametrize("target", ["any", "thunder", "torch.compile"])
def test_first_lines_are_short_and_say_what_to_do(code, src, target):
    if target == "torch.compile" and code == "TL205" and "register_buffer" in src and "thunder.jit" in src:
        pytest.skip("a rebound buffer: thunder's hazard; torch.compile stores it like eager (test_rule_tl205_torch_compile.py)")
    if target == "thunder" and code == "TL202" and "torch.compile(" in src:
        pytest.skip("a closure compiled on every call: a jit made each call traces anew (test_rule_tl202_torch_compile.py)")
    project = ProjectFile("/proj/m.py", "m", None, None, target)
    found = [d for d in lint_source(src, "/proj/m.py", project=project) if d.code == code]
    if not found and target == "thunder" and code == "TL301" and "dynamic=True" not in src and "symbolic" not in src:
        pytest.skip("plain torch.compile's automatic dynamic shapes: no hazard when thunder compiles it")
    assert found, code
    for d in found:
        first, *notes = d.message.split("\n")
        assert prose_length(first) <= HEADLINE_CHARS, first
        assert ": " in first, first  # "<what was found>: <what to do>"
        assert all(n.strip() for n in notes), d.message


LIBRARY = """\
import torch
from torch import nn

state = {"calls": 0}


class AttentionWithAVeryLongDescriptiveClassNameIndeed(nn.Module):
    def forward(self, hidden_states_with_a_long_name):
        if hidden_states_with_a_long_name.abs().max().item() > state["calls"]:
            print("overflow")
        return hidden_states_with_a_long_name
"""


def test_library_default_first_lines_name_the_class_and_stay_short():
    project = ProjectFile("/proj/lib.py", "lib", None, None, "any")
    found = lint_source(LIBRARY, "/proj/lib.py", project=project)
    assert {d.code for d in found} == {"TL201", "TL204", "TL302"}, [d.message for d in found]
    for d in found:
        first, *notes = d.message.split("\n")
        # the class's whole name: names are never cut (issue 35); the limit is on the prose around them
        assert first.startswith("if `AttentionWithAVeryLongDescriptiveClassNameIndeed` is compiled, "), first
        assert prose_length(first) <= HEADLINE_CHARS, first
        assert any(n.startswith("under thunder, ") for n in notes) and any(n.startswith("torch.compile ") for n in notes)
    assert project.library_default == "no compile call found"


def test_long_names_are_never_cut():
    # issue 35: names in messages were cut at ~20 characters (`self.num_floating_po...`); a user searches for them
    src = ("import torch\nfrom torch import nn\nclass MegatronTrainingEngineWrapper(nn.Module):\n    def forward(self, x):\n"
           "        self.num_floating_point_operations_so_far += 1\n        return x\n")
    project = ProjectFile("/proj/m.py", "m", None, None, "any")  # no compile call: the library default's prefix
    found = [d for d in lint_source(src, "/proj/m.py", project=project) if d.code == "TL205"]
    assert len(found[0].message.split("\n")[0]) > HEADLINE_CHARS  # long enough that the old code cut the names
    assert found and "`self.num_floating_point_operations_so_far`" in found[0].message, [d.message for d in found]

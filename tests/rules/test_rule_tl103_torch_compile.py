"""What torch.compile does with the writes TL103 and TL102 report, run on CPU under three backends (issue 31).

TL103's torch.compile note says: "matches eager here (torch 2.13): it functionalizes the write, keeps eager's
order of the reads around it and stores the new values into the caller's tensor". Each form below is one the
rules report (checked here too), taken from a public report where torch.compile once got it wrong; each is run
eagerly and compiled with the eager, aot_eager and inductor backends, and both the result and the caller's
tensor after the call must equal eager's.
"""

from __future__ import annotations

import pytest
import torch

from analyzer.static import lint_source
from rules.tl102_view_inplace_input import TORCH_COMPILE as TL102_TORCH_COMPILE
from rules.tl103_inplace_alias_hazard import STORED_TORCH_COMPILE, TORCH_COMPILE

HEADER = "import torch\nimport torch.nn.functional as F\n"

# name: (code, source defining f, a function making a fresh input)
FORMS = {
    # pytorch #93283: the stacked copy must not see the in-place silu
    "stack, then an inplace option": ("TL103", "def f(x):\n    rt = torch.stack([x])\n"
                                      "    F.silu(x, inplace=True)\n    return rt\n",
                                      lambda: torch.tensor([1.0, 1.0])),
    # pytorch #94777: log computed before log_
    "read, then written": ("TL103", "def f(x):\n    y = torch.log(x)\n    x.log_()\n    return y\n",
                           lambda: torch.tensor([3.0, 5.0])),
    # pytorch #174074: one read-modify-write with duplicate indices
    "indexed update": ("TL103", "def f(x: torch.Tensor):\n    x[[0, 0]] += x[[0, 0]]\n    return x\n",
                       lambda: torch.tensor([[-0.8716, 0.1114]], dtype=torch.float64)),
    "written, then read": ("TL103", "def f(q):\n    q.mul_(2)\n    return q + 1\n", lambda: torch.arange(3.0)),
    "inplace option, then read": ("TL103", "def f(x):\n    F.relu(x, inplace=True)\n    return x * 2\n",
                                  lambda: torch.tensor([-1.0, 2.0, -3.0])),
    # pytorch #118961: r1 is computed from the input through other locals before the inplace relu6
    "computed from it through locals, then an inplace option": (
        "TL103", "def f(i):\n    t1 = torch.fliplr(i)\n    r1 = torch.diagflat(t1, offset=1)\n"
        "    F.relu6(i, inplace=True)\n    return r1\n", lambda: torch.tensor([[-1.0, 2.0], [3.0, -4.0]])),
    # pytorch #138908: an untyped argument doubled through an index computed at run time
    "indexed update by a computed index": (
        "TL103", "def f(idx, y):\n    idx = idx + 10\n    y[idx] += y[idx]\n    return y\n",
        lambda: (torch.tensor([[-10, -9]]), torch.arange(8.0).view(2, 4))),
    # lightning-thunder #2766: the in-place call's result is an operand, a read of the written input
    "in-place result used as an operand": ("TL103", "def f(q):\n    return q.mul_(2) + 1\n", lambda: torch.arange(3.0)),
    "inplace option on a view": ("TL102", "def f(x):\n    F.relu(x[0], inplace=True)\n    return x.sum()\n",
                                 lambda: torch.tensor([[-1.0, 2.0], [-3.0, 4.0]])),
}


def _function(source):
    ns = {}
    exec(compile(HEADER + source, "<tl103>", "exec"), ns)
    return ns["f"]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_form_is_reported_with_torch_compiles_behaviour(form):
    code, source, _ = FORMS[form]
    found = [d for d in lint_source(HEADER + "@torch.compile\n" + source, "m.py") if d.code == code]
    assert found, form
    note = TORCH_COMPILE if code == "TL103" else TL102_TORCH_COMPILE
    assert f"torch.compile {note}" in found[0].message
    assert found[0].severity.value == "warning"


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compile_matches_eager_on_the_reported_forms(backend):
    for form, (_, source, make) in sorted(FORMS.items()):
        torch._dynamo.reset()
        f = _function(source)
        x_eager, x_compiled, fresh = _inputs(make), _inputs(make), _inputs(make)
        expected = f(*x_eager)
        got = torch.compile(f, backend=backend, fullgraph=True)(*x_compiled)
        assert torch.equal(got, expected), (form, backend, got, expected)
        for a, b in zip(x_compiled, x_eager):
            assert torch.equal(a, b), (form, backend)  # the caller's tensors got eager's new values
        assert any(not torch.equal(a, b) for a, b in zip(x_eager, fresh)), form  # and the write did reach them


def _inputs(make) -> tuple:
    made = make()
    return made if isinstance(made, tuple) else (made,)


# pytorch #198131 (open): dst is filled from src before src is written; the caller reads dst
STORED = "def f(dst, src):\n    dst[0:, :] = src[0:, :]\n    src.add_(1)\n    return src\n"


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_store_into_another_input_before_the_write_differs_from_eager_under_inductor(backend):
    found = [d for d in lint_source(HEADER + "@torch.compile\n" + STORED, "m.py") if d.code == "TL103"]
    assert found and f"torch.compile {STORED_TORCH_COMPILE}" in found[0].message
    torch._dynamo.reset()
    f = _function(STORED)
    dst_e, src_e = torch.zeros(3, 4), torch.arange(12.0).view(3, 4)
    dst_c, src_c = torch.zeros(3, 4), torch.arange(12.0).view(3, 4)
    f(dst_e, src_e)
    torch.compile(f, backend=backend)(dst_c, src_c)
    assert torch.equal(src_c, src_e)
    # what the note says: inductor fills dst with the written values, the other backends match eager
    assert torch.equal(dst_c, dst_e) is (backend != "inductor"), (backend, dst_c[0], dst_e[0])


SELF_READS = {
    "foreach": "def f(x):\n    torch._foreach_add_([x], [x.flip(0)])\n    return x\n",
    "method": "def f(x):\n    x.add_(x.flip(0))\n    return x\n",
}


@pytest.mark.parametrize("form", sorted(SELF_READS))
def test_an_update_from_its_own_other_positions_is_reported_and_inductor_gets_the_foreach_form_wrong(form):
    # pytorch #198033: inductor's foreach kernel reads the mirrored row while writing it (CPU, torch 2.13); the
    # method form and the eager/aot_eager backends match eager. The finding says so.
    from rules.tl103_inplace_alias_hazard import SELF_READ_TORCH_COMPILE

    source = SELF_READS[form]
    found = [d for d in lint_source(HEADER + "@torch.compile\n" + source, "m.py") if d.code == "TL103"]
    assert found and f"torch.compile {SELF_READ_TORCH_COMPILE}" in found[0].message, [d.message for d in found]
    f = _function(source)
    x = torch.rand(8, 8)
    want = f(x.clone())
    for backend in ("eager", "aot_eager", "inductor"):
        torch._dynamo.reset()
        got = torch.compile(f, backend=backend)(x.clone())
        wrong = backend == "inductor" and form == "foreach"
        assert torch.equal(got, want) is not wrong, (form, backend)

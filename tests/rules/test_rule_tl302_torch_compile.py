"""TL302's claims for the reads beyond `.item()` (issue 31, miss 7), each run under real torch.compile on CPU.

The rule says torch.compile "breaks the graph here to read it, or recompiles for each new value" with right results:
each form below is compiled, must give eager's results for two calls with other data, and must show a graph break
(`torch._dynamo.explain`) or one graph per call. The same source, decorated with `@torch.compile`, must be reported.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend

# (source defining f, the arguments of two calls with other data)
FORMS = {
    "numpy": ("def f(x):\n    a = x.cpu().numpy()\n    return x + float(a.sum())\n", [(torch.ones(3),), (torch.zeros(3),)]),
    "torch.equal": ("def f(x, ref):\n    same = torch.equal(x, ref)\n    y = x * 2\n    if same:\n        return y\n"
                    "    return y - 1\n",
                    [(torch.ones(3), torch.ones(3)), (torch.ones(3), torch.zeros(3))]),
    "slice bound": ("def f(x, t: torch.Tensor):\n    buf = torch.zeros(3, 10)\n    buf[:, t[0]:t[1]] = x\n"
                    "    return buf\n", [(torch.ones(3, 2), torch.tensor([1, 3])), (torch.ones(3, 2), torch.tensor([4, 6]))]),
    # pytorch #119186: torch.compile traces NumPy routines on arrays as tensor ops; a branch on their result breaks
    "numpy routine on arrays": ("def f(clause, table):\n    res = np.logical_xor(clause, table[table.ndim - 2])\n"
                                "    if np.count_nonzero(res) == 1:\n        return table | res\n    return table\n",
                                [(np.array([True, False, False]), np.array([[False, False, False]])),
                                 (np.array([True, True, False]), np.array([[False, False, False]]))]),
    "float of a tensor": ("def f(x, n: torch.Tensor):\n    return x * (1.0 / float(n))\n",
                          [(torch.ones(3), torch.tensor(4)), (torch.ones(3), torch.tensor(5))]),
}


def _same(a, b):
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if hasattr(a, "tolist"):
        return a.tolist() == b.tolist()
    return a == b


@pytest.mark.parametrize("form", sorted(FORMS))
def test_torch_compile_breaks_the_graph_or_recompiles_where_tl302_reports(form):
    source, calls = FORMS[form]
    ns = {"torch": torch, "np": np}
    exec(compile(source, "<tl302>", "exec"), ns)
    torch._dynamo.reset()
    backend = CountingBackend()
    jf = torch.compile(ns["f"], backend=backend)
    assert _same(jf(*calls[0]), ns["f"](*calls[0]))
    first = len(backend.graphs)
    for args in calls[1:]:
        assert _same(jf(*args), ns["f"](*args))  # right results: the read runs in Python
    # the read splits the function at a graph break (two graphs, or none: dynamo ran the frame eagerly), or (a
    # tensor argument read as a number) specializes on its value: new data recompiles
    assert first != 1 or len(backend.graphs) == len(calls), (form, first, len(backend.graphs))
    reported = [d for d in lint_source("import numpy as np\nimport torch\n@torch.compile\n" + source, "m.py") if d.code == "TL302"]
    assert reported, form


def test_a_buffer_read_as_a_number_breaks_the_graph_on_every_call():
    # `float(self.num_batches_tracked)`: what a BatchNorm-like module compiled as a whole does with its buffer
    class BN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("num_batches_tracked", torch.tensor(0))

        def forward(self, x):
            self.num_batches_tracked.add_(1)
            return x * (1.0 / float(self.num_batches_tracked))

    torch._dynamo.reset()
    eager, compiled = BN(), BN()
    explained = torch._dynamo.explain(BN())(torch.ones(2))
    assert explained.graph_break_count >= 1
    jm = torch.compile(compiled, backend=CountingBackend())
    for _ in range(3):
        assert torch.equal(jm(torch.ones(2)), eager(torch.ones(2)))


def test_item_of_a_size_computed_as_a_tensor_still_breaks_the_graph():
    # speechbrain's wav2vec2 forward: `_get_feat_extract_output_lengths(wav.shape[1]).item()`, where the helper
    # computes with `torch.div` and so returns a 0-d tensor: no data of the input is read, but `.item()` still
    # breaks the graph under torch.compile (and recompiles per input length), so TL302 keeps reporting it
    source = ("def lengths(n):\n    return torch.div(n - 400, 320, rounding_mode='floor') + 1\n"
              "def f(wav):\n    s = lengths(wav.shape[1]).item()\n    return wav[:, :s] * 2\n")
    ns = {"torch": torch}
    exec(compile(source, "<tl302>", "exec"), ns)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(ns["f"])(torch.ones(2, 4000))
    assert explained.graph_break_count >= 1
    assert any("item" in str(r.reason) for r in explained.break_reasons)
    reported = [d for d in lint_source("import torch\n" + source.replace("def f", "@torch.compile\ndef f"), "m.py")
                if d.code == "TL302"]
    assert [d.line for d in reported] == [6]

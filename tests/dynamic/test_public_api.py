"""The DESIGN.md Python API: analyzer.jit / analyzer.check / analyzer.SharpEdgeError, loaded lazily."""

import subprocess
import sys

import torch

import analyzer


def test_import_analyzer_does_not_import_torch():
    code = "import sys, analyzer; analyzer.lint_source('x = 1\\n'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_check_and_jit_through_the_package():
    scale = 3.0

    def f(x):
        return x * scale

    diags = analyzer.check(f, torch.ones(2))
    assert [d.code for d in diags] == ["TL202"] and diags[0].origin == "trace"

    jf = analyzer.jit(f, sharp_edges="error")
    try:
        jf(torch.ones(2))
    except analyzer.SharpEdgeError as e:
        assert [d.code for d in e.diagnostics] == ["TL202"]
    else:
        raise AssertionError("SharpEdgeError not raised")
    assert torch.equal(analyzer.jit(f)(torch.ones(2)), f(torch.ones(2)))

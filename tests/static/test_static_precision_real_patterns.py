"""Precision on patterns found in real projects (diffusers, timm, peft), each with the real shape of code.

Every case names what the project does and what the rule must (not) say about it; see
bench/precision_real_code.md for the measurement these came from.
"""

from __future__ import annotations

from analyzer.static import lint_source


def codes(src: str, code: str) -> list[int]:
    return [d.line for d in lint_source(src, "m.py") if d.code == code]


# diffusers/quantizers/nunchaku/utils.py: a kernel library loaded once at import, else None
KERNEL_NAMESPACE = """\
import torch

try:
    from kernels import get_kernel
    ops = get_kernel("nunchaku")
except ImportError:
    ops = None


@torch.compile
def gemm(x, w):
    if ops is None:
        return x @ w
    return ops.gemm_w4a4(x, w)
"""


def test_tl201_kernel_namespace_bound_once_per_import_path_is_code():
    assert codes(KERNEL_NAMESPACE, "TL201") == []


def test_tl201_the_same_global_read_as_data_is_reported():
    src = KERNEL_NAMESPACE.replace("return ops.gemm_w4a4(x, w)", "return x * ops")
    assert codes(src, "TL201") == [12]  # reported once, at the first read


def test_tl201_a_namespace_global_rebound_by_a_function_is_reported():
    src = KERNEL_NAMESPACE + "\n\ndef reload():\n    global ops\n    ops = None\n"
    assert codes(src, "TL201") == [12]


def test_tl201_a_namespace_global_bound_twice_on_one_path_is_reported():
    src = KERNEL_NAMESPACE.replace('    ops = get_kernel("nunchaku")', '    ops = get_kernel("a")\n    ops = get_kernel("b")')
    assert codes(src, "TL201") == [13]

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


# peft/tuners/*: the merged weight is computed in place on a reshape, then stored back into the module
WRITE_BACK = """\
import torch


def merge(module, delta):
    w = module.weight.data.reshape(-1)
    w.add_(delta)
    {store}
"""


def test_tl101_result_written_back_to_the_base_is_no_finding():
    for store in (
        "module.weight.data = w.view_as(module.weight)",
        "module.weight = torch.nn.Parameter(w.view_as(module.weight))",
        "module.weight.data.copy_(w.view_as(module.weight))",
        'setattr(module, "weight", torch.nn.Parameter(w.view_as(module.weight)))',
    ):
        assert codes(WRITE_BACK.format(store=store), "TL101") == [], store


def test_tl101_returning_the_result_to_the_caller_is_not_a_write_back():
    assert codes(WRITE_BACK.format(store="return w"), "TL101") == [6]
    # stored somewhere else: the base may or may not have changed
    assert codes(WRITE_BACK.format(store="module.other = w"), "TL101") == [6]


# timm/diffusers box code: a slice picked by a conditional expression, reshaped, rounded in place
SLICE_PICKED = """\
import torch


def round_boxes(boxes, xy_first: bool):
    part = boxes[:, :2] if xy_first else boxes[:, 2:]
    flat = part.reshape(-1)
    flat.ceil_()
    return boxes.sum()
"""


def test_tl101_follows_the_alias_through_a_conditional_slice():
    assert codes(SLICE_PICKED, "TL101") == [7]
    inline = SLICE_PICKED.replace("    part = boxes[:, :2] if xy_first else boxes[:, 2:]\n", "").replace(
        "flat = part.reshape(-1)", "flat = (boxes[:, :2] if xy_first else boxes[:, 2:]).reshape(-1)"
    )
    assert codes(inline, "TL101") == [6]
    fresh = SLICE_PICKED.replace("boxes[:, 2:]", "boxes[:, 2:].clone()").replace("boxes[:, :2] if", "boxes[:, :2].clone() if")
    assert codes(fresh, "TL101") == []


# peft: a check on tensor data raises with the offending values in its message
RAISE_MESSAGE = """\
import torch


@torch.compile
def check(x):
    if (x < 0).any():
        raise ValueError(f"negative values: {x[x < 0].tolist()} (min {x.min().item()})")
    n = x.sum().item()
    return x / n
"""


def test_tl302_item_in_the_message_of_a_guarded_raise_is_not_a_second_finding():
    assert codes(RAISE_MESSAGE, "TL302") == [6, 8]

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


# timm/layers/fast_norm.py: feature flags decided at import
FLAG = """\
import torch

try:
    from apex.normalization import fused_layer_norm_affine
    has_apex = True
except ImportError:
    has_apex = False


@torch.compile
def norm(x, w, b):
    if has_apex:
        return fused_layer_norm_affine(x, w, b, x.shape[-1:], 1e-5)
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b)
"""


def test_tl201_feature_flag_bound_once_per_import_path_is_static():
    assert codes(FLAG, "TL201") == []
    # a flag that a function can switch is data
    assert codes(FLAG + "\n\ndef disable():\n    global has_apex\n    has_apex = False\n", "TL201") == [12]
    # one binding only: another module may set it (`fast_norm.has_apex = ...`) as with any global
    single = FLAG.replace("    has_apex = False\n", "    pass\n")
    assert codes(single, "TL201") == [12]


def test_tl201_namespace_bound_once_in_an_if_whose_else_raises_is_code():
    # diffusers/quantizers/nunchaku/utils.py
    src = KERNEL_NAMESPACE.replace(
        'try:\n    from kernels import get_kernel\n    ops = get_kernel("nunchaku")\nexcept ImportError:\n    ops = None\n',
        'if HAS_KERNELS:\n    from kernels import get_kernel\n    ops = get_kernel("nunchaku")\nelse:\n'
        '    raise ImportError("pip install kernels")\n',
    ).replace("import torch\n", "import torch\nHAS_KERNELS = True\n", 1)
    assert "raise ImportError" in src
    assert codes(src, "TL201") == []


# diffusers/utils/import_utils.py: private availability flags probed once at import
PRIVATE_PROBE = """\
import importlib.util

import torch

_npu_available = importlib.util.find_spec("torch_npu") is not None
registry = {}
_cache = {}


def is_npu_available():
    return _npu_available


@torch.compile
def f(x):
    if is_npu_available():
        return x
    return x * registry.get("scale", 1.0) + len(_cache)
"""


def test_tl201_private_global_bound_once_is_static_but_containers_are_data():
    lines = codes(PRIVATE_PROBE, "TL201")
    assert lines == [18, 18], lines  # registry and _cache: containers hold data
    rebinding = PRIVATE_PROBE + "\n\ndef force_npu():\n    global _npu_available\n    _npu_available = True\n"
    assert 11 in codes(rebinding, "TL201")


# timm/models/nextvit.py: the weight is taken from the module, reshaped, scaled in place, stored back
FUSE_BN = """\
import torch


def fuse(module, scale):
    weight = module.weight.data
    weight = weight.reshape(weight.shape[0], weight.shape[1])
    weight.mul_(scale)
    weight = weight.reshape(weight.shape[0], weight.shape[1], 1, 1)
    {store}
"""


def test_tl101_write_back_through_a_chain_of_rebindings():
    assert codes(FUSE_BN.format(store="module.weight.data = weight"), "TL101") == []
    assert codes(FUSE_BN.format(store="return weight"), "TL101") == [7]


def test_tl201_import_time_probe_is_static():
    # timm/layers/fast_norm.py
    src = FLAG.replace("try:", 'has_rms_norm = hasattr(torch.nn.functional, "rms_norm")\ntry:', 1).replace(
        "    if has_apex:", "    if has_apex and has_rms_norm:"
    )
    assert "has_rms_norm = hasattr" in src
    assert codes(src, "TL201") == []
    # the same name bound to data is still reported
    data = src.replace('has_rms_norm = hasattr(torch.nn.functional, "rms_norm")', "has_rms_norm = load_config()")
    assert codes(data, "TL201") == [13]

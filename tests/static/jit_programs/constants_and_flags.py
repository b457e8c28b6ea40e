import os
import torch
import torch.nn.functional as F
from typing import TYPE_CHECKING, Optional

try:
    import apex
    HAS_APEX = True
except ImportError:
    HAS_APEX = False

if torch.cuda.is_available():
    DEFAULT_DTYPE = torch.bfloat16
else:
    DEFAULT_DTYPE = torch.float32

if TYPE_CHECKING:
    from foo import Config

USE_FLASH = os.environ.get("USE_FLASH", "0") == "1"
_ACTIVATIONS = {"gelu": F.gelu}
__all__ = ["f"]


class Act:
    pass


@torch.compile
def f(x: torch.Tensor, cfg: "Config", act: str = "gelu") -> torch.Tensor:
    y: torch.Tensor = x.to(DEFAULT_DTYPE)
    if HAS_APEX and USE_FLASH:
        y = y * 2
    z = F.gelu(y) if act == "gelu" else F.relu(y)
    if isinstance(z, Act):
        raise ValueError(f"bad {act}")
    return z


@torch.compile
def g(x, mask: Optional[torch.Tensor] = None):
    helper = lambda t: t * 2
    out = [helper(t) for t in x.unbind(0)]
    return torch.stack(out) if mask is None else torch.stack(out) * mask


SCALE = 1.0
SCale_note = "mixed case is not a constant by convention"
SCALE = 2.0  # rebound at module level: no longer a constant


@torch.compile
def h(x):
    return x * SCALE

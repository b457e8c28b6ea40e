"""Fake-tensor runs: an op on fake tensors of the proxies' real devices, for what meta tensors cannot tell.

Meta tensors ignore autocast (the meta device has none), so an op traced while autocast is on runs here, where
torch's own autocast rules choose the dtypes, exactly as in eager; a custom autograd.Function's forward runs
here too (compiler/features/autograd_function.py).
"""
from __future__ import annotations

import torch

from ..core import tree as pytree
from ..core.proxies import OpaqueProxy, TensorProxy


def run_on_fake(fn, args, kwargs, device, new_proxy):
    """`fn` on fake tensors of the proxies' devices under the active autocast; results as meta proxies."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # (imported on first use: it is slow to import)

    by_id = {}
    with torch._C.DisableTorchFunction(), FakeTensorMode() as mode:
        def to_fake(x):
            if isinstance(x, TensorProxy):
                m = x.meta
                f = torch.empty_strided(tuple(m.shape), tuple(m.stride()), dtype=m.dtype, device=x.device)
                if m.requires_grad:
                    f.requires_grad_(True)
                    if not m.is_leaf:
                        f = f.clone()
                by_id[id(f)] = x
                return f
            if isinstance(x, torch.Generator) or isinstance(x, OpaqueProxy) and isinstance(x.value, torch.Generator):
                return None
            if isinstance(x, OpaqueProxy):
                return x.value
            return x

        fargs, fkwargs = pytree.tree_map(to_fake, (args, kwargs))
        fkwargs.pop("generator", None)
        out = fn(*fargs, **fkwargs)
        del mode

    def wrap(o):
        if isinstance(o, torch.Tensor):
            p = by_id.get(id(o))
            if p is not None:
                return p
            with torch._C.DisableTorchFunction():
                m = torch.empty_strided(tuple(o.shape), tuple(o.stride()), dtype=o.dtype, device="meta")
                if o.requires_grad:
                    m.requires_grad_(True)
                    m = m.clone()  # an op's result: not a leaf
            return new_proxy(m, device)
        return o

    return pytree.tree_map(wrap, out)

"""Minimal, fast pytree helpers for the containers traces use: tuple (incl. namedtuples and torch.return_types),
list, dict, and dataclass instances whose fields are all init fields (a Hugging Face-style model output).
Everything else - torch.Size included - is a leaf. (torch.utils._pytree is general but costs
several times more per call, and the front end maps over every op's arguments.)"""
from __future__ import annotations


def tree_leaves(x, out=None) -> list:
    if out is None:
        out = []
    t = type(x)
    if t is tuple or t is list:
        for i in x:
            tree_leaves(i, out)
    elif t is dict:
        for i in x.values():
            tree_leaves(i, out)
    elif isinstance(x, tuple) and not _is_size(x):
        for i in x:
            tree_leaves(i, out)
    elif is_dataclass_instance(x):
        for name in t.__dataclass_fields__:
            tree_leaves(getattr(x, name), out)
    else:
        out.append(x)
    return out


def tree_map(f, x):
    t = type(x)
    if t is tuple:
        return tuple([tree_map(f, i) for i in x])
    if t is list:
        return [tree_map(f, i) for i in x]
    if t is dict:
        return {k: tree_map(f, v) for k, v in x.items()}
    if isinstance(x, tuple) and not _is_size(x):
        items = [tree_map(f, i) for i in x]
        return t(*items) if hasattr(x, "_fields") else t(items)  # namedtuple / structseq
    if is_dataclass_instance(x):
        return t(**{name: tree_map(f, getattr(x, name)) for name in t.__dataclass_fields__})
    return f(x)


def is_dataclass_instance(x) -> bool:
    fields = getattr(type(x), "__dataclass_fields__", None)
    return fields is not None and not isinstance(x, type) and all(fd.init for fd in fields.values())


def _is_size(x) -> bool:
    import torch

    return isinstance(x, torch.Size)

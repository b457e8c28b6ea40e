"""Minimal, fast pytree helpers for the containers traces use: tuple (incl. namedtuples and torch.return_types),
list, dict, and dataclass instances (their init fields). Everything else - torch.Size included - is a leaf. (torch.utils._pytree is general but costs
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
    elif hasattr(t, "__dataclass_fields__") and t is not type:  # a returned dataclass / ModelOutput
        for name in _init_fields(t):
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
    if hasattr(t, "__dataclass_fields__") and t is not type:
        return t(**{name: tree_map(f, getattr(x, name)) for name in _init_fields(t)})
    return f(x)


def _init_fields(t) -> list:
    import dataclasses

    return [fl.name for fl in dataclasses.fields(t) if fl.init]


def _is_size(x) -> bool:
    import torch

    return isinstance(x, torch.Size)

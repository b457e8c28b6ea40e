"""Minimal, fast pytree helpers for the containers traces use: tuple (incl. namedtuples and torch.return_types),
list, dict (and OrderedDict, defaultdict), set, frozenset, and dataclass instances whose fields are all init
fields (a Hugging Face-style model output).
Everything else - torch.Size included, unless it holds symbolic sizes - is a leaf. (torch.utils._pytree is
general but costs several times more per call, and the front end maps over every op's arguments.)"""
from __future__ import annotations

from collections import OrderedDict, defaultdict

import torch

from .proxies import Symbolic


class RebuiltBase:
    """compiler.core.trace.Rebuilt's base: an object the call made, its attributes (`attrs`, a dict) a tree."""

    __slots__ = ()


def tree_leaves(x, out=None, rebuilt: bool = False) -> list:
    """rebuilt=True: a Rebuilt object is a leaf (else its attributes' leaves are)."""
    if out is None:
        out = []
    t = type(x)
    if t is tuple or t is list:
        for i in x:
            tree_leaves(i, out, rebuilt)
    elif t is dict or t is OrderedDict or t is defaultdict:
        for i in x.values():
            tree_leaves(i, out, rebuilt)
    elif t is set or t is frozenset:
        for i in x:
            tree_leaves(i, out, rebuilt)
    elif isinstance(x, tuple) and not _is_size(x):
        for i in x:
            tree_leaves(i, out, rebuilt)
    elif is_dataclass_instance(x):
        for name in t.__dataclass_fields__:
            tree_leaves(getattr(x, name), out, rebuilt)
        if isinstance(x, dict):  # a ModelOutput-like mapping: items set that are not a field's value
            fields = [getattr(x, name) for name in t.__dataclass_fields__]
            for v in dict.values(x):
                if not any(v is a for a in fields):
                    tree_leaves(v, out, rebuilt)
    elif isinstance(x, RebuiltBase) and not rebuilt:
        tree_leaves(x.attrs, out)
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
    if t is OrderedDict:
        return OrderedDict((k, tree_map(f, v)) for k, v in x.items())
    if t is defaultdict:
        return defaultdict(x.default_factory, {k: tree_map(f, v) for k, v in x.items()})
    if t is set or t is frozenset:
        return t(tree_map(f, v) for v in x)
    if isinstance(x, tuple) and not _is_size(x):
        items = [tree_map(f, i) for i in x]
        return t(*items) if hasattr(x, "_fields") else t(items)  # namedtuple / structseq
    if isinstance(x, RebuiltBase):
        return t(x.cls, {k: tree_map(f, v) for k, v in x.attrs.items()}, x.key)
    if is_dataclass_instance(x):
        new = t(**{name: tree_map(f, getattr(x, name)) for name in t.__dataclass_fields__})
        if isinstance(x, dict):
            with_items(new, [(k, tree_map(f, v)) for k, v in dict.items(x)])
        return new
    return f(x)


def with_items(mapping, items):
    """A ModelOutput-like dataclass that is also a dict, rebuilt from its fields: its items are made x's (keys
    in x's order; an attribute set after __init__ is not a key). The native base's methods (dict,
    OrderedDict) skip the class's overrides (a ModelOutput refuses some)."""
    base = next(c for c in type(mapping).__mro__ if issubclass(c, dict) and not c.__flags__ & (1 << 9))
    base.clear(mapping)
    for k, v in items:
        base.__setitem__(mapping, k, v)
    return mapping


def is_dataclass_instance(x) -> bool:
    fields = getattr(type(x), "__dataclass_fields__", None)
    return fields is not None and not isinstance(x, type) and all(fd.init for fd in fields.values())


def _is_size(x) -> bool:
    """A torch.Size is a leaf unless it holds symbolic sizes (cache="symbolic values": `x.shape[1:]` passed to
    view): then it is a container, so its sizes are seen as inputs of the op and printed by name."""
    if not isinstance(x, torch.Size):
        return False
    return not any(isinstance(i, Symbolic) for i in x)

"""Traced values that escape into objects outliving the call, and objects returned by identity.

While tracing, user code runs over proxies, so what it stores into state that outlives the call (a global
list appended to, a dict a forward hook fills, an attribute of a config object, a list a @contextmanager
appends to) is a proxy. The interpreter reports each such object it changes (containers changed in place,
objects whose attributes are set); after tracing, every proxy reachable from them is an escape. The trace
returns those proxies' values as extra outputs and, once the computation has run, `Escapes.patch` puts the
real value eager would have stored in each place (the trace is single-use: its Python effects re-run on the
next call). Where the user's program raised, the values computed before the raise are put there.

Objects the function returns but did not create (`return t, LOG` with LOG a global list) are returned as
they are: `SameObject` marks them in the trace's output, printed as the object itself.
"""
from __future__ import annotations

import collections
import types

import torch

from ..core.proxies import NumberProxy, Proxy, Symbolic, TensorProxy
from ..core import tree as pytree
from ..core.trace import Rebuilt, SameObject

_LIMIT = 20000  # objects visited per walk: state reached from the written objects, not the whole program
_ATOMS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device, torch.Size, type,
          types.FunctionType, types.BuiltinFunctionType, types.ModuleType, torch.Tensor)


def is_traced(value) -> bool:
    return isinstance(value, (Proxy, NumberProxy, Symbolic))


def _walk(roots, visit) -> None:
    """Call visit(holder, key, value) for every item of the containers and attributes of the objects reachable
    from `roots`, depth first; `visit` returns whether to go into `value`."""
    seen, stack = set(), list(roots)
    while stack and len(seen) < _LIMIT:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _ATOMS) or is_traced(obj):
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            items = _listed(lambda: list(obj.items()))
        elif isinstance(obj, (list, tuple, collections.deque)):
            items = _listed(lambda: list(enumerate(obj)))
        elif isinstance(obj, (set, frozenset)):
            items = _listed(lambda: [(None, v) for v in list(obj)])
        elif isinstance(obj, torch.nn.Module) or hasattr(obj, "__dict__") and not isinstance(obj, type):
            try:
                items = _listed(lambda: list(vars(obj).items()))
            except TypeError:
                continue
        else:
            continue
        for key, value in items:
            if visit(obj, key, value):
                stack.append(value)


def _listed(read) -> list:
    """read() lists a container's items; a weakref callback the garbage collector runs while the list grows may
    change that container ("dictionary changed size during iteration", seen in the test suite): read again."""
    for _ in range(8):
        try:
            return read()
        except RuntimeError:
            continue
    return read()


def find(roots) -> list:
    """The traced values reachable from `roots`, each once, in the order found."""
    found, ids = [], set()

    def visit(holder, key, value):
        if is_traced(value):
            if id(value) not in ids:
                ids.add(id(value))
                found.append(value)
            return False
        return True

    _walk(roots, visit)
    return found


def replace(roots, real: dict) -> None:
    """Put `real[id(proxy)]` in every place holding one of those proxies (tuples are rebuilt in their holder)."""
    if not real:
        return
    rebuilt: dict = {}

    def fixed(value):
        if is_traced(value):
            return real.get(id(value), value)
        if type(value) is tuple and id(value) in rebuilt:
            return rebuilt[id(value)]
        return value

    def visit(holder, key, value):
        return not is_traced(value)

    # tuples first, innermost out: a tuple holding an escaped value becomes a new tuple of the real values
    tuples = []
    _walk(roots, lambda h, k, v: (tuples.append(v) if type(v) is tuple else None) or visit(h, k, v))
    for t in reversed(tuples):
        new = tuple(fixed(v) for v in t)
        if any(a is not b for a, b in zip(new, t)):
            rebuilt[id(t)] = new

    def put(holder, key, value):
        new = fixed(value)
        if new is not value:
            if isinstance(holder, (set, frozenset)):
                if isinstance(holder, set):
                    holder.discard(value)
                    holder.add(new)
            elif isinstance(holder, dict):
                dict.__setitem__(holder, key, new) if type(holder) is dict else holder.__setitem__(key, new)
            elif isinstance(holder, (list, collections.deque)):
                holder[key] = new
            elif not isinstance(holder, tuple):
                try:
                    vars(holder)[key] = new
                except TypeError:
                    pass
        return not is_traced(value)

    for root in roots:
        _walk([root], put)


class Escapes:
    """The escaped proxies of one trace, and the objects they are in."""

    def __init__(self, roots, proxies):
        self.roots = list(roots)
        self.proxies = list(proxies)
        self.known: dict = {}  # name -> real value, for escaped arguments and captured tensors (set by the front end)

    def traced_outputs(self) -> tuple:
        """What the trace must return beside the result: the escaped values that only the run computes."""
        return tuple(p for p in self.proxies if isinstance(p, (TensorProxy, Symbolic)))

    def patch(self, values) -> None:
        """After the computation: `values` are the real values of `traced_outputs()`, in order."""
        real = {id(p): v for p, v in zip(self.traced_outputs(), values)}
        for p in self.proxies:
            if id(p) not in real and isinstance(p, NumberProxy):
                real[id(p)] = p.value
        replace(self.roots, real)

    def patch_from(self, env: dict) -> None:
        """The user's program raised: the values computed before the raise, by proxy name (`env`), and the
        arguments' and captured tensors' own."""
        real = {}
        env = {**self.known, **env}
        for p in self.proxies:
            if getattr(p, "name", None) in env:
                real[id(p)] = env[p.name]
            elif isinstance(p, NumberProxy):
                real[id(p)] = p.value
        replace(self.roots, real)


def reachable_ids(roots, depth: int = 4) -> set:
    """ids of the objects reachable from `roots` through containers and attributes, `depth` steps at most."""
    ids, level = set(), list(roots)
    for _ in range(depth + 1):
        following = []
        for obj in level:
            if id(obj) in ids or isinstance(obj, _ATOMS) or is_traced(obj) or len(ids) > _LIMIT:
                continue
            ids.add(id(obj))
            if isinstance(obj, dict):
                following += list(obj.values())
            elif isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
                following += list(obj)
            elif hasattr(obj, "__dict__") and not isinstance(obj, type):
                try:
                    following += list(vars(obj).values())
                except TypeError:
                    pass
        level = following
    return ids


def returned_by_identity(out, pre_existing):
    """The output with every object the call did not create but found in the state it read (lists, dicts,
    sets, other objects; not tensors, numbers or tuples) marked as SameObject, so the computation returns it
    as it is."""
    def mark(value):
        t = type(value)
        if t is tuple or (isinstance(value, tuple) and not isinstance(value, torch.Size)):
            items = [mark(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            return tuple(items) if t is tuple else (t(*items) if hasattr(value, "_fields") else t(items))
        if isinstance(value, _ATOMS) or is_traced(value) or isinstance(value, (slice, type(Ellipsis))):
            return value
        if pre_existing(value):
            return SameObject(value)
        if t is list:
            return [mark(v) for v in value]
        if t is dict:
            return {k: mark(v) for k, v in value.items()}
        return value

    return mark(out)


class Rebuilder:
    """Objects the call made that are not containers the trace prints (a transformers DynamicCache, a user class
    instance), returned or stored outside the call, as Rebuilt values: class and attributes (tensors, numbers,
    containers, other such objects, objects returned by identity), made again by every call. One Rebuilder per
    trace, so an object both returned and stored (`self.cache = c; return c`) is one object on every call. An
    object whose structure a bare instance plus its attributes cannot give back (__slots__, its own __new__, a
    container subclass, a cycle) is left as it is (refused by the front end's output check)."""

    def __init__(self, made_by_call, pre_existing, inputs=None):
        self.made_by_call, self.pre_existing = made_by_call, pre_existing
        self.inputs = inputs or {}  # id(argument object) -> its OpaqueProxy (compiler/frontend/state_objects.py)
        self.memo: dict = {}  # id -> Rebuilt (one object reached twice stays one object)
        self._making: set = set()

    def __call__(self, value):
        if self.inputs:  # an argument object is the caller's object of each call
            value = pytree.tree_map(lambda v: self.inputs.get(id(v), v), value)
        return pytree.tree_map(self._leaf, returned_by_identity(value, self.pre_existing))

    def _leaf(self, value):
        if type(value) is SameObject or isinstance(value, _ATOMS) or is_traced(value):
            return value
        if id(value) in self.memo:
            return self.memo[id(value)]
        if not self.made_by_call(value):
            return SameObject(value) if self.pre_existing(value) or isinstance(value, torch.nn.Module) else value
        cls = type(value)
        holder = getattr(value, "__dict__", None)
        if not isinstance(holder, dict) or cls.__new__ is not object.__new__ or id(value) in self._making or \
                isinstance(value, (dict, list, tuple, set, frozenset, collections.deque, torch.nn.Module)):
            return value
        self._making.add(id(value))
        try:
            attrs = {k: self(v) for k, v in list(holder.items())}
        finally:
            self._making.discard(id(value))
        self.memo[id(value)] = node = Rebuilt(cls, attrs, len(self.memo))
        return node

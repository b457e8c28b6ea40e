"""Epilogue: state the traced function stores outside its result, replayed after the computation.

A forward that keeps tensors on its module (`self.buf = x.mean()`, a kv cache kept as an attribute,
`register_buffer` on the first call, running statistics assigned to a buffer, `self.cache[k] = v`) or in
a global/closure variable leaves proxies there while tracing. Those slots are put back as they were, and
for each one the trace ends with a store symbol that writes the computed (real) value into the same slot,
on every call, after the computation: the state a later call sees is eager's. The prologue then guards
the slot names of every written module dict as they were when tracing started, so a trace made while an
attribute or buffer did not exist yet is not reused once it does (a plain attribute also keeps its
identity guard, so reassigning it re-traces; a registered buffer is an input fetched on each call).

Python values a module's forward assigns (None, a number, a deleted attribute) are stored as well: a cached
trace cannot assume the slot still holds what its tracing call left there. Under data-dependent reads
(compiler/frontend/segments.py) each segment stores the slots it wrote, so a call raising in any segment has made
eager's stores so far.
"""
from __future__ import annotations

import collections
import threading
from contextlib import contextmanager

import torch

from ..core import tree as pytree
from ..core.context import MISSING as _MISSING, contents, current_state
from .hidden_inputs import write_slot
from ..core.proxies import OpaqueProxy, TensorProxy
from ..core.symbols import BoundSymbol, Symbol, Tag
from ..core.trace import SameObject
from .state_objects import InputAttr, print_store



class Slot:
    """Where a value is stored: a dict (module __dict__, _buffers, _parameters, globals) and key, a cell, or
    a module-held list/dict whose contents are replaced."""

    is_global = False  # a global or closure variable (not a module's)

    def __init__(self, kind: str, holder, key, label: str):
        self.kind, self.holder, self.key, self.label = kind, holder, key, label
        self.id = (id(holder), key)  # (the key of its write marks)

    def __repr__(self):
        return f"<slot {self.label}>"

    def read(self):
        """What it holds now (a copy of a list/dict's contents); `store(slot.read())` puts it back."""
        if self.kind == "cell":
            try:
                return self.holder.cell_contents
            except ValueError:
                return _MISSING
        if self.kind == "contents":
            return contents(self.holder)
        return self.holder.get(self.key, _MISSING)

    def store(self, value) -> None:
        state = current_state()
        if state is not None and getattr(_RETRACING, "on", False) and holds_proxy(value):
            # the store is an op of the trace being made (see stores_recorded)
            state.scopes[-1].append(BoundSymbol(STORE, (self, value), {}, None, location=state.current_location))
            return
        if self.kind == "cell":
            write_slot(self.holder, self.key, value, _MISSING)
        elif self.kind == "contents":
            if type(self.holder) is list:
                self.holder[:] = value
            else:
                self.holder.clear()
                self.holder.update(value)
        elif value is _MISSING:
            self.holder.pop(self.key, None)  # (deleted in the call)
        else:
            self.holder[self.key] = value


_RETRACING = threading.local()


@contextmanager
def stores_recorded():
    """While an execution trace's own computation is traced again (cache="symbolic values" with a fusing
    executor plans each call's sizes that way): the stores it makes with traced values are recorded as store
    ops of the new trace, not made (they would leave proxies in the user's state)."""
    before = getattr(_RETRACING, "on", False)
    _RETRACING.on = True
    try:
        yield
    finally:
        _RETRACING.on = before


def _print_store(bsym, trace):
    slot, value, *_ = bsym.args  # (an InputAttr's object is a third argument: passes and segments see it used)
    if isinstance(slot, InputAttr):  # an attribute of an argument object: that call's object
        return print_store(slot, None if value is _MISSING else trace.expr(value))
    if value is _MISSING:  # (a deleted name)
        return [f"{trace.const_expr(slot)}.store({trace.const_expr(_MISSING)})  # {slot.label}: deleted"]
    return [f"{trace.const_expr(slot)}.store({trace.expr(value)})  # {slot.label}"]


STORE = Symbol("epilogue.store", None, Tag.EFFECT, meta=lambda sym, a, k: None, printer=_print_store)


def _print_keys(bsym, trace):
    holder, keys, *also = bsym.args  # also: keys the trace's own stores leave (attributes it adds unread)
    if type(holder) is list:  # its keys are its indices (tuple(list) would compare the items)
        return [f"if len({trace.const_expr(holder)}) != {len(keys)}: return None"]
    if also:
        return [f"if tuple({trace.const_expr(holder)}) not in {(keys, *also)!r}: return None"]
    if not keys and type(holder) in (dict, collections.OrderedDict):  # (a module's hook dicts, ~150 of them in a
        return [f"if {trace.const_expr(holder)}: return None"]        # model's guards: ~4x cheaper than a tuple)
    return [f"if tuple({trace.const_expr(holder)}) != {keys!r}: return None"]


CHECK_KEYS = Symbol("guards.check_keys", None, Tag.EFFECT, meta=None, printer=_print_keys)


class StateWrites:
    """Snapshot before tracing; `take(...)` after it: restores every slot holding a traced value and
    returns the writes to replay."""

    def __init__(self, module, snapshot):
        self.snapshot = snapshot  # hidden_inputs.StateSnapshot: globals and cells the code names
        self.module_dicts = []  # (sub, label, store name, the dict, a copy of it)
        self.contents = []  # (label, list/dict held by a module attribute, a copy of it)
        self._module_dict_before = {}  # id(a module's dict) -> its copy
        self._watched = {}  # id(holder) -> key -> its Slot (for slots written without a change)
        self.owners = {}  # id(a module's __dict__) -> the module
        self.end_keys = None  # id(a module's dict) -> its keys as the call left them (set by the first `take`)
        for holder, name, _ in snapshot.values:
            self._watched[id(holder)] = lambda key, holder=holder: _global_slot(holder, key)
        if module is None:
            return
        for prefix, sub in module.named_modules(remove_duplicate=True):
            label = type(sub).__qualname__ + (f" ({prefix})" if prefix else "")
            for store in ("__dict__", "_buffers", "_parameters"):
                d = vars(sub) if store == "__dict__" else getattr(sub, store)
                self.module_dicts.append((sub, label, store, d, dict(d)))
                self._module_dict_before[id(d)] = self.module_dicts[-1][-1]
                self._watched[id(d)] = lambda key, d=d, label=label, store=store: _dict_slot(d, key, label, store)
                if store == "__dict__":
                    self.owners[id(d)] = sub
            for name, v in vars(sub).items():
                if not name.startswith("_") and type(v) in (list, dict):
                    self.contents.append((f"{label}.{name}", v, contents(v)))
                    self._watched[id(v)] = lambda key, v=v, c=self.contents[-1]: _contents_slot(v, c[0], c[2])

    def start(self) -> tuple:
        """What every watched slot held when tracing started (as `now()` gives it)."""
        return ([before for *_, before in self.module_dicts], [before for *_, before in self.contents],
                [self._global(before) for _, _, before in self.snapshot.values])

    def now(self) -> tuple:
        """What every watched slot holds now: copies, for `changes`."""
        return ([dict(d) for _, _, _, d, _ in self.module_dicts],
                [contents(h) for _, h, _ in self.contents],
                [self._global(self.snapshot._read(h, n)) for h, n, _ in self.snapshot.values])

    @staticmethod
    def _global(value):
        return _MISSING if value is _missing_of_snapshot() else value

    def changes(self, earlier: tuple, later: tuple) -> list:
        """(Slot, value in `later`, value in `earlier`) for every slot whose value differs (by identity)
        between two snapshots; a name not there has the value _MISSING. A global or closure variable only
        where it holds a traced value: writing one makes the trace single-use anyway, and its Python values
        stay as the call wrote them (storing them again would race with other threads' writes)."""
        out = []
        for (sub, label, store, d, _), a, b in zip(self.module_dicts, earlier[0], later[0]):
            if a.keys() == b.keys() and all(a[k] is b[k] for k in a):
                continue
            for name in [*b, *(k for k in a if k not in b)]:
                if a.get(name, _MISSING) is not b.get(name, _MISSING):
                    out.append((_dict_slot(d, name, label, store), b.get(name, _MISSING), a.get(name, _MISSING)))
        for (label, held, before), a, b in zip(self.contents, earlier[1], later[1]):
            if not _same_items(a, b):
                out.append((_contents_slot(held, label, before), b, a))
        for (holder, name, _), a, b in zip(self.snapshot.values, earlier[2], later[2]):
            if a is not b and holds_proxy(b):
                out.append((_global_slot(holder, name), b, a))
        return out

    def value_in(self, snapshot: tuple, slot: Slot):
        """What `slot` holds in a snapshot (`start()`, `now()`)."""
        if slot.kind == "contents":
            return next(v for (_, held, _), v in zip(self.contents, snapshot[1]) if held is slot.holder)
        if slot.is_global:
            return next(v for (holder, name, _), v in zip(self.snapshot.values, snapshot[2])
                        if holder is slot.holder and name == slot.key)
        return next(v for (*_, d, _), v in zip(self.module_dicts, snapshot[0]) if d is slot.holder).get(slot.key, _MISSING)

    def written(self, earlier: tuple, later: tuple, marks: dict, start: int = 0, end: int | None = None) -> list:
        """`changes`, and the slots written between trace positions start and end (`marks`) with the value
        they already held (`self.b = None` where b was None): a cached call may find another value there."""
        out = self.changes(earlier, later)
        seen = {slot.id for slot, _, _ in out}
        for key, at in marks.items():
            make = self._watched.get(key[0])
            if make is None or key in seen or not any(start <= p and (end is None or p < end) for p, _ in at):
                continue
            slot = make(key[1])
            value = slot.read()
            if (value is _MISSING and slot.kind == "dict") or (slot.is_global and not holds_proxy(value)) or \
                    (isinstance(value, (list, dict, set)) and slot.kind != "contents"):
                continue  # (a module attribute is marked in all its dicts; `self.lst += [...]` writes the same
            out.append((slot, value, value))  # list back: its contents are the slot, not the attribute)
        return out

    def settled(self, put_back: bool, marks: dict, taken, rebuild=None) -> tuple[list, list, list]:
        """After `take`: slots the call changed to a value that is not traced (None, a number, a deleted
        attribute, a tuple of those). The epilogue stores them too, so that a cached call leaves what eager
        leaves even where another call stored a tensor there; `put_back`: they are put back now, as traced
        values are (not when the call raised: eager keeps them). (writes, key guards, why the trace is
        single-use: a value a cached trace cannot rebuild; in a private `_name` it is only left as written, as
        modules keep caches there). `taken`: the writes `take` returned. `rebuild(value)`: an object the call made
        (a cache holding tensors) as a value every call makes again (compiler/frontend/escapes.Rebuilder), or
        None where it cannot be."""
        writes, guards, single_use = [], [], []
        done = {slot.id for slot, _ in taken}
        for slot, value, before in self.written(self.start(), self.now(), marks):
            if slot.id in done:
                continue
            if not _replayable(value, slot) and rebuild is not None and not slot.is_global:
                rebuilt = rebuild(value)
                value = value if rebuilt is None else rebuilt
            if not _replayable(value, slot):  # (kept as written)
                if slot.kind == "dict" and isinstance(slot.key, str) and slot.key.startswith("_"):
                    continue  # a module's private cache (RNNBase's _flat_weight_refs: weakrefs), rebuilt by its code
                single_use.append(f"stores a {type(value).__name__} in {slot.label}, which a cached trace cannot "
                                  "rebuild")
                continue
            if put_back:
                slot.store(before)
            writes.append((slot, value))
            guards += self._key_guard(slot)
        return writes, [] if single_use else guards, single_use

    def unread(self, writes, read_before_write) -> tuple[list, dict]:
        """The module attributes among `writes` that the call wrote before reading them (compiler/frontend/
        module_reads.py): their value before the call does not matter, so the prologue need not guard them.
        (those slots as (module, name), id(module dict) -> the keys it may also have: the call's own result,
        where every name it added or removed is such a slot)."""
        slots = [(self.owners[id(slot.holder)], slot.key) for slot, _ in writes
                 if slot.kind == "dict" and id(slot.holder) in self.owners
                 and not read_before_write(self.owners[id(slot.holder)], slot.key)]
        names = {(id(sub), key) for sub, key in slots}
        alternatives = {}
        for sub, label, store, d, before in self.module_dicts:
            after = (self.end_keys or {}).get(id(d))
            if store == "__dict__" and after is not None and after != tuple(before) and \
                    all((id(sub), k) in names for k in set(before).symmetric_difference(after)):
                alternatives[id(d)] = after
        return slots, alternatives

    def _key_guard(self, slot: Slot) -> list:
        """The prologue's guard on the names of the dict or list a written slot is in, as tracing found them."""
        if id(slot.holder) in self._module_dict_before:
            return [(slot.holder, tuple(self._module_dict_before[id(slot.holder)]))]
        if slot.kind == "contents":
            return [(slot.holder, _keys_of(slot.before))]
        return []

    def take(self, is_traced) -> tuple[list, list]:
        """(writes as (Slot, value), key guards as (dict, keys at the start)) of the slots now holding a
        traced value, each put back as it was. Made after the front end put proxies in place of parameters and
        buffers, so a slot still holding its proxy is unchanged."""
        writes, guards = [], []
        if self.end_keys is None:
            self.end_keys = {id(d): tuple(d) for *_, d, _ in self.module_dicts}
        for slot, value, before in self.changes(self.start(), self.now()):
            if is_traced(value):
                slot.store(before)
                writes.append((slot, value))
                guards += self._key_guard(slot)
        return writes, guards


def holds_proxy(value) -> bool:
    return any(isinstance(v, (TensorProxy, OpaqueProxy)) for v in pytree.tree_leaves(value))


def _dict_slot(d, name, label, store) -> Slot:
    return Slot("dict", d, name, f"{label}.{store}[{name!r}]")


def _contents_slot(held, label, before) -> Slot:
    slot = Slot("contents", held, None, label)
    slot.before = before  # (items there before the call are the same objects on a cached call)
    return slot


def _global_slot(holder, name) -> Slot:
    kind = "dict" if isinstance(holder, dict) else "cell"
    slot = Slot(kind, holder, name, f"{'global' if kind == 'dict' else 'closure variable'} {name!r}")
    slot.is_global = True
    return slot


def _keys_of(container) -> tuple:
    return tuple(range(len(container))) if type(container) is list else tuple(container)


def _missing_of_snapshot():
    from .hidden_inputs import _MISSING as missing

    return missing


def _same_items(a, b) -> bool:
    if type(a) is list:
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def append_stores(trace, writes, location=None) -> None:
    for slot, value in writes:
        args = (slot, value, slot.proxy) if isinstance(slot, InputAttr) else (slot, value)
        trace.bsyms.append(BoundSymbol(STORE, args, {}, None, location=location))


def replayable(value) -> bool:
    """A value a cached trace can store again in a slot of its own (compiler/frontend/state_objects.py)."""
    return _replayable(value, None)


def _replayable(value, slot) -> bool:
    """A value a cached trace can store again: a traced value, an immutable constant (the same on every
    call the trace's guards admit), a tuple/list/dict of those, an item a module-held list/dict had before
    the call, or no value (a deleted name). Not other objects, such as one made in the call."""
    if value is _MISSING:
        return slot is not None and slot.kind == "dict"
    before = pytree.tree_leaves(getattr(slot, "before", ()))
    return all(v is None or isinstance(v, (TensorProxy, OpaqueProxy, SameObject, *_CONSTANTS)) or
               any(v is b for b in before) for v in pytree.tree_leaves(value))


_CONSTANTS = (bool, int, float, complex, str, torch.dtype, torch.device, torch.Size)


def insert_stores(trace, writes, marks: dict, floor: int = 0, location=None) -> None:
    """Each store at the point its slot was written (`marks`), not before `floor` (the start of the final
    segment: earlier segments have run); a slot written several times gets a store at each write whose value
    is replayable, then its last value where it was last written. A module-held list/dict is a slot whose
    value is its contents, marked at each in-place change the interpreter reports (append, item store...);
    a change it does not report (`lst += [...]`) leaves the store at the end."""
    placed, defined = [], None
    for slot, value in writes:
        seen = [(max(at, floor), v) for at, v in marks.get(slot.id, [])]
        if seen and any(isinstance(v, pytree.RebuiltBase) for v in pytree.tree_leaves(value, rebuilt=True)):
            # an object the call made and then filled (a cache stored on self, then updated): stored once every
            # value in it is computed
            defined = defined if defined is not None else _defined_at(trace.bsyms)
            ready = max((defined.get(getattr(v, "name", None), 0) for v in pytree.tree_leaves(value)), default=0)
            seen[-1] = (max(seen[-1][0], ready), seen[-1][1])
        _place(placed, slot, seen, value, len(trace.bsyms), location, last_always=True)
    _insert(trace.bsyms, placed)


def _defined_at(bsyms) -> dict:
    """proxy name -> the trace position just after the op that makes it."""
    out = {}
    for i, bsym in enumerate(bsyms):
        for v in pytree.tree_leaves(bsym.output):
            if isinstance(getattr(v, "name", None), str):  # (tensors and symbolic numbers)
                out[v.name] = i + 1
    return out


def segment_stores(bsyms: list, writes, marks: dict, start: int, location=None) -> tuple[list, list]:
    """A segment that ends at a data-dependent read (trace positions start .. start + len(bsyms)) with the
    stores of the slots it changed (`writes`: their values at its end) at the points they were written, so
    a cached call that raises after a write and before the next read finds it done, as in eager. Values a
    cached trace cannot rebuild are left to the final segment. (the bsyms with stores, the slots stored)"""
    placed, stored = [], []
    end = start + len(bsyms)
    for slot, value in writes:
        seen = [(at - start, v) for at, v in marks.get(slot.id, []) if start <= at < end]
        if _place(placed, slot, seen, value, len(bsyms), location, last_always=False):
            stored.append(slot)
    out = list(bsyms)
    _insert(out, placed)
    return out, stored


def _place(placed: list, slot, seen: list, value, end: int, location, last_always: bool) -> bool:
    """Stores of `slot` at its writes `seen` ((position, value)): each earlier one that can be replayed,
    then `value` at the last write (or at `end`). Whether any store was placed."""
    count = len(placed)
    for at, earlier in seen[:-1]:
        if _replayable(earlier, slot):
            placed.append((at, BoundSymbol(STORE, (slot, earlier), {}, None, location=location)))
    if last_always or _replayable(value, slot):
        placed.append((seen[-1][0] if seen else end, BoundSymbol(STORE, (slot, value), {}, None, location=location)))
    return len(placed) > count


def _insert(bsyms: list, placed: list) -> None:
    order = sorted(range(len(placed)), key=lambda i: (placed[i][0], i), reverse=True)  # last first: the same
    for i in order:                                                                     # point keeps write order
        bsyms.insert(*placed[i])


def emit_guards(builder, guards, alternatives=None) -> None:
    """alternatives: id(dict) -> other keys it may have (StateWrites.unread)."""
    seen = set()
    for holder, keys in guards:
        if id(holder) not in seen:  # (one guard per dict or list, however many of its slots were written)
            seen.add(id(holder))
            also = (alternatives or {}).get(id(holder))
            builder._emit(CHECK_KEYS, holder, keys, *((also,) if also is not None and also != keys else ()))

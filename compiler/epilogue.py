"""Epilogue: state the traced function stores outside its result, replayed after the computation.

A forward that keeps tensors on its module (`self.buf = x.mean()`, a kv cache kept as an attribute,
`register_buffer` on the first call, running statistics assigned to a buffer, `self.cache[k] = v`) or in
a global/closure variable leaves proxies there while tracing. Those slots are put back as they were, and
for each one the trace ends with a store symbol that writes the computed (real) value into the same slot,
on every call, after the computation: the state a later call sees is eager's. The prologue then guards
the slot names of every written module dict as they were when tracing started, so a trace made while an
attribute or buffer did not exist yet is not reused once it does (a plain attribute also keeps its
identity guard, so reassigning it re-traces; a registered buffer is an input fetched on each call).
"""
from __future__ import annotations

from . import tree as pytree
from .hidden_inputs import write_slot
from .symbols import BoundSymbol, Symbol, Tag

_MISSING = object()


class Slot:
    """Where a value is stored: a dict (module __dict__, _buffers, _parameters, globals) and key, a cell, or
    a module-held list/dict whose contents are replaced."""

    def __init__(self, kind: str, holder, key, label: str):
        self.kind, self.holder, self.key, self.label = kind, holder, key, label

    def __repr__(self):
        return f"<slot {self.label}>"

    def store(self, value) -> None:
        if self.kind == "cell":
            write_slot(self.holder, self.key, value)
        elif self.kind == "contents":
            if type(self.holder) is list:
                self.holder[:] = value
            else:
                self.holder.clear()
                self.holder.update(value)
        elif value is _MISSING:
            self.holder.pop(self.key, None)
        else:
            self.holder[self.key] = value


def _print_store(bsym, trace):
    slot, value = bsym.args
    return [f"{trace.const_expr(slot)}.store({trace.expr(value)})  # {slot.label}"]


STORE = Symbol("epilogue.store", None, Tag.EFFECT, meta=lambda sym, a, k: None, printer=_print_store)


def _print_keys(bsym, trace):
    holder, keys = bsym.args
    if type(holder) is list:  # its keys are its indices (tuple(list) would compare the items)
        return [f"if len({trace.const_expr(holder)}) != {len(keys)}: return None"]
    return [f"if tuple({trace.const_expr(holder)}) != {keys!r}: return None"]


CHECK_KEYS = Symbol("guards.check_keys", None, Tag.EFFECT, meta=None, printer=_print_keys)


class StateWrites:
    """Snapshot before tracing; `take(...)` after it: restores every slot holding a traced value and
    returns the writes to replay."""

    def __init__(self, module, snapshot):
        self.snapshot = snapshot  # hidden_inputs.StateSnapshot: globals and cells the code names
        self.module_dicts = []  # (sub, label, store name, the dict, a copy of it)
        self.contents = []  # (label, list/dict held by a module attribute, a copy of it)
        if module is None:
            return
        for prefix, sub in module.named_modules(remove_duplicate=True):
            label = type(sub).__qualname__ + (f" ({prefix})" if prefix else "")
            for store in ("__dict__", "_buffers", "_parameters"):
                d = vars(sub) if store == "__dict__" else getattr(sub, store)
                self.module_dicts.append((sub, label, store, d, dict(d)))
            for name, v in vars(sub).items():
                if not name.startswith("_") and type(v) in (list, dict):
                    self.contents.append((f"{label}.{name}", v, list(v) if type(v) is list else dict(v)))

    def take(self, is_traced) -> tuple[list, list]:
        """(writes as (Slot, value), key guards as (dict, keys at the start)). Made after the front end put
        proxies in place of parameters and buffers, so a slot still holding its proxy is unchanged."""
        writes, guards = [], []
        for sub, label, store, d, before in self.module_dicts:
            changed = False
            for name in list(d):
                now = d[name]
                if before.get(name, _MISSING) is now or not is_traced(now):
                    continue
                writes.append((Slot("dict", d, name, f"{label}.{store}[{name!r}]"), now))
                changed = True
                if name in before:
                    d[name] = before[name]
                else:
                    del d[name]
            if changed:
                guards.append((d, tuple(before)))
        for label, held, before in self.contents:
            now = list(held) if type(held) is list else dict(held)
            if any(is_traced(v) for v in (now if type(held) is list else now.values())) and \
                    not _same_items(now, before):
                slot = Slot("contents", held, None, label)
                slot.before = before  # (items there before the call are the same objects on a cached call)
                writes.append((slot, now))
                Slot("contents", held, None, label).store(before)
                guards.append((held, tuple(range(len(before))) if type(held) is list else tuple(before)))
        for holder, name, before in self.snapshot.values:
            now = self.snapshot._read(holder, name)
            if now is not before and now is not _missing_of_snapshot() and is_traced(now):
                kind = "dict" if isinstance(holder, dict) else "cell"
                writes.append((Slot(kind, holder, name, f"{'global' if kind == 'dict' else 'closure variable'} "
                                                        f"{name!r}"), now))
                write_slot(holder, name, before, _missing_of_snapshot())
        return writes, guards


def _missing_of_snapshot():
    from .hidden_inputs import _MISSING as missing

    return missing


def _same_items(a, b) -> bool:
    if type(a) is list:
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def append_stores(trace, writes, location=None) -> None:
    for slot, value in writes:
        trace.bsyms.append(BoundSymbol(STORE, (slot, value), {}, None, location=location))


def mark_write(holder, key, value=_MISSING) -> None:
    """While tracing: `holder[key]` (a module's attribute dicts, globals, a cell) is written now, with
    `value` when known; its stores go to these points of the trace, so an op that raises later in a cached
    call finds them done, as in eager."""
    from .trace import current_state

    state = current_state()
    if state is not None:
        state.write_marks.setdefault((id(holder), key), []).append((len(state.trace.bsyms), value))


def mark_module_attribute(module, name, value=_MISSING) -> None:
    for d in (vars(module), module._buffers, module._parameters):  # (Module.__setattr__ picks one)
        mark_write(d, name, value)


def mark_container_write(container) -> None:
    """While tracing: a module-held list/dict changed in place (an interpreter CONTAINER_WRITE event; the
    interpreting front end watches these containers): its contents store goes here, with its contents now."""
    from .trace import current_state

    state = current_state()
    if state is not None and id(container) in state.tracked_containers:
        mark_write(container, None, list(container) if type(container) is list else dict(container))


def _replayable(value, before=()) -> bool:
    """An earlier write of a slot that is written again later in the call: stored at its own point when its
    value is a traced value or an immutable constant (the same on every call). Other Python objects (a list
    made in the call) cannot be replayed by a cached trace; for those only the last write is stored."""
    from .proxies import OpaqueProxy, TensorProxy

    if value is _MISSING:
        return False
    leaves = pytree.tree_leaves(value)
    return all(v is None or isinstance(v, (TensorProxy, OpaqueProxy, bool, int, float, complex, str))
               or any(v is b for b in before) for v in leaves)


def insert_stores(trace, writes, marks: dict, floor: int = 0, location=None) -> None:
    """Each store at the point its slot was written (`marks`), not before `floor` (the start of the final
    segment: earlier segments have run); a slot written several times gets a store at each write whose value
    is replayable, then its last value where it was last written. A module-held list/dict is a slot whose
    value is its contents, marked at each in-place change the interpreter reports (append, item store...);
    a change it does not report (`lst += [...]`) leaves the store at the end."""
    placed = []
    for slot, value in writes:
        seen = marks.get((id(slot.holder), slot.key), [])
        before = pytree.tree_leaves(getattr(slot, "before", ()))
        for at, earlier in seen[:-1]:
            if _replayable(earlier, before):
                placed.append((max(at, floor), BoundSymbol(STORE, (slot, earlier), {}, None, location=location)))
        at = seen[-1][0] if seen else len(trace.bsyms)
        placed.append((max(at, floor), BoundSymbol(STORE, (slot, value), {}, None, location=location)))
    order = sorted(range(len(placed)), key=lambda i: (placed[i][0], i), reverse=True)  # last first: same point
    for i in order:                                                                     # keeps the write order
        trace.bsyms.insert(*placed[i])


def emit_guards(builder, guards) -> None:
    for holder, keys in guards:
        builder._emit(CHECK_KEYS, holder, keys)


def holds_traced(value, proxy_types) -> bool:
    return any(isinstance(v, proxy_types) for v in pytree.tree_leaves(value))

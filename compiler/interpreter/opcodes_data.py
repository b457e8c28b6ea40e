"""Handlers for loads, stores, deletes, operators, container building, unpacking and formatting."""
from __future__ import annotations

import operator
import types

from . import dunders
from . import events as ev
from . import provenance as pv
from .decode import VERSION
from .frame import NULL
from .native import unpacker
from .registry import handles

_V313 = VERSION >= (3, 13)


def push_plain_callable(frame, value, prov):
    """Push a callable with its NULL partner in the version's order (3.11/3.12: NULL first)."""
    if _V313:
        frame.push(value, prov)
        frame.push(NULL, None)
    else:
        frame.push(NULL, None)
        frame.push(value, prov)


def unbound_local(name):
    return UnboundLocalError(f"cannot access local variable '{name}' where it is not associated with a value")


def unbound_deref(frame, index):
    name = frame.info.names[index]
    if index >= frame.info.first_free:
        return NameError(f"cannot access free variable '{name}' where it is not associated with a value in "
                         "enclosing scope")
    return unbound_local(name)


# ----- stack and constants -----
@handles("NOP", "RESUME", "CACHE", "EXTENDED_ARG")
def nop(interp, frame, instr):
    pass


@handles("PRECALL", until=(3, 11))
def precall(interp, frame, instr):
    pass


@handles("POP_TOP")
def pop_top(interp, frame, instr):
    frame.stack.pop()
    frame.pstack.pop()


@handles("PUSH_NULL")
def push_null(interp, frame, instr):
    frame.push(NULL, None)


@handles("COPY")
def copy(interp, frame, instr):
    n = instr.arg
    frame.push(frame.stack[-n], frame.pstack[-n])


@handles("SWAP")
def swap(interp, frame, instr):
    s, p, n = frame.stack, frame.pstack, instr.arg
    s[-1], s[-n] = s[-n], s[-1]
    p[-1], p[-n] = p[-n], p[-1]


@handles("LOAD_CONST")
def load_const(interp, frame, instr):
    provs = frame.info.const_provs
    prov = provs.get(instr.arg)
    if prov is None:
        prov = provs[instr.arg] = pv.Constant(instr.argval)
    frame.stack.append(instr.argval)
    frame.pstack.append(prov)


@handles("RETURN_CONST", since=(3, 12))
def return_const(interp, frame, instr):
    from .registry import Outcome
    return Outcome(Outcome.RETURN, instr.argval, pv.Constant(instr.argval))


@handles("RETURN_VALUE")
def return_value(interp, frame, instr):
    from .registry import Outcome
    value, prov = frame.popp()
    return Outcome(Outcome.RETURN, value, prov)


# ----- fast locals -----
@handles("LOAD_FAST")
@handles("LOAD_FAST_CHECK", since=(3, 12))
@handles("LOAD_CLOSURE", until=(3, 12))
def load_fast(interp, frame, instr):
    value = frame.fast[instr.arg]
    if value is NULL:
        raise unbound_local(frame.info.names[instr.arg])
    frame.stack.append(value)
    frame.pstack.append(frame.pfast[instr.arg])


@handles("LOAD_FAST_AND_CLEAR", since=(3, 12))
def load_fast_and_clear(interp, frame, instr):
    i = instr.arg
    frame.push(frame.fast[i], frame.pfast[i])  # may push NULL: a comprehension saves an unbound outer name
    frame.fast[i] = NULL
    frame.pfast[i] = None


@handles("LOAD_FAST_LOAD_FAST", since=(3, 13))
def load_fast_load_fast(interp, frame, instr):
    for i in (instr.arg >> 4, instr.arg & 15):
        value = frame.fast[i]
        if value is NULL:
            raise unbound_local(frame.info.names[i])
        frame.push(value, frame.pfast[i])


@handles("STORE_FAST")
def store_fast(interp, frame, instr):
    i = instr.arg
    frame.fast[i] = frame.stack.pop()
    frame.pfast[i] = frame.pstack.pop()


@handles("STORE_FAST_LOAD_FAST", since=(3, 13))
def store_fast_load_fast(interp, frame, instr):
    store, load = instr.arg >> 4, instr.arg & 15
    frame.fast[store], frame.pfast[store] = frame.popp()
    value = frame.fast[load]
    if value is NULL:
        raise unbound_local(frame.info.names[load])
    frame.push(value, frame.pfast[load])


@handles("STORE_FAST_STORE_FAST", since=(3, 13))
def store_fast_store_fast(interp, frame, instr):
    for i in (instr.arg >> 4, instr.arg & 15):
        frame.fast[i], frame.pfast[i] = frame.popp()


@handles("DELETE_FAST")
def delete_fast(interp, frame, instr):
    if frame.fast[instr.arg] is NULL:
        raise unbound_local(frame.info.names[instr.arg])
    frame.fast[instr.arg] = NULL


# ----- cells -----
@handles("MAKE_CELL")
def make_cell(interp, frame, instr):
    i = instr.arg
    value = frame.fast[i]
    cell = types.CellType() if value is NULL else types.CellType(value)
    interp.internal_cells[id(cell)] = cell
    if value is not NULL:
        interp.cell_provs[id(cell)] = (cell, frame.pfast[i])
    frame.fast[i] = cell


@handles("COPY_FREE_VARS")
def copy_free_vars(interp, frame, instr):
    closure = frame.fn.__closure__
    n = instr.arg
    start = frame.info.nlocals_plus - n
    frame.fast[start:] = closure[-n:] if n else []


def _cell_prov(interp, frame, index, cell):
    known = interp.cell_provs.get(id(cell))
    if known is not None and known[0] is cell:
        return known[1]
    return pv.Closure(frame.info.names[index], frame.code.co_qualname, id(cell) in interp.internal_cells)


@handles("LOAD_DEREF")
def load_deref(interp, frame, instr):
    i = instr.arg
    cell = frame.fast[i]
    try:
        value = cell.cell_contents
    except ValueError:
        value = NULL
    if value is NULL:  # raised outside the except block so the error has no __context__, as natively
        raise unbound_deref(frame, i)
    prov = _cell_prov(interp, frame, i, cell)
    if i >= frame.info.first_free and frame.info.names[i] != "__class__":  # zero-arg super()'s implicit cell
        interp.emit(ev.CLOSURE_READ, frame.info.names[i], frame, value, prov,
                    internal=id(cell) in interp.internal_cells, holder=cell)
    frame.push(value, prov)


@handles("STORE_DEREF")
def store_deref(interp, frame, instr):
    i = instr.arg
    cell = frame.fast[i]
    value, prov = frame.popp()
    previous = _cell_value(cell)
    if i >= frame.info.first_free and id(cell) not in interp.internal_cells:
        interp.before_change(frame, None)
    cell.cell_contents = value
    interp.cell_provs[id(cell)] = (cell, prov)
    if i >= frame.info.first_free:
        interp.emit(ev.NONLOCAL_WRITE, frame.info.names[i], frame, value, prov,
                    internal=id(cell) in interp.internal_cells, holder=cell, previous=previous)


@handles("DELETE_DEREF")
def delete_deref(interp, frame, instr):
    i = instr.arg
    cell = frame.fast[i]
    previous = _cell_value(cell)
    if previous is ABSENT:  # raised outside any except block, so the error has no __context__, as natively
        raise unbound_deref(frame, i)
    del cell.cell_contents
    if i >= frame.info.first_free:
        interp.emit(ev.NONLOCAL_DELETE, frame.info.names[i], frame, internal=id(cell) in interp.internal_cells,
                    holder=cell, previous=previous)


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return ABSENT


# ----- globals -----
# What a write event's details["previous"] holds when the global or cell had no value before.
ABSENT = object()


def _load_global(interp, frame, name):
    value = frame.globals.get(name, ABSENT)
    if value is not ABSENT:
        prov = pv.Global(name, frame.globals.get("__name__"), frame.code.co_qualname)
        interp.emit(ev.GLOBAL_READ, name, frame, value, prov, holder=frame.globals)
        return value, prov
    value = frame.builtins.get(name, ABSENT)
    if value is ABSENT:
        raise NameError(f"name '{name}' is not defined", name=name)
    return value, pv.Builtin(name)


@handles("LOAD_GLOBAL")
def load_global(interp, frame, instr):
    value, prov = _load_global(interp, frame, instr.argval)
    if instr.arg & 1:
        push_plain_callable(frame, value, prov)
    else:
        frame.push(value, prov)


@handles("STORE_GLOBAL")
def store_global(interp, frame, instr):
    value, prov = frame.popp()
    previous = frame.globals.get(instr.argval, ABSENT)
    interp.before_change(frame, None)
    frame.globals[instr.argval] = value
    interp.emit(ev.GLOBAL_WRITE, instr.argval, frame, value, prov, holder=frame.globals, previous=previous)


@handles("DELETE_GLOBAL")
def delete_global(interp, frame, instr):
    name = instr.argval
    if name not in frame.globals:
        raise NameError(f"name '{name}' is not defined", name=name)
    interp.before_change(frame, None)
    previous = frame.globals.pop(name)
    interp.emit(ev.GLOBAL_DELETE, name, frame, holder=frame.globals, previous=previous)


# ----- attributes and items -----
@handles("LOAD_ATTR")
def load_attr(interp, frame, instr):
    obj, prov = frame.popp()
    name = instr.argval
    if VERSION >= (3, 12) and instr.arg & 1:
        _load_method(interp, frame, obj, prov, name)
        return
    frame.push(*interp.load_attr(frame, obj, name, prov))


def _load_method(interp, frame, obj, prov, name):
    value, vprov = interp.load_attr(frame, obj, name, prov)
    if type(value) is types.MethodType and value.__self__ is obj and type(value.__func__) is types.FunctionType:
        frame.push(value.__func__, vprov)  # keep self's own provenance for the call
        frame.push(obj, prov)
    else:
        push_plain_callable(frame, value, vprov)


@handles("LOAD_METHOD", until=(3, 11))
def load_method(interp, frame, instr):
    obj, prov = frame.popp()
    _load_method(interp, frame, obj, prov, instr.argval)


@handles("STORE_ATTR")
def store_attr(interp, frame, instr):
    obj = frame.pop()
    value, prov = frame.popp()
    interp.attribute_changed(frame, obj, instr.argval)
    kind = type(obj)
    if kind.__setattr__ is object.__setattr__ and kind.__flags__ & dunders._HEAPTYPE:
        desc = dunders.lookup(kind, instr.argval)
        if type(desc) is property and type(desc.fset) is types.FunctionType:  # a setter written in Python
            interp.call_function(desc.fset, (obj, value), {}, (None, prov))
            return
    replacement = interp.lookasides and interp.user_lookaside(setattr)
    if replacement:  # the embedder may refuse (or record) writes to some objects' attributes
        interp._call_user_lookaside(replacement, (obj, instr.argval, value), {}, (pv.UNKNOWN, pv.UNKNOWN, prov), {})
        return
    setattr(obj, instr.argval, value)


@handles("DELETE_ATTR")
def delete_attr(interp, frame, instr):
    obj = frame.pop()
    interp.attribute_changed(frame, obj, instr.argval)
    replacement = interp.lookasides and interp.user_lookaside(delattr)
    if replacement:  # (as for STORE_ATTR: the embedder may record deletions)
        interp._call_user_lookaside(replacement, (obj, instr.argval), {}, (pv.UNKNOWN, pv.UNKNOWN), {})
        return
    delattr(obj, instr.argval)


@handles("BINARY_SUBSCR")
def binary_subscr(interp, frame, instr):
    key, pkey = frame.popp()
    container, pcont = frame.popp()
    replacement = interp.lookasides and interp.user_lookaside(operator.getitem)
    if replacement:
        frame.push(*interp._call_user_lookaside(replacement, (container, key), {}, (pcont, pkey), {}))
        return
    prov = pv.Item(pcont, key) if isinstance(key, (str, int)) else pv.Computed("subscript", (pcont, pkey))
    method = dunders.python_method(type(container), "__getitem__")
    if method is not None and not isinstance(container, type):
        frame.push(interp.call_function(method, (container, key), {}, (pcont, pkey))[0], prov)
        return
    if interp.native_args is not None:
        (container, key), _ = interp.native_args(operator.getitem, (container, key), {})
    frame.push(container[key], prov)


@handles("STORE_SUBSCR")
def store_subscr(interp, frame, instr):
    key, pkey = frame.popp()
    container, pcont = frame.popp()
    value, pvalue = frame.popp()
    replacement = interp.lookasides and interp.user_lookaside(operator.setitem)
    if replacement:
        interp._call_user_lookaside(replacement, (container, key, value), {}, (pcont, pkey, pvalue), {})
        return
    method = dunders.python_method(type(container), "__setitem__")
    if method is not None:
        interp.call_function(method, (container, key, value), {}, (pcont, pkey, pvalue))
        return
    if interp.native_args is not None:
        (container, key, value), _ = interp.native_args(operator.setitem, (container, key, value), {})
    interp.before_change(frame, container)
    container[key] = value
    interp.container_changed(frame, "__setitem__", container)


@handles("DELETE_SUBSCR")
def delete_subscr(interp, frame, instr):
    key = frame.pop()
    container = frame.pop()
    method = dunders.python_method(type(container), "__delitem__")
    if method is not None:
        interp.call_function(method, (container, key), {}, ())
        return
    if interp.native_args is not None:
        (container, key), _ = interp.native_args(operator.delitem, (container, key), {})
    interp.before_change(frame, container)
    del container[key]
    interp.container_changed(frame, "__delitem__", container)


@handles("BINARY_SLICE", since=(3, 12))
def binary_slice(interp, frame, instr):
    stop = frame.pop()
    start = frame.pop()
    container, prov = frame.popp()
    if interp.native_args is not None:
        (container, key), _ = interp.native_args(operator.getitem, (container, slice(start, stop)), {})
        start, stop = key.start, key.stop
    frame.push(container[start:stop], pv.Computed("slice", (prov,)))


@handles("STORE_SLICE", since=(3, 12))
def store_slice(interp, frame, instr):
    stop = frame.pop()
    start = frame.pop()
    container = frame.pop()
    value = frame.pop()
    if interp.native_args is not None:
        (container, key, value), _ = interp.native_args(operator.setitem, (container, slice(start, stop), value), {})
        start, stop = key.start, key.stop
    interp.before_change(frame, container)
    container[start:stop] = value
    interp.container_changed(frame, "__setitem__", container)


@handles("BUILD_SLICE")
def build_slice(interp, frame, instr):
    values, provs = frame.popn(instr.arg)
    frame.push(slice(*values), pv.Computed("slice", tuple(provs)))


# ----- operators -----
_BINARY = [operator.add, operator.and_, operator.floordiv, operator.lshift, operator.matmul, operator.mul,
           operator.mod, operator.or_, operator.pow, operator.rshift, operator.sub, operator.truediv, operator.xor,
           operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift, operator.imatmul, operator.imul,
           operator.imod, operator.ior, operator.ipow, operator.irshift, operator.isub, operator.itruediv,
           operator.ixor]


_FIRST_INPLACE = 13  # BINARY_OP's arg for += (the in-place forms follow the plain ones)

_UNARY_METHODS = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__"}


def _apply(interp, frame, fn, args, provs, label):
    replacement = interp.lookasides and interp.user_lookaside(fn)
    if replacement:
        frame.push(*interp._call_user_lookaside(replacement, args, {}, provs, {}))
        return
    special = _UNARY_METHODS.get(fn)
    method = special and dunders.python_method(type(args[0]), special)
    if method is not None:
        value, _ = interp.call_function(method, args, {}, provs)
        frame.push(value, pv.Computed(label, tuple(provs)))
    else:
        if interp.native_args is not None:
            args, _ = interp.native_args(fn, args, {})
        frame.push(fn(*args), pv.Computed(label, tuple(provs)))


@handles("BINARY_OP")
def binary_op(interp, frame, instr):
    stack, pstack = frame.stack, frame.pstack
    b = stack.pop()
    a = stack[-1]
    fn = _BINARY[instr.arg]
    if interp.lookasides and interp.user_lookaside(fn):
        pb = pstack.pop()
        stack.pop()
        _apply(interp, frame, fn, (a, b), (pstack.pop(), pb), instr.argrepr)
        return
    if (type(a).__flags__ | type(b).__flags__) & dunders._HEAPTYPE and dunders.wants_binary(a, b, instr.arg):
        pb = pstack.pop()
        stack.pop()
        frame.push(*dunders.binary(interp, frame, a, b, pstack.pop(), pb, instr.arg))
        return
    if interp.native_args is not None:
        (a, b), _ = interp.native_args(fn, (a, b), {})
    if instr.arg >= _FIRST_INPLACE and interp.before_effect is not None and interp.is_container(a):
        interp.before_change(frame, a)  # lst += [...]: about to change it
    stack[-1] = result = fn(a, b)  # (if this raises, the unwinder discards the stack anyway)
    if result is a and instr.arg >= _FIRST_INPLACE:  # lst += [...], d |= {...}: changed in place
        interp.container_changed(frame, f"__{_BINARY[instr.arg].__name__}__", a)
    elif result is not a and result is not b:
        interp.note_if_unshared(result, 2)  # (the stack and `result`)
    pb = pstack.pop()
    pstack[-1] = pv.Computed(instr.argrepr, (pstack[-1], pb))


@handles("UNARY_NEGATIVE")
def unary_negative(interp, frame, instr):
    a, p = frame.popp()
    _apply(interp, frame, operator.neg, (a,), (p,), "-")


@handles("UNARY_POSITIVE", until=(3, 11))
def unary_positive(interp, frame, instr):
    a, p = frame.popp()
    _apply(interp, frame, operator.pos, (a,), (p,), "+")


@handles("UNARY_INVERT")
def unary_invert(interp, frame, instr):
    a, p = frame.popp()
    _apply(interp, frame, operator.invert, (a,), (p,), "~")


@handles("UNARY_NOT")
def unary_not(interp, frame, instr):
    a, p = frame.popp()
    frame.push(not a, pv.Computed("not", (p,)))


@handles("TO_BOOL", since=(3, 13))
def to_bool(interp, frame, instr):
    a, p = frame.popp()
    frame.push(bool(a), pv.Computed("bool", (p,)))


_COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
            ">=": operator.ge}


@handles("COMPARE_OP")
def compare_op(interp, frame, instr):
    b, pb = frame.popp()
    a, pa = frame.popp()
    fn = _COMPARE[instr.argval]
    if not (interp.lookasides and interp.user_lookaside(fn)) and dunders.wants_compare(a, b, instr.argval):
        frame.push(*dunders.compare(interp, frame, a, b, pa, pb, instr.argval))
    else:
        _apply(interp, frame, fn, (a, b), (pa, pb), instr.argval)
    if _V313 and instr.arg & 16:  # the comparison result is coerced to bool in the same instruction
        frame.stack[-1] = bool(frame.stack[-1])


@handles("IS_OP")
def is_op(interp, frame, instr):
    b, pb = frame.popp()
    a, pa = frame.popp()
    frame.push((a is not b) if instr.arg else (a is b), pv.Computed("is", (pa, pb)))


@handles("CONTAINS_OP")
def contains_op(interp, frame, instr):
    b, pb = frame.popp()
    a, pa = frame.popp()
    method = dunders.python_method(type(b), "__contains__")
    if method is not None:
        result = bool(interp.call_function(method, (b, a), {}, (pb, pa))[0])
    else:
        result = a in b
    frame.push(not result if instr.arg else result, pv.Computed("in", (pa, pb)))


# ----- building containers -----
@handles("BUILD_TUPLE")
def build_tuple(interp, frame, instr):
    values, provs = frame.popn(instr.arg)
    frame.push(tuple(values), pv.Computed("tuple", tuple(provs)))


@handles("BUILD_LIST")
def build_list(interp, frame, instr):
    values, provs = frame.popn(instr.arg)
    frame.push(interp.note_fresh(values), pv.Computed("list", tuple(provs)))


@handles("BUILD_SET")
def build_set(interp, frame, instr):
    values, provs = frame.popn(instr.arg)
    frame.push(interp.note_fresh(set(values)), pv.Computed("set", tuple(provs)))


@handles("BUILD_MAP")
def build_map(interp, frame, instr):
    values, provs = frame.popn(2 * instr.arg)
    result = {}
    for i in range(0, len(values), 2):
        result[values[i]] = values[i + 1]
    frame.push(interp.note_fresh(result), pv.Computed("dict", tuple(provs)))


@handles("BUILD_CONST_KEY_MAP")
def build_const_key_map(interp, frame, instr):
    keys = frame.pop()
    values, provs = frame.popn(instr.arg)
    frame.push(interp.note_fresh(dict(zip(keys, values))), pv.Computed("dict", tuple(provs)))


@handles("BUILD_STRING")
def build_string(interp, frame, instr):
    values, provs = frame.popn(instr.arg)
    frame.push("".join(values), pv.Computed("f-string", tuple(provs)))


@handles("LIST_APPEND")
def list_append(interp, frame, instr):
    value = frame.pop()
    frame.stack[-instr.arg].append(value)


@handles("SET_ADD")
def set_add(interp, frame, instr):
    value = frame.pop()
    frame.stack[-instr.arg].add(value)


@handles("MAP_ADD")
def map_add(interp, frame, instr):
    value = frame.pop()
    key = frame.pop()
    frame.stack[-instr.arg][key] = value


def _is_iterable(obj):
    kind = type(obj)
    return hasattr(kind, "__iter__") or hasattr(kind, "__getitem__")


@handles("LIST_EXTEND")
def list_extend(interp, frame, instr):
    seq = frame.pop()
    if not _is_iterable(seq):
        raise TypeError(f"Value after * must be an iterable, not {type(seq).__name__}")
    frame.stack[-instr.arg].extend(seq)


@handles("SET_UPDATE")
def set_update(interp, frame, instr):
    seq = frame.pop()
    frame.stack[-instr.arg].update(seq)


@handles("DICT_UPDATE")
def dict_update(interp, frame, instr):
    update = frame.pop()
    if not hasattr(type(update), "keys"):
        raise TypeError(f"'{type(update).__name__}' object is not a mapping")
    frame.stack[-instr.arg].update(update)


@handles("DICT_MERGE")
def dict_merge(interp, frame, instr):
    from .native import function_str
    update = frame.pop()
    target = frame.stack[-instr.arg]
    callee = frame.stack[-instr.arg - (3 if _V313 else 2)]
    if not hasattr(type(update), "keys"):
        raise TypeError(f"{function_str(callee)} argument after ** must be a mapping, not {type(update).__name__}")
    for key in update.keys():
        if key in target:
            raise TypeError(f"{function_str(callee)} got multiple values for keyword argument '{key}'")
        target[key] = update[key]


@handles("LIST_TO_TUPLE", until=(3, 11))
def list_to_tuple(interp, frame, instr):
    value, prov = frame.popp()
    frame.push(tuple(value), prov)


# ----- unpacking -----
@handles("UNPACK_SEQUENCE")
def unpack_sequence(interp, frame, instr):
    seq, prov = frame.popp()
    values = unpacker(instr.arg, None)(seq)
    for i in range(len(values) - 1, -1, -1):
        frame.push(values[i], pv.Item(prov, i))


@handles("UNPACK_EX")
def unpack_ex(interp, frame, instr):
    seq, prov = frame.popp()
    before, after = instr.arg & 0xFF, instr.arg >> 8
    values = unpacker(before, after)(seq)
    for i in range(len(values) - 1, -1, -1):
        frame.push(values[i], pv.Computed("starred unpack", (prov,)) if i == before else pv.Item(prov, i))


# ----- formatting -----
_CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}


@handles("FORMAT_VALUE", until=(3, 12))
def format_value(interp, frame, instr):
    spec = frame.pop() if instr.arg & 4 else ""
    value, prov = frame.popp()
    convert = _CONVERSIONS[instr.arg & 3]
    if convert is not None:
        value = convert(value)
    frame.push(format(value, spec), pv.Computed("format", (prov,)))


@handles("CONVERT_VALUE", since=(3, 13))
def convert_value(interp, frame, instr):
    value, prov = frame.popp()
    frame.push(_CONVERSIONS[instr.arg](value), pv.Computed("convert", (prov,)))


@handles("FORMAT_SIMPLE", since=(3, 13))
def format_simple(interp, frame, instr):
    value, prov = frame.popp()
    frame.push(value if type(value) is str else format(value), pv.Computed("format", (prov,)))


@handles("FORMAT_WITH_SPEC", since=(3, 13))
def format_with_spec(interp, frame, instr):
    spec = frame.pop()
    value, prov = frame.popp()
    frame.push(format(value, spec), pv.Computed("format", (prov,)))

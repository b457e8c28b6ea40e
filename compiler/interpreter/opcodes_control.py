"""Handlers for jumps, loops, exceptions, `with`, generators and `match`."""
from __future__ import annotations

from . import dunders
from . import provenance as pv
from .decode import VERSION
from .interpreter import outside_generator
from .registry import Outcome, handles

_EXHAUSTED = object()  # 3.12+: FOR_ITER pushes a dummy for END_FOR to pop, as dis.stack_effect models


def _jump(frame, instr):
    frame.ip = frame.info.index_of[instr.argval]


@handles("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def jump(interp, frame, instr):
    _jump(frame, instr)


@handles("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", until=(3, 11))
@handles("POP_JUMP_IF_TRUE", since=(3, 12))
def pop_jump_if_true(interp, frame, instr):
    frame.pstack.pop()
    if frame.stack.pop():
        _jump(frame, instr)


@handles("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE", until=(3, 11))
@handles("POP_JUMP_IF_FALSE", since=(3, 12))
def pop_jump_if_false(interp, frame, instr):
    frame.pstack.pop()
    if not frame.stack.pop():
        _jump(frame, instr)


@handles("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE", until=(3, 11))
@handles("POP_JUMP_IF_NONE", since=(3, 12))
def pop_jump_if_none(interp, frame, instr):
    if frame.pop() is None:
        _jump(frame, instr)


@handles("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", until=(3, 11))
@handles("POP_JUMP_IF_NOT_NONE", since=(3, 12))
def pop_jump_if_not_none(interp, frame, instr):
    if frame.pop() is not None:
        _jump(frame, instr)


@handles("JUMP_IF_TRUE_OR_POP", until=(3, 11))
def jump_if_true_or_pop(interp, frame, instr):
    if frame.stack[-1]:
        _jump(frame, instr)
    else:
        frame.pop()


@handles("JUMP_IF_FALSE_OR_POP", until=(3, 11))
def jump_if_false_or_pop(interp, frame, instr):
    if not frame.stack[-1]:
        _jump(frame, instr)
    else:
        frame.pop()


# ----- iteration -----
@handles("GET_ITER")
def get_iter(interp, frame, instr):
    value, prov = frame.popp()
    method = dunders.python_method(type(value), "__iter__")
    if method is None:
        frame.push(iter(value), pv.Computed("iter", (prov,)))
        return
    iterator, _ = interp.call_function(method, (value,), {}, (prov,))
    if not hasattr(type(iterator), "__next__"):
        raise TypeError(f"iter() returned non-iterator of type '{type(iterator).__name__}'")
    frame.push(iterator, pv.Computed("iter", (prov,)))


@handles("FOR_ITER")
def for_iter(interp, frame, instr):
    iterator = frame.stack[-1]
    method = dunders.python_method(type(iterator), "__next__")
    try:
        if method is not None:
            value = interp.call_function(method, (iterator,), {}, ())[0]
        elif outside_generator(iterator):  # a generator made outside the run: its code runs natively, an effect
            value = interp.advance_outside_generator(frame, next, (iterator,), {})[0]
        else:
            value = next(iterator)
    except StopIteration:
        if VERSION >= (3, 12):
            frame.push(_EXHAUSTED, None)
        else:
            frame.pop()
        _jump(frame, instr)
        return
    prov = frame.pstack[-1]
    frame.stack.append(value)
    frame.pstack.append(prov if prov is None or not prov.is_access_path and not prov.inputs
                        else pv.Computed("next", (prov,)))


@handles("END_FOR", since=(3, 12))
def end_for(interp, frame, instr):
    frame.pop()
    if VERSION == (3, 12):
        frame.pop()


@handles("GET_LEN")
def get_len(interp, frame, instr):
    frame.push(len(frame.stack[-1]), pv.Computed("len", (frame.pstack[-1],)))


# ----- exceptions -----
@handles("PUSH_EXC_INFO")
def push_exc_info(interp, frame, instr):
    exc, prov = frame.popp()
    frame.push(interp.current_exc, None)
    frame.push(exc, prov)
    interp.current_exc = exc
    if isinstance(exc, interp.uncatchable) and frame.info.instructions[frame.ip].opname == "POP_TOP":
        raise exc  # a bare `except:` (its handler drops the exception at once): leave as an unmatched clause does


@handles("POP_EXCEPT")
def pop_except(interp, frame, instr):
    interp.current_exc = frame.pop()


@handles("CHECK_EXC_MATCH")
def check_exc_match(interp, frame, instr):
    kind = frame.pop()
    exc = frame.stack[-1]
    for k in (kind if isinstance(kind, tuple) else (kind,)):
        if not (isinstance(k, type) and issubclass(k, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException is not allowed")
    frame.push(isinstance(exc, kind) and not isinstance(exc, interp.uncatchable), None)


# ----- except* (exception groups) -----
@handles("CHECK_EG_MATCH")
def check_eg_match(interp, frame, instr):
    """`except* T`: TOS1 the exception (what earlier clauses left), TOS the type. A match leaves [rest, match]
    (rest None when all of it matched) and makes the match the handled exception; no match leaves [exc, None]."""
    kind = frame.pop()
    for k in (kind if isinstance(kind, tuple) else (kind,)):
        if not (isinstance(k, type) and issubclass(k, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException is not allowed")
        if issubclass(k, BaseExceptionGroup):
            raise TypeError("catching ExceptionGroup with except* is not allowed. Use except instead.")
    exc = frame.stack[-1]
    match, rest = _group_match(exc, kind) if not isinstance(exc, interp.uncatchable) else (None, None)
    if match is None:
        frame.push(None, None)
        return
    frame.pop()
    frame.push(rest, None)
    frame.push(match, None)
    interp.current_exc = match
    interp.eg_matches[id(match)] = match


def _group_match(exc, kind):
    """(match, rest) as CPython's except* splits `exc` by `kind`: a whole match (a lone exception wrapped in a
    group), a split of a group, or (None, None)."""
    if exc is None:
        return None, None
    if isinstance(exc, kind):
        if isinstance(exc, BaseExceptionGroup):
            return exc, None
        wrapped = BaseExceptionGroup("", [exc])  # (an ExceptionGroup where exc is an Exception)
        if exc.__traceback__ is not None:
            wrapped.__traceback__ = exc.__traceback__
        return wrapped, None
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(kind)
    return None, None


def prep_reraise_star(orig, excs, raised_by_name):
    """What a try/except* block raises once its clauses ran: the exceptions its handlers raised, and what of the
    original group is re-raised (left unmatched, or raised again with `raise`) in the original's structure;
    None when nothing is."""
    if not excs:
        return None
    if not isinstance(orig, BaseExceptionGroup):  # a lone exception, wrapped: one clause at most ran
        return excs[0]
    raised, reraised = [], []
    for e in excs:
        if e is None:
            continue
        # (CPython compares tracebacks too; here a raise adds the interpreter's own frames to any exception, so a
        # re-raise by name is told apart by the registry instead)
        same = e.__cause__ is orig.__cause__ and e.__context__ is orig.__context__ and \
            getattr(e, "__notes__", None) is getattr(orig, "__notes__", None) and \
            raised_by_name.get(id(e)) is not e
        (reraised if same else raised).append(e)
    leaves = set()

    def collect(e):
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                collect(sub)
        else:
            leaves.add(id(e))

    for e in reraised:
        collect(e)
    if leaves:
        kept, _ = orig.split(lambda e: not isinstance(e, BaseExceptionGroup) and id(e) in leaves)
        if kept is not None:
            raised.append(kept)
    if not raised:
        return None
    return raised[0] if len(raised) == 1 else BaseExceptionGroup("", raised)


@handles("PREP_RERAISE_STAR", until=(3, 11))
def prep_reraise_star_op(interp, frame, instr):
    excs = frame.pop()
    orig = frame.pop()
    frame.push(prep_reraise_star(orig, excs, interp.eg_raised_by_name), None)


@handles("RAISE_VARARGS")
def raise_varargs(interp, frame, instr):
    if instr.arg == 0:
        if interp.current_exc is None:
            raise RuntimeError("No active exception to reraise")
        raise interp.current_exc
    if instr.arg == 2:
        cause = frame.pop()
        exc = frame.pop()
        _note_raised_by_name(interp, exc)
        raise exc from cause
    exc = frame.pop()
    _note_raised_by_name(interp, exc)
    raise exc


def _note_raised_by_name(interp, exc) -> None:
    if interp.eg_matches.get(id(exc)) is exc:
        interp.eg_raised_by_name[id(exc)] = exc


@handles("RERAISE")
def reraise(interp, frame, instr):
    # CPython pops only the exception; with an oparg it *peeks* at the saved lasti below it (for the
    # traceback's line) and leaves it for the handler's stack-depth cut. Popping it too shifts the stack
    # of an enclosing handler in this frame by one slot.
    raise frame.pop()


@handles("LOAD_ASSERTION_ERROR")
def load_assertion_error(interp, frame, instr):
    frame.push(AssertionError, pv.Builtin("AssertionError"))


# ----- with -----
def _special(obj, name):
    """A special method looked up on the type (as CPython does for `with`), bound to obj; None if absent."""
    attr = dunders.lookup(type(obj), name)
    if attr is dunders._MISSING:
        return None
    getter = getattr(type(attr), "__get__", None)
    return attr if getter is None else getter(attr, obj, type(obj))


@handles("BEFORE_WITH")
def before_with(interp, frame, instr):
    manager, prov = frame.popp()
    enter = _special(manager, "__enter__")
    if enter is None:
        raise TypeError(f"'{type(manager).__name__}' object does not support the context manager protocol")
    exit_ = _special(manager, "__exit__")
    if exit_ is None:
        raise TypeError(f"'{type(manager).__name__}' object does not support the context manager protocol "
                        "(missed __exit__ method)")
    frame.push(exit_, pv.Attribute(prov, "__exit__"))
    result, rprov = interp.call(frame, enter, (), {}, (), {})
    frame.push(result, rprov)


@handles("WITH_EXCEPT_START")
def with_except_start(interp, frame, instr):
    exit_ = frame.stack[-4]
    exc = frame.stack[-1]
    result, prov = interp.call(frame, exit_, (type(exc), exc, exc.__traceback__), {}, (None, None, None), {})
    if isinstance(exc, interp.uncatchable):
        result, prov = False, None  # (contextlib.suppress(RuntimeError) must not swallow it either)
    frame.push(result, prov)


# ----- generators -----
@handles("RETURN_GENERATOR")
def return_generator(interp, frame, instr):
    frame.push(None, None)  # what the first resume "sends"; the next POP_TOP drops it


@handles("YIELD_VALUE")
def yield_value(interp, frame, instr):
    value, prov = frame.popp()
    return Outcome(Outcome.YIELD, value, prov)


@handles("GET_YIELD_FROM_ITER")
def get_yield_from_iter(interp, frame, instr):
    import types
    value = frame.stack[-1]
    if not isinstance(value, (types.GeneratorType, types.CoroutineType)):
        frame.stack[-1] = iter(value)


@handles("SEND")
def send(interp, frame, instr):
    value = frame.pop()
    receiver = frame.stack[-1]
    try:
        if outside_generator(receiver):  # (see for_iter)
            step = (next, (receiver,)) if value is None else (receiver.send, (value,))
            result = interp.advance_outside_generator(frame, step[0], step[1], {})[0]
        elif value is None:
            result = next(receiver)
        else:
            result = receiver.send(value)
    except StopIteration as stop:
        if VERSION == (3, 11):
            frame.stack[-1] = stop.value
            frame.pstack[-1] = pv.Computed("yield from result")
        else:
            frame.push(stop.value, pv.Computed("yield from result"))
        _jump(frame, instr)
        return
    frame.delegate = receiver
    frame.delegate_send = instr
    frame.push(result, pv.Computed("yield from value"))


@handles("END_SEND", since=(3, 12))
def end_send(interp, frame, instr):
    value, prov = frame.popp()
    frame.pop()
    frame.push(value, prov)


@handles("CLEANUP_THROW", since=(3, 12))
def cleanup_throw(interp, frame, instr):
    exc = frame.pop()
    if not isinstance(exc, StopIteration):
        raise exc
    frame.pop()
    frame.pop()
    frame.push(None, None)
    frame.push(exc.value, pv.Computed("yield from result"))


# ----- match -----
_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6


@handles("MATCH_MAPPING")
def match_mapping(interp, frame, instr):
    frame.push(bool(type(frame.stack[-1]).__flags__ & _TPFLAGS_MAPPING), None)


@handles("MATCH_SEQUENCE")
def match_sequence(interp, frame, instr):
    frame.push(bool(type(frame.stack[-1]).__flags__ & _TPFLAGS_SEQUENCE), None)


@handles("MATCH_KEYS")
def match_keys(interp, frame, instr):
    keys = frame.stack[-1]
    subject = frame.stack[-2]
    missing = object()
    get = subject.get
    values = []
    for key in keys:
        value = get(key, missing)
        if value is missing:
            frame.push(None, None)
            return
        values.append(value)
    frame.push(tuple(values), pv.Computed("match keys", (frame.pstack[-2],)))


_MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


@handles("MATCH_CLASS")
def match_class(interp, frame, instr):
    names = frame.pop()
    cls = frame.pop()
    subject, prov = frame.popp()
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class" if VERSION >= (3, 12)
                        else "called match pattern must be a type")
    if not isinstance(subject, cls):
        frame.push(None, None)
        return
    count = instr.arg
    attrs = []
    seen = set()
    if count:
        match_args = getattr(cls, "__match_args__", None)
        if match_args is None:
            if not issubclass(cls, _MATCH_SELF):
                raise TypeError(f"{cls.__name__}() accepts 0 positional sub-patterns ({count} given)")
            if count > 1:
                raise TypeError(f"{cls.__name__}() accepts 1 positional sub-pattern ({count} given)")
            attrs.append(subject)  # int(x), str(s)...: the subject itself
            positional = ()
        else:
            if not isinstance(match_args, tuple):
                raise TypeError(f"{cls.__name__}.__match_args__ must be a tuple (got {type(match_args).__name__})")
            if count > len(match_args):
                plural = "" if len(match_args) == 1 else "s"
                raise TypeError(f"{cls.__name__}() accepts {len(match_args)} positional sub-pattern{plural} "
                                f"({count} given)")
            positional = match_args[:count]
        for name in positional:
            if not isinstance(name, str):
                raise TypeError(f"__match_args__ elements must be strings (got {type(name).__name__})")
            if name in seen:
                raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute '{name}'")
            seen.add(name)
            try:
                attrs.append(getattr(subject, name))
            except AttributeError:
                frame.push(None, None)
                return
    for name in names:
        if name in seen:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute '{name}'")
        seen.add(name)
        try:
            attrs.append(getattr(subject, name))
        except AttributeError:
            frame.push(None, None)
            return
    frame.push(tuple(attrs), pv.Computed("match class", (prov,)))
